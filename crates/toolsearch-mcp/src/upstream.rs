//! One upstream MCP server as a source: connect (a stdio child process, streamable HTTP or
//! legacy HTTP+SSE, as its [`SourceKind`] says), list its tools (paging followed, bounded),
//! call them, pass its resources and prompts through, report its list changes, and check its
//! health after a call that was abandoned.
//!
//! One file per part: `stdio`, `http` and `sse` connect, `session` opens per-session
//! connections for context headers, `executor` runs calls (on a stdio upstream, through its
//! `call_lane`), `listen` follows change subscriptions, `cause` reads rmcp's errors.

mod call_lane;
mod cause;
mod child;
mod client;
mod executor;
mod http;
mod inflight;
mod listen;
mod noticed;
pub mod oauth;
mod session;
mod sse;
mod stdio;

pub use sse::SseOpenError;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::{HttpTransport, SourceKind};
use rmcp::ServiceError;
use rmcp::model::{ClientRequest, PaginatedRequestParams, ProtocolVersion, ServerCapabilities};
use rmcp::service::{Peer, RoleClient, RunningService};
use tokio::sync::{Notify, RwLock, mpsc};
use toolsearch::ToolDef;

pub use cause::describe;
pub use client::UpstreamClient;
pub use executor::UpstreamExecutor;
pub use http::install_crypto_provider;
pub(crate) use inflight::Inflight;
pub use inflight::NoticeHandled;

use crate::convert;
use crate::secrets::MissingSecret;
use crate::wire_fields::WireFields;

/// Most `tools/list` pages read from one upstream.
pub const MAX_LIST_PAGES: usize = 64;
/// Longest wait for an upstream to start and answer `initialize`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for a `ping` answer when checking an upstream's health.
pub const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an upstream could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The MCP handshake failed.
    #[error("initialize failed: {}{}", describe(&**.source), .stderr.as_deref().map(stdio::stderr_tail).unwrap_or_default())]
    Initialize {
        /// rmcp's error.
        #[source]
        source: Box<rmcp::service::ClientInitializeError>,
        /// A stdio upstream's last stderr lines.
        stderr: Option<Vec<String>>,
    },
    /// Neither handshake worked with an HTTP upstream: its answer to `server/discover` was of
    /// no use, and `initialize` failed as well.
    #[error(
        "server/discover gave no usable answer ({discover}), and initialize failed: {initialize}"
    )]
    Handshake {
        /// Why the `server/discover` answer could not be used.
        discover: String,
        /// Why `initialize` failed.
        initialize: String,
    },
    /// A request on the live connection failed.
    #[error("{method} failed: {}", describe(.source))]
    Request {
        /// The request (`tools/list`, `ping`).
        method: &'static str,
        /// rmcp's error.
        #[source]
        source: ServiceError,
    },
    /// There is no live connection.
    #[error("not connected")]
    NotConnected,
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// A stdio upstream closed its connection while starting.
    #[error("the process ended before it answered initialize{}", stdio::stderr_tail(.0))]
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
    /// A legacy SSE upstream's event stream could not be opened.
    #[error(transparent)]
    SseOpen(#[from] sse::SseOpenError),
    /// An OAuth source has no usable token, or its login failed.
    #[error(transparent)]
    OAuth(#[from] oauth::OAuthError),
    /// The source is a catalog file, not a server.
    #[error("a catalog file is not an MCP server")]
    NotAServer,
}

/// Events the gateway acts on.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpstreamEvent {
    /// The upstream's tool list changed.
    ToolsChanged(String),
    /// The upstream's resource list changed.
    ResourcesChanged(String),
    /// The upstream's prompt list changed.
    PromptsChanged(String),
    /// The upstream sent a log message.
    #[allow(deprecated)]
    // MCP logging: deprecated by SEP-2577 in rmcp, in the protocols we speak
    Log {
        /// The source.
        source: String,
        /// The client sessions with calls in flight on its connection when it came.
        sessions: Vec<Arc<crate::downstream::SessionLink>>,
        /// The message.
        message: rmcp::model::LoggingMessageNotificationParam,
        /// Counts the message as handled when dropped (once it has reached its sessions).
        handled: NoticeHandled,
    },
    /// A resource of the upstream changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// The source.
        source: String,
        /// The resource's URI as the upstream names it.
        uri: String,
    },
}

