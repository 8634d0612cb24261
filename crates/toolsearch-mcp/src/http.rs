//! The gateway over streamable HTTP (rmcp's service on hyper).
//!
//! Secure by default: it binds where it is told (the CLI defaults to loopback); `Host` must be
//! a loopback name unless the bind address is not loopback; a browser `Origin`, when present,
//! must be a loopback origin unless more are allowed; and when a bearer token is configured
//! every request must carry `Authorization: Bearer <token>` (the scheme in any case, as RFC 9110
//! allows; the token compared in constant time).
//!
//! In front of rmcp's service (each connection sets `TCP_NODELAY`, see `accept`): a
//! POST body that is not a JSON-RPC message is answered `400` with the JSON-RPC error
//! the specification gives (`-32700` parse error, `-32600` invalid request; see
//! `jsonrpc`) instead of rmcp's `415`; a body over [`MAX_BODY_BYTES`] gets `413` with a
//! JSON-RPC error; a `DELETE` that ends a session answers `200`. Open sessions are bounded: at
//! most [`HttpOptions::max_sessions`] at once (a new one over it gets `503` and `Retry-After`),
//! each closed after [`HttpOptions::session_idle`] unused; connections are bounded in time too
//! ([`HttpOptions::connections`]). `/healthz` and `/readyz` are
//! answered before any of this, without a token (see [`crate::health`]); `/metrics` after the
//! authentication (see [`crate::scrape`]), as is `/v1/tool_search` (see [`crate::tool_search`]).
//! The console under `/ui/` admits its own callers, admins only (see [`crate::console`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use crate::accept::ConnectionLimits;
use crate::accept::{HttpResponse, spawn_accept_loop};
use crate::auth::{Authenticator, CallerIdentity, bearer_token};
use crate::in_progress::InProgress;
use crate::replica::ReplicaSessions;
use crate::secrets::constant_time_eq;
use crate::server::Handler;
use crate::session_owners::SessionOwners;
use crate::{Gateway, jsonrpc};

/// Where the protected-resource metadata (RFC 9728) is served.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Loopback origins a local browser client may use.
pub const LOOPBACK_ORIGINS: [&str; 3] =
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// How to serve HTTP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Required bearer token, if any.
    pub bearer_token: Option<String>,
    /// Extra allowed browser origins (besides loopback ones).
    pub allowed_origins: Vec<String>,
    /// Most MCP sessions kept open at once; a new one over it gets 503 (default
    /// [`DEFAULT_MAX_SESSIONS`]).
    pub max_sessions: usize,
    /// A session unused this long is closed (default [`DEFAULT_SESSION_IDLE`]).
    pub session_idle: Duration,
    /// Who may call, and who each caller is (`[[client]]`, `[auth.jwt]`): every request needs a
    /// valid bearer token, and its caller's identity becomes its session's context.
    pub auth: Option<Arc<Authenticator>>,
    /// This replica's name, the prefix of its session ids (see [`crate::replica`]).
    pub replica: Option<String>,
    /// How long a connection may take to send a request's head, and sit with no request in
    /// progress.
    pub connections: ConnectionLimits,
}

/// Default of [`HttpOptions::max_sessions`]: an open session holds ~160 KB here (BENCHMARKS.md),
/// so this bounds them near 160 MB.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// Default of [`HttpOptions::session_idle`] (rmcp's own default).
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

impl HttpOptions {
    /// Options for `addr`, no token, loopback origins only, the default session limits.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            bearer_token: None,
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: DEFAULT_SESSION_IDLE,
            auth: None,
            replica: None,
            connections: ConnectionLimits::default(),
        }
    }

    /// Sets the connection limits.
    pub fn with_connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.connections = limits;
        self
    }

    /// Names this replica: its session ids start with `<name>.` (checked with
    /// [`replica_name_problem`](crate::replica::replica_name_problem)).
    pub fn with_replica(mut self, name: Option<String>) -> Self {
        self.replica = name;
        self
    }

    /// Authenticates every request with `auth`.
    pub fn with_auth(mut self, auth: Option<Arc<Authenticator>>) -> Self {
        self.auth = auth;
        self
    }

    /// Sets the session limits (`None` keeps a default).
    pub fn with_session_limits(
        mut self,
        max_sessions: Option<usize>,
        idle: Option<Duration>,
    ) -> Self {
        if let Some(n) = max_sessions {
            self.max_sessions = n.max(1);
        }
        if let Some(d) = idle {
            self.session_idle = d;
        }
        self
    }

    /// Requires this bearer token.
    pub fn with_bearer_token(mut self, token: Option<String>) -> Self {
        self.bearer_token = token.filter(|t| !t.is_empty());
        self
    }
}

