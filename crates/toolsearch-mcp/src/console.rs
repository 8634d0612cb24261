//! The operator's console at `/ui/` on the HTTP listener: pages the gateway renders itself
//! (its assets embedded; nothing fetched from elsewhere), read-only — it makes no call and no
//! reload, and sets no cookie.
//!
//! | path | view |
//! |---|---|
//! | `/ui/` | Sources: each source's group, transport, status, tools, restarts, calls, errors, median latency |
//! | `/ui/tools` | Tools: groups and tools; `?q=` ranks the catalog with every method side by side; `?tool=` shows one tool's definition |
//! | `/ui/calls` | Calls: the most recent tool calls (see [`crate::recent_calls`]) |
//!
//! Access: with no credentials configured (no `[[client]]`, `[auth.jwt]` or bearer token) the
//! console is open when the gateway listens on loopback, and refused elsewhere. Otherwise every
//! page needs `Authorization: Bearer` of an admin caller (see [`CallerIdentity::admin`]): a
//! page asked without one answers `401` with a form, whose script keeps the token in the tab's
//! session storage and sends it in the header. `Host` and `Origin` are checked as for `/mcp`.

mod assets;
mod pages;
mod side_by_side;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};

use crate::Gateway;
use crate::accept::HttpResponse;
use crate::auth::{Authenticator, CallerIdentity};
use crate::secrets::constant_time_eq;

/// Where the console is served (every path under it).
pub const CONSOLE_PATH: &str = "/ui/";

/// Whether a request's path is the console's.
pub(crate) fn is_console(path: &str) -> bool {
    path == "/ui" || path.starts_with(CONSOLE_PATH)
}

/// Who may open the console, as the listener is configured.
#[derive(Debug, Clone)]
pub(crate) struct ConsoleGate {
    /// Where the listener is bound.
    pub(crate) local_addr: SocketAddr,
    /// `[[client]]` and `[auth.jwt]`.
    pub(crate) auth: Option<Arc<Authenticator>>,
    /// The listener's one bearer token, when set (its holder is the operator).
    pub(crate) token: Option<Arc<[u8]>>,
    /// Browser origins allowed: the loopback ones and `--allow-origin`'s.
    pub(crate) allowed_origins: Vec<String>,
}

/// Why a request may not see the console.
enum Refusal {
    /// No token, or a token no caller has: the sign-in form, with why.
    SignIn(String),
    /// A known caller who is not an admin, or a console that may not be open.
    Forbidden(String),
}

impl ConsoleGate {
    /// Whether the request may see the console's pages.
    async fn admit(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| crate::auth::bearer_token(v.as_bytes()));
        if self.auth.is_none() && self.token.is_none() {
            return if self.local_addr.ip().is_loopback() {
                Ok(())
            } else {
                Err(Refusal::Forbidden(
                    "The console is open without credentials only on a loopback address. Give an operator a token: a [[client]] with admin = true, or TOOLSEARCH_HTTP_TOKEN.".into(),
                ))
            };
        }
        let Some(given) = given else {
            return Err(Refusal::SignIn(
                "The console needs an admin's bearer token.".into(),
            ));
        };
        if let Some(token) = &self.token
            && constant_time_eq(given, token)
        {
            return Ok(());
        }
        let Some(auth) = &self.auth else {
            return Err(Refusal::SignIn("That token is not valid.".into()));
        };
        match auth.authenticate(Some(given)).await {
            Ok(CallerIdentity { admin: true, .. }) => Ok(()),
            Ok(_) => Err(Refusal::Forbidden(
                "This caller is not an admin: the console admits [[client]]s with admin = true and tokens whose [auth.jwt] admin_claim is true.".into(),
            )),
            Err(e) => Err(Refusal::SignIn(format!("{e}."))),
        }
    }

    /// `Host` names this listener as `/mcp` requires: on a loopback address, a loopback name.
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        if !self.local_addr.ip().is_loopback() {
            return true;
        }
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => host.split(':').next().unwrap_or_default(),
        };
        matches!(
            name.to_ascii_lowercase().as_str(),
            "localhost" | "127.0.0.1" | "::1"
        )
    }

    /// A browser's `Origin`, when sent, is a loopback one or one allowed.
    fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        self.allowed_origins
            .iter()
            .any(|allowed| origin_matches(allowed, origin))
    }
}

