//! The client session a call comes from, as the upstreams it reaches see it: who to relay an
//! upstream's requests to (`elicitation/create`, `sampling/createMessage`, `roots/list`), where
//! its progress goes, and at which level it wants log messages.
//!
//! The server runs each `tools/call` inside [`serve`], which makes the request's [`Downstream`]
//! the current one for everything the call runs (the engine, an upstream call, a CodeAct
//! program's host calls) and relays requests to the client *from the request's own task*, so
//! that rmcp sends them on the request's stream (over HTTP, the SSE stream of that POST). A
//! call the client cancels is dropped there, which cancels what it was waiting for upstream.
//!
//! On protocol 2026-07-28 a server sends no requests while a call runs: an upstream's request
//! ends the client's request with an `input_required` answer instead, the call going on in the
//! background ([`Parked`]) until the client's next request brings the person's answer.

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by SEP-2577 in rmcp,
// and still part of the protocol versions the gateway speaks.
#![allow(deprecated)]

use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use futures_util::task::AtomicWaker;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientResult, InputRequest, InputRequests, LoggingLevel,
    ProgressNotificationParam, ProgressToken, ServerRequest,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
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

/// Where a client request's notices go: its session, its progress token, and what its client
/// declared it can do. A call resumed by a later request (2026-07-28) takes that request's.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    session: Arc<SessionLink>,
    progress: Option<ProgressToken>,
    /// The capabilities the request itself carried (2026-07-28 requests carry them in
    /// `_meta`); `None`: those of the session's handshake.
    capabilities: Option<ClientCapabilities>,
}

impl Route {
    /// The route of a request of `session`'s, with its progress token and the capabilities it
    /// carried, if any.
    pub(crate) fn new(
        session: Arc<SessionLink>,
        progress: Option<ProgressToken>,
        capabilities: Option<ClientCapabilities>,
    ) -> Self {
        Self {
            session,
            progress,
            capabilities,
        }
    }
}

/// One client request in progress: where its notices go, whether its protocol lets a server
/// send it requests, and the way back to its task.
#[derive(Debug)]
pub(crate) struct Downstream {
    route: Mutex<Route>,
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
    /// The session it belongs to (the one of the request that resumed it last).
    pub(crate) fn session(&self) -> Arc<SessionLink> {
        self.route.lock().session.clone()
    }

    /// What its client declared it can do: in the request itself (2026-07-28), else in the
    /// session's handshake.
    pub(crate) fn capabilities(&self) -> Option<ClientCapabilities> {
        let route = self.route.lock();
        match &route.capabilities {
            Some(c) => Some(c.clone()),
            None => Some(route.session.peer.peer_info()?.capabilities.clone()),
        }
    }

    /// Whether its client asked for progress (gave a progress token).
    pub(crate) fn wants_progress(&self) -> bool {
        self.route.lock().progress.is_some()
    }

    /// Sends an upstream's progress on to the client, under the client's own token (nothing
    /// when it gave none).
    pub(crate) async fn progress(&self, mut params: ProgressNotificationParam) {
        let (peer, token) = {
            let route = self.route.lock();
            let Some(token) = &route.progress else { return };
            (route.session.peer.clone(), token.clone())
        };
        params.progress_token = token;
        if let Err(e) = peer.notify_progress(params).await {
            tracing::debug!(error = %e, "progress could not reach the client");
        }
    }

    /// Sends `request` to the client from the task of the request in progress, and waits for
    /// the client's answer (on 2026-07-28, the answer the client sends with its next request).
    /// Fails when that request has ended (its answer was sent, or the client cancelled it).
    pub(crate) async fn relay(&self, request: ServerRequest) -> Result<ClientResult, ServiceError> {
        let (answer, answered) = oneshot::channel();
        self.relays.lock().push(Relay { request, answer });
        self.relayed.wake();
        answered.await.map_err(|_| ServiceError::TransportClosed)?
    }
}

