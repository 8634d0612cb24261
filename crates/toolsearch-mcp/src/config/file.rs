//! The gateway config file: TOML → raw serde structs (unknown keys rejected) → [`Config`].
//!
//! Keys beyond the reference's: `[limits] call_timeout_ms`, `max_tool_calls`, `max_http_sessions`,
//! `http_session_idle_s`, `http_header_timeout_ms` and `http_idle_timeout_s`, `[[source]]
//! inherit_env`,
//! `[[source]] cwd` (working directory of a stdio child),
//! `[[source]] instructions` (the source's guidance, a list of strings), and the extra control
//! names under `[names]` (`describe`, `call`, `list`, `list_groups`, `search_proxy`,
//! `call_proxy`, `search_capabilities`, `invoke`, `get_skill`). A `catalog` path is relative to
//! the config file's folder.

use std::path::{Path, PathBuf};

use super::access::AccessConfig;
use super::access_file::access;
use super::raw::RawConfig;
use super::settings_file::settings;
use super::source::{SourceConfig, validate_source};
use super::telemetry::TelemetryConfig;
use toolsearch::{Problems, Settings, within};

/// A validated gateway config.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Config {
    /// Engine settings.
    pub settings: Settings,
    /// Sources, in file order.
    pub sources: Vec<SourceConfig>,
    /// `[limits] call_timeout_ms`: how long one tool call may run (default 60 s).
    pub call_timeout: Option<std::time::Duration>,
    /// `[limits] max_tool_calls`: tool calls per downstream session (a proxied call counts two).
    pub max_tool_calls: Option<u64>,
    /// `[limits] max_http_sessions`: open MCP sessions `serve --http` keeps at once (default
    /// 1000); a new session over the limit is refused with 503 until one ends.
    pub max_http_sessions: Option<usize>,
    /// `[limits] http_session_idle_s`: an HTTP session unused this long is closed (default
    /// 300 s).
    pub http_session_idle: Option<std::time::Duration>,
    /// `[limits] http_header_timeout_ms`: an HTTP connection that has not sent a request's
    /// whole head this long after it began is closed (default 10 s).
    pub http_header_timeout: Option<std::time::Duration>,
    /// `[limits] http_idle_timeout_s`: a kept-alive HTTP connection with no request in progress
    /// this long is closed (default 120 s).
    pub http_idle_timeout: Option<std::time::Duration>,
    /// `[limits] startup_wait_ms`: how long a discovery, `describe_tool` or call whose scope
    /// holds a source still connecting waits for it before answering with what is there
    /// ([`DEFAULT_STARTUP_WAIT`] when `None`; 0 answers at once).
    pub startup_wait: Option<std::time::Duration>,
    /// `skills`: folders of Agent Skills (`SKILL.md`) for the `capabilities` surface, each a
    /// skill folder or a folder of them; relative to the config file's folder.
    pub skills: Vec<PathBuf>,
    /// Callers and what they may do: `[[client]]`, `[auth.jwt]`, `[[policy]]`, `[approval]`,
    /// `[limits] rate`, `[audit]`.
    pub access: AccessConfig,
    /// `[telemetry]`: where OpenTelemetry traces go; none: no traces are recorded.
    pub telemetry: Option<TelemetryConfig>,
    /// `[reload] watch`: re-read the file when it changes (as on SIGHUP); default false.
    pub watch: bool,
}

/// `[limits] startup_wait_ms` when absent: 30 s.
pub const DEFAULT_STARTUP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a config could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The TOML does not parse into the config's shape (syntax, types, unknown keys).
    #[error("{file}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's message, with the line and the key.
        message: String,
    },
    /// The values are not valid.
    #[error("{file}: {problems}")]
    Invalid {
        /// The file.
        file: String,
        /// Every problem, each starting with its key path.
        problems: Problems,
    },
}

/// Reads and validates a config file.
pub fn load_config(path: &Path) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        file: file.clone(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_config(&file, &text, base)
}

