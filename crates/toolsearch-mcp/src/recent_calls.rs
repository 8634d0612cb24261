//! The most recent tool calls, in a bounded ring in memory, for the console's Calls view: the
//! same records as the audit log (time, caller, group, tool, outcome, milliseconds) — never
//! arguments, results or header values, which the records do not even carry.

use std::collections::VecDeque;
use std::time::SystemTime;

use parking_lot::Mutex;
use toolsearch::AuditRecord;

/// How many calls the ring keeps by default.
pub const DEFAULT_RECENT_CALLS: usize = 1000;

/// One call as the console shows it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecentCall {
    /// When it was answered.
    pub ts: SystemTime,
    /// The caller's client name or stable id, when authenticated.
    pub caller: Option<String>,
    /// The target's group, when there is one.
    pub group: Option<String>,
    /// The tool (or control) called.
    pub tool: String,
    /// `ok`, `tool_error` or an error code.
    pub outcome: &'static str,
    /// How long it took.
    pub ms: f64,
}

/// The ring: the newest [`capacity`](Self::new) calls.
#[derive(Debug)]
pub struct RecentCalls {
    capacity: usize,
    ring: Mutex<VecDeque<RecentCall>>,
}

impl Default for RecentCalls {
    fn default() -> Self {
        Self::new(DEFAULT_RECENT_CALLS)
    }
}

impl RecentCalls {
    /// A ring of at most `capacity` calls (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            ring: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
        }
    }

    /// Keeps one call, forgetting the oldest when full.
    pub fn record(&self, r: &AuditRecord) {
        let call = RecentCall {
            ts: r.ts,
            caller: r.client.clone(),
            group: r.group.clone(),
            tool: r.tool.clone(),
            outcome: r.outcome.as_str(),
            ms: r.ms,
        };
        let mut ring = self.ring.lock();
        if ring.len() == self.capacity {
            ring.pop_front();
        }
        ring.push_back(call);
    }

    /// The newest `n` calls, newest first.
    pub fn newest(&self, n: usize) -> Vec<RecentCall> {
        self.ring.lock().iter().rev().take(n).cloned().collect()
    }

    /// The most it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many calls it holds.
    pub fn len(&self) -> usize {
        self.ring.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolsearch::Outcome;

    fn record(tool: &str) -> AuditRecord {
        let mut r = AuditRecord::new(tool, Outcome::Ok, 1.5);
        r.client = Some("agent".into());
        r
    }

    /// The ring keeps the newest calls only, newest first.
    #[test]
    fn the_ring_keeps_the_newest_calls() {
        let ring = RecentCalls::new(3);
        for t in ["a", "b", "c", "d"] {
            ring.record(&record(t));
        }
        let tools: Vec<String> = ring.newest(10).into_iter().map(|c| c.tool).collect();
        assert_eq!(tools, ["d", "c", "b"]);
        assert_eq!(ring.newest(1)[0].caller.as_deref(), Some("agent"));
        assert_eq!(ring.len(), 3);
    }
}
