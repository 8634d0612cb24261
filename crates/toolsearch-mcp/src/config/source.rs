//! One `[[source]]`: where its tools come from (a stdio or HTTP MCP server, or a catalog
//! file), its group and presentation, validated with every problem reported by its path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::access_file::is_context_path;
use super::raw::{RawCodeActTools, RawSource, RawToolFilter};
use super::source_auth::{OAuthConfig, validate_auth};
use toolsearch::{
    CodeActTools, Problems, glob_problem, group_description_problem, group_name_problem, within,
};

/// The variables of the gateway's environment every stdio upstream gets, as the official MCP
/// SDKs pass them by default (their `DEFAULT_INHERITED_ENV_VARS`); nothing else of the
/// gateway's environment reaches a child unless its source names it in `inherit_env`.
pub const DEFAULT_INHERITED_ENV: &[&str] = if cfg!(windows) {
    &[
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    ]
} else {
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
};

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
        /// Variables of the gateway's own environment passed on as they are (beside
        /// [`DEFAULT_INHERITED_ENV`]); no other variable of it reaches the child.
        inherit_env: Vec<String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// An MCP server over HTTP.
    Http {
        /// Endpoint.
        url: String,
        /// Streamable HTTP, or the legacy HTTP+SSE transport.
        transport: HttpTransport,
        /// Static headers (values may hold `${env:NAME}`).
        headers: BTreeMap<String, String>,
        /// Per-session headers: header name → context path (`run.id`, `identity.tenant_id`).
        context_headers: BTreeMap<String, String>,
        /// `auth`: the source logs in with OAuth (`toolsearch auth login`).
        oauth: Option<Box<OAuthConfig>>,
    },
    /// A static catalog file.
    Catalog {
        /// Path (resolved against the config's folder).
        path: PathBuf,
    },
}

/// `transport` of a `url` source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpTransport {
    /// `"streamable-http"` (the default): the current protocol's transport.
    #[default]
    StreamableHttp,
    /// `"sse"`: the legacy HTTP+SSE transport of protocol 2024-11-05 (a GET event stream,
    /// messages POSTed to the endpoint it names).
    Sse,
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
    /// `codeact`: which of its tools CodeAct programs may call (default none).
    pub codeact: CodeActTools,
    /// `per_session`: each client session gets its own connection to this MCP server (a child
    /// process of its own over stdio), so what the server asks of a client always goes to the
    /// session whose call caused it (default false: one shared connection).
    pub per_session: bool,
    /// `sampling`: the server may ask the client's model through `sampling/createMessage`
    /// (default true; false refuses its sampling requests).
    pub sampling: bool,
    /// `tools`: which of the upstream's tools are offered, by their own names.
    pub tools: ToolFilter,
    /// `call_timeout_ms`: how long a call of this source's tools may run (default: `[limits]
    /// call_timeout_ms`).
    pub call_timeout: Option<std::time::Duration>,
}

/// `tools = { allow = [...], deny = [...] }` of an upstream source: globs (`*`, `?`, `[...]`)
/// over its tools' own names. A tool is offered when `allow` is absent or one of its globs
/// matches, and no `deny` glob does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFilter {
    /// Globs of the tools offered; `None`: every tool.
    pub allow: Option<Vec<String>>,
    /// Globs of the tools never offered.
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether it keeps every tool.
    pub fn is_open(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty()
    }
}

