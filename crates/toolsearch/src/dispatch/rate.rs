//! Rate limits per caller (`[limits] rate`): a token bucket per caller over every tool call it
//! makes, controls and a program's host calls included. A caller is its session's `caller.id`
//! (the authenticated identity), or its session when it has none.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::config::RateLimit;
use crate::exec::Session;

/// The context path of the authenticated caller's stable id.
pub const CALLER_PATH: &str = "caller.id";
/// Most callers whose buckets are kept; the fullest are dropped past it.
const MAX_CALLERS: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets, one per caller.
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// Buckets refilling at `limit.calls_per_minute`, holding `limit.burst`.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            per_second: limit.calls_per_minute / 60.0,
            burst: f64::from(limit.burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one call from `session`'s caller's bucket; when it is empty, how long until it
    /// holds one.
    pub fn take(&self, session: &Session) -> Result<(), Duration> {
        let key = session
            .context(CALLER_PATH)
            .or_else(|| session.context("run.id"))
            .unwrap_or("")
            .to_owned();
        let now = Instant::now();
        let mut buckets = self.buckets.lock();
        if buckets.len() >= MAX_CALLERS && !buckets.contains_key(&key) {
            // Full buckets carry no state worth keeping.
            let (per_second, burst) = (self.per_second, self.burst);
            buckets.retain(|_, b| {
                b.tokens + per_second * now.duration_since(b.at).as_secs_f64() < burst
            });
        }
        let b = buckets.entry(key).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let refilled =
            (b.tokens + self.per_second * now.duration_since(b.at).as_secs_f64()).min(self.burst);
        b.at = now;
        if refilled >= 1.0 {
            b.tokens = refilled - 1.0;
            Ok(())
        } else {
            b.tokens = refilled;
            let wait = (1.0 - refilled) / self.per_second;
            Err(Duration::from_secs_f64(wait.min(86_400.0)))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn caller(id: &str) -> Session {
        Session::with_context(BTreeMap::from([(CALLER_PATH.to_owned(), id.to_owned())]))
    }

    #[test]
    fn each_caller_has_its_own_bucket() {
        let r = RateLimiter::new(RateLimit::new(60.0, 2));
        let (a, a_again, b) = (caller("a"), caller("a"), caller("b"));
        assert!(r.take(&a).is_ok());
        assert!(
            r.take(&a_again).is_ok(),
            "the same caller in another session shares it"
        );
        let wait = r.take(&a).expect_err("empty");
        assert!(
            wait > Duration::from_millis(900) && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(r.take(&b).is_ok(), "another caller is unaffected");
    }
}
