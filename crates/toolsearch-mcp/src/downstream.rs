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
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use futures_util::task::AtomicWaker;
use rmcp::model::{
    ClientCapabilities, ClientResult, LoggingLevel, ProgressNotificationParam, ProgressToken,
    ServerRequest,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use tokio::sync::oneshot;
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
    progress: Option<ProgressToken>,
    /// The request's protocol lets a server send requests while it runs (before 2026-07-28;
    /// from then on a server answers `input_required` instead).
    takes_requests: bool,
    /// Requests waiting for the request's task to send them, and its wake-up.
    relays: Mutex<Vec<Relay>>,
    relayed: AtomicWaker,
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

/// The log levels, least severe first: a level's rank is its place here.
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// A log level's rank, least severe first (`debug` 0 … `emergency` 7).
pub(crate) fn rank(level: LoggingLevel) -> u8 {
    LEVELS.iter().position(|l| *l == level).unwrap_or_default() as u8
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

    /// The least severe level its client set, if it set one.
    pub(crate) fn level(&self) -> Option<LoggingLevel> {
        LEVELS
            .get(usize::from(self.level.load(Ordering::Relaxed)))
            .copied()
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

    /// What its client declared it can do (in the handshake: a client that takes requests
    /// during a call is on a protocol that has one).
    pub(crate) fn capabilities(&self) -> Option<ClientCapabilities> {
        Some(self.session.peer.peer_info()?.capabilities.clone())
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
        self.relays
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Relay { request, answer });
        self.relayed.wake();
        answered.await.map_err(|_| ServiceError::TransportClosed)?
    }
}

/// The request in progress of the current task, when the server set one.
pub(crate) fn current() -> Option<Arc<Downstream>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Runs `call` (one client request) with its [`Downstream`] current, relaying the requests its
/// upstreams send meanwhile to the client from this task; `None` when `cancelled` fires first
/// (the client cancelled the request), and `call` is dropped then. A call that relays nothing
/// (nearly every call) costs one allocation and one waker registration here.
pub(crate) async fn serve<F: Future>(
    session: Arc<SessionLink>,
    progress: Option<ProgressToken>,
    takes_requests: bool,
    cancelled: CancellationToken,
    call: F,
) -> Option<F::Output> {
    let current = Arc::new(Downstream {
        session,
        progress,
        takes_requests,
        relays: Mutex::new(Vec::new()),
        relayed: AtomicWaker::new(),
    });
    let this = current.clone();
    let call = CURRENT.scope(current, call);
    let cancelled = cancelled.cancelled();
    tokio::pin!(call, cancelled);
    let mut asking: Option<FuturesUnordered<_>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = call.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        // Registered before the list is read: a relay pushed after the read wakes this task.
        this.relayed.register(cx.waker());
        let waiting = std::mem::take(&mut *this.relays.lock().unwrap_or_else(|p| p.into_inner()));
        for Relay { request, answer } in waiting {
            let peer = this.session.peer.clone();
            asking
                .get_or_insert_with(FuturesUnordered::new)
                .push(async move {
                    let _ = answer.send(peer.send_request(request).await);
                });
        }
        if let Some(asking) = asking.as_mut() {
            while let Poll::Ready(Some(())) = asking.poll_next_unpin(cx) {}
        }
        Poll::Pending
    })
    .await
}
