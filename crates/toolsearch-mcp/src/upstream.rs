//! One upstream MCP server as a source: connect (stdio child process), list its tools (paging
//! followed, bounded), call them, and report `tools/list_changed` and disconnects.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, PaginatedRequestParams, ProtocolVersion, ServerNotification,
    SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::{RwLock, mpsc};
use toolsearch::ToolDef;
use toolsearch::dispatch::{BoxFuture, CallResult, ExecError, Executor, Session};

use crate::convert;
use crate::secrets::{MissingSecret, expand};

/// Most `tools/list` pages read from one upstream.
pub const MAX_LIST_PAGES: usize = 64;
/// Longest wait for an upstream to start and answer `initialize`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpstreamSpec {
    /// A child process speaking MCP on stdio.
    Stdio {
        /// Program (may hold `${env:NAME}`).
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Extra environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// Endpoint URL.
        url: String,
        /// Headers sent with every request (values may hold `${env:NAME}`).
        headers: BTreeMap<String, String>,
        /// Per-session headers: header name → context path (`run.id`, `identity.tenant_id`).
        /// With any, each downstream session gets its own connection carrying its values;
        /// the shared connection (tool listing) sends none of them.
        context_headers: BTreeMap<String, String>,
    },
}

/// Why an upstream could not be used.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// A `${env:NAME}` reference is unset.
    #[error(transparent)]
    Secret(#[from] MissingSecret),
    /// The process could not start.
    #[error("cannot start {command:?}: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake or a request failed.
    #[error("{0}")]
    Protocol(String),
    /// The upstream did not answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// A header name or value is not valid HTTP.
    #[error("header {0:?} is not a valid HTTP header")]
    Header(String),
    /// The upstream refused our credentials (HTTP 401/403).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// It lists more than [`MAX_LIST_PAGES`] pages of tools.
    #[error("more than {MAX_LIST_PAGES} pages of tools; the rest are ignored")]
    TooManyPages,
}

/// Events the gateway acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamEvent {
    /// The upstream's tool list changed.
    ToolsChanged(String),
}

/// The client side of one upstream connection: forwards list changes.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    name: String,
    events: mpsc::UnboundedSender<UpstreamEvent>,
}

impl ClientHandler for UpstreamClient {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .events
            .send(UpstreamEvent::ToolsChanged(self.name.clone()));
    }
}

type Running = RunningService<RoleClient, UpstreamClient>;

/// One upstream: its spec and its live connection, if any.
#[derive(Debug)]
pub struct Upstream {
    name: String,
    spec: UpstreamSpec,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    conn: RwLock<Option<Running>>,
    pid: std::sync::Mutex<Option<u32>>,
}