pub(super) fn validate_source(
    at: &str,
    s: RawSource,
    base: &Path,
    seen: &mut Vec<String>,
    problems: &mut Problems,
) -> Option<SourceConfig> {
    let before = problems.len();
    let name = match s.name {
        Some(n) if !n.trim().is_empty() => n,
        _ => {
            problems.add(format!("{at}.name"), "missing or empty");
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
            problems.add(format!("{at}.name"), "used by an earlier source");
        }
        seen.push(name.clone());
    }
    let direct = match s.presentation.as_deref() {
        None | Some("proxy") => false,
        Some("direct") => true,
        Some(other) => {
            problems.add(
                format!("{at}.presentation"),
                format!("{other:?} is not one of proxy, direct"),
            );
            false
        }
    };
    let kinds = [s.command.is_some(), s.url.is_some(), s.catalog.is_some()];
    let is_catalog = s.catalog.is_some();
    let mismatch = |key: &str, present: bool, problems: &mut Problems, allowed: &str| {
        if present {
            problems.add(
                format!("{at}.{key}"),
                format!("only allowed with {allowed}"),
            );
        }
    };
    let kind = match kinds.iter().filter(|k| **k).count() {
        1 => {
            if let Some(command) = s.command {
                mismatch("headers", s.headers.is_some(), problems, "url");
                mismatch("transport", s.transport.is_some(), problems, "url");
                mismatch("auth", s.auth.is_some(), problems, "url");
                mismatch(
                    "context_headers",
                    s.context_headers.is_some(),
                    problems,
                    "url",
                );
                if command.trim().is_empty() {
                    problems.add(format!("{at}.command"), "empty");
                }
                let inherit_env = s.inherit_env.unwrap_or_default();
                for name in &inherit_env {
                    if !is_env_name(name) {
                        problems.add(format!("{at}.inherit_env"), format!("{name:?} is not a variable name (letters, digits and _, not starting with a digit)"));
                    }
                }
                Some(SourceKind::Stdio {
                    command,
                    args: s.args.unwrap_or_default(),
                    env: s.env.unwrap_or_default(),
                    inherit_env,
                    cwd: s.cwd.map(|c| base.join(c)),
                })
            } else if let Some(url) = s.url {
                for (key, present) in [
                    ("args", s.args.is_some()),
                    ("env", s.env.is_some()),
                    ("inherit_env", s.inherit_env.is_some()),
                    ("cwd", s.cwd.is_some()),
                ] {
                    mismatch(key, present, problems, "command");
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problems.add(
                        format!("{at}.url"),
                        format!("{url:?} must start with http:// or https://"),
                    );
                }
                let headers = s.headers.unwrap_or_default();
                let context_headers = s.context_headers.unwrap_or_default();
                let mut lower: Vec<String> = Vec::new();
                for h in headers.keys().chain(context_headers.keys()) {
                    let l = h.to_ascii_lowercase();
                    if lower.contains(&l) {
                        problems.add(
                            format!("{at}.headers"),
                            format!("{h:?} is given twice (header names ignore case)"),
                        );
                    }
                    if h.is_empty()
                        || !h
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
                    {
                        problems.add(
                            format!("{at}.headers"),
                            format!("{h:?} is not a valid header name"),
                        );
                    }
                    lower.push(l);
                }
                for (h, path) in &context_headers {
                    if !is_context_path(path) {
                        problems.add(format!("{at}.context_headers.{h}"), format!("{path:?} is not a context path such as \"run.id\" or \"identity.tenant_id\""));
                    }
                }
                let transport = match s.transport.as_deref() {
                    None | Some("streamable-http") => HttpTransport::StreamableHttp,
                    Some("sse") => HttpTransport::Sse,
                    Some(other) => {
                        problems.add(
                            format!("{at}.transport"),
                            format!("{other:?} is not one of streamable-http, sse"),
                        );
                        HttpTransport::StreamableHttp
                    }
                };
                let oauth = s.auth.map(|a| Box::new(validate_auth(&at, a, problems)));
                if oauth.is_some() {
                    if transport == HttpTransport::Sse {
                        problems.add(
                            format!("{at}.auth"),
                            "OAuth works with transport = \"streamable-http\", not \"sse\"",
                        );
                    }
                    if let Some(h) = headers
                        .keys()
                        .find(|h| h.eq_ignore_ascii_case("authorization"))
                    {
                        problems.add(
                            format!("{at}.headers.{h}"),
                            "the OAuth login supplies the Authorization header; remove this one",
                        );
                    }
                }
                Some(SourceKind::Http {
                    url,
                    transport,
                    headers,
                    context_headers,
                    oauth,
                })
            } else {
                for (key, present) in [
                    ("args", s.args.is_some()),
                    ("env", s.env.is_some()),
                    ("inherit_env", s.inherit_env.is_some()),
                    ("cwd", s.cwd.is_some()),
                    ("headers", s.headers.is_some()),
                    ("context_headers", s.context_headers.is_some()),
                ] {
                    mismatch(key, present, problems, "command or url");
                }
                mismatch("transport", s.transport.is_some(), problems, "url");
                mismatch("auth", s.auth.is_some(), problems, "url");
                s.catalog
                    .map(|c| SourceKind::Catalog { path: base.join(c) })
            }
        }
        0 => {
            problems.add(at.as_str(), "needs one of command, url or catalog");
            None
        }
        _ => {
            problems.add(at.as_str(), "give only one of command, url or catalog");
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
                problems.add(format!("{at}.group"), "a direct source has no group");
            }
            for p in [group_name_problem(&g), group_description_problem(&d)]
                .into_iter()
                .flatten()
            {
                problems.add(format!("{at}.group"), p);
            }
            Some((g, d))
        }
        (None, None) => {
            if !direct && !is_catalog {
                problems.add(at.as_str(), "a proxied source needs group and description");
            }
            None
        }
        (Some(_), None) => {
            problems.add(
                format!("{at}.description"),
                "missing (a group needs a description)",
            );
            None
        }
        (None, Some(_)) => {
            problems.add(
                format!("{at}.group"),
                "missing (a description belongs to a group)",
            );
            None
        }
    };
    let codeact = match s.codeact {
        None | Some(RawCodeActTools::All(false)) => CodeActTools::None,
        Some(RawCodeActTools::All(true)) => CodeActTools::All,
        Some(RawCodeActTools::Tools(tools)) => {
            if let Some(bad) = tools.iter().find(|t| t.trim().is_empty()) {
                problems.add(
                    format!("{at}.codeact"),
                    format!("{bad:?} is not a tool name"),
                );
            }
            CodeActTools::Only(tools)
        }
    };
    if is_catalog {
        for (key, present) in [
            ("per_session", s.per_session.is_some()),
            ("sampling", s.sampling.is_some()),
            ("tools", s.tools.is_some()),
            ("call_timeout_ms", s.call_timeout_ms.is_some()),
        ] {
            mismatch(key, present, problems, "command or url");
        }
    }
    let tools = tool_filter(&at, s.tools.unwrap_or_default(), problems);
    let call_timeout = within(
        &format!("{at}.call_timeout_ms"),
        s.call_timeout_ms,
        1..=86_400_000,
        problems,
    )
    .map(std::time::Duration::from_millis);
    if problems.len() != before {
        return None;
    }
    Some(SourceConfig {
        tools,
        call_timeout,
        per_session: s.per_session.unwrap_or(false),
        sampling: s.sampling.unwrap_or(true),
        name,
        kind: kind?,
        group,
        direct,
        instructions: s.instructions.unwrap_or_default(),
        codeact,
    })
}

