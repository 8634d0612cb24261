//! The calls in flight on one upstream connection, each with the client request it serves:
//! whose progress an upstream's progress token is, and who its requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) can go to — the one client session with calls in
//! flight there, or nobody when that cannot be told for certain.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rmcp::model::ProgressToken;
use tokio::sync::Notify;

use crate::downstream::{Downstream, SessionLink};

/// One call in flight.
#[derive(Debug)]
struct Entry {
    id: u64,
    downstream: Arc<Downstream>,
    /// The progress token the call carries upstream, once known.
    token: Option<ProgressToken>,
}

/// The calls in flight on one connection.
#[derive(Debug, Default)]
pub(crate) struct Inflight {
    next: AtomicU64,
    calls: Mutex<Vec<Entry>>,
    /// Sessions whose calls ended lately, and when (see [`LATE`]).
    ended: Mutex<Vec<(Weak<SessionLink>, Instant)>>,
    /// Progress and log notifications read from the connection and not yet handled.
    notices_pending: AtomicUsize,
    notice_handled: Notify,
}

/// How long after its call ended a session still counts as the one an upstream's log message
/// is about: a message sent just before the answer may be read just after it (a call's answer
/// on a stdio upstream's call lane overtakes the notifications before it).
const LATE: Duration = Duration::from_millis(500);

/// Most ended calls remembered.
const ENDED: usize = 16;

/// Why an upstream's request cannot be relayed to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unroutable {
    /// No client call is in progress on the connection.
    NoCall,
    /// Calls of this many client sessions are in flight on the shared connection.
    Several(usize),
}

/// One log message of the connection, counted as handled when dropped (once it has reached its
/// sessions): a call's answer waits, briefly, for the messages read before it.
#[derive(Debug)]
pub struct NoticeHandled(pub(crate) Arc<Inflight>);

impl Drop for NoticeHandled {
    fn drop(&mut self) {
        self.0.notice_handled();
    }
}

/// Removes its call from the registry when dropped (answered, failed or abandoned).
#[derive(Debug)]
pub(crate) struct InflightGuard {
    inflight: Arc<Inflight>,
    id: u64,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        let mut calls = self.inflight.calls();
        let Some(at) = calls.iter().position(|e| e.id == self.id) else {
            return;
        };
        let entry = calls.remove(at);
        drop(calls);
        let now = Instant::now();
        let session = entry.downstream.session();
        let mut ended = self.inflight.ended.lock();
        // The session of the call that ended last (the usual case): only its time moves on. (A
        // weak reference keeps its allocation, so no other session can share the address.)
        if let Some((last, at)) = ended.last_mut()
            && std::ptr::eq(last.as_ptr(), Arc::as_ptr(&session))
        {
            *at = now;
            return;
        }
        ended.retain(|(s, t)| s.strong_count() > 0 && now.duration_since(*t) < LATE);
        if ended.len() == ENDED {
            ended.remove(0);
        }
        ended.push((Arc::downgrade(&session), now));
    }
}

impl InflightGuard {
    /// See [`Inflight::notices_settled`].
    pub(crate) async fn notices_settled(&self, limit: Duration) {
        self.inflight.notices_settled(limit).await;
    }

    /// Notes the progress token the call carries upstream: the upstream's progress under it
    /// goes to this call's client.
    pub(crate) fn set_token(&self, token: ProgressToken) {
        if let Some(e) = self.inflight.calls().iter_mut().find(|e| e.id == self.id) {
            e.token = Some(token);
        }
    }
}

impl Inflight {
    fn calls(&self) -> parking_lot::MutexGuard<'_, Vec<Entry>> {
        self.calls.lock()
    }

    /// Registers a call serving `downstream` until the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, downstream: Arc<Downstream>) -> InflightGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls().push(Entry {
            id,
            downstream,
            token: None,
        });
        InflightGuard {
            inflight: self.clone(),
            id,
        }
    }

    /// A progress or log notification was read from the connection (its handler runs later).
    pub(crate) fn notice_arrives(&self) {
        self.notices_pending.fetch_add(1, Ordering::AcqRel);
    }

    /// A progress or log notification was handled (sent on to its clients, or found to be
    /// nobody's).
    pub(crate) fn notice_handled(&self) {
        let _ = self
            .notices_pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.notice_handled.notify_waiters();
    }

    /// Waits, at most `limit`, until every progress and log notification read so far was
    /// handled: a call's answer then goes to its client after the progress and the log
    /// messages the upstream sent before it.
    pub(crate) async fn notices_settled(&self, limit: Duration) {
        // Nearly always: nothing pending, and no waiter or timer is set up.
        if self.notices_pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let settled = async {
            loop {
                let handled = self.notice_handled.notified();
                tokio::pin!(handled);
                handled.as_mut().enable();
                if self.notices_pending.load(Ordering::Acquire) == 0 {
                    return;
                }
                handled.await;
            }
        };
        let _ = tokio::time::timeout(limit, settled).await;
    }

    /// The client request whose call carries `token` upstream.
    pub(crate) fn by_token(&self, token: &ProgressToken) -> Option<Arc<Downstream>> {
        self.calls()
            .iter()
            .find(|e| e.token.as_ref() == Some(token))
            .map(|e| e.downstream.clone())
    }

    /// Who a request of the upstream goes to: the newest call's client request, when every
    /// call in flight belongs to one client session; otherwise why nobody can be told.
    pub(crate) fn target(&self) -> Result<Arc<Downstream>, Unroutable> {
        let calls = self.calls();
        let Some(newest) = calls.last() else {
            return Err(Unroutable::NoCall);
        };
        let sessions = self.distinct(&calls);
        if sessions.len() > 1 {
            return Err(Unroutable::Several(sessions.len()));
        }
        Ok(newest.downstream.clone())
    }

    /// The client sessions an upstream's log message is about: those with calls in flight,
    /// and those whose calls ended within [`LATE`], each once.
    pub(crate) fn sessions(&self) -> Vec<Arc<SessionLink>> {
        let mut out = self.distinct(&self.calls());
        for (s, t) in self.ended.lock().iter() {
            if t.elapsed() >= LATE {
                continue;
            }
            if let Some(s) = s.upgrade()
                && !out.iter().any(|o| SessionLink::same(o, &s))
            {
                out.push(s);
            }
        }
        out
    }

    fn distinct(&self, calls: &[Entry]) -> Vec<Arc<SessionLink>> {
        let mut out: Vec<Arc<SessionLink>> = Vec::new();
        for e in calls {
            let s = e.downstream.session();
            if !out.iter().any(|o| SessionLink::same(o, &s)) {
                out.push(s);
            }
        }
        out
    }
}