impl Upstream {
    /// An upstream not yet connected.
    pub fn new(
        name: impl Into<String>,
        spec: UpstreamSpec,
        events: mpsc::UnboundedSender<UpstreamEvent>,
    ) -> Self {
        Self {
            name: name.into(),
            spec,
            events,
            conn: RwLock::new(None),
            pid: std::sync::Mutex::new(None),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connects (replacing any previous connection) and lists the tools.
    pub async fn connect(&self) -> Result<Vec<ToolDef>, UpstreamError> {
        self.disconnect().await;
        let client = UpstreamClient {
            name: self.name.clone(),
            events: self.events.clone(),
        };
        let running = match &self.spec {
            UpstreamSpec::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let program = expand(command)?;
                let mut cmd = tokio::process::Command::new(&program);
                for a in args {
                    cmd.arg(expand(a)?);
                }
                for (k, v) in env {
                    cmd.env(k, expand(v)?);
                }
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                let transport =
                    TokioChildProcess::new(cmd).map_err(|source| UpstreamError::Spawn {
                        command: program.clone(),
                        source,
                    })?;
                *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = transport.id();
                tokio::time::timeout(CONNECT_TIMEOUT, client.serve(transport))
                    .await
                    .map_err(|_| UpstreamError::Timeout(CONNECT_TIMEOUT))?
                    .map_err(|e| UpstreamError::Protocol(format!("initialize failed: {e}")))?
            }
            UpstreamSpec::Http { url, headers, .. } => {
                let transport = http_transport(url, headers)?;
                // The newest protocol when the server speaks it (one `server/discover` probe),
                // else the legacy `initialize` handshake.
                let lifecycle = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::LATEST],
                    legacy_version: None,
                };
                tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    client.serve_with_lifecycle(transport, lifecycle),
                )
                .await
                .map_err(|_| UpstreamError::Timeout(CONNECT_TIMEOUT))?
                .map_err(|e| {
                    if e.auth_challenge().is_some() {
                        UpstreamError::Unauthorized(e.to_string())
                    } else {
                        UpstreamError::Protocol(format!("initialize failed: {e}"))
                    }
                })?
            }
        };
        listen_for_tool_changes(running.peer(), &self.name, &self.events);
        let tools = list_tools(running.peer()).await;
        *self.conn.write().await = Some(running);
        tools
    }

    /// Lists the tools of the live connection.
    pub async fn list_tools(&self) -> Result<Vec<ToolDef>, UpstreamError> {
        let peer = self
            .peer()
            .await
            .ok_or_else(|| UpstreamError::Protocol("not connected".into()))?;
        list_tools(&peer).await
    }

    /// The live connection's peer, if connected and not closed.
    pub async fn peer(&self) -> Option<Peer<RoleClient>> {
        let guard = self.conn.read().await;
        // The service loop ends when the transport does (a child's stdout closing, an HTTP
        // stream failing); its peer's channel is then closed.
        guard
            .as_ref()
            .filter(|r| !r.is_closed() && !r.peer().is_transport_closed())
            .map(|r| r.peer().clone())
    }

    /// The protocol version negotiated on the live connection.
    pub async fn protocol_version(&self) -> Option<String> {
        let peer = self.peer().await?;
        Some(peer.peer_info()?.protocol_version.to_string())
    }

    /// The child process id of a stdio upstream's current connection.
    pub fn pid(&self) -> Option<u32> {
        *self.pid.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether it is connected.
    pub async fn is_connected(&self) -> bool {
        self.peer().await.is_some()
    }

    /// Closes the connection (the child process is killed).
    pub async fn disconnect(&self) {
        if let Some(running) = self.conn.write().await.take() {
            let _ = running.cancel().await;
        }
    }
}

/// From protocol 2026-07-28 on, a server's change notifications reach a client only through a
/// `subscriptions/listen` subscription (a stateless HTTP server has no other stream to send them
/// on). When the upstream speaks that protocol and says its tool list can change, this opens a
/// subscription for `tools/list_changed` and forwards each notification as an event; the task
/// ends with the connection. Older protocols deliver the notification to
/// [`UpstreamClient::on_tool_list_changed`] instead.
fn listen_for_tool_changes(
    peer: &Peer<RoleClient>,
    name: &str,
    events: &mpsc::UnboundedSender<UpstreamEvent>,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    let announces = info
        .capabilities
        .tools
        .as_ref()
        .and_then(|t| t.list_changed)
        .unwrap_or(false);
    if info.protocol_version.has_initialize() || !announces {
        return;
    }
    let (peer, name, events) = (peer.clone(), name.to_owned(), events.clone());
    tokio::spawn(async move {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let mut subscription = match peer.listen(filter).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(upstream = %name, error = %e, "no tools/list_changed subscription");
                return;
            }
        };
        loop {
            match subscription.next().await {
                Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                    if events
                        .send(UpstreamEvent::ToolsChanged(name.clone()))
                        .is_err()
                    {
                        return;
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => return,
                Err(e) => {
                    tracing::debug!(upstream = %name, error = %e, "subscription ended");
                    return;
                }
            }
        }
    });
}

