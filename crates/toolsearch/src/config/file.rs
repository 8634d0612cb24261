//! The gateway config file: TOML → raw serde structs (unknown keys rejected) → [`Config`].
//!
//! Keys beyond the reference's: `[limits] call_timeout_ms`, `max_tool_calls`, `max_http_sessions`
//! and `http_session_idle_s`,
//! `[[source]] cwd` (working directory of a stdio child),
//! `[[source]] instructions` (the source's guidance, a list of strings), and the extra control
//! names under `[names]` (`describe`, `call`, `list`, `list_groups`, `search_proxy`,
//! `call_proxy`, `search_capabilities`, `invoke`, `get_skill`). A `catalog` path is relative to
//! the config file's folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ControlNames, SearchMethod, Settings, Surface};
use crate::catalog::name::{group_description_problem, group_name_problem};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    surface: Option<String>,
    skills: Option<Vec<String>>,
    search: Option<RawSearch>,
    names: Option<RawNames>,
    limits: Option<RawLimits>,
    #[serde(default)]
    source: Vec<RawSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    call_timeout_ms: Option<i64>,
    max_tool_calls: Option<i64>,
    max_http_sessions: Option<i64>,
    http_session_idle_s: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    method: Option<String>,
    max_results: Option<i64>,
    max_search_bytes: Option<i64>,
    bm25: Option<RawBm25>,
    semantic: Option<RawSemantic>,
    hybrid: Option<RawHybrid>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSemantic {
    model: Option<String>,
    url: Option<String>,
    api_key_env: Option<String>,
    cache_dir: Option<String>,
    min_similarity: Option<f64>,
    max_tokens: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHybrid {
    fusion: Option<String>,
    semantic_weight: Option<f64>,
    rrf_k: Option<f64>,
    confidence_scale: Option<f64>,
    confidence_slope: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBm25 {
    k1: Option<f64>,
    b: Option<f64>,
    name: Option<f64>,
    description: Option<f64>,
    parameters: Option<f64>,
    group: Option<f64>,
    b_name: Option<f64>,
    b_description: Option<f64>,
    b_parameters: Option<f64>,
    b_group: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNames {
    discover: Option<String>,
    describe: Option<String>,
    call: Option<String>,
    list: Option<String>,
    list_groups: Option<String>,
    search_proxy: Option<String>,
    call_proxy: Option<String>,
    search_capabilities: Option<String>,
    invoke: Option<String>,
    get_skill: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    name: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    context_headers: Option<BTreeMap<String, String>>,
    catalog: Option<String>,
    group: Option<String>,
    description: Option<String>,
    instructions: Option<Vec<String>>,
    presentation: Option<String>,
}

/// Where a source's tools come from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceKind {
    /// An MCP server run as a child process over stdio.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Extra environment (values may hold `${env:NAME}`).
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// An MCP server over streamable HTTP.
    Http {
        /// Endpoint.
        url: String,
        /// Static headers (values may hold `${env:NAME}`).
        headers: BTreeMap<String, String>,
        /// Per-session headers: header name → context path (`run.id`, `identity.tenant_id`).
        context_headers: BTreeMap<String, String>,
    },
    /// A static catalog file.
    Catalog {
        /// Path (resolved against the config's folder).
        path: PathBuf,
    },
}

/// One validated `[[source]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceConfig {
    /// Unique name.
    pub name: String,
    /// Where its tools come from.
    pub kind: SourceKind,
    /// Group name and description (`None` for direct sources and for catalogs that keep their
    /// own groups).
    pub group: Option<(String, String)>,
    /// Presented direct instead of behind the controls.
    pub direct: bool,
    /// The source's guidance.
    pub instructions: Vec<String>,
}

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
    /// `skills`: folders of Agent Skills (`SKILL.md`) for the `capabilities` surface, each a
    /// skill folder or a folder of them; relative to the config file's folder.
    pub skills: Vec<PathBuf>,
}