type Token = Arc<parking_lot::RwLock<Option<Arc<[u8]>>>>;

/// Largest POST body read (4 MiB, rmcp's own limit).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

fn bearer(token: Option<String>) -> Option<Arc<[u8]>> {
    token
        .filter(|t| !t.is_empty())
        .map(|t| Arc::from(t.into_bytes()))
}

/// A running HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    /// The bound address (the port is real even when 0 was asked).
    pub local_addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    token: Token,
}

impl HttpServer {
    /// Replaces the required bearer token (rotation); `None` drops the requirement.
    pub fn set_bearer_token(&self, token: Option<String>) {
        let mut slot = self.token.write();
        *slot = bearer(token);
    }

    /// Stops accepting, ends sessions, and waits for the accept loop to finish.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

fn json_rpc_error(status: StatusCode, body: &serde_json::Value) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// What a POST asks, as far as the front needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asks {
    /// `initialize`: a new session.
    Initialize,
    /// `tools/list`: its answer gets its tools' unmodelled members back.
    ListTools,
    /// Anything else.
    Other,
}

/// A POST body read and checked: its bytes, what it asks, and its JSON-RPC id when it is a
/// request.
type Checked = (Bytes, Asks, Option<serde_json::Value>);

/// Reads a POST body; answers a body that is too large, unreadable or no JSON-RPC message
/// itself, and hands anything else on as bytes, saying what it asks and its id.
async fn checked_body(body: Incoming) -> Result<Checked, HttpResponse> {
    use http_body_util::Limited;
    let collected = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            let too_large = e.is::<http_body_util::LengthLimitError>();
            let (status, message) = if too_large {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("Invalid Request: the body is longer than {MAX_BODY_BYTES} bytes"),
                )
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    format!("Invalid Request: the body could not be read: {e}"),
                )
            };
            let body =
                jsonrpc::error_response(serde_json::Value::Null, jsonrpc::INVALID_REQUEST, message);
            return Err(json_rpc_error(status, &body));
        }
    };
    match serde_json::from_slice::<ClientJsonRpcMessage>(&collected) {
        Ok(message) => {
            use rmcp::model::ClientRequest;
            let asks = match &message {
                ClientJsonRpcMessage::Request(r) => match r.request {
                    ClientRequest::InitializeRequest(_) => Asks::Initialize,
                    ClientRequest::ListToolsRequest(_) => Asks::ListTools,
                    _ => Asks::Other,
                },
                _ => Asks::Other,
            };
            let id = match &message {
                ClientJsonRpcMessage::Request(r) => serde_json::to_value(&r.id).ok(),
                _ => None,
            };
            Ok((collected, asks, id))
        }
        Err(e) => {
            let body = match jsonrpc::classify(&collected, &e) {
                jsonrpc::Verdict::Answer(body) => body,
                // Over HTTP a bad notification or response still gets a status: 400 and an
                // error without an id.
                jsonrpc::Verdict::Ignore(why) => jsonrpc::error_response(
                    serde_json::Value::Null,
                    jsonrpc::INVALID_REQUEST,
                    format!("Invalid Request: {why}"),
                ),
            };
            Err(json_rpc_error(StatusCode::BAD_REQUEST, &body))
        }
    }
}

/// The header naming a request's MCP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// What a request naming an unknown session gets (rmcp's answer, with a JSON-RPC error for a
/// request); another caller's session gets the same.
fn session_not_found(id: Option<&serde_json::Value>) -> HttpResponse {
    let id = id.cloned().unwrap_or(serde_json::Value::Null);
    let body = jsonrpc::error_response(
        id,
        jsonrpc::SESSION_NOT_FOUND,
        "Not Found: Session not found".into(),
    );
    json_rpc_error(StatusCode::NOT_FOUND, &body)
}

/// What a request gets whose id is already in progress in its session.
fn duplicate_id(id: &serde_json::Value) -> HttpResponse {
    let body = jsonrpc::error_response(
        id.clone(),
        jsonrpc::INVALID_REQUEST,
        format!(
            "Invalid Request: a request with id {id} is already in progress in this session; give each request its own id"
        ),
    );
    json_rpc_error(StatusCode::BAD_REQUEST, &body)
}

