//! One run (one downstream session): its context, its usage count, its per-session state.

use parking_lot::Mutex;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::Approver;

/// One run (one downstream session): its id, its trusted context values, its usage count
/// (every control or direct call counts one, a proxied call two — the envelope and the
/// target), and per-session state executors keep (such as upstream connections carrying the
/// session's context headers), dropped with the session.
#[derive(Debug, Default)]
pub struct Session {
    calls: AtomicU64,
    context: BTreeMap<String, String>,
    state: Mutex<BTreeMap<String, Arc<dyn Any + Send + Sync>>>,
    approver: OnceLock<Arc<dyn Approver>>,
}

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

impl Session {
    /// A fresh session with a new `run.id`.
    pub fn new() -> Self {
        Self::with_context(BTreeMap::new())
    }

    /// A fresh session with trusted context values (`identity.tenant_id`, ...); `run.id` is set
    /// to a new id unless given.
    pub fn with_context(mut context: BTreeMap<String, String>) -> Self {
        context.entry("run.id".into()).or_insert_with(|| {
            let n = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
            format!("run-{}-{n}", std::process::id())
        });
        Self {
            calls: AtomicU64::new(0),
            context,
            state: Mutex::new(BTreeMap::new()),
            approver: OnceLock::new(),
        }
    }

    /// Sets who asks this session's person before an approval-gated tool runs (once; a later
    /// call keeps the first).
    pub fn set_approver(&self, approver: Arc<dyn Approver>) {
        let _ = self.approver.set(approver);
    }

    /// Who asks this session's person, when someone can.
    pub fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.approver.get()
    }

    /// A trusted context value by path (`run.id`, `identity.tenant_id`).
    pub fn context(&self, path: &str) -> Option<&str> {
        self.context.get(path).map(String::as_str)
    }

    /// Per-session state under `key`, made by `make` on first use.
    pub fn state_or_insert_with<T: Any + Send + Sync>(
        &self,
        key: &str,
        make: impl FnOnce() -> T,
    ) -> Option<Arc<T>> {
        let mut state = self.state.lock();
        let entry = state
            .entry(key.to_owned())
            .or_insert_with(|| Arc::new(make()));
        entry.clone().downcast::<T>().ok()
    }

    /// Tool calls counted so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Counts `cost` calls unless that would pass `limit`; returns the count reached, or the
    /// count that stands when refused.
    pub(crate) fn charge(&self, cost: u64, limit: Option<u64>) -> Result<u64, u64> {
        let mut current = self.calls.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(cost);
            if limit.is_some_and(|max| next > max) {
                return Err(current);
            }
            match self.calls.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(next),
                Err(seen) => current = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_have_their_own_run_id_context_and_state() {
        let a = Session::new();
        let b =
            Session::with_context([("identity.tenant_id".to_owned(), "acme".to_owned())].into());
        assert_ne!(a.context("run.id"), b.context("run.id"));
        assert_eq!(b.context("identity.tenant_id"), Some("acme"));
        assert_eq!(a.context("identity.tenant_id"), None);
        let first = a.state_or_insert_with("k", || 1u32).expect("u32");
        let again = a.state_or_insert_with("k", || 2u32).expect("u32");
        assert!(Arc::ptr_eq(&first, &again));
        assert!(a.state_or_insert_with("k", || "other type").is_none());
        assert_eq!(*b.state_or_insert_with("k", || 2u32).expect("u32"), 2);
    }

    #[test]
    fn charges_until_the_limit() {
        let s = Session::new();
        assert_eq!(s.charge(2, Some(3)), Ok(2));
        assert_eq!(s.charge(2, Some(3)), Err(2));
        assert_eq!(s.charge(1, Some(3)), Ok(3));
        assert_eq!(s.charge(1, None), Ok(4));
    }
}