/// The request in progress of the current task, when the server set one.
pub(crate) fn current() -> Option<Arc<Downstream>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// How a client request ended in [`serve`] or [`Parked::resume`].
#[derive(Debug)]
pub(crate) enum Served<T> {
    /// The call ran to its answer.
    Done(T),
    /// The client cancelled the request first; the call was dropped.
    Cancelled,
    /// The call's upstreams asked the client something, which on 2026-07-28 goes back in the
    /// request's answer (`input_required`): the call goes on in the background meanwhile,
    /// waiting for the client's next request to bring the answers.
    Asks(Parked<T>),
}

/// A call waiting for its client's answers to what its upstreams asked (2026-07-28). Dropped
/// unresumed, it ends the call (which cancels what it waited for upstream).
#[derive(Debug)]
pub(crate) struct Parked<T> {
    downstream: Arc<Downstream>,
    asked: Vec<Relay>,
    call: Running<T>,
}

/// The client's answers to a parked call's questions, by their keys in `input_required`.
pub(crate) type Answers = rmcp::model::InputResponses;

impl<T: Send + 'static> Parked<T> {
    /// What the call asks, each under its key, to be sent in an `input_required` result.
    pub(crate) fn questions(&self) -> InputRequests {
        self.asked
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((input_key(i), input_request(&r.request)?)))
            .collect()
    }

    /// Goes on with the call for a later request of the client's, which brings `answers` to
    /// its questions: each goes to the upstream that asked (one missing or malformed gets the
    /// upstream an error that says so), and the call's notices go to this request from now on.
    pub(crate) async fn resume(
        mut self,
        route: Route,
        answers: Option<&Answers>,
        cancelled: CancellationToken,
    ) -> Served<T> {
        *self.downstream.route.lock() = route;
        for (i, Relay { request, answer }) in
            std::mem::take(&mut self.asked).into_iter().enumerate()
        {
            let key = input_key(i);
            let _ = answer.send(answer_of(&request, answers.and_then(|a| a.get(&key)), &key));
        }
        let call = std::mem::replace(&mut self.call, Running::Over);
        drive(self.downstream.clone(), call, cancelled).await
    }
}

/// The key of a parked call's `i`th question in `input_required`.
fn input_key(i: usize) -> String {
    format!("upstream-{}", i + 1)
}

/// An upstream's request as an `input_required` question (`None` for a kind a server cannot
/// ask; none is relayed).
fn input_request(request: &ServerRequest) -> Option<InputRequest> {
    match request {
        ServerRequest::ElicitRequest(r) => Some(InputRequest::Elicitation(r.clone())),
        ServerRequest::CreateMessageRequest(r) => Some(InputRequest::CreateMessage(r.clone())),
        ServerRequest::ListRootsRequest(r) => Some(InputRequest::ListRoots(r.clone())),
        _ => None,
    }
}

/// The client's answer to `request` (sent under `key`) as the result the upstream expects.
fn answer_of(
    request: &ServerRequest,
    answer: Option<&serde_json::Value>,
    key: &str,
) -> Result<ClientResult, ServiceError> {
    /// The answer as a `T`, read in place.
    fn read<T: serde::de::DeserializeOwned>(answer: Option<&serde_json::Value>) -> Option<T> {
        T::deserialize(answer?).ok()
    }
    let (method, parsed) = match request {
        ServerRequest::ElicitRequest(_) => (
            "elicitation/create",
            read(answer).map(ClientResult::ElicitResult),
        ),
        ServerRequest::CreateMessageRequest(_) => (
            "sampling/createMessage",
            read(answer).map(|r| ClientResult::CreateMessageResult(Box::new(r))),
        ),
        ServerRequest::ListRootsRequest(_) => (
            "roots/list",
            read(answer).map(ClientResult::ListRootsResult),
        ),
        _ => ("a request", None),
    };
    parsed.ok_or_else(|| {
        let what = if answer.is_some() {
            "a malformed answer"
        } else {
            "no answer"
        };
        ServiceError::McpError(ErrorData::invalid_params(
            format!(
                "the client sent {what} to {method} (input {key:?} of its input_required result)"
            ),
            None,
        ))
    })
}

/// A call in progress: polled by the request's own task, or, once parked, running in a task of
/// its own (aborted when dropped).
enum Running<T> {
    Here(Pin<Box<dyn Future<Output = T> + Send>>),
    Away(Away<T>),
    Over,
}

