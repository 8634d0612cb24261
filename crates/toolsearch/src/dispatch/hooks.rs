//! Hooks on the one execution path: approval, the on-unauthorized callback, usage limits.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::BoxFuture;

/// What is about to be called (handed to the approval hook).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallInfo {
    /// The group, for proxied tools.
    pub group: Option<String>,
    /// The local name.
    pub tool: String,
    /// The source that runs it.
    pub source: String,
}

/// The approval hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the call.
    Approve,
    /// Do not run it; the message reaches the model.
    Deny(String),
}

/// Decides whether a validated call may run.
pub type ApprovalHook = Arc<dyn Fn(CallInfo) -> BoxFuture<Approval> + Send + Sync>;
/// Told the upstream's name when an executor answers unauthorized.
pub type UnauthorizedHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Tool calls made in one run (one downstream session): every control or direct call counts
/// one, a proxied call (`call_tool`) two — the envelope and the target.
#[derive(Debug, Default)]
pub struct Session {
    calls: AtomicU64,
}

impl Session {
    /// A fresh session.
    pub fn new() -> Self {
        Self::default()
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
    fn charges_until_the_limit() {
        let s = Session::new();
        assert_eq!(s.charge(2, Some(3)), Ok(2));
        assert_eq!(s.charge(2, Some(3)), Err(2));
        assert_eq!(s.charge(1, Some(3)), Ok(3));
        assert_eq!(s.charge(1, None), Ok(4));
    }
}