/// Installs rustls' ring provider once (reqwest is built without a default provider); call it
/// before building a `reqwest::Client` yourself.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, UpstreamError> {
    install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let value = expand(value)?;
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        let header_name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| UpstreamError::Header(name.clone()))?;
        let header_value =
            http::HeaderValue::from_str(&value).map_err(|_| UpstreamError::Header(name.clone()))?;
        custom.insert(header_name, header_value);
    }
    config.custom_headers = custom;
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| UpstreamError::Protocol(format!("HTTP client: {e}")))?;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<ToolDef>, UpstreamError> {
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| UpstreamError::Protocol(format!("tools/list failed: {e}")))?;
        out.extend(page.tools.iter().map(convert::tool_def));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
    Err(UpstreamError::TooManyPages)
}

/// An HTTP upstream's URL, static headers and context headers.
type HttpParts<'a> = (
    &'a str,
    &'a BTreeMap<String, String>,
    &'a BTreeMap<String, String>,
);

/// One session's own connection to an upstream with context headers, made on first use.
#[derive(Debug, Default)]
struct SessionUpstream(tokio::sync::OnceCell<Result<Arc<Upstream>, String>>);

impl Upstream {
    /// The context headers of an HTTP upstream.
    fn context_headers(&self) -> Option<HttpParts<'_>> {
        match &self.spec {
            UpstreamSpec::Http {
                url,
                headers,
                context_headers,
            } if !context_headers.is_empty() => Some((url, headers, context_headers)),
            _ => None,
        }
    }

    /// This session's own connection (its context headers resolved), made on first use.
    async fn for_session(
        self: &Arc<Self>,
        session: &Arc<Session>,
    ) -> Result<Arc<Upstream>, ExecError> {
        let Some((url, headers, context_headers)) = self.context_headers() else {
            return Ok(self.clone());
        };
        let key = format!("toolsearch-mcp/upstream/{}", self.name);
        let Some(slot) = session.state_or_insert_with(&key, SessionUpstream::default) else {
            return Err(ExecError::Unavailable("session state is corrupt".into()));
        };
        let made = slot
            .0
            .get_or_init(|| async {
                let mut all = headers.clone();
                for (header, path) in context_headers {
                    let Some(value) = session.context(path) else {
                        return Err(format!(
                            "this session has no {path:?}, which source {} needs for its {header} header; its upstream connection was not opened",
                            self.name
                        ));
                    };
                    all.insert(header.clone(), value.to_owned());
                }
                let spec = UpstreamSpec::Http {
                    url: url.to_owned(),
                    headers: all,
                    context_headers: BTreeMap::new(),
                };
                let own = Arc::new(Upstream::new(&self.name, spec, self.events.clone()));
                match own.connect().await {
                    Ok(_) => Ok(own),
                    Err(e) => Err(format!("this session's connection to {} failed: {e}", self.name)),
                }
            })
            .await;
        made.clone().map_err(ExecError::Unavailable)
    }
}

/// Runs calls on an upstream.
#[derive(Debug, Clone)]
pub struct UpstreamExecutor(pub Arc<Upstream>);

impl Executor for UpstreamExecutor {
    fn call_in(
        &self,
        session: &Arc<Session>,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>> {
        let upstream = self.0.clone();
        let session = session.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            let upstream = upstream.for_session(&session).await?;
            UpstreamExecutor(upstream).call(&tool, arguments).await
        })
    }

    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>> {
        let upstream = self.0.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            let Some(peer) = upstream.peer().await else {
                return Err(ExecError::Unavailable(format!(
                    "upstream {} is not running",
                    upstream.name
                )));
            };
            let params = CallToolRequestParams::new(tool).with_arguments(arguments);
            match peer.call_tool(params).await {
                Ok(result) => Ok(convert::call_result(&result)),
                Err(e) if e.is_authorization_required() || e.auth_challenge().is_some() => {
                    Err(ExecError::Unauthorized {
                        upstream: upstream.name.clone(),
                        message: e.to_string(),
                    })
                }
                Err(e) => Err(ExecError::Failed(format!(
                    "upstream {} failed: {e}",
                    upstream.name
                ))),
            }
        })
    }
}
