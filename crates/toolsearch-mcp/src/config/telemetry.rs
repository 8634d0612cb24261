//! `[telemetry]`: where the gateway sends its OpenTelemetry traces (OTLP over HTTP).

use super::raw::RawTelemetry;
use toolsearch::Problems;

/// The service name spans carry when `[telemetry] service_name` is not set.
pub const DEFAULT_SERVICE_NAME: &str = "toolsearch";

/// `[telemetry]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// `otlp_endpoint`: the OTLP/HTTP receiver's base URL (`http://127.0.0.1:4318`); spans
    /// are posted, protobuf-encoded, to [`traces_url`](Self::traces_url).
    pub otlp_endpoint: String,
    /// `service_name`: the `service.name` resource attribute (default
    /// [`DEFAULT_SERVICE_NAME`]).
    pub service_name: String,
}

impl TelemetryConfig {
    /// Where spans are posted: the endpoint with `/v1/traces` appended, as the OTLP
    /// specification does for a base endpoint, unless it already ends so.
    pub fn traces_url(&self) -> String {
        let base = self.otlp_endpoint.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        }
    }
}

/// Validates `[telemetry]`; problems are named by key.
pub(super) fn telemetry(raw: RawTelemetry, problems: &mut Problems) -> Option<TelemetryConfig> {
    let before = problems.len();
    let otlp_endpoint = match raw.otlp_endpoint.map(|e| e.trim().to_owned()) {
        None => {
            problems.add(
                "telemetry.otlp_endpoint",
                "missing (the OTLP/HTTP receiver, such as \"http://127.0.0.1:4318\")",
            );
            String::new()
        }
        Some(e) => {
            let rest = e
                .strip_prefix("http://")
                .or_else(|| e.strip_prefix("https://"));
            let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
            if host.is_none_or(|h| h.is_empty() || h.contains(char::is_whitespace)) {
                problems.add(
                    "telemetry.otlp_endpoint",
                    format!("{e:?} is not an http:// or https:// URL with a host"),
                );
            }
            e
        }
    };
    let service_name = match raw.service_name {
        None => DEFAULT_SERVICE_NAME.to_owned(),
        Some(s) if s.trim().is_empty() => {
            problems.add("telemetry.service_name", "must not be empty");
            String::new()
        }
        Some(s) => s.trim().to_owned(),
    };
    (problems.len() == before).then_some(TelemetryConfig {
        otlp_endpoint,
        service_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(endpoint: Option<&str>, service: Option<&str>) -> Result<TelemetryConfig, Problems> {
        let mut problems = Problems::new();
        let raw = RawTelemetry {
            otlp_endpoint: endpoint.map(str::to_owned),
            service_name: service.map(str::to_owned),
        };
        telemetry(raw, &mut problems).ok_or(problems)
    }

    #[test]
    fn endpoints_are_checked_and_traces_go_to_v1_traces() {
        let t = check(Some("http://127.0.0.1:4318"), None).expect("valid");
        assert_eq!(t.traces_url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(t.service_name, "toolsearch");
        let t = check(Some("https://otel.example/v1/traces/"), Some("gw-a")).expect("valid");
        assert_eq!(t.traces_url(), "https://otel.example/v1/traces");
        assert_eq!(t.service_name, "gw-a");
        for bad in [
            "127.0.0.1:4318",
            "grpc://collector:4317",
            "http://",
            "http:///v1",
        ] {
            let problems = check(Some(bad), None).expect_err(bad);
            assert!(problems[0].at == "telemetry.otlp_endpoint", "{problems:?}");
        }
        assert!(
            check(None, None).expect_err("missing")[0]
                .to_string()
                .contains("missing")
        );
        assert!(check(Some("http://h"), Some(" ")).is_err());
    }
}