/// Forgets the owners of sessions that ended without a DELETE (idle, or over the limit), once
/// they outnumber the open sessions.
async fn forget_closed(owners: &SessionOwners, sessions: &ReplicaSessions) {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    if owners.len() <= sessions.len().await + 64 {
        return;
    }
    for id in owners.ids() {
        if !sessions
            .has_session(&Arc::from(id.as_str()))
            .await
            .unwrap_or(false)
        {
            owners.closed(&id);
        }
    }
}

/// 503 for a new session over [`HttpOptions::max_sessions`].
fn too_many_sessions(max: usize) -> HttpResponse {
    let body = jsonrpc::error_response(
        serde_json::Value::Null,
        -32000,
        format!("the gateway has {max} open sessions, its limit; try again when one has ended"),
    );
    let mut r = json_rpc_error(StatusCode::SERVICE_UNAVAILABLE, &body);
    r.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("5"),
    );
    r
}

fn plain(status: StatusCode, text: &'static str) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
    }
    r
}

/// The gateway's own URL as the request reached it (`X-Forwarded-Proto` says the scheme
/// behind a TLS-terminating proxy).
fn base_url(parts: &http::request::Parts) -> String {
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = parts
        .headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .filter(|s| *s == "https" || *s == "http")
        .unwrap_or("http");
    format!("{scheme}://{host}")
}

/// 401 pointing at the protected-resource metadata.
fn unauthorized(base: &str, why: &str) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(format!("{why}\n"))).boxed());
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    let challenge = format!(
        "Bearer resource_metadata=\"{base}{RESOURCE_METADATA_PATH}\", error=\"invalid_token\""
    );
    if let Ok(v) = http::HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
    }
    r
}

/// The protected-resource metadata of RFC 9728.
fn resource_metadata(base: &str, auth: &Authenticator) -> HttpResponse {
    let body = serde_json::json!({
        "resource": format!("{base}/"),
        "authorization_servers": auth.authorization_servers(),
        "bearer_methods_supported": ["header"],
    });
    json_rpc_error(StatusCode::OK, &body)
}

