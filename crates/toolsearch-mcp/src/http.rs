//! The gateway over streamable HTTP (rmcp's service on hyper).
//!
//! Secure by default: it binds where it is told (the CLI defaults to loopback); `Host` must be
//! a loopback name unless the bind address is not loopback; a browser `Origin`, when present,
//! must be a loopback origin unless more are allowed; and when a bearer token is configured
//! every request must carry `Authorization: Bearer <token>` (compared in constant time).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{Gateway, GatewayServer};

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
}

impl HttpOptions {
    /// Options for `addr`, no token, loopback origins only.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            bearer_token: None,
            allowed_origins: Vec::new(),
        }
    }

    /// Requires this bearer token.
    pub fn with_bearer_token(mut self, token: Option<String>) -> Self {
        self.bearer_token = token.filter(|t| !t.is_empty());
        self
    }
}

type Token = Arc<std::sync::RwLock<Option<Arc<[u8]>>>>;

fn bearer(token: Option<String>) -> Option<Arc<[u8]>> {
    token
        .filter(|t| !t.is_empty())
        .map(|t| Arc::from(format!("Bearer {t}").into_bytes()))
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
        let mut slot = self.token.write().unwrap_or_else(|p| p.into_inner());
        *slot = bearer(token);
    }

    /// Stops accepting, ends sessions, and waits for the accept loop to finish.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(
    status: StatusCode,
    text: &'static str,
) -> Response<BoxBody<Bytes, std::convert::Infallible>> {
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

/// Binds and serves `gateway` until [`HttpServer::shutdown`]. Each MCP session gets its own
/// [`GatewayServer`] (its own usage count).
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
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(GatewayServer::new(factory_gateway.clone())),
        LocalSessionManager::default().into(),
        config,
    ));
    let token: Token = Arc::new(std::sync::RwLock::new(bearer(options.bearer_token)));
    let server_token = token.clone();
    let accept_stop = stop.clone();
    let task = tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                _ = accept_stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                },
            };
            let service = service.clone();
            let token = token.clone();
            let conn_stop = accept_stop.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let service = service.clone();
                    let token = token.clone();
                    async move {
                        let expected = token.read().unwrap_or_else(|p| p.into_inner()).clone();
                        if let Some(expected) = expected {
                            let given = req
                                .headers()
                                .get(http::header::AUTHORIZATION)
                                .map(|v| v.as_bytes())
                                .unwrap_or_default();
                            if !constant_time_eq(given, &expected) {
                                return Ok::<_, std::convert::Infallible>(plain(
                                    StatusCode::UNAUTHORIZED,
                                    "missing or wrong bearer token\n",
                                ));
                            }
                        }
                        Ok(service.handle(req).await)
                    }
                });
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), handler);
                tokio::select! {
                    _ = conn => {}
                    _ = conn_stop.cancelled() => {}
                }
            });
        }
    });
    Ok(HttpServer {
        local_addr,
        stop,
        task,
        token: server_token,
    })
}