impl<T> std::fmt::Debug for Running<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Running::Here(_) => "Here",
            Running::Away(_) => "Away",
            Running::Over => "Over",
        })
    }
}

impl<T: Send + 'static> Running<T> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<T> {
        match self {
            Running::Here(call) => call.as_mut().poll(cx),
            Running::Away(task) => match Pin::new(&mut task.0).poll(cx) {
                Poll::Ready(Ok(out)) => Poll::Ready(out),
                // The call panicked: as it would have, polled here.
                Poll::Ready(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Aborted: only when dropped, and then nobody polls it.
                Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
            },
            Running::Over => Poll::Pending,
        }
    }

    /// The call, running on in a task of its own.
    fn away(self) -> Self {
        match self {
            Running::Here(call) => Running::Away(Away(tokio::spawn(call))),
            other => other,
        }
    }
}

/// A parked call's task, aborted when dropped (nobody will read its answer).
struct Away<T>(JoinHandle<T>);

impl<T> Drop for Away<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `call` (one client request) with its [`Downstream`] current, relaying the requests its
/// upstreams send meanwhile to the client from this task (before 2026-07-28) or parking the
/// call to ask them in its answer (2026-07-28); [`Served::Cancelled`] when `cancelled` fires
/// first (the client cancelled the request), and `call` is dropped then. A call that relays
/// nothing (nearly every call) costs one allocation and one waker registration here.
pub(crate) fn serve<F>(
    route: Route,
    takes_requests: bool,
    cancelled: CancellationToken,
    call: F,
) -> impl Future<Output = Served<F::Output>> + Send
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // Not an `async fn`: `call` (the engine's call, large) goes straight to the heap, never
    // into the state of the request's future, which rmcp moves about.
    let current = Arc::new(Downstream {
        route: Mutex::new(route),
        takes_requests,
        relays: Mutex::new(Vec::new()),
        relayed: AtomicWaker::new(),
    });
    let call = Running::Here(Box::pin(CURRENT.scope(current.clone(), call)));
    drive(current, call, cancelled)
}

