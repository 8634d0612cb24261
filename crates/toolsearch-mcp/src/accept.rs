//! Accepting HTTP connections until stopped: the loop both listeners (MCP over HTTP, and the
//! operator's `--metrics` listener) run. Every connection sets `TCP_NODELAY` (without it Nagle's
//! algorithm and the client's delayed ACK hold each response on a kept-alive connection for
//! ~40 ms), is served by `handle` (HTTP/1 or 2, upgrades allowed), and is dropped when `stop`
//! is cancelled.
//!
//! Under pressure it stays responsive and quiet: a failed `accept` (at the open-files limit,
//! above all) pauses the loop, longer while failures go on (10 ms doubling to 1 s), and is
//! logged once per ten seconds with a count, never once per failure; a connection that has not
//! sent a request's whole head within [`ConnectionLimits::header_read`] is closed, and so is one
//! with no request in progress for [`ConnectionLimits::idle`] (a request in progress, a long
//! SSE stream among them, keeps its connection).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What a handler answers.
pub(crate) type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// How long an HTTP connection may take to send a request's head, and sit with no request in
/// progress (`[limits] http_header_timeout_ms`, `http_idle_timeout_s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// From the start of a request (its first byte, or for the first request the connection)
    /// to the end of its head (default 10 s).
    pub header_read: Duration,
    /// With no request in progress (default 120 s).
    pub idle: Duration,
}

/// Default of [`ConnectionLimits::header_read`].
pub(crate) const DEFAULT_HEADER_READ: Duration = Duration::from_secs(10);
/// Default of [`ConnectionLimits::idle`].
pub(crate) const DEFAULT_IDLE: Duration = Duration::from_secs(120);

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read: DEFAULT_HEADER_READ,
            idle: DEFAULT_IDLE,
        }
    }
}

impl ConnectionLimits {
    /// The limits, each `None` kept at its default.
    pub fn new(header_read: Option<Duration>, idle: Option<Duration>) -> Self {
        let default = Self::default();
        Self {
            header_read: header_read.unwrap_or(default.header_read),
            idle: idle.unwrap_or(default.idle),
        }
    }
}

/// Longest pause after failed accepts.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// How often failed accepts are logged at most.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Failed accepts: how long to pause (by how many failed in a row), and what to log (at most
/// one line per [`LOG_EVERY`], counting the failures since the last).
#[derive(Debug, Default)]
struct Failures {
    /// Failures in a row (reset by an accepted connection).
    in_a_row: u32,
    /// Failures not logged yet, and when the last line was written.
    unlogged: u64,
    logged: Option<Instant>,
}

impl Failures {
    /// Notes a failure; the pause before the next accept.
    fn failed(&mut self, error: &std::io::Error, listener: &'static str) -> Duration {
        self.in_a_row = self.in_a_row.saturating_add(1);
        self.unlogged += 1;
        let due = self.logged.is_none_or(|at| at.elapsed() >= LOG_EVERY);
        if due {
            tracing::warn!(
                error = %error,
                listener,
                failures = self.unlogged,
                "accept failed (connections wait until it succeeds; logged at most every 10 s)"
            );
            self.unlogged = 0;
            self.logged = Some(Instant::now());
        }
        pause(self.in_a_row)
    }

    /// Notes an accepted connection: the pauses start over; failures not logged yet are, when
    /// the last line is old enough (else with the next line).
    fn accepted(&mut self, listener: &'static str) {
        if self.in_a_row == 0 {
            return;
        }
        self.in_a_row = 0;
        let due = self.logged.is_none_or(|at| at.elapsed() >= LOG_EVERY);
        if self.unlogged > 0 && due {
            tracing::warn!(
                listener,
                failures = self.unlogged,
                "accept failed more times since the last line; it succeeds again"
            );
            self.unlogged = 0;
            self.logged = Some(Instant::now());
        }
    }
}

/// The pause after the `n`th failed accept in a row: 10 ms, doubling, at most [`MAX_PAUSE`].
fn pause(n: u32) -> Duration {
    let ms = 10u64.saturating_mul(1 << n.saturating_sub(1).min(10));
    Duration::from_millis(ms).min(MAX_PAUSE)
}

/// Spawns the accept loop of `listener`; it ends when `stop` is cancelled. `what` names the
/// listener in logs.
pub(crate) fn spawn_accept_loop<H, F>(
    listener: TcpListener,
    stop: CancellationToken,
    what: &'static str,
    limits: ConnectionLimits,
    handle: H,
) -> tokio::task::JoinHandle<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<HttpResponse, Infallible>> + Send + 'static,
{
    tokio::spawn(async move {
        let mut failures = Failures::default();
        loop {
            let stream = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        failures.accepted(what);
                        stream
                    }
                    Err(e) => {
                        let pause = failures.failed(&e, what);
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            _ = tokio::time::sleep(pause) => continue,
                        }
                    }
                },
            };
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY not set");
            }
            tokio::spawn(serve_connection(
                stream,
                handle.clone(),
                limits,
                stop.clone(),
            ));
        }
    })
}