/// Binds and serves `gateway` until [`HttpServer::shutdown`]. Each MCP session gets its own
/// [`crate::GatewayServer`] (its own usage count).
pub async fn serve_http(
    gateway: Arc<Gateway>,
    options: HttpOptions,
) -> std::io::Result<HttpServer> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local_addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop.child_token();
    config.allowed_origins = LOOPBACK_ORIGINS
        .iter()
        .map(|s| (*s).to_owned())
        .chain(options.allowed_origins.clone())
        .collect();
    let config = config.enforce_origin_validation();
    let config = if local_addr.ip().is_loopback() {
        config
    } else {
        config.disable_allowed_hosts()
    };
    let factory_gateway = gateway.clone();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.session_idle);
    let sessions = Arc::new(ReplicaSessions::new(manager, options.replica.as_deref()));
    let max_sessions = options.max_sessions;
    let owners = Arc::new(SessionOwners::default());
    let in_progress = Arc::new(InProgress::default());
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(Handler::new(factory_gateway.clone())),
        sessions.clone(),
        config,
    ));
    let token: Token = Arc::new(parking_lot::RwLock::new(bearer(options.bearer_token)));
    let auth = options.auth.clone();
    let console = crate::console::ConsoleGate {
        local_addr,
        auth: options.auth.clone(),
        token: None,
        allowed_origins: LOOPBACK_ORIGINS
            .iter()
            .map(|s| (*s).to_owned())
            .chain(options.allowed_origins.clone())
            .collect(),
    };
    let server_token = token.clone();
    let handle = move |req: Request<Incoming>| {
        let service = service.clone();
        let token = token.clone();
        let sessions = sessions.clone();
        let auth = auth.clone();
        let gateway = gateway.clone();
        let owners = owners.clone();
        let in_progress = in_progress.clone();
        let mut console = console.clone();
        async move {
            if let Some(answer) = crate::health::probe(req.method(), req.uri().path(), &gateway) {
                return Ok(answer);
            }
            // The console admits its own callers (admins only), and signs them in.
            if crate::console::is_console(req.uri().path()) {
                console.token = token.read().clone();
                let (parts, _body) = req.into_parts();
                return Ok(crate::console::answer(&parts, &gateway, &console).await);
            }
            let expected = token.read().clone();
            if let Some(expected) = expected {
                let given = req
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| bearer_token(v.as_bytes()))
                    .unwrap_or_default();
                if !constant_time_eq(given, &expected) {
                    let refused =
                        plain(StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n");
                    let (parts, body) = req.into_parts();
                    let refused =
                        crate::json_errors::refusing(&parts.method, body, MAX_BODY_BYTES, refused);
                    return Ok::<_, std::convert::Infallible>(refused.await);
                }
            }
            let (mut parts, body) = req.into_parts();
            if let Some(auth) = &auth {
                let base = base_url(&parts);
                if parts.uri.path() == RESOURCE_METADATA_PATH {
                    return Ok(resource_metadata(&base, auth));
                }
                let given = parts
                    .headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| bearer_token(v.as_bytes()));
                match auth.authenticate(given).await {
                    Ok(identity) => {
                        parts.extensions.insert(identity);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "request refused");
                        let refused = unauthorized(&base, &e.to_string());
                        let refused = crate::json_errors::refusing(
                            &parts.method,
                            body,
                            MAX_BODY_BYTES,
                            refused,
                        );
                        return Ok(refused.await);
                    }
                }
            }
            if parts.uri.path() == crate::tool_search::TOOL_SEARCH_PATH {
                return Ok(crate::tool_search::answer(&parts, body, &gateway).await);
            }
            if parts.uri.path() == crate::scrape::METRICS_PATH {
                return Ok(if gateway.access().policies.is_empty() {
                    crate::scrape::answer(&parts.method, &parts.headers, &gateway)
                } else {
                    crate::scrape::refused()
                });
            }
            let is_delete = parts.method == http::Method::DELETE;
            let wants_json = parts.method == http::Method::POST
                && crate::json_answer::accepts_json(&parts.headers);
            let caller = parts
                .extensions
                .get::<CallerIdentity>()
                .map(|i| i.key.clone());
            let session = parts
                .headers
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut asks = Asks::Other;
            let mut request_id = None;
            let body = if parts.method == http::Method::POST {
                match checked_body(body).await {
                    Ok((bytes, asked, id)) => {
                        asks = asked;
                        request_id = id;
                        if asks == Asks::Initialize
                            && session.is_none()
                            && sessions.len().await >= max_sessions
                        {
                            return Ok(too_many_sessions(max_sessions));
                        }
                        Full::new(bytes)
                    }
                    Err(answer) => return Ok(answer),
                }
            } else {
                // GET and DELETE carry no body worth reading.
                Full::new(Bytes::new())
            };
            // Another caller's session is answered as an unknown one, whatever the method.
            if let Some(id) = &session
                && !owners.allows(id, caller.as_deref())
            {
                tracing::debug!("a request named another caller's session");
                return Ok(session_not_found(request_id.as_ref()));
            }
            // One id in progress at a time in a session: a second gets an error, not silence.
            let in_progress = match (&session, &request_id) {
                (Some(session), Some(id)) => match in_progress.begin(session, id) {
                    Some(guard) => Some(guard),
                    None => return Ok(duplicate_id(id)),
                },
                _ => None,
            };
            let mut response = service.handle(Request::from_parts(parts, body)).await;
            if wants_json {
                // One message is the whole answer: plain JSON, so the client keeps its
                // connection (see `json_answer`).
                // A tool list gets back what rmcp's `Tool` has no field for.
                let restore = |result: &mut serde_json::Value| {
                    let members = gateway.unmodelled_members();
                    !members.is_empty()
                        && crate::wire_fields::restore(result, |name| members.get(name).cloned())
                };
                let amend = (asks == Asks::ListTools)
                    .then_some(&restore as &(dyn Fn(&mut serde_json::Value) -> bool + Sync));
                response = crate::json_answer::prefer_json(response, amend).await;
            }
            let ok = response.status().is_success();
            if asks == Asks::Initialize && session.is_none() && ok {
                let opened = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok());
                if let Some(opened) = opened {
                    owners.opened(opened, caller.as_deref());
                    forget_closed(&owners, &sessions).await;
                }
            }
            if is_delete && response.status() == StatusCode::ACCEPTED {
                // The session is gone: that is a plain success.
                *response.status_mut() = StatusCode::OK;
            }
            if is_delete
                && response.status().is_success()
                && let Some(id) = &session
            {
                owners.closed(id);
            }
            if let Some(id) = &request_id {
                response = crate::json_errors::as_json_rpc(response, id).await;
            }
            Ok(match in_progress {
                Some(guard) => crate::accept::guard_body(response, guard),
                None => response,
            })
        }
    };
    let task = spawn_accept_loop(listener, stop.clone(), "mcp", options.connections, handle);
    Ok(HttpServer {
        local_addr,
        stop,
        task,
        token: server_token,
    })
}