/// What a source's config says of its connections beside where they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// `per_session`: each client session gets its own connection.
    pub per_session: bool,
    /// `sampling`: the upstream may ask the client's model (`sampling/createMessage`).
    pub sampling: bool,
    /// `call_timeout_ms`: how long its calls may run (`None`: the gateway's call timeout).
    pub call_timeout: Option<std::time::Duration>,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            per_session: false,
            sampling: true,
            call_timeout: None,
        }
    }
}

type Running = RunningService<RoleClient, UpstreamClient>;

/// A stdio upstream's call lane.
type StdioLane = call_lane::CallLane<tokio::process::ChildStdin>;

/// A live connection: rmcp's running client and, on a stdio upstream that speaks a protocol
/// version with `initialize`, the call lane beside it.
#[derive(Debug)]
struct Connection {
    running: Running,
    lane: Option<StdioLane>,
}

impl Connection {
    /// Whether it still serves: rmcp's loop ends when the transport does (a child's stdout
    /// closing, an HTTP stream failing), and its peer's channel is then closed.
    fn is_open(&self) -> bool {
        !self.running.is_closed() && !self.running.peer().is_transport_closed()
    }
}

/// How a tool is called on a live connection.
#[derive(Debug, Clone)]
enum Caller {
    /// Through rmcp's peer; the connection's client answers what the upstream asks in an
    /// `input_required` result.
    Peer(Peer<RoleClient>, UpstreamClient),
    /// On a stdio upstream's call lane.
    Lane(StdioLane),
}

impl Caller {
    /// One `tools/call`, its result or error as rmcp's `Peer::call_tool` gives them. With
    /// `inflight` (the call's entry among the connection's calls, and whether its client asked
    /// for progress), the progress token it carries upstream is noted there, so the upstream's
    /// progress reaches that client.
    async fn call_tool(
        &self,
        mut params: rmcp::model::CallToolRequestParams,
        inflight: Option<&(inflight::InflightGuard, bool)>,
    ) -> Result<rmcp::model::CallToolResult, ServiceError> {
        let progress = inflight.filter(|(_, wants)| *wants).map(|(guard, _)| guard);
        let answer = match (self, progress) {
            (Caller::Peer(peer, client), None) => {
                return call_rounds(peer, client, params, None).await;
            }
            (Caller::Peer(peer, client), Some(guard)) => {
                call_rounds(peer, client, params, Some(guard)).await
            }
            (Caller::Lane(lane), progress) => {
                if let Some(guard) = progress {
                    let token = next_progress_token();
                    guard.set_token(token.clone());
                    rmcp::model::RequestParamsMeta::set_progress_token(&mut params, token);
                }
                lane.call_tool::<child::ChildTransport>(params).await
            }
        };
        // The progress and log messages the upstream sent before its answer reach the client
        // first.
        if let Some((guard, _)) = inflight {
            guard.notices_settled(NOTICES_SETTLE).await;
        }
        answer
    }
}

/// Longest wait, after a call's answer, for the progress and log messages read before it to
/// reach its client.
const NOTICES_SETTLE: Duration = Duration::from_millis(500);

/// A progress token of the gateway's own for a call on a call lane (rmcp's peer makes its own).
fn next_progress_token() -> rmcp::model::ProgressToken {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(n as i64))
}

