//! Hooks on the one execution path: approval and the on-unauthorized callback.

use std::sync::Arc;

use crate::exec::BoxFuture;

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
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
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
