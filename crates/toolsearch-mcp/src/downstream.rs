//! The client session a call comes from, as the upstreams it reaches see it: who to relay an
//! upstream's requests to (`elicitation/create`, `sampling/createMessage`, `roots/list`), where
//! its progress goes, and at which level it wants log messages.
//!
//! The server runs each `tools/call` inside [`serve`], which makes the request's [`Downstream`]
//! the current one for everything the call runs (the engine, an upstream call, a CodeAct
//! program's host calls) and relays requests to the client *from the request's own task*, so
//! that rmcp sends them on the request's stream (over HTTP, the SSE stream of that POST). A
//! call the client cancels is dropped there, which cancels what it was waiting for upstream.

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by SEP-2577 in rmcp,
// and still part of the protocol versions the gateway speaks.
#![allow(deprecated)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use rmcp::model::{
    ClientCapabilities, ClientResult, LoggingLevel, ProgressNotificationParam, ProgressToken,
    ServerRequest,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    static CURRENT: Arc<Downstream>;
}

/// A request of an upstream's, on its way to the client, and where its answer goes.
#[derive(Debug)]
pub(crate) struct Relay {
    request: ServerRequest,
    answer: oneshot::Sender<Result<ClientResult, ServiceError>>,
}

/// One client request in progress: its session, its peer, what its client can do, its progress
/// token, and the way back to its task.
#[derive(Debug)]
pub(crate) struct Downstream {
    session: Arc<SessionLink>,
    capabilities: Option<ClientCapabilities>,
    progress: Option<ProgressToken>,
    /// The request's protocol lets a server send requests while it runs (before 2026-07-28;
    /// from then on a server answers `input_required` instead).
    takes_requests: bool,
    relay: mpsc::UnboundedSender<Relay>,
}

/// What every request of one client session shares: the session's identity among the gateway's
/// sessions, its peer, and the least severe log level it wants (`None`: every message).
#[derive(Debug)]
pub struct SessionLink {
    peer: Peer<RoleServer>,
    level: AtomicU8,
}

/// `level` of [`SessionLink`] when the client never set one.
const NO_LEVEL: u8 = u8::MAX;

/// A log level's rank, least severe first (`debug` 0 … `emergency` 7).
pub(crate) fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl SessionLink {
    /// The link of a session whose client is reached through `peer`.
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self {
            peer,
            level: AtomicU8::new(NO_LEVEL),
        }
    }

    /// Its client's peer.
    pub(crate) fn peer(&self) -> &Peer<RoleServer> {
        &self.peer
    }

    /// Sets the least severe level its client wants (`logging/setLevel`).
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.level.store(rank(level), Ordering::Relaxed);
    }

    /// Whether its client wants a message at `level`: at or above the level it set, or any
    /// message when it set none.
    pub(crate) fn wants(&self, level: LoggingLevel) -> bool {
        let set = self.level.load(Ordering::Relaxed);
        set == NO_LEVEL || rank(level) >= set
    }

    /// Whether two links are the same session.
    pub(crate) fn same(a: &Arc<Self>, b: &Arc<Self>) -> bool {
        Arc::ptr_eq(a, b)
    }
}

impl Downstream {
    /// The session it belongs to.
    pub(crate) fn session(&self) -> &Arc<SessionLink> {
        &self.session
    }

    /// What its client declared it can do.
    pub(crate) fn capabilities(&self) -> Option<&ClientCapabilities> {
        self.capabilities.as_ref()
    }

    /// Whether its protocol lets a server send it requests while the call runs.
    pub(crate) fn takes_requests(&self) -> bool {
        self.takes_requests
    }

    /// Whether its client asked for progress (gave a progress token).
    pub(crate) fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Sends an upstream's progress on to the client, under the client's own token (nothing
    /// when it gave none).
    pub(crate) async fn progress(&self, mut params: ProgressNotificationParam) {
        let Some(token) = &self.progress else { return };
        params.progress_token = token.clone();
        if let Err(e) = self.session.peer.notify_progress(params).await {
            tracing::debug!(error = %e, "progress could not reach the client");
        }
    }

    /// Sends `request` to the client from the task of the request in progress, and waits for
    /// the client's answer. Fails when that request has ended (its answer was sent, or the
    /// client cancelled it).
    pub(crate) async fn relay(&self, request: ServerRequest) -> Result<ClientResult, ServiceError> {
        let (answer, answered) = oneshot::channel();
        self.relay
            .send(Relay { request, answer })
            .map_err(|_| ServiceError::TransportClosed)?;
        answered.await.map_err(|_| ServiceError::TransportClosed)?
    }
}

/// The request in progress of the current task, when the server set one.
pub(crate) fn current() -> Option<Arc<Downstream>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Runs `call` (one client request) with its [`Downstream`] current, relaying the requests its
/// upstreams send meanwhile to the client from this task; `None` when `cancelled` fires first
/// (the client cancelled the request), and `call` is dropped then.
pub(crate) async fn serve<F: Future>(
    session: Arc<SessionLink>,
    capabilities: Option<ClientCapabilities>,
    progress: Option<ProgressToken>,
    takes_requests: bool,
    cancelled: CancellationToken,
    call: F,
) -> Option<F::Output> {
    let (relay, mut relays) = mpsc::unbounded_channel::<Relay>();
    let peer = session.peer.clone();
    let current = Arc::new(Downstream {
        session,
        capabilities,
        progress,
        takes_requests,
        relay,
    });
    let call = CURRENT.scope(current, call);
    tokio::pin!(call);
    let mut asking = FuturesUnordered::new();
    loop {
        tokio::select! {
            out = &mut call => return Some(out),
            () = cancelled.cancelled() => return None,
            Some(Relay { request, answer }) = relays.recv() => {
                let peer = peer.clone();
                asking.push(async move {
                    let _ = answer.send(peer.send_request(request).await);
                });
            }
            Some(()) = asking.next(), if !asking.is_empty() => {}
        }
    }
}
