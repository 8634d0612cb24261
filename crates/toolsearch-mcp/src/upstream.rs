//! One upstream MCP server as a source: connect (stdio child process or streamable HTTP), list
//! its tools (paging followed, bounded), call them, pass its resources and prompts through,
//! report its list changes, and check its health after a call that was abandoned.
//!
//! A stdio child runs in its own process group, so closing the connection (or the gateway
//! shutting down on a signal) ends the child and everything it started. Its stderr is read
//! line by line: each line is logged (`info`, source named) and the last ones are kept, so an
//! upstream that dies while starting is reported with what it said.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientRequest, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{Notify, RwLock, mpsc};
use toolsearch::ToolDef;
use toolsearch::exec::{BoxFuture, CallResult, ExecError, Executor, Session};

use crate::convert;
use crate::secrets::{MissingSecret, expand};

/// Most `tools/list` pages read from one upstream.
pub const MAX_LIST_PAGES: usize = 64;
/// Longest wait for an upstream to start and answer `initialize`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for a `ping` answer when checking an upstream's health.
pub const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// Lines of a stdio upstream's stderr kept for error messages.
const STDERR_LINES: usize = 8;
/// Longest stderr line kept (longer ones are cut).
const STDERR_LINE_BYTES: usize = 400;

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
    /// A stdio upstream closed its connection while starting.
    #[error("the process ended before it answered initialize{}", stderr_tail(.0))]
    Exited(Vec<String>),
    /// The upstream could not be reached (HTTP: connection refused, DNS, TLS).
    #[error("cannot reach {url}: {cause}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// The root cause, as the operating system or HTTP stack said it.
        cause: String,
    },
    /// The upstream did not answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// A header name or value is not valid HTTP (the value is never shown: it may be a secret).
    #[error(
        "header {0:?} is not a valid HTTP header (a name of token characters; a value without control characters such as a newline)"
    )]
    Header(String),
    /// The upstream refused our credentials (HTTP 401/403).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// It lists more than [`MAX_LIST_PAGES`] pages of tools.
    #[error("more than {MAX_LIST_PAGES} pages of tools; the rest are ignored")]
    TooManyPages,
}

fn stderr_tail(lines: &[String]) -> String {
    if lines.is_empty() {
        "; it wrote nothing to stderr".to_owned()
    } else {
        format!("; its stderr ended with: {}", lines.join(" | "))
    }
}

/// Where an error's chain of causes really starts: rmcp's initialize error keeps its transport
/// error out of `source()`, so the chain is followed from that error instead.
fn chain_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> &'a (dyn std::error::Error + 'static) {
    match e.downcast_ref::<rmcp::service::ClientInitializeError>() {
        Some(rmcp::service::ClientInitializeError::TransportError { error, .. }) => error,
        _ => e,
    }
}

/// The next cause in an error's chain; rmcp's HTTP client error keeps the HTTP client's own
/// error out of `source()`, so it is taken from there.
fn next_cause<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(inner)) => Some(inner),
        _ => e.source(),
    }
}

/// The message of an rmcp or HTTP error and its causes, without Rust type names: each cause
/// in the chain once, joined with `: `.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(chain_of(e));
    while let Some(err) = next {
        let text = err.to_string();
        // rmcp wraps transport errors in messages naming generic types (`WorkerTransport<…>`).
        let cleaned = match text.find(" [") {
            Some(i) if text[i..].contains("::") => text[..i].to_owned(),
            _ => text,
        };
        let cleaned = cleaned.trim().to_owned();
        if !cleaned.is_empty()
            && !cleaned.contains("::")
            && !parts.iter().any(|p| p.contains(&cleaned))
        {
            parts.push(cleaned);
        }
        next = next_cause(err);
    }
    parts.join(": ")
}

/// The deepest cause of an error (what the OS said: "Connection refused (os error 111)").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = chain_of(e);
    while let Some(next) = next_cause(last) {
        last = next;
    }
    last.to_string()
}

/// Whether an error chain says the peer could not be reached (not a protocol answer).
fn is_unreachable(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(chain_of(e));
    while let Some(err) = next {
        if let Some(r) = err.downcast_ref::<reqwest::Error>()
            && (r.is_connect() || r.is_timeout())
        {
            return true;
        }
        if err.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        next = next_cause(err);
    }
    false
}