/// Why a config could not be used.
#[derive(Debug, thiserror::Error)]
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
    #[error("{file}: {}", .problems.join("; "))]
    Invalid {
        /// The file.
        file: String,
        /// Every problem, each starting with its key path.
        problems: Vec<String>,
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
    let mut problems = Vec::new();
    let config = validate(raw, base, &mut problems);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::Invalid {
            file: file.to_owned(),
            problems,
        })
    }
}

fn validate(mut raw: RawConfig, base: &Path, problems: &mut Vec<String>) -> Config {
    let mut settings = Settings::default();
    if let Some(s) = &raw.surface {
        match Surface::parse(s) {
            Some(v) => settings.surface = v,
            None => problems.push(format!(
                "surface: {s:?} is not one of toolsearch, toolproxy, capabilities"
            )),
        }
    }
    if settings.surface == Surface::Capabilities {
        settings.method = SearchMethod::Bm25;
    }
    let search = raw.search.unwrap_or_default();
    if let Some(m) = &search.method {
        match SearchMethod::parse(m) {
            Some(v) => settings.method = v,
            None => problems.push(format!(
                "search.method: {m:?} is not one of keyword, bm25, semantic, hybrid"
            )),
        }
    }
    // A value no `usize` holds (negative) is reported as given; the range check of
    // `Settings::problems` reports the rest.
    let mut int = |key: &str,
                   v: Option<i64>,
                   default: usize,
                   range: &std::ops::RangeInclusive<usize>| match v {
        None => default,
        Some(n) => usize::try_from(n).unwrap_or_else(|_| {
            problems.push(format!(
                "search.{key}: {n} is outside {}..={}",
                range.start(),
                range.end()
            ));
            default
        }),
    };
    settings.max_results = int(
        "max_results",
        search.max_results,
        settings.max_results,
        &super::MAX_RESULTS_RANGE,
    );
    settings.max_search_bytes = int(
        "max_search_bytes",
        search.max_search_bytes,
        settings.max_search_bytes,
        &super::MAX_SEARCH_BYTES_RANGE,
    );
    if let Some(b) = &search.bm25 {
        let p = &mut settings.bm25;
        let set = |slot: &mut f32, v: Option<f64>| {
            if let Some(v) = v {
                *slot = v as f32;
            }
        };
        set(&mut p.k1, b.k1);
        for (slot, v) in p.b.iter_mut().zip([
            b.b_name.or(b.b),
            b.b_description.or(b.b),
            b.b_parameters.or(b.b),
            b.b_group.or(b.b),
        ]) {
            set(slot, v);
        }
        for (slot, v) in p
            .weights
            .iter_mut()
            .zip([b.name, b.description, b.parameters, b.group])
        {
            set(slot, v);
        }
    }
    if let Some(sem) = &search.semantic {
        let e = &mut settings.semantic;
        let blank = |k: &str, v: &Option<String>, problems: &mut Vec<String>| {
            if v.as_deref().is_some_and(|v| v.trim().is_empty()) {
                problems.push(format!("search.semantic.{k}: must not be empty"));
            }
        };
        blank("model", &sem.model, problems);
        blank("url", &sem.url, problems);
        blank("api_key_env", &sem.api_key_env, problems);
        blank("cache_dir", &sem.cache_dir, problems);
        match &sem.url {
            Some(url) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problems.push(format!(
                        "search.semantic.url: {url:?} is not an http:// or https:// address"
                    ));
                }
                if sem.model.is_none() {
                    problems.push(
                        "search.semantic.model: an endpoint (url) needs the model name it serves"
                            .into(),
                    );
                }
                e.url = Some(url.clone());
                e.endpoint_model = sem.model.clone();
            }
            None => {
                if sem.api_key_env.is_some() {
                    problems.push(
                        "search.semantic.api_key_env: only an endpoint (url) takes a key".into(),
                    );
                }
                e.model = sem.model.as_deref().map(|m| base.join(m));
            }
        }
        e.api_key_env = sem.api_key_env.clone();
        e.cache_dir = sem.cache_dir.as_deref().map(|d| base.join(d));
        e.min_similarity = sem.min_similarity.map(|v| v as f32);
        e.max_tokens = sem.max_tokens.map(|n| usize::try_from(n).unwrap_or(0));
    }
    if let Some(h) = &search.hybrid {
        let p = &mut settings.hybrid;
        if let Some(f) = &h.fusion {
            match super::Fusion::parse(f) {
                Some(v) => p.fusion = v,
                None => problems.push(format!(
                    "search.hybrid.fusion: {f:?} is not one of adaptive, scores, rrf"
                )),
            }
        }
        if let Some(w) = h.semantic_weight {
            p.semantic_weight = w as f32;
        }
        if let Some(k) = h.rrf_k {
            p.rrf_k = k as f32;
        }
        if let Some(c) = h.confidence_scale {
            p.confidence_scale = c as f32;
        }
        if let Some(s) = h.confidence_slope {
            p.confidence_slope = s as f32;
        }
    }
    if let Some(n) = raw.names {
        let mut names = ControlNames::default();
        for (slot, v) in [
            (&mut names.discover, n.discover),
            (&mut names.describe, n.describe),
            (&mut names.call, n.call),
            (&mut names.list, n.list),
            (&mut names.list_groups, n.list_groups),
            (&mut names.search_proxy, n.search_proxy),
            (&mut names.call_proxy, n.call_proxy),
            (&mut names.search_capabilities, n.search_capabilities),
            (&mut names.invoke, n.invoke),
            (&mut names.get_skill, n.get_skill),
        ] {
            if let Some(v) = v {
                *slot = v;
            }
        }
        settings.names = names;
    }
    problems.extend(settings.problems());

    let mut sources = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let raw_sources = std::mem::take(&mut raw.source);
    for (i, s) in raw_sources.into_iter().enumerate() {
        let at = format!("source[{i}]");
        if let Some(src) = validate_source(&at, s, base, &mut seen, problems) {
            sources.push(src);
        }
    }
    let limits = raw.limits.unwrap_or_default();
    let call_timeout = match limits.call_timeout_ms {
        None => None,
        Some(ms) if (1..=86_400_000).contains(&ms) => {
            Some(std::time::Duration::from_millis(ms as u64))
        }
        Some(ms) => {
            problems.push(format!(
                "limits.call_timeout_ms: {ms} is outside 1..=86400000"
            ));
            None
        }
    };
    let max_tool_calls = match limits.max_tool_calls {
        None => None,
        Some(n) if n >= 1 => Some(n as u64),
        Some(n) => {
            problems.push(format!("limits.max_tool_calls: {n} must be at least 1"));
            None
        }
    };
    let max_http_sessions = match limits.max_http_sessions {
        None => None,
        Some(n) if (1..=1_000_000).contains(&n) => Some(n as usize),
        Some(n) => {
            problems.push(format!(
                "limits.max_http_sessions: {n} is outside 1..=1000000"
            ));
            None
        }
    };
    let http_session_idle = match limits.http_session_idle_s {
        None => None,
        Some(n) if (1..=86_400).contains(&n) => Some(std::time::Duration::from_secs(n as u64)),
        Some(n) => {
            problems.push(format!(
                "limits.http_session_idle_s: {n} is outside 1..=86400"
            ));
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
                problems.push(format!("skills[{i}]: must not be empty"));
                return None;
            }
            Some(base.join(s))
        })
        .collect();
    Config {
        settings,
        sources,
        call_timeout,
        max_tool_calls,
        max_http_sessions,
        http_session_idle,
        skills,
    }
}

