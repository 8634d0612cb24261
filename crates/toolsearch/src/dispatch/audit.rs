//! The audit record of one tool call: when, who, what, how it ended and how long it took —
//! never argument values, results, tokens or header values. The engine hands each record to
//! the configured sink (the gateway appends JSON lines to `[audit] file`).

use std::sync::Arc;
use std::time::SystemTime;

use crate::outcome::Outcome;

/// One tool call, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call was answered.
    pub ts: SystemTime,
    /// The caller's client name (`identity.client`), or its stable id, when authenticated.
    pub client: Option<String>,
    /// The target's group (a call control), when there is one.
    pub group: Option<String>,
    /// The tool: the target of a call control, else the control or direct tool called.
    pub tool: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took, in milliseconds.
    pub ms: f64,
}

impl AuditRecord {
    /// A record of a call of `tool` answered now, with no caller and no group.
    pub fn new(tool: impl Into<String>, outcome: Outcome, ms: f64) -> Self {
        Self {
            ts: SystemTime::now(),
            client: None,
            group: None,
            tool: tool.into(),
            outcome,
            ms,
        }
    }
}

/// Where audit records go.
#[derive(Clone)]
pub struct AuditSink(Arc<dyn Fn(&AuditRecord) + Send + Sync>);

impl AuditSink {
    /// Records go to `f`.
    pub fn new(f: impl Fn(&AuditRecord) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Hands over one record.
    pub fn record(&self, record: &AuditRecord) {
        (self.0)(record);
    }
}

impl std::fmt::Debug for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditSink")
    }
}
