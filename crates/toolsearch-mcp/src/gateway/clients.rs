//! The gateway's client sessions as its upstreams' notices reach them: an upstream's log
//! messages (to the sessions whose calls were in flight on its connection, else to every
//! session, each at the level it asked for, `logger` prefixed with the source's name), its
//! resource updates (to the sessions subscribed to that resource and the `subscriptions/listen`
//! streams following it, under the name each used), and the log level asked of the upstreams
//! (the most detailed level any session asked for).

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by SEP-2577 in rmcp,
// and still part of the protocol versions the gateway speaks.
#![allow(deprecated)]

use parking_lot::Mutex;
use std::sync::{Arc, Weak};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use tokio::sync::mpsc;

use super::Gateway;
use crate::downstream::{SessionLink, rank};
use crate::offered::resource_uri;

/// Every client session's link, and who subscribed to what.
#[derive(Debug, Default)]
pub(crate) struct Clients {
    sessions: Mutex<Vec<Weak<SessionLink>>>,
    subscriptions: Mutex<Vec<Subscription>>,
    /// The most detailed level any session asked for, as sent to the upstreams.
    level: Mutex<Option<LoggingLevel>>,
}

/// Who follows a resource: a session (`resources/subscribe`, told by a plain notification), or
/// a `subscriptions/listen` stream (2026-07-28; told through the stream's channel, which takes
/// the name it subscribed with).
#[derive(Debug, Clone)]
pub(crate) enum Follower {
    Session(Weak<SessionLink>),
    Stream(mpsc::UnboundedSender<String>),
}

impl Follower {
    /// A session's.
    pub(crate) fn session(link: &Arc<SessionLink>) -> Self {
        Follower::Session(Arc::downgrade(link))
    }

    /// Whether it still listens.
    fn alive(&self) -> bool {
        match self {
            Follower::Session(link) => link.strong_count() > 0,
            Follower::Stream(updates) => !updates.is_closed(),
        }
    }

    fn same(&self, other: &Follower) -> bool {
        match (self, other) {
            (Follower::Session(a), Follower::Session(b)) => Weak::ptr_eq(a, b),
            (Follower::Stream(a), Follower::Stream(b)) => a.same_channel(b),
            _ => false,
        }
    }
}

/// A follower of a resource.
#[derive(Debug)]
struct Subscription {
    follower: Follower,
    source: String,
    /// The resource's URI at its source.
    uri: String,
    /// The follower named it by its offered URI (`toolsearch://<source>/<uri>`), not the
    /// source's own: its updates come under the name it used.
    renamed: bool,
}

impl Subscription {
    fn is(&self, source: &str, uri: &str) -> bool {
        self.source == source && self.uri == uri
    }
}

/// The live links among `links`, dropping the ones whose session has ended.
fn live(links: &mut Vec<Weak<SessionLink>>) -> Vec<Arc<SessionLink>> {
    links.retain(|w| w.strong_count() > 0);
    links.iter().filter_map(Weak::upgrade).collect()
}

impl Clients {
    /// Notes a new client session.
    pub(crate) fn add(&self, link: &Arc<SessionLink>) {
        let mut sessions = self.sessions.lock();
        sessions.retain(|w| w.strong_count() > 0);
        sessions.push(Arc::downgrade(link));
    }

    /// Notes that `follower` follows resource `uri` of `source` (named by its offered URI when
    /// `renamed`); whether it is the first to (the upstream must be told).
    pub(crate) fn subscribe(
        &self,
        follower: &Follower,
        source: &str,
        uri: &str,
        renamed: bool,
    ) -> bool {
        let mut subs = self.subscriptions.lock();
        subs.retain(|s| s.follower.alive());
        let first = !subs.iter().any(|s| s.is(source, uri));
        if !subs
            .iter()
            .any(|s| s.is(source, uri) && s.follower.same(follower))
        {
            subs.push(Subscription {
                follower: follower.clone(),
                source: source.to_owned(),
                uri: uri.to_owned(),
                renamed,
            });
        }
        first
    }

