//! Accepting HTTP connections until stopped: the loop both listeners (MCP over HTTP, and the
//! operator's `--metrics` listener) run. Every connection sets `TCP_NODELAY` (without it Nagle's
//! algorithm and the client's delayed ACK hold each response on a kept-alive connection for
//! ~40 ms), is served by `handle` (HTTP/1 or 2, upgrades allowed), and is dropped when `stop`
//! is cancelled.

use std::convert::Infallible;
use std::future::Future;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What a handler answers.
pub(crate) type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// Spawns the accept loop of `listener`; it ends when `stop` is cancelled. `what` names the
/// listener in logs.
pub(crate) fn spawn_accept_loop<H, F>(
    listener: TcpListener,
    stop: CancellationToken,
    what: &'static str,
    handle: H,
) -> tokio::task::JoinHandle<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<HttpResponse, Infallible>> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, listener = what, "accept failed");
                        continue;
                    }
                },
            };
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY not set");
            }
            let handler = hyper::service::service_fn(handle.clone());
            let conn_stop = stop.clone();
            tokio::spawn(async move {
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), handler);
                tokio::select! {
                    _ = conn => {}
                    _ = conn_stop.cancelled() => {}
                }
            });
        }
    })
}