/// Whether `origin` matches the allowed `pattern` (`http://localhost:*` is any port, or none).
fn origin_matches(pattern: &str, origin: &str) -> bool {
    match pattern.strip_suffix(":*") {
        Some(base) => {
            origin == base
                || origin
                    .strip_prefix(base)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .is_some_and(|port| {
                        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                    })
        }
        None => origin == pattern,
    }
}

/// A page or asset, with the headers every console answer carries: no caching, no framing,
/// scripts and styles from the gateway only.
fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> HttpResponse {
    let mut r = Response::new(Full::new(body).boxed());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

fn html(status: StatusCode, page: maud::Markup) -> HttpResponse {
    respond(
        status,
        "text/html; charset=utf-8",
        Bytes::from(page.into_string()),
    )
}

/// Answers one request for a path under [`CONSOLE_PATH`].
pub(crate) async fn answer(
    parts: &http::request::Parts,
    gateway: &Arc<Gateway>,
    gate: &ConsoleGate,
) -> HttpResponse {
    if !gate.host_allowed(&parts.headers) || !gate.origin_allowed(&parts.headers) {
        return html(
            StatusCode::FORBIDDEN,
            pages::refused("This Host or Origin may not open the console."),
        );
    }
    if parts.method != Method::GET && parts.method != Method::HEAD {
        let mut r = html(
            StatusCode::METHOD_NOT_ALLOWED,
            pages::refused("The console only reads: it answers GET and HEAD."),
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let path = parts.uri.path();
    // The stylesheet and the script hold nothing of the gateway's: the sign-in form needs them.
    if let Some((content_type, body)) = assets::asset(path) {
        return respond(StatusCode::OK, content_type, Bytes::from_static(body));
    }
    match gate.admit(&parts.headers).await {
        Ok(()) => {}
        Err(Refusal::SignIn(why)) => {
            let mut r = html(StatusCode::UNAUTHORIZED, pages::sign_in(&why));
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
        Err(Refusal::Forbidden(why)) => return html(StatusCode::FORBIDDEN, pages::refused(&why)),
    }
    let query = parts.uri.query().unwrap_or_default();
    let param = |key: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    match path {
        "/ui" | "/ui/" | "/ui/sources" => html(StatusCode::OK, pages::sources(gateway)),
        "/ui/calls" => html(StatusCode::OK, pages::calls(gateway)),
        "/ui/tools" => {
            if let Some(tool) = param("tool") {
                return match pages::tool(gateway, &tool) {
                    Some(page) => html(StatusCode::OK, page),
                    None => html(
                        StatusCode::NOT_FOUND,
                        pages::refused(&format!("No tool is named {tool:?}.")),
                    ),
                };
            }
            let q = param("q").filter(|q| !q.trim().is_empty());
            let ranked = match &q {
                Some(q) => {
                    let (gateway, q) = (gateway.clone(), q.clone());
                    // Embedding a question is CPU work: off the reactor.
                    match tokio::task::spawn_blocking(move || side_by_side::rank(&gateway, &q))
                        .await
                    {
                        Ok(ranked) => Some(ranked),
                        Err(e) => {
                            tracing::error!(error = %e, "the console's search failed");
                            None
                        }
                    }
                }
                None => None,
            };
            html(
                StatusCode::OK,
                pages::tools(gateway, q.as_deref(), ranked.as_deref()),
            )
        }
        _ => html(
            StatusCode::NOT_FOUND,
            pages::refused("The console has no such page."),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `:*` allows any port or none; anything else must be the same origin exactly.
    #[test]
    fn origins_match_as_for_mcp() {
        assert!(origin_matches(
            "http://localhost:*",
            "http://localhost:8080"
        ));
        assert!(origin_matches("http://localhost:*", "http://localhost"));
        assert!(!origin_matches(
            "http://localhost:*",
            "http://localhost.evil:80"
        ));
        assert!(!origin_matches("http://localhost:*", "http://localhost:"));
        assert!(origin_matches("https://ops.example", "https://ops.example"));
        assert!(!origin_matches(
            "https://ops.example",
            "https://ops.example.evil"
        ));
    }
}
