//! Logs to stderr (stdout may carry MCP), filtered by `TOOLSEARCH_LOG` (an `EnvFilter` spec,
//! default `warn`).
//!
//! No message body reaches the logs at any level unless asked for by name: the libraries that
//! print whole messages when detailed (rmcp's requests and results, the HTTP stacks' headers and
//! frames) stay at `info` and above unless the spec names their target itself
//! (`TOOLSEARCH_LOG=debug,rmcp=debug` shows rmcp's; `TOOLSEARCH_LOG=trace` does not). The
//! gateway's own bodies (a call's arguments) are under the target `toolsearch_bodies`.

use tracing_subscriber::EnvFilter;

/// The variable the filter comes from.
pub const LOG_VAR: &str = "TOOLSEARCH_LOG";

/// The filter when the variable is not set.
const DEFAULT: &str = "warn";

/// Targets that print message bodies (tool arguments, results, headers) when detailed.
const BODY_TARGETS: [&str; 7] = [
    "rmcp",
    "hyper",
    "hyper_util",
    "reqwest",
    "h2",
    "sse_stream",
    "toolsearch_bodies",
];

/// The directives of `spec` (the default when `None`), each body-printing target not named in
/// it kept at `info`.
pub(crate) fn directives(spec: Option<&str>) -> String {
    let spec = spec
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT);
    let named = |target: &str| {
        spec.split(',').any(|d| {
            let d = d.trim();
            let name = d.split(['=', '[']).next().unwrap_or_default();
            name == target || name.starts_with(&format!("{target}::"))
        })
    };
    let mut out = spec.to_owned();
    for target in BODY_TARGETS.iter().filter(|t| !named(t)) {
        out.push_str(&format!(",{target}=info"));
    }
    out
}

/// Logs to stderr with the filter of `TOOLSEARCH_LOG`, and the gateway's spans to `telemetry`
/// when traces are configured (the log filter does not limit them).
pub(crate) fn init(telemetry: Option<&toolsearch_mcp::telemetry::Telemetry>) {
    init_with(DEFAULT, telemetry);
}

/// [`init`] for a command that reports each source itself (`check`, `catalog`): by default
/// only errors, and none of rmcp's (its transport's failures, printed raw, repeat what the
/// command says of the source in words).
pub(crate) fn init_reporting() {
    init_with(REPORTING, None);
}

/// The filter of a command that reports each source itself, when the variable is not set.
const REPORTING: &str = "error,rmcp=off";

fn init_with(default: &str, telemetry: Option<&toolsearch_mcp::telemetry::Telemetry>) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let spec = std::env::var(LOG_VAR).ok();
    let spec = spec
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(default);
    let filter = EnvFilter::try_new(directives(Some(spec))).unwrap_or_else(|e| {
        eprintln!("toolsearch: {LOG_VAR}: {e}; logging at {default}");
        EnvFilter::new(directives(Some(default)))
    });
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(telemetry.map(|t| t.layer()))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_printing_targets_stay_at_info_unless_named() {
        assert_eq!(
            directives(None),
            "warn,rmcp=info,hyper=info,hyper_util=info,reqwest=info,h2=info,sse_stream=info,toolsearch_bodies=info"
        );
        assert_eq!(
            directives(Some("trace")),
            "trace,rmcp=info,hyper=info,hyper_util=info,reqwest=info,h2=info,sse_stream=info,toolsearch_bodies=info"
        );
        let named = directives(Some("debug,rmcp::service=trace,hyper=debug"));
        assert!(
            named.starts_with("debug,rmcp::service=trace,hyper=debug,"),
            "{named}"
        );
        assert!(
            !named.contains("rmcp=info") && !named.contains(",hyper=info"),
            "{named}"
        );
        assert!(named.contains("hyper_util=info"), "{named}");
        // A target that only starts like one is not it.
        assert!(directives(Some("rmcpx=debug")).contains("rmcp=info"));
        assert!(EnvFilter::try_new(directives(Some("trace"))).is_ok());
    }
}