/// Parses and validates config text; `file` names it in errors, `base` resolves catalog paths.
pub fn parse_config(file: &str, text: &str, base: &Path) -> Result<Config, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        file: file.to_owned(),
        message: e.to_string().trim().replace('\n', " "),
    })?;
    let mut problems = Problems::new();
    let config = validate(raw, base, &mut problems);
    problems
        .or_ok(config)
        .map_err(|problems| ConfigError::Invalid {
            file: file.to_owned(),
            problems,
        })
}

fn validate(mut raw: RawConfig, base: &Path, problems: &mut Problems) -> Config {
    let settings = settings(&mut raw, base, problems);

    let mut sources = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let raw_sources = std::mem::take(&mut raw.source);
    for (i, s) in raw_sources.into_iter().enumerate() {
        let at = format!("source[{i}]");
        if let Some(src) = validate_source(&at, s, base, &mut seen, problems) {
            sources.push(src);
        }
    }
    let mut limits = raw.limits.take().unwrap_or_default();
    let access = access(&mut raw, limits.rate.take(), base, problems);
    use std::time::Duration;
    let mut limit = |key: &str, value: Option<i64>, range: std::ops::RangeInclusive<i64>| {
        within(&format!("limits.{key}"), value, range, problems)
    };
    let call_timeout =
        limit("call_timeout_ms", limits.call_timeout_ms, 1..=86_400_000).map(Duration::from_millis);
    let max_http_sessions =
        limit("max_http_sessions", limits.max_http_sessions, 1..=1_000_000).map(|n| n as usize);
    let http_session_idle = limit(
        "http_session_idle_s",
        limits.http_session_idle_s,
        1..=86_400,
    )
    .map(Duration::from_secs);
    let http_header_timeout = limit(
        "http_header_timeout_ms",
        limits.http_header_timeout_ms,
        100..=600_000,
    )
    .map(Duration::from_millis);
    let http_idle_timeout = limit(
        "http_idle_timeout_s",
        limits.http_idle_timeout_s,
        1..=86_400,
    )
    .map(Duration::from_secs);
    let startup_wait =
        limit("startup_wait_ms", limits.startup_wait_ms, 0..=3_600_000).map(Duration::from_millis);
    let max_tool_calls = match limits.max_tool_calls {
        None => None,
        Some(n) if n >= 1 => Some(n as u64),
        Some(n) => {
            problems.add("limits.max_tool_calls", format!("{n} must be at least 1"));
            None
        }
    };
    let skills = raw
        .skills
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| {
            if s.trim().is_empty() {
                problems.add(format!("skills[{i}]"), "must not be empty");
                return None;
            }
            Some(base.join(s))
        })
        .collect();
    let telemetry = raw
        .telemetry
        .take()
        .and_then(|t| super::telemetry::telemetry(t, problems));
    Config {
        settings,
        sources,
        call_timeout,
        max_tool_calls,
        max_http_sessions,
        http_session_idle,
        http_header_timeout,
        http_idle_timeout,
        startup_wait,
        skills,
        access,
        telemetry,
        watch: raw.reload.and_then(|r| r.watch).unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SourceKind;
    use toolsearch::SearchMethod;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        parse_config("gw.toml", text, Path::new("/etc/ts"))
    }

    #[test]
    fn design_example_parses() {
        let c = parse(
            r#"
surface = "toolsearch"
[search]
method = "keyword"
max_results = 10
max_search_bytes = 32768
[names]
discover = "discover_tools"
[[source]]
name = "fs"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
env = { LOG_LEVEL = "warn" }
group = "files"
description = "Read and write project files"
[[source]]
name = "knowledge"
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer ${env:KNOWLEDGE_TOKEN}" }
context_headers = { "X-Run-ID" = "run.id", "X-Tenant-ID" = "identity.tenant_id" }
group = "knowledge"
description = "Search and read the tenant's knowledge base"
[[source]]
name = "status"
catalog = "catalogs/status.json"
presentation = "direct"
"#,
        )
        .expect("valid");
        assert_eq!(c.sources.len(), 3);
        assert_eq!(
            c.sources[2].kind,
            SourceKind::Catalog {
                path: PathBuf::from("/etc/ts/catalogs/status.json")
            }
        );
        assert!(c.sources[2].direct);
        assert_eq!(c.settings, Settings::default());
    }

    #[test]
    fn semantic_and_hybrid_settings_parse_resolve_and_validate() {
        let c = parse(
            "[search]\nmethod = \"hybrid\"\n[search.semantic]\nmodel = \"models/minilm\"\n\
             cache_dir = \"cache\"\nmin_similarity = 0.3\nsentences = false\n[search.hybrid]\nfusion = \"rrf\"\n\
             semantic_weight = 0.7\nrrf_k = 10\nconfidence_scale = 5\nconfidence_slope = 3\n",
        )
        .expect("valid");
        let e = &c.settings.semantic;
        assert_eq!(e.model.as_deref(), Some(Path::new("/etc/ts/models/minilm")));
        assert_eq!(e.cache_dir(), PathBuf::from("/etc/ts/cache"));
        assert_eq!(e.min_similarity(), 0.3);
        assert!(!e.sentences());
        assert!(
            Settings::default().semantic.sentences(),
            "on unless turned off"
        );
        assert_eq!(c.settings.hybrid.fusion, toolsearch::Fusion::Rrf);
        assert_eq!(c.settings.hybrid.semantic_weight, 0.7);
        assert_eq!(
            (
                c.settings.hybrid.confidence_scale,
                c.settings.hybrid.confidence_slope
            ),
            (5.0, 3.0)
        );
        let c = parse(
            "[search.semantic]\nurl = \"http://127.0.0.1:11434/v1/embeddings\"\nmodel = \"nomic\"\n\
             api_key_env = \"KEY\"\n",
        )
        .expect("valid");
        let e = &c.settings.semantic;
        assert_eq!(e.endpoint_model.as_deref(), Some("nomic"));
        assert_eq!(
            (e.model.as_ref(), e.api_key_env.as_deref()),
            (None, Some("KEY"))
        );
        let text = parse(
            "[search.semantic]\nurl = \"ftp://x\"\nmin_similarity = 2\n[search.hybrid]\n\
             fusion = \"max\"\nsemantic_weight = 1.5\nconfidence_scale = 0\nconfidence_slope = -1\n",
        )
        .expect_err("invalid")
        .to_string();
        for needle in [
            "search.semantic.url: \"ftp://x\" is not an http",
            "search.semantic.model: an endpoint (url) needs the model name",
            "search.semantic.min_similarity: 2 is outside",
            "search.hybrid.fusion: \"max\" is not one of adaptive, scores, rrf",
            "search.hybrid.semantic_weight: 1.5 is outside 0..=1",
            "search.hybrid.confidence_scale: 0 is not a positive number",
            "search.hybrid.confidence_slope: -1 is outside 0..=100",
        ] {
            assert!(text.contains(needle), "{needle:?} not in {text}");
        }
        let text = parse("[search.semantic]\nmodel = \"m\"\napi_key_env = \"K\"\n")
            .expect_err("key without url")
            .to_string();
        assert!(
            text.contains("only an endpoint (url) takes a key"),
            "{text}"
        );
        assert!(parse("[search.semantic]\nmodle = \"m\"\n").is_err());
    }

    #[test]
    fn unknown_keys_are_errors_with_their_place() {
        let e = parse("[search]\nmax_result = 3\n").expect_err("unknown key");
        let text = e.to_string();
        assert!(
            text.contains("max_result") && text.contains("line 2"),
            "{text}"
        );
        assert!(parse("bogus = 1").is_err());
        assert!(parse("[[source]]\nname='a'\ncatalog='x'\nfoo=1").is_err());
    }

    #[test]
    fn every_value_problem_is_reported_with_its_path() {
        let e = parse(
            r#"
surface = "tools"
[search]
method = "magic"
max_results = 0
max_search_bytes = 100
[names]
discover = "1bad"
describe = "call_tool"
[[source]]
name = "a"
command = "x"
group = "a__b"
description = " "
[[source]]
name = "a"
url = "ftp://x"
headers = { Auth = "${KEY}", auth = "x" }
context_headers = { "X-Run" = "run..id" }
group = "g"
description = "d"
[[source]]
name = "c"
"#,
        )
        .expect_err("invalid");
        let ConfigError::Invalid { problems, .. } = &e else {
            panic!("{e}")
        };
        let text = problems
            .iter()
            .map(|p| format!("{p}\n"))
            .collect::<String>();
        for needle in [
            "surface: \"tools\"",
            "search.method: \"magic\"",
            "search.max_results: 0 is outside 1..=100",
            "search.max_search_bytes: 100 is outside 1024..=32768",
            "names.discover: \"1bad\" is not a valid control name",
            "names.call: \"call_tool\" is also the name of names.describe",
            "source[0] (\"a\").group: group name \"a__b\" must not contain \"__\"",
            "source[0] (\"a\").group: group description is blank",
            "source[1] (\"a\").name: used by an earlier source",
            "source[1] (\"a\").url: \"ftp://x\"",
            "source[1] (\"a\").headers: \"auth\" is given twice",
            "source[1] (\"a\").headers.Auth: \"${KEY}\" is not a secret reference",
            "source[1] (\"a\").context_headers.X-Run: \"run..id\"",
            "source[2] (\"c\"): needs one of command, url or catalog",
            "source[2] (\"c\"): a proxied source needs group and description",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        assert_eq!(problems.len(), 15, "{text}");
    }

    #[test]
    fn a_sources_tool_filter_and_call_timeout_parse_and_validate() {
        let c = parse(
            "[[source]]\nname = \"gh\"\ncommand = \"gh-mcp\"\ngroup = \"gh\"\ndescription = \"d\"\ntools = { allow = [\"get_*\", \"list_*\"], deny = [\"get_secret\"] }\ncall_timeout_ms = 5000\n\n[[source]]\nname = \"open\"\nurl = \"http://127.0.0.1:1/mcp\"\ngroup = \"o\"\ndescription = \"d\"\ntools = { deny = [\"drop_*\"] }\n",
        )
        .expect("valid");
        let gh = &c.sources[0];
        assert_eq!(
            gh.tools.allow.as_deref(),
            Some(&["get_*".to_owned(), "list_*".to_owned()][..])
        );
        assert_eq!(gh.tools.deny, ["get_secret"]);
        assert_eq!(
            gh.call_timeout,
            Some(std::time::Duration::from_millis(5000))
        );
        let open = &c.sources[1];
        assert!(open.tools.allow.is_none() && open.call_timeout.is_none());
        assert!(!open.tools.is_open());

        let e = parse("[[source]]\nname = \"a\"\ncommand = \"x\"\ngroup = \"a\"\ndescription = \"d\"\ntools = { allow = [\"[\"], only = [] }\n\n[[source]]\nname = \"b\"\ncommand = \"x\"\ngroup = \"b\"\ndescription = \"d\"\ntools = { deny = [\"\"] }\ncall_timeout_ms = 0\n\n[[source]]\nname = \"c\"\ncatalog = \"c.json\"\ntools = { deny = [\"x\"] }\n")
            .expect_err("invalid");
        assert!(e.to_string().contains("unknown field `only`"), "{e}");
        let e = parse("[[source]]\nname = \"a\"\ncommand = \"x\"\ngroup = \"a\"\ndescription = \"d\"\ntools = { allow = [\"[\"] }\n\n[[source]]\nname = \"b\"\ncommand = \"x\"\ngroup = \"b\"\ndescription = \"d\"\ntools = { deny = [\"\"] }\ncall_timeout_ms = 0\n\n[[source]]\nname = \"c\"\ncatalog = \"c.json\"\ntools = { deny = [\"x\"] }\n")
            .expect_err("invalid");
        let text = e.to_string();
        for needle in [
            "source[0] (\"a\").tools.allow: \"[\"",
            "source[1] (\"b\").tools.deny: \"\": an empty glob matches nothing",
            "source[1] (\"b\").call_timeout_ms: 0 is outside 1..=86400000",
            "source[2] (\"c\").tools: only allowed with command or url",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn a_negative_number_is_reported_as_given() {
        let e = parse("[search]\nmax_results = -5\nmax_search_bytes = -1\n").expect_err("invalid");
        let ConfigError::Invalid { problems, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(
            problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "search.max_results: -5 is outside 1..=100".to_owned(),
                "search.max_search_bytes: -1 is outside 1024..=32768".to_owned()
            ]
        );
    }

    #[test]
    fn codeact_settings_and_source_choices_parse_and_validate() {
        let c = parse(
            r#"
[codeact]
enabled = true
programs = ["programs", "/srv/shared"]
timeout_ms = 2500
max_memory_mb = 32
max_calls = 7
[names]
run_code = "python"
[[source]]
name = "a"
command = "x"
group = "a"
description = "A"
codeact = true
[[source]]
name = "b"
url = "http://127.0.0.1:1/mcp"
group = "b"
description = "B"
codeact = ["one", "two"]
[[source]]
name = "c"
catalog = "c.json"
"#,
        )
        .expect("valid");
        let ca = &c.settings.codeact;
        assert!(ca.enabled && ca.offers_programs());
        assert_eq!(
            ca.programs,
            [
                PathBuf::from("/etc/ts/programs"),
                PathBuf::from("/srv/shared")
            ]
        );
        assert_eq!(ca.timeout, std::time::Duration::from_millis(2500));
        assert_eq!((ca.max_memory_mb, ca.max_calls), (32, 7));
        assert_eq!(c.settings.names.run_code, "python");
        use toolsearch::CodeActTools;
        assert_eq!(c.sources[0].codeact, CodeActTools::All);
        assert_eq!(
            c.sources[1].codeact,
            CodeActTools::Only(vec!["one".into(), "two".into()])
        );
        assert_eq!(c.sources[2].codeact, CodeActTools::None);
        assert!(!parse("").expect("valid").settings.codeact.enabled);

        let e = parse(
            "[codeact]\nenabled = true\ntimeout_ms = 0\nmax_memory_mb = 5000\nmax_calls = -1\nprograms = [\" \"]\n[names]\nrun_code = \"discover_tools\"\n[[source]]\nname = \"s\"\ncatalog = \"x.json\"\ncodeact = [\"\"]\n",
        )
        .expect_err("invalid")
        .to_string();
        for needle in [
            "codeact.timeout_ms: 0 is outside 1..=600000",
            "codeact.max_memory_mb: 5000 is outside 1..=4096",
            "codeact.max_calls: -1 is outside 1..=10000",
            "codeact.programs[0]: must not be empty",
            "names.run_code: \"discover_tools\" is also the name of names.discover",
            "source[0] (\"s\").codeact: \"\" is not a tool name",
        ] {
            assert!(e.contains(needle), "{needle:?} not in {e}");
        }
        assert!(parse("[codeact]\nenable = true\n").is_err());
        assert!(parse("[[source]]\nname='a'\ncatalog='x'\ncodeact='yes'\n").is_err());
    }

    #[test]
    fn the_identity_and_policy_sections_parse_and_validate() {
        let c = parse(
            r#"
[[client]]
name = "alice"
token = "${env:ALICE_TOKEN}"
claims = { tenant_id = "acme", team = "support" }
[auth.jwt]
jwks = "https://idp.example.com/.well-known/jwks.json"
issuer = "https://idp.example.com/"
audience = "toolsearch"
algorithms = ["RS256", "ES256"]
leeway_s = 30
authorization_servers = ["https://idp.example.com/"]
[[policy]]
match = { client = "alice" }
allow = ["crm/*", "billing/get_*"]
deny = ["billing/refund_*"]
[[policy]]
match = { claims = { "identity.tenant_id" = "acme" } }
allow = ["*"]
[approval]
tools = ["billing/refund_*"]
[limits]
rate = { calls_per_minute = 120, burst = 20 }
[audit]
file = "/var/log/toolsearch/audit.jsonl"
"#,
        )
        .expect("the contract's example is valid");
        let a = &c.access;
        assert_eq!(a.clients[0].name, "alice");
        assert_eq!(a.clients[0].claims["team"], "support");
        let jwt = a.jwt.as_ref().expect("jwt");
        assert_eq!(
            jwt.jwks,
            crate::config::JwksSource::Url("https://idp.example.com/.well-known/jwks.json".into())
        );
        assert_eq!((jwt.leeway_s, jwt.algorithms.len()), (30, 2));
        assert_eq!(a.policies[0].client.as_deref(), Some("alice"));
        assert_eq!(a.policies[1].claims["identity.tenant_id"], "acme");
        assert_eq!(a.approval, ["billing/refund_*"]);
        let rate = a.rate.expect("rate");
        assert_eq!((rate.calls_per_minute, rate.burst), (120.0, 20));
        assert_eq!(
            a.audit_file.as_deref(),
            Some(Path::new("/var/log/toolsearch/audit.jsonl"))
        );
        assert!(a.authenticates());
        let c = parse("[auth.jwt]\njwks = \"keys.json\"\nissuer = \"i\"\naudience = \"a\"\n")
            .expect("valid");
        let jwt = c.access.jwt.expect("jwt");
        assert_eq!(
            jwt.jwks,
            crate::config::JwksSource::File(PathBuf::from("/etc/ts/keys.json"))
        );
        assert_eq!(
            (jwt.algorithms, jwt.authorization_servers),
            (vec!["RS256".to_owned()], vec!["i".to_owned()])
        );

        let e = parse(
            r#"
[[client]]
name = "a"
token = "plain-secret"
[[client]]
name = "a"
token = "${env:A}"
[auth.jwt]
jwks = "http://idp.example.com/jwks"
issuer = ""
audience = "x"
algorithms = ["none", "HS256"]
leeway_s = 9999
[[policy]]
match = { claims = { "tenant" = "x" } }
allow = ["[z-a]"]
[approval]
tools = [""]
[limits]
rate = { calls_per_minute = 0 }
[audit]
file = ""
"#,
        )
        .expect_err("invalid")
        .to_string();
        for needle in [
            "client[0] (\"a\").token: a client's token comes from the environment",
            "client[1] (\"a\").name: used by an earlier client",
            "auth.jwt.issuer: missing or empty",
            "auth.jwt.jwks: \"http://idp.example.com/jwks\": keys are fetched over https://",
            "auth.jwt.algorithms: \"none\" is never accepted",
            "auth.jwt.algorithms: \"HS256\" is not one of",
            "auth.jwt.leeway_s: 9999 is outside 0..=600",
            "policy[0].match.claims: \"tenant\" is not a context path",
            "policy[0].allow[0]: \"[z-a]\"",
            "approval.tools[0]: \"\": an empty glob",
            "limits.rate.calls_per_minute",
            "audit.file: missing or empty",
        ] {
            assert!(e.contains(needle), "{needle:?} not in {e}");
        }
        let c = parse(
            "[auth.jwt]\njwks = \"http://127.0.0.1:9/jwks\"\nissuer = \"i\"\naudience = \"a\"\n",
        );
        assert!(c.is_ok(), "a loopback JWKS may be plain http");
    }

    #[test]
    fn limits() {
        let c = parse("[limits]\ncall_timeout_ms = 1500\nmax_tool_calls = 40\nmax_http_sessions = 50\nhttp_session_idle_s = 60\nstartup_wait_ms = 250\nhttp_header_timeout_ms = 2000\nhttp_idle_timeout_s = 30\n").expect("valid");
        assert_eq!(
            c.http_header_timeout,
            Some(std::time::Duration::from_millis(2000))
        );
        assert_eq!(
            c.http_idle_timeout,
            Some(std::time::Duration::from_secs(30))
        );
        assert_eq!(c.startup_wait, Some(std::time::Duration::from_millis(250)));
        assert_eq!(c.call_timeout, Some(std::time::Duration::from_millis(1500)));
        assert_eq!(c.max_tool_calls, Some(40));
        assert_eq!(c.max_http_sessions, Some(50));
        assert_eq!(
            c.http_session_idle,
            Some(std::time::Duration::from_secs(60))
        );
        let e = parse(
            "[limits]\nmax_http_sessions = 0\nhttp_session_idle_s = -1\nstartup_wait_ms = -5\nhttp_header_timeout_ms = 5\nhttp_idle_timeout_s = 0\n",
        )
        .expect_err("invalid");
        let text = e.to_string();
        assert!(
            text.contains("limits.max_http_sessions: 0 is outside")
                && text.contains("limits.http_session_idle_s: -1 is outside")
                && text.contains("limits.startup_wait_ms: -5 is outside")
                && text.contains("limits.http_header_timeout_ms: 5 is outside")
                && text.contains("limits.http_idle_timeout_s: 0 is outside"),
            "{text}"
        );
        let e = parse("[limits]\ncall_timeout_ms = 0\nmax_tool_calls = 0\n").expect_err("invalid");
        let text = e.to_string();
        assert!(
            text.contains("limits.call_timeout_ms: 0") && text.contains("limits.max_tool_calls: 0"),
            "{text}"
        );
        assert!(parse("[limits]\ntimeout = 1\n").is_err());
    }

    #[test]
    fn capabilities_defaults_to_bm25() {
        let c = parse("surface = \"capabilities\"").expect("valid");
        assert_eq!(c.settings.method, SearchMethod::Bm25);
        let c = parse("surface = \"capabilities\"\n[search]\nmethod = \"hybrid\"").expect("valid");
        assert_eq!(c.settings.method, SearchMethod::Hybrid);
    }

    #[test]
    fn bm25_parameters_come_from_the_config_and_are_validated() {
        let c = parse_config(
            "c.toml",
            "[search]\nmethod = \"bm25\"\n[search.bm25]\nk1 = 0.9\nb = 0.5\nb_name = 0.1\nname = 4\n",
            std::path::Path::new("."),
        )
        .expect("valid");
        assert_eq!(c.settings.method, SearchMethod::Bm25);
        assert_eq!(c.settings.bm25.k1, 0.9);
        assert_eq!(c.settings.bm25.b, [0.1, 0.5, 0.5, 0.5]);
        assert_eq!(c.settings.bm25.weights[0], 4.0);
        let e = parse_config(
            "c.toml",
            "[search.bm25]\nk1 = -1\nb = 2\ngroup = 1000\nk3 = 1\n",
            std::path::Path::new("."),
        )
        .expect_err("invalid");
        assert!(e.to_string().contains("k3"), "{e}");
        let e = parse_config(
            "c.toml",
            "[search.bm25]\nk1 = -1\nb = 2\ngroup = 1000\n",
            std::path::Path::new("."),
        )
        .expect_err("invalid")
        .to_string();
        for needle in [
            "search.bm25.k1: -1 is outside 0..=10",
            "search.bm25.b_name: 2 is outside 0..=1",
            "search.bm25.group: 1000 is outside 0..=100",
        ] {
            assert!(e.contains(needle), "{needle} in {e}");
        }
    }

    #[test]
    fn a_policy_that_only_denies_allows_every_other_tool() {
        let c =
            parse("[[policy]]\nmatch = { client = \"alice\" }\ndeny = [\"billing/refund_*\"]\n")
                .expect("valid");
        assert_eq!(c.access.policies[0].allow, ["*"]);
        assert_eq!(c.access.policies[0].deny, ["billing/refund_*"]);
    }
}