/// Serves one connection until it ends, `stop` fires, or it sits idle for `limits.idle`
/// (then it is shut down gracefully: a response being written still finishes).
async fn serve_connection<H, F>(
    stream: tokio::net::TcpStream,
    handle: H,
    limits: ConnectionLimits,
    stop: CancellationToken,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<HttpResponse, Infallible>> + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let tracked = activity.clone();
    let handler = hyper::service::service_fn(move |request| {
        let busy = Busy::new(tracked.clone());
        let answer = handle(request);
        async move {
            let response = answer.await?;
            // The request counts as in progress until its body is written (or dropped).
            Ok::<_, Infallible>(response.map(|body| Tracked { body, _busy: busy }))
        }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), handler);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        // Before its first request the connection has `header_read` to send one (hyper's own
        // timer starts only once the protocol is known, after the first bytes); then `idle`
        // between requests.
        let check = if !activity.begun() {
            limits
                .header_read
                .saturating_sub(activity.started.elapsed())
        } else {
            match activity.idle_for() {
                Some(idle) => limits.idle.saturating_sub(idle),
                None => limits.idle,
            }
        };
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = stop.cancelled() => return,
            // A request began or ended: the deadline moves.
            () = activity.changed.notified(), if !closing => {}
            _ = tokio::time::sleep(check), if !closing => {
                if !activity.begun() {
                    if activity.started.elapsed() >= limits.header_read {
                        // Nothing usable arrived: drop it, closing the socket.
                        return;
                    }
                } else if activity.idle_for().is_some_and(|idle| idle >= limits.idle) {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}

/// When a connection last had a request in progress, and how many it has now.
#[derive(Debug)]
struct Activity {
    started: Instant,
    /// Whether a request ever began on it.
    begun: AtomicBool,
    in_progress: AtomicUsize,
    /// Told when a request begins or ends.
    changed: tokio::sync::Notify,
    /// Milliseconds from `started` to when the last request ended (or the connection began).
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            begun: AtomicBool::new(false),
            in_progress: AtomicUsize::new(0),
            changed: tokio::sync::Notify::new(),
            last_ms: AtomicU64::new(0),
        }
    }

    /// Whether a request ever began on it.
    fn begun(&self) -> bool {
        self.begun.load(Ordering::Acquire)
    }

    /// How long it has had no request in progress; `None` while it has one.
    fn idle_for(&self) -> Option<Duration> {
        if self.in_progress.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::Acquire));
        Some(self.started.elapsed().saturating_sub(last))
    }
}

/// One request in progress on a connection, until its response body is done.
#[derive(Debug)]
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Self {
        activity.in_progress.fetch_add(1, Ordering::AcqRel);
        activity.begun.store(true, Ordering::Release);
        activity.changed.notify_one();
        Self(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_ms.fetch_max(ms, Ordering::AcqRel);
        self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_one();
    }
}

/// `response` with `guard` kept until its body has been written (or dropped).
pub(crate) fn guard_body<G: Send + Sync + Unpin + 'static>(
    response: HttpResponse,
    guard: G,
) -> HttpResponse {
    use http_body_util::BodyExt;
    response.map(|body| Tracked { body, _busy: guard }.boxed())
}

/// A response body that keeps something (its request counted as in progress) until it is
/// dropped.
struct Tracked<G = Busy> {
    body: BoxBody<Bytes, Infallible>,
    _busy: G,
}

impl<G: Unpin> Body for Tracked<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_accepts_pause_longer_up_to_a_second() {
        let pauses: Vec<u64> = (1..=9).map(|n| pause(n).as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert_eq!(pause(u32::MAX), MAX_PAUSE);
    }

    #[test]
    fn a_request_in_progress_is_not_idle_and_its_end_restarts_the_clock() {
        let activity = Arc::new(Activity::new());
        assert!(activity.idle_for().is_some());
        let busy = Busy::new(activity.clone());
        let second = Busy::new(activity.clone());
        assert_eq!(activity.idle_for(), None);
        drop(busy);
        assert_eq!(activity.idle_for(), None, "one is still in progress");
        std::thread::sleep(Duration::from_millis(20));
        drop(second);
        let idle = activity.idle_for().expect("idle");
        assert!(idle < Duration::from_millis(15), "{idle:?}");
    }
}