/// `tools` of a source, its globs checked.
fn tool_filter(at: &str, raw: RawToolFilter, problems: &mut Problems) -> ToolFilter {
    let filter = ToolFilter {
        allow: raw.allow,
        deny: raw.deny.unwrap_or_default(),
    };
    let allow = filter.allow.iter().flatten().map(|g| ("allow", g));
    let deny = filter.deny.iter().map(|g| ("deny", g));
    for (key, glob) in allow.chain(deny) {
        if let Some(why) = glob_problem(glob) {
            problems.add(format!("{at}.tools.{key}"), format!("{glob:?}: {why}"));
        }
    }
    filter
}

/// An environment variable's name: ASCII letters, digits and `_`, not starting with a digit.
pub(super) fn is_env_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Checks that every `${...}` in a value is a well-formed `${env:NAME}`.
fn check_placeholders(at: &str, value: &str, problems: &mut Problems) {
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            problems.add(at, "unclosed \"${\"");
            return;
        };
        let inner = &after[..end];
        let ok = inner.strip_prefix("env:").is_some_and(is_env_name);
        if !ok {
            problems.add(
                at,
                format!("\"${{{inner}}}\" is not a secret reference; write ${{env:NAME}}"),
            );
        }
        rest = &after[end + 1..];
    }
}