fn validate_source(
    at: &str,
    s: RawSource,
    base: &Path,
    seen: &mut Vec<String>,
    problems: &mut Vec<String>,
) -> Option<SourceConfig> {
    let before = problems.len();
    let name = match s.name {
        Some(n) if !n.trim().is_empty() => n,
        _ => {
            problems.push(format!("{at}.name: missing or empty"));
            String::new()
        }
    };
    let at = if name.is_empty() {
        at.to_owned()
    } else {
        format!("{at} ({name:?})")
    };
    if !name.is_empty() {
        if seen.contains(&name) {
            problems.push(format!("{at}.name: used by an earlier source"));
        }
        seen.push(name.clone());
    }
    let direct = match s.presentation.as_deref() {
        None | Some("proxy") => false,
        Some("direct") => true,
        Some(other) => {
            problems.push(format!(
                "{at}.presentation: {other:?} is not one of proxy, direct"
            ));
            false
        }
    };
    let kinds = [s.command.is_some(), s.url.is_some(), s.catalog.is_some()];
    let is_catalog = s.catalog.is_some();
    let mismatch = |key: &str, present: bool, problems: &mut Vec<String>, allowed: &str| {
        if present {
            problems.push(format!("{at}.{key}: only allowed with {allowed}"));
        }
    };
    let kind = match kinds.iter().filter(|k| **k).count() {
        1 => {
            if let Some(command) = s.command {
                mismatch("headers", s.headers.is_some(), problems, "url");
                mismatch(
                    "context_headers",
                    s.context_headers.is_some(),
                    problems,
                    "url",
                );
                if command.trim().is_empty() {
                    problems.push(format!("{at}.command: empty"));
                }
                Some(SourceKind::Stdio {
                    command,
                    args: s.args.unwrap_or_default(),
                    env: s.env.unwrap_or_default(),
                    cwd: s.cwd.map(|c| base.join(c)),
                })
            } else if let Some(url) = s.url {
                for (key, present) in [
                    ("args", s.args.is_some()),
                    ("env", s.env.is_some()),
                    ("cwd", s.cwd.is_some()),
                ] {
                    mismatch(key, present, problems, "command");
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problems.push(format!(
                        "{at}.url: {url:?} must start with http:// or https://"
                    ));
                }
                let headers = s.headers.unwrap_or_default();
                let context_headers = s.context_headers.unwrap_or_default();
                let mut lower: Vec<String> = Vec::new();
                for h in headers.keys().chain(context_headers.keys()) {
                    let l = h.to_ascii_lowercase();
                    if lower.contains(&l) {
                        problems.push(format!(
                            "{at}.headers: {h:?} is given twice (header names ignore case)"
                        ));
                    }
                    if h.is_empty()
                        || !h
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
                    {
                        problems.push(format!("{at}.headers: {h:?} is not a valid header name"));
                    }
                    lower.push(l);
                }
                for (h, path) in &context_headers {
                    if !is_context_path(path) {
                        problems.push(format!(
                            "{at}.context_headers.{h}: {path:?} is not a context path such as \"run.id\" or \"identity.tenant_id\""
                        ));
                    }
                }
                Some(SourceKind::Http {
                    url,
                    headers,
                    context_headers,
                })
            } else {
                for (key, present) in [
                    ("args", s.args.is_some()),
                    ("env", s.env.is_some()),
                    ("cwd", s.cwd.is_some()),
                    ("headers", s.headers.is_some()),
                    ("context_headers", s.context_headers.is_some()),
                ] {
                    mismatch(key, present, problems, "command or url");
                }
                s.catalog
                    .map(|c| SourceKind::Catalog { path: base.join(c) })
            }
        }
        0 => {
            problems.push(format!("{at}: needs one of command, url or catalog"));
            None
        }
        _ => {
            problems.push(format!("{at}: give only one of command, url or catalog"));
            None
        }
    };
    if let Some(SourceKind::Stdio { env, .. }) = &kind {
        for (k, v) in env {
            check_placeholders(&format!("{at}.env.{k}"), v, problems);
        }
    }
    if let Some(SourceKind::Http { headers, .. }) = &kind {
        for (k, v) in headers {
            check_placeholders(&format!("{at}.headers.{k}"), v, problems);
        }
    }
    let group = match (s.group, s.description) {
        (Some(g), Some(d)) => {
            if direct {
                problems.push(format!("{at}.group: a direct source has no group"));
            }
            for p in [group_name_problem(&g), group_description_problem(&d)]
                .into_iter()
                .flatten()
            {
                problems.push(format!("{at}.group: {p}"));
            }
            Some((g, d))
        }
        (None, None) => {
            if !direct && !is_catalog {
                problems.push(format!(
                    "{at}: a proxied source needs group and description"
                ));
            }
            None
        }
        (Some(_), None) => {
            problems.push(format!(
                "{at}.description: missing (a group needs a description)"
            ));
            None
        }
        (None, Some(_)) => {
            problems.push(format!(
                "{at}.group: missing (a description belongs to a group)"
            ));
            None
        }
    };
    if problems.len() != before {
        return None;
    }
    Some(SourceConfig {
        name,
        kind: kind?,
        group,
        direct,
        instructions: s.instructions.unwrap_or_default(),
    })
}