/// Polls `call` to its end for the request of `this`, relaying or parking what its upstreams
/// ask meanwhile (see [`serve`]).
async fn drive<T: Send + 'static>(
    this: Arc<Downstream>,
    mut call: Running<T>,
    cancelled: CancellationToken,
) -> Served<T> {
    let cancelled = cancelled.cancelled();
    tokio::pin!(cancelled);
    let mut asking: Option<FuturesUnordered<_>> = None;
    let ended = std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = call.poll(cx) {
            return Poll::Ready(Some(Ok(out)));
        }
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        // Registered before the list is read: a relay pushed after the read wakes this task.
        this.relayed.register(cx.waker());
        let waiting = std::mem::take(&mut *this.relays.lock());
        if !waiting.is_empty() && !this.takes_requests {
            return Poll::Ready(Some(Err(waiting)));
        }
        for Relay { request, answer } in waiting {
            let peer = this.session().peer.clone();
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
    .await;
    match ended {
        Some(Ok(out)) => Served::Done(out),
        None => Served::Cancelled,
        Some(Err(asked)) => Served::Asks(Parked {
            downstream: this,
            asked,
            call: call.away(),
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use rmcp::ServerHandler;
    use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationSchema};
    use rmcp::service::RunningService;
    use serde_json::json;

    use super::*;

    pub(crate) struct Nothing;
    impl ServerHandler for Nothing {}

    /// A session link whose peer is a live server's (over an in-memory pipe nobody reads).
    pub(crate) fn link() -> (Arc<SessionLink>, RunningService<RoleServer, Nothing>) {
        let (ours, _theirs) = tokio::io::duplex(4096);
        let running = rmcp::service::serve_directly(Nothing, ours, None);
        let link = Arc::new(SessionLink::new(running.peer().clone()));
        (link, running)
    }

    fn elicitation(message: &str) -> ServerRequest {
        ServerRequest::ElicitRequest(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message.into(),
                requested_schema: ElicitationSchema::new(Default::default()),
            },
        ))
    }

    /// Sets its flag when dropped.
    pub(crate) struct Dropped(pub(crate) Arc<AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A call that asks its client `message` (as an upstream would) and gives back the answer,
    /// setting `dropped` when it ends either way.
    pub(crate) async fn asking(
        message: &'static str,
        dropped: Arc<AtomicBool>,
    ) -> Result<ClientResult, ServiceError> {
        let _flag = Dropped(dropped);
        let current = current().expect("served");
        current.relay(elicitation(message)).await
    }

    pub(crate) fn parked_of<T>(served: Served<T>) -> Parked<T> {
        match served {
            Served::Asks(p) => p,
            Served::Done(_) => panic!("done, not parked"),
            Served::Cancelled => panic!("cancelled, not parked"),
        }
    }

    #[tokio::test]
    async fn a_call_between_requests_parks_on_an_upstream_request_and_goes_on_with_the_answer() {
        let (link, _running) = link();
        let dropped = Arc::new(AtomicBool::new(false));
        let route = Route::new(link.clone(), None, None);
        let served = serve(
            route.clone(),
            false,
            CancellationToken::new(),
            asking("who?", dropped.clone()),
        )
        .await;
        let parked = parked_of(served);
        let questions = serde_json::to_value(parked.questions()).expect("json");
        assert_eq!(questions["upstream-1"]["method"], "elicitation/create");
        assert_eq!(questions["upstream-1"]["params"]["message"], "who?");
        assert!(
            !dropped.load(Ordering::SeqCst),
            "the call goes on meanwhile"
        );

        let answers = Answers::from([(
            "upstream-1".to_owned(),
            json!({"action": "accept", "content": {"name": "carol"}}),
        )]);
        let served = parked
            .resume(route, Some(&answers), CancellationToken::new())
            .await;
        let Served::Done(Ok(ClientResult::ElicitResult(answer))) = served else {
            panic!("the call ends with the answer: {served:?}");
        };
        assert_eq!(answer.content, Some(json!({"name": "carol"})));
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_missing_or_malformed_answer_reaches_the_upstream_as_an_error() {
        let (link, _running) = link();
        let route = Route::new(link, None, None);
        for (answers, says) in [
            (Answers::new(), "no answer"),
            (
                Answers::from([("upstream-1".to_owned(), json!({"action": 7}))]),
                "a malformed answer",
            ),
        ] {
            let flag = Arc::new(AtomicBool::new(false));
            let call = asking("who?", flag);
            let served = serve(route.clone(), false, CancellationToken::new(), call).await;
            let served = parked_of(served)
                .resume(route.clone(), Some(&answers), CancellationToken::new())
                .await;
            let Served::Done(Err(ServiceError::McpError(e))) = served else {
                panic!("an error for the upstream: {served:?}");
            };
            assert!(e.message.contains(says), "{}", e.message);
            assert!(e.message.contains("\"upstream-1\""), "{}", e.message);
        }
    }

    #[tokio::test]
    async fn a_parked_call_dropped_unresumed_or_cancelled_on_resume_ends() {
        let (link, _running) = link();
        let route = Route::new(link, None, None);
        let dropped = Arc::new(AtomicBool::new(false));
        let call = asking("who?", dropped.clone());
        let parked = parked_of(serve(route.clone(), false, CancellationToken::new(), call).await);
        drop(parked);
        tokio::time::timeout(Duration::from_secs(5), async {
            while !dropped.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the call ended");

        // Asked twice: a second round; then the client cancels the resumed request.
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let call = async move {
            let _flag = Dropped(flag);
            let first = current().expect("served").relay(elicitation("1")).await;
            let second = current().expect("served").relay(elicitation("2")).await;
            (first.is_ok(), second.is_ok())
        };
        let parked = parked_of(serve(route.clone(), false, CancellationToken::new(), call).await);
        let answers = Answers::from([("upstream-1".to_owned(), json!({"action": "decline"}))]);
        let again = parked
            .resume(route.clone(), Some(&answers), CancellationToken::new())
            .await;
        let again = parked_of(again);
        let questions = serde_json::to_value(again.questions()).expect("json");
        assert_eq!(questions["upstream-1"]["params"]["message"], "2");
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        let served = again.resume(route, Some(&answers), cancelled).await;
        assert!(matches!(served, Served::Cancelled), "{served:?}");
        tokio::time::timeout(Duration::from_secs(5), async {
            while !dropped.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the call ended");
    }
}
