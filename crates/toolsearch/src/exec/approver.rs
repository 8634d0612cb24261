//! Asking the person behind a session before a tool runs: the MCP server gives each session
//! an [`Approver`] that asks through its client (MCP elicitation); the call path asks it before
//! a tool named by `[approval] tools` runs.

use serde_json::{Map, Value};

use super::BoxFuture;

/// What the person is asked about.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The tool's group (none for a direct tool).
    pub group: Option<String>,
    /// The tool's local name.
    pub tool: String,
    /// The arguments it would run with.
    pub arguments: Map<String, Value>,
}

impl ApprovalRequest {
    /// A request from its parts.
    pub fn new(group: Option<String>, tool: String, arguments: Map<String, Value>) -> Self {
        Self {
            group,
            tool,
            arguments,
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalAnswer {
    /// Run it.
    Accept,
    /// Do not run it, and why (declined, cancelled, the client could not ask).
    Decline(String),
}

/// Asks the person behind one session.
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Asks whether the call may run.
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<ApprovalAnswer>;
}