fn is_context_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('.').all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

/// Checks that every `${...}` in a value is a well-formed `${env:NAME}`.
fn check_placeholders(at: &str, value: &str, problems: &mut Vec<String>) {
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            problems.push(format!("{at}: unclosed \"${{\""));
            return;
        };
        let inner = &after[..end];
        let ok = inner.strip_prefix("env:").is_some_and(|name| {
            let mut b = name.bytes();
            b.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
        });
        if !ok {
            problems.push(format!(
                "{at}: \"${{{inner}}}\" is not a secret reference; write ${{env:NAME}}"
            ));
        }
        rest = &after[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
             cache_dir = \"cache\"\nmin_similarity = 0.3\n[search.hybrid]\nfusion = \"rrf\"\n\
             semantic_weight = 0.7\nrrf_k = 10\nconfidence_scale = 5\nconfidence_slope = 3\n",
        )
        .expect("valid");
        let e = &c.settings.semantic;
        assert_eq!(e.model.as_deref(), Some(Path::new("/etc/ts/models/minilm")));
        assert_eq!(e.cache_dir(), PathBuf::from("/etc/ts/cache"));
        assert_eq!(e.min_similarity(), 0.3);
        assert_eq!(c.settings.hybrid.fusion, crate::config::Fusion::Rrf);
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
        let text = problems.join("\n");
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
    fn a_negative_number_is_reported_as_given() {
        let e = parse("[search]\nmax_results = -5\nmax_search_bytes = -1\n").expect_err("invalid");
        let ConfigError::Invalid { problems, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(
            problems,
            &[
                "search.max_results: -5 is outside 1..=100".to_owned(),
                "search.max_search_bytes: -1 is outside 1024..=32768".to_owned()
            ]
        );
    }

    #[test]
    fn limits() {
        let c = parse("[limits]\ncall_timeout_ms = 1500\nmax_tool_calls = 40\nmax_http_sessions = 50\nhttp_session_idle_s = 60\n").expect("valid");
        assert_eq!(c.call_timeout, Some(std::time::Duration::from_millis(1500)));
        assert_eq!(c.max_tool_calls, Some(40));
        assert_eq!(c.max_http_sessions, Some(50));
        assert_eq!(
            c.http_session_idle,
            Some(std::time::Duration::from_secs(60))
        );
        let e = parse("[limits]\nmax_http_sessions = 0\nhttp_session_idle_s = -1\n")
            .expect_err("invalid");
        let text = e.to_string();
        assert!(
            text.contains("limits.max_http_sessions: 0 is outside")
                && text.contains("limits.http_session_idle_s: -1 is outside"),
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
}
