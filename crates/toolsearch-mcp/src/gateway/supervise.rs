//! Keeping upstreams connected: one supervisor per upstream connects it, notices a crash,
//! marks the source unavailable, restarts it with exponential backoff, and pings it after a
//! call that was abandoned; one task follows the upstreams' change events.

use std::sync::{Arc, Weak};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{CONNECTING, FIRST_BACKOFF, Gateway, HEALTH_POLL, MAX_BACKOFF};
use crate::upstream::{PING_TIMEOUT, Upstream, UpstreamEvent};
use toolsearch::NEEDS_LOGIN;

pub(super) async fn follow(
    gateway: Weak<Gateway>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
) {
    while let Some(event) = events.recv().await {
        let Some(g) = gateway.upgrade() else { return };
        match event {
            UpstreamEvent::ToolsChanged(name) => g.refresh(&name).await,
            UpstreamEvent::ResourcesChanged(_) => g.resources_changed.send_modify(|v| *v += 1),
            UpstreamEvent::PromptsChanged(_) => g.prompts_changed.send_modify(|v| *v += 1),
            UpstreamEvent::Log {
                source,
                sessions,
                message,
                handled,
            } => {
                g.log(&source, sessions, message).await;
                drop(handled);
            }
            UpstreamEvent::ResourceUpdated { source, uri } => {
                g.resource_updated(&source, &uri).await
            }
        }
    }
}

/// Connects one upstream, then watches it: when its connection is gone, marks it unavailable
/// and reconnects with exponential backoff until it is back (or the gateway stops) — unless
/// the gateway connects each upstream once ([`super::GatewayOptions::connect_once`]). After a
/// call was abandoned (a timeout) it pings the upstream; one that does not answer within
/// [`PING_TIMEOUT`] is disconnected, and so restarted.
pub(super) async fn supervise(
    gateway: Weak<Gateway>,
    name: String,
    upstream: Arc<Upstream>,
    stop: CancellationToken,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut first = true;
    loop {
        if !first {
            let once = gateway.upgrade().is_none_or(|g| g.connect_once);
            if upstream.is_connected().await {
                backoff = FIRST_BACKOFF;
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(HEALTH_POLL) => {}
                    () = upstream.suspected() => check_health(&name, &upstream).await,
                }
                continue;
            }
            if once {
                // Connected once and now gone, or never connected: reported, not restarted.
                return;
            }
            {
                let Some(g) = gateway.upgrade() else { return };
                let reason = g
                    .statuses()
                    .into_iter()
                    .find(|s| s.name == name)
                    .and_then(|s| s.status.err())
                    .unwrap_or_else(|| "the upstream stopped".to_owned());
                let reason = if upstream.needs_login() {
                    NEEDS_LOGIN.to_owned()
                } else if reason == CONNECTING {
                    "the upstream stopped".to_owned()
                } else {
                    reason
                };
                g.set_down(&name, reason);
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        if !first && let Some(g) = gateway.upgrade() {
            g.metrics.restarted(&name);
        }
        first = false;
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            r = upstream.connect() => r,
        };
        let Some(g) = gateway.upgrade() else { return };
        match result {
            Ok(tools) => {
                tracing::info!(source = %name, tools = tools.len(), "upstream ready");
                // The log level sessions asked for before it connected, before any call.
                if let Some(level) = g.asked_log_level() {
                    upstream.set_log_level(level).await;
                }
                g.set_connected(&name, tools);
            }
            Err(e) => {
                tracing::warn!(source = %name, error = %e, retry_in = ?backoff, "upstream unavailable");
                upstream.disconnect().await;
                g.set_down(&name, e.to_string());
            }
        }
    }
}

/// Pings an upstream after an abandoned call; disconnects it when it does not answer, so the
/// supervisor restarts it.
async fn check_health(name: &str, upstream: &Upstream) {
    match upstream.ping(PING_TIMEOUT).await {
        Ok(()) => tracing::debug!(source = %name, "upstream answered the health ping"),
        Err(e) => {
            tracing::warn!(source = %name, error = %e, "upstream did not answer the health ping after an abandoned call; restarting it");
            upstream.disconnect().await;
        }
    }
}
