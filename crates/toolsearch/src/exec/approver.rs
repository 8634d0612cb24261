//! Asking the person behind a session before a tool runs: before a tool named by `[approval]
//! tools` runs, the call path asks the [`Approver`] of the request in progress (set with
//! [`with_approver`] around one call: the MCP server does so per request, since how a client is
//! asked depends on the request's protocol), else the session's ([`super::Session::set_approver`]).
//! With neither, the call is denied.

use std::future::Future;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::BoxFuture;

tokio::task_local! {
    static REQUEST_APPROVER: Arc<dyn Approver>;
}

/// Runs `call` (one request: a tool call, or a program's run with its host calls) with
/// `approver` asking the person about every approval-gated tool it reaches; it takes precedence
/// over the session's approver. The scope is the future itself: what it spawns elsewhere does
/// not inherit it.
pub async fn with_approver<F: Future>(approver: Arc<dyn Approver>, call: F) -> F::Output {
    REQUEST_APPROVER.scope(approver, call).await
}

/// The approver of the request in progress, when one was set with [`with_approver`].
pub(crate) fn request_approver() -> Option<Arc<dyn Approver>> {
    REQUEST_APPROVER.try_with(Arc::clone).ok()
}

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