/// Events the gateway acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamEvent {
    /// The upstream's tool list changed.
    ToolsChanged(String),
    /// The upstream's resource list changed.
    ResourcesChanged(String),
    /// The upstream's prompt list changed.
    PromptsChanged(String),
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

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .events
            .send(UpstreamEvent::ResourcesChanged(self.name.clone()));
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .events
            .send(UpstreamEvent::PromptsChanged(self.name.clone()));
    }
}

/// The last lines a stdio child wrote to stderr.
#[derive(Debug, Default)]
struct StderrTail(std::sync::Mutex<VecDeque<String>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let mut cut = line.trim_end().to_owned();
        if cut.len() > STDERR_LINE_BYTES {
            let mut end = STDERR_LINE_BYTES;
            while !cut.is_char_boundary(end) {
                end -= 1;
            }
            cut.truncate(end);
            cut.push('…');
        }
        if cut.is_empty() {
            return;
        }
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() == STDERR_LINES {
            q.pop_front();
        }
        q.push_back(cut);
    }

    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    fn clear(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
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
    stderr: Arc<StderrTail>,
    /// Set when a call was abandoned (timed out or cancelled) before its answer came; the
    /// supervisor then pings the upstream.
    suspect: AtomicBool,
    suspect_notify: Notify,
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
            stderr: Arc::default(),
            suspect: AtomicBool::new(false),
            suspect_notify: Notify::new(),
        }
    }

    /// Notes that a call was abandoned before the upstream answered (see [`Self::suspected`]).
    pub fn suspect(&self) {
        self.suspect.store(true, Ordering::Release);
        self.suspect_notify.notify_one();
    }

    /// Waits until a call is abandoned, then clears the mark.
    pub async fn suspected(&self) {
        loop {
            if self.suspect.swap(false, Ordering::AcqRel) {
                return;
            }
            self.suspect_notify.notified().await;
        }
    }

    /// Sends `ping` and waits up to `timeout` for the answer.
    pub async fn ping(&self, timeout: Duration) -> Result<(), UpstreamError> {
        let peer = self
            .peer()
            .await
            .ok_or_else(|| UpstreamError::Protocol("not connected".into()))?;
        match tokio::time::timeout(
            timeout,
            peer.send_request(ClientRequest::PingRequest(Default::default())),
        )
        .await
        {
            Err(_) => Err(UpstreamError::Timeout(timeout)),
            Ok(Err(e)) => Err(UpstreamError::Protocol(format!(
                "ping failed: {}",
                describe(&e)
            ))),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// What the live connection's server says it offers.
    pub async fn capabilities(&self) -> Option<ServerCapabilities> {
        let peer = self.peer().await?;
        Some(peer.peer_info()?.capabilities.clone())
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
                // Its own process group: closing the connection ends the child and whatever it
                // started (`npx` runs the server as a grandchild), and a terminal's Ctrl-C
                // reaches the gateway, which closes it in order.
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|source| UpstreamError::Spawn {
                        command: program.clone(),
                        source,
                    })?;
                *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = transport.id();
                self.stderr.clear();
                let reader = stderr.map(|stderr| {
                    let tail = self.stderr.clone();
                    let name = self.name.clone();
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::info!(source = %name, line = %line, "upstream stderr");
                            tail.push(&line);
                        }
                    })
                });
                match tokio::time::timeout(CONNECT_TIMEOUT, client.serve(transport)).await {
                    Err(_) => return Err(UpstreamError::Timeout(CONNECT_TIMEOUT)),
                    Ok(Ok(running)) => running,
                    Ok(Err(e)) => {
                        // The child's stdout closed: give its stderr a moment to drain.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
                        }
                        let tail = self.stderr.lines();
                        return Err(match &e {
                            rmcp::service::ClientInitializeError::ConnectionClosed(_) => {
                                UpstreamError::Exited(tail)
                            }
                            _ => UpstreamError::Protocol(format!(
                                "initialize failed: {}{}",
                                describe(&e),
                                stderr_tail(&tail)
                            )),
                        });
                    }
                }
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
                        UpstreamError::Unauthorized(describe(&e))
                    } else if is_unreachable(&e) {
                        UpstreamError::Unreachable {
                            url: url.clone(),
                            cause: root_cause(&e),
                        }
                    } else {
                        UpstreamError::Protocol(format!("initialize failed: {}", describe(&e)))
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
/// subscription for `tools/list_changed` (and the resource and prompt list changes it announces)
/// and forwards each notification as an event; the task ends with the connection. Older
/// protocols deliver the notifications to [`UpstreamClient`]'s handlers instead.
fn listen_for_tool_changes(
    peer: &Peer<RoleClient>,
    name: &str,
    events: &mpsc::UnboundedSender<UpstreamEvent>,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    let caps = &info.capabilities;
    let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
    let resources = caps.resources.as_ref().and_then(|t| t.list_changed) == Some(true);
    let prompts = caps.prompts.as_ref().and_then(|t| t.list_changed) == Some(true);
    if info.protocol_version.has_initialize() || !(tools || resources || prompts) {
        return;
    }
    let mut builder = SubscriptionFilter::builder();
    if tools {
        builder = builder.tools_list_changed();
    }
    if resources {
        builder = builder.resources_list_changed();
    }
    if prompts {
        builder = builder.prompts_list_changed();
    }
    let filter = builder.build();
    let (peer, name, events) = (peer.clone(), name.to_owned(), events.clone());
    tokio::spawn(async move {
        let mut subscription = match peer.listen(filter).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(upstream = %name, error = %e, "no tools/list_changed subscription");
                return;
            }
        };
        loop {
            match subscription.next().await {
                Ok(Some(notification)) => {
                    let event = match notification {
                        ServerNotification::ToolListChangedNotification(_) => {
                            UpstreamEvent::ToolsChanged(name.clone())
                        }
                        ServerNotification::ResourceListChangedNotification(_) => {
                            UpstreamEvent::ResourcesChanged(name.clone())
                        }
                        ServerNotification::PromptListChangedNotification(_) => {
                            UpstreamEvent::PromptsChanged(name.clone())
                        }
                        _ => continue,
                    };
                    if events.send(event).is_err() {
                        return;
                    }
                }
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
        // Checked here, not by the HTTP client, so that a bad value is named by its header
        // (the client's own error says only "builder error").
        let header_value =
            http::HeaderValue::from_str(&value).map_err(|_| UpstreamError::Header(name.clone()))?;
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        let header_name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| UpstreamError::Header(name.clone()))?;
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
            .map_err(|e| UpstreamError::Protocol(format!("tools/list failed: {}", describe(&e))))?;
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
    pub(crate) async fn for_session(
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

/// Marks its upstream [suspect](Upstream::suspect) when dropped before it is forgotten.
struct AbandonGuard<'a>(Option<&'a Arc<Upstream>>);

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if let Some(u) = self.0.take() {
            tracing::debug!(upstream = %u.name, "call abandoned before its answer");
            u.suspect();
        }
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
                    "upstream {} is not connected (it is still connecting, or restarting)",
                    upstream.name
                )));
            };
            let params = CallToolRequestParams::new(tool).with_arguments(arguments);
            // Dropped unanswered (the call timed out or was cancelled): the supervisor pings.
            let mut guard = AbandonGuard(Some(&upstream));
            let answer = peer.call_tool(params).await;
            guard.0 = None;
            match answer {
                Ok(result) => Ok(convert::call_result(&result)),
                Err(e) if e.is_authorization_required() || e.auth_challenge().is_some() => {
                    Err(ExecError::Unauthorized {
                        upstream: upstream.name.clone(),
                        message: describe(&e),
                    })
                }
                Err(e) if is_unreachable(&e) => Err(ExecError::Unavailable(format!(
                    "upstream {} cannot be reached: {}",
                    upstream.name,
                    root_cause(&e)
                ))),
                Err(e) => Err(ExecError::Failed(format!(
                    "upstream {} failed: {}",
                    upstream.name,
                    describe(&e)
                ))),
            }
        })
    }
}