/// Rounds of an upstream's `input_required` answers driven at most for one call (as rmcp's
/// client drives them).
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// `tools/call` through rmcp's peer (with progress when `progress` is given). An upstream on
/// protocol 2026-07-28 that answers `input_required` has its questions put to the client whose
/// call it is (through `client`, as a request sent mid-call would be) and the call repeated
/// with the answers and its `requestState`, until it answers; one that answers with a state
/// alone is asked again after a growing pause.
async fn call_rounds(
    peer: &Peer<RoleClient>,
    client: &UpstreamClient,
    mut params: rmcp::model::CallToolRequestParams,
    progress: Option<&inflight::InflightGuard>,
) -> Result<rmcp::model::CallToolResult, ServiceError> {
    use rmcp::model::CallToolResponse;

    let mut pauses = 0u32;
    for _ in 0..MAX_INPUT_ROUNDS {
        // Kept for another round only when this one may need it: most upstreams ask nothing,
        // and the arguments are not copied for them.
        let again = peer
            .peer_info()
            .is_some_and(|i| i.protocol_version >= rmcp::model::ProtocolVersion::V_2026_07_28)
            .then(|| params.clone());
        let answer = match progress {
            Some(guard) => call_with_progress(peer, params, guard).await?,
            None => peer.call_tool_once(params).await?,
        };
        let asked = match answer {
            CallToolResponse::Complete(result) => return Ok(result),
            CallToolResponse::InputRequired(asked) => asked,
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        let Some(again) = again else {
            return Err(ServiceError::UnexpectedResponse);
        };
        params = again;
        let questions = asked.input_requests.unwrap_or_default();
        if questions.is_empty() {
            if asked.request_state.is_none() {
                return Err(ServiceError::UnexpectedResponse);
            }
            tokio::time::sleep(Duration::from_millis(100 << pauses.min(4))).await;
            pauses += 1;
        }
        let answers =
            futures_util::future::try_join_all(questions.into_iter().map(
                |(key, question)| async move { Ok((key, client.answer_input(question).await?)) },
            ))
            .await
            .map_err(ServiceError::McpError)?;
        params.input_responses = (!answers.is_empty()).then(|| answers.into_iter().collect());
        params.request_state = asked.request_state;
    }
    Err(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: MAX_INPUT_ROUNDS,
    })
}