    /// Notes that `follower` no longer follows resource `uri` of `source`; whether nobody
    /// follows it any more (the upstream may be told).
    pub(crate) fn unsubscribe(&self, follower: &Follower, source: &str, uri: &str) -> bool {
        let mut subs = self.subscriptions.lock();
        subs.retain(|s| s.follower.alive() && !(s.is(source, uri) && s.follower.same(follower)));
        !subs.iter().any(|s| s.is(source, uri))
    }
}

impl Gateway {
    /// Notes a new client session (its log messages and subscriptions start).
    pub(crate) fn add_client(&self, link: &Arc<SessionLink>) {
        self.clients.add(link);
    }

    /// The client sessions' registry.
    pub(crate) fn clients(&self) -> &Clients {
        &self.clients
    }

    /// A session asked for log messages at `level` and above: the upstreams are asked for as
    /// much when no session asked for more detail before (every upstream that offers logging).
    pub(crate) async fn ask_log_level(&self, level: LoggingLevel) {
        {
            let mut asked = self.clients.level.lock();
            if asked.is_some_and(|a| rank(a) <= rank(level)) {
                return;
            }
            *asked = Some(level);
        }
        for (_, upstream) in self.connected_upstreams() {
            upstream.set_log_level(level).await;
        }
    }

    /// The most detailed log level a session asked for, which an upstream that connects later
    /// is asked for too.
    pub(crate) fn asked_log_level(&self) -> Option<LoggingLevel> {
        *self.clients.level.lock()
    }

    /// An upstream's log message: to `sessions` (those with calls in flight on its connection
    /// when it came), or to every session when there were none, each at its level.
    pub(crate) async fn log(
        &self,
        source: &str,
        sessions: Vec<Arc<SessionLink>>,
        mut message: LoggingMessageNotificationParam,
    ) {
        message.logger = Some(match message.logger.take() {
            Some(logger) => format!("{source}/{logger}"),
            None => source.to_owned(),
        });
        let targets = if sessions.is_empty() {
            live(&mut self.clients.sessions.lock())
        } else {
            sessions
        };
        for link in targets.iter().filter(|l| l.wants(message.level)) {
            if let Err(e) = link.peer().notify_logging_message(message.clone()).await {
                tracing::debug!(source, error = %e, "a log message could not reach a client");
            }
        }
    }

    /// An upstream's resource changed: everyone following it hears of it.
    pub(crate) async fn resource_updated(&self, source: &str, uri: &str) {
        let targets: Vec<(Follower, bool)> = {
            let mut subs = self.clients.subscriptions.lock();
            subs.retain(|s| s.follower.alive());
            subs.iter()
                .filter(|s| s.is(source, uri))
                .map(|s| (s.follower.clone(), s.renamed))
                .collect()
        };
        let offered = resource_uri(source, uri);
        for (follower, renamed) in targets {
            let name = if renamed { &offered } else { uri };
            match follower {
                Follower::Session(link) => {
                    let Some(link) = link.upgrade() else { continue };
                    let params = ResourceUpdatedNotificationParam::new(name.to_owned());
                    if let Err(e) = link.peer().notify_resource_updated(params).await {
                        tracing::debug!(source, error = %e, "a resource update could not reach a client");
                    }
                }
                Follower::Stream(updates) => {
                    let _ = updates.send(name.to_owned());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_is_asked_by_the_first_follower_and_let_go_by_the_last() {
        let clients = Clients::default();
        let (stream, updates) = mpsc::unbounded_channel();
        let stream = Follower::Stream(stream);
        assert!(clients.subscribe(&stream, "docs", "file:///a", true));
        // Again, or another resource's first follower.
        assert!(!clients.subscribe(&stream, "docs", "file:///a", true));
        assert!(clients.subscribe(&stream, "docs", "file:///b", false));
        let (other, _kept) = mpsc::unbounded_channel();
        let other = Follower::Stream(other);
        assert!(!clients.subscribe(&other, "docs", "file:///a", true));
        assert!(!clients.unsubscribe(&stream, "docs", "file:///a"));
        assert!(clients.unsubscribe(&other, "docs", "file:///a"));
        // A stream that ended follows nothing: the next follower is the first again.
        drop(updates);
        assert!(clients.subscribe(&other, "docs", "file:///b", false));
    }
}
