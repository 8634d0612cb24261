//! The operator's listener (`serve --metrics ADDR`): `/metrics`, `/healthz` and `/readyz` on
//! an address of their own, for a gateway served over stdio (which has no HTTP server) or an
//! HTTP gateway whose MCP listener should not carry its metrics. It serves nothing else (`404`)
//! and asks no token: bind it where only the scraper and the probes reach it (the CLI takes
//! the address as given).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;

use crate::Gateway;
use crate::accept::{ConnectionLimits, spawn_accept_loop};

/// A running operations listener.
#[derive(Debug)]
pub struct MetricsListener {
    /// The bound address (the port is real even when 0 was asked).
    pub local_addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsListener {
    /// Stops accepting and waits for the accept loop to finish.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Binds `addr` and serves the metrics and probes of `gateway` until
/// [`MetricsListener::shutdown`].
pub async fn serve_metrics_listener(
    gateway: Arc<Gateway>,
    addr: SocketAddr,
) -> std::io::Result<MetricsListener> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let handle = move |req: Request<Incoming>| {
        let gateway = gateway.clone();
        async move {
            let (method, path) = (req.method(), req.uri().path());
            if let Some(answer) = crate::health::probe(method, path, &gateway) {
                return Ok(answer);
            }
            if path == crate::scrape::METRICS_PATH {
                return Ok(crate::scrape::answer(method, req.headers(), &gateway));
            }
            let mut r = Response::new(
                Full::new(Bytes::from_static(
                    b"not found: this listener serves /metrics, /healthz and /readyz\n",
                ))
                .boxed(),
            );
            *r.status_mut() = StatusCode::NOT_FOUND;
            Ok(r)
        }
    };
    let task = spawn_accept_loop(
        listener,
        stop.clone(),
        "metrics",
        ConnectionLimits::default(),
        handle,
    );
    Ok(MetricsListener {
        local_addr,
        stop,
        task,
    })
}