/// One `tools/call` through rmcp's peer, noting the progress token rmcp gives it before its
/// answer can come; dropped before the answer, it tells the upstream the call is cancelled.
async fn call_with_progress(
    peer: &Peer<RoleClient>,
    params: rmcp::model::CallToolRequestParams,
    guard: &inflight::InflightGuard,
) -> Result<rmcp::model::CallToolResponse, ServiceError> {
    use rmcp::model::{CallToolRequest, CancelledNotificationParam, ServerResult};
    use rmcp::service::PeerRequestOptions;

    /// Sends `notifications/cancelled` for the request when dropped armed.
    struct CancelOnDrop(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            let Some((peer, id)) = self.0.take() else {
                return;
            };
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = peer
                        .notify_cancelled(CancelledNotificationParam::new(
                            Some(id),
                            Some("the call was abandoned".into()),
                        ))
                        .await;
                });
            }
        }
    }

    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    guard.set_token(handle.progress_token.clone());
    let mut cancel = CancelOnDrop(Some((peer.clone(), handle.id.clone())));
    let answer = handle.await_response().await;
    cancel.0 = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(rmcp::model::CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(asked) => {
            Ok(rmcp::model::CallToolResponse::InputRequired(asked))
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// One upstream: how to reach it (its source's kind) and its live connection, if any.
#[derive(Debug)]
pub struct Upstream {
    name: String,
    kind: SourceKind,
    /// Resolved context headers of one session's own connection (empty on the shared one).
    session_headers: BTreeMap<String, String>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    options: ConnectionOptions,
    /// The calls in flight on the live connection, with the client request each serves.
    inflight: Arc<Inflight>,
    /// The members its tools are listed with that rmcp's `Tool` has no field for.
    wire_fields: Arc<WireFields>,
    conn: RwLock<Option<Connection>>,
    pid: parking_lot::Mutex<Option<u32>>,
    stderr: Arc<stdio::StderrTail>,
    /// Set when a call was abandoned (timed out or cancelled) before its answer came; the
    /// supervisor then pings the upstream.
    suspect: AtomicBool,
    suspect_notify: Notify,
    /// An OAuth source whose last connection or call found no usable token.
    needs_login: AtomicBool,
}

impl Upstream {
    /// An upstream not yet connected; `kind` is a stdio or HTTP source kind (a catalog kind
    /// fails to connect with [`UpstreamError::NotAServer`]).
    pub fn new(
        name: impl Into<String>,
        kind: SourceKind,
        events: mpsc::UnboundedSender<UpstreamEvent>,
    ) -> Self {
        Self {
            name: name.into(),
            kind,
            session_headers: BTreeMap::new(),
            events,
            options: ConnectionOptions::default(),
            inflight: Arc::default(),
            wire_fields: Arc::default(),
            conn: RwLock::new(None),
            pid: parking_lot::Mutex::new(None),
            stderr: Arc::default(),
            suspect: AtomicBool::new(false),
            suspect_notify: Notify::new(),
            needs_login: AtomicBool::new(false),
        }
    }

    /// Sets what the source's config says of its connections.
    pub fn with_options(mut self, options: ConnectionOptions) -> Self {
        self.options = options;
        self
    }

    /// The same upstream for one session, sending `headers` (its resolved context headers)
    /// beside the source's own.
    fn with_session_headers(mut self, headers: BTreeMap<String, String>) -> Self {
        self.session_headers = headers;
        self
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
        let peer = self.peer().await.ok_or(UpstreamError::NotConnected)?;
        match tokio::time::timeout(
            timeout,
            peer.send_request(ClientRequest::PingRequest(Default::default())),
        )
        .await
        {
            Err(_) => Err(UpstreamError::Timeout(timeout)),
            Ok(Err(source)) => Err(UpstreamError::Request {
                method: "ping",
                source,
            }),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// What the live connection's server says it offers.
    pub async fn capabilities(&self) -> Option<ServerCapabilities> {
        let peer = self.peer().await?;
        Some(peer.peer_info()?.capabilities.clone())
    }

    /// Asks the live connection for log messages at `level` and above (`logging/setLevel`),
    /// when the upstream offers logging.
    #[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, in the protocols we speak
    pub(crate) async fn set_log_level(&self, level: rmcp::model::LoggingLevel) {
        let offers = self
            .capabilities()
            .await
            .is_some_and(|c| c.logging.is_some());
        let Some(peer) = self.peer().await.filter(|_| offers) else {
            return;
        };
        let params = rmcp::model::SetLevelRequestParams::new(level);
        if let Err(e) = peer.set_level(params).await {
            tracing::debug!(source = %self.name, error = %e, "logging/setLevel not taken");
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
            inflight: self.inflight.clone(),
            sampling: self.options.sampling,
            // Over HTTP, `initialize` is the fallback for servers of the versions that have it:
            // it offers the newest of those (2026-07-28 has no `initialize`; a server of an
            // earlier version would be offered a version it cannot know). A stdio child is
            // offered the newest, which servers that know it answer in kind.
            initialize_version: match &self.kind {
                SourceKind::Http { .. } => ProtocolVersion::LATEST_WITH_INITIALIZE,
                _ => ProtocolVersion::LATEST,
            },
        };
        let (running, lane) = match &self.kind {
            SourceKind::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => {
                let env = stdio::ChildEnv {
                    inherit: inherit_env,
                    set: env,
                };
                stdio::connect(self, client, command, args, env, cwd.as_ref()).await?
            }
            SourceKind::Http {
                url,
                transport,
                headers,
                oauth,
                ..
            } => {
                let mut all = headers.clone();
                all.extend(self.session_headers.clone());
                let running = match transport {
                    HttpTransport::StreamableHttp => {
                        let endpoint = http::Endpoint {
                            name: &self.name,
                            url,
                            headers: &all,
                            oauth: oauth.as_deref(),
                        };
                        let connected = http::connect(client, endpoint, &self.wire_fields).await;
                        if let Err(UpstreamError::OAuth(oauth::OAuthError::NeedsLogin)) = &connected
                        {
                            self.needs_login.store(true, Ordering::Relaxed);
                        }
                        connected?
                    }
                    HttpTransport::Sse => {
                        sse::connect(client, http::shared_client()?, url, &all, &self.wire_fields)
                            .await?
                    }
                };
                (running, None)
            }
            _ => return Err(UpstreamError::NotAServer),
        };
        self.needs_login.store(false, Ordering::Relaxed);
        listen::listen_for_changes(running.peer(), &self.name, &self.events);
        let tools = list_tools(running.peer(), &self.wire_fields).await;
        *self.conn.write().await = Some(Connection { running, lane });
        tools
    }

    /// Whether this OAuth source's last connection or call found no usable token: it needs a
    /// person to log in (`toolsearch auth login`).
    pub fn needs_login(&self) -> bool {
        self.needs_login.load(Ordering::Relaxed)
    }

    /// Whether a person logs in to it (OAuth with the authorization code grant).
    pub(crate) fn takes_login(&self) -> bool {
        matches!(&self.kind, SourceKind::Http { oauth: Some(o), .. } if o.grant == crate::config::OAuthGrant::AuthorizationCode)
    }

    /// An OAuth source's token file.
    pub(crate) fn token_file(&self) -> Option<oauth::TokenFile> {
        match &self.kind {
            SourceKind::Http {
                url,
                oauth: Some(_),
                ..
            } => oauth::TokenFile::for_source(&self.name, url).ok(),
            _ => None,
        }
    }

    /// Lists the tools of the live connection.
    pub async fn list_tools(&self) -> Result<Vec<ToolDef>, UpstreamError> {
        let peer = self.peer().await.ok_or(UpstreamError::NotConnected)?;
        list_tools(&peer, &self.wire_fields).await
    }

    /// The live connection's peer, if connected and not closed.
    pub async fn peer(&self) -> Option<Peer<RoleClient>> {
        let guard = self.conn.read().await;
        guard
            .as_ref()
            .filter(|c| c.is_open())
            .map(|c| c.running.peer().clone())
    }

    /// How to call a tool on the live connection, if connected and not closed: its call lane
    /// when it has one, else rmcp's peer.
    async fn caller(&self) -> Option<Caller> {
        let guard = self.conn.read().await;
        let c = guard.as_ref().filter(|c| c.is_open())?;
        Some(match &c.lane {
            Some(lane) => Caller::Lane(lane.clone()),
            None => Caller::Peer(c.running.peer().clone(), c.running.service().clone()),
        })
    }

    /// What the live connection's server says of itself: its title (or name), its
    /// description and its instructions, as it gave them in `initialize`.
    pub async fn introduction(&self) -> Option<(String, Option<String>, Option<String>)> {
        let peer = self.peer().await?;
        let info = peer.peer_info()?;
        // On 2026-07-28 a server may leave its `serverInfo` out.
        let server = info.server_info.as_ref();
        let title = server
            .map(|s| s.title.clone().unwrap_or_else(|| s.name.clone()))
            .unwrap_or_else(|| self.name.clone());
        Some((
            title,
            server.and_then(|s| s.description.clone()),
            info.instructions.clone(),
        ))
    }

    /// The protocol version negotiated on the live connection.
    pub async fn protocol_version(&self) -> Option<String> {
        let peer = self.peer().await?;
        Some(peer.peer_info()?.protocol_version.to_string())
    }

    /// The child process id of a stdio upstream's current connection.
    pub fn pid(&self) -> Option<u32> {
        *self.pid.lock()
    }

    /// Whether it is connected.
    pub async fn is_connected(&self) -> bool {
        self.peer().await.is_some()
    }

    /// Closes the connection (the child process is killed).
    pub async fn disconnect(&self) {
        if let Some(c) = self.conn.write().await.take() {
            let _ = c.running.cancel().await;
        }
    }
}

/// Every tool of the connection, page by page, each with the members rmcp's `Tool` drops
/// (`fields`, noted by the transport as each page is read).
async fn list_tools(
    peer: &Peer<RoleClient>,
    fields: &WireFields,
) -> Result<Vec<ToolDef>, UpstreamError> {
    fields.clear();
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page =
            peer.list_tools(Some(params))
                .await
                .map_err(|source| UpstreamError::Request {
                    method: "tools/list",
                    source,
                })?;
        out.extend(
            page.tools
                .iter()
                .map(|t| convert::tool_def(t, fields.of(&t.name))),
        );
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
    Err(UpstreamError::TooManyPages)
}
