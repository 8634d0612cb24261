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
    /// `[learning]`: learn from use (`enabled = true`), and where the uses are kept: `file`
    /// (`~/` is the home folder, relative to the config's folder); `None` in it: the default,
    /// `$XDG_STATE_HOME/toolsearch/learned.jsonl`. `None`: no learning (the default).
    pub learning: Option<Option<PathBuf>>,
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
    let learning = raw.learning.take().and_then(|l| {
        let file = match l.file {
            None => None,
            Some(f) if f.trim().is_empty() => {
                problems.add("learning.file", "must not be empty");
                None
            }
            Some(f) => Some(match f.strip_prefix("~/") {
                Some(rest) => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                    Some(home) => PathBuf::from(home).join(rest),
                    None => {
                        problems.add("learning.file", "starts with ~/ but HOME is not set");
                        return None;
                    }
                },
                None => base.join(f),
            }),
        };
        l.enabled.unwrap_or(false).then_some(file)
    });
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
        learning,
    }
}
