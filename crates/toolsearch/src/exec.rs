//! The execution contract, the lowest layer: what runs a tool ([`Executor`]), what it gives
//! back ([`CallResult`], [`ExecError`]) and the run it works for ([`Session`]). It knows
//! nothing of catalogs, search or controls.

mod approver;
mod result;
mod session;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

pub(crate) use approver::request_approver;
pub use approver::{ApprovalAnswer, ApprovalRequest, Approver, with_approver};
pub use result::CallResult;
pub use session::Session;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Why an executor could not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The tool ran (or may have run) and failed.
    #[error("{0}")]
    Failed(String),
    /// The upstream refused the caller's credentials.
    #[error("unauthorized by {upstream}: {message}")]
    Unauthorized {
        /// The upstream's name.
        upstream: String,
        /// What it said.
        message: String,
    },
    /// The upstream accepts no call until a person logs in to it again (no token, or none it
    /// accepts); `hint` says how.
    #[error("{upstream} needs a login: {message}")]
    NeedsLogin {
        /// The upstream's name.
        upstream: String,
        /// Why.
        message: String,
        /// What to do, e.g. the command to run.
        hint: String,
    },
    /// The tool could not be reached; nothing ran.
    #[error("{0}")]
    Unavailable(String),
    /// The arguments were refused before anything ran.
    #[error("{0}")]
    InvalidArguments(String),
}

impl From<String> for ExecError {
    fn from(s: String) -> Self {
        Self::Failed(s)
    }
}

impl From<&str> for ExecError {
    fn from(s: &str) -> Self {
        Self::Failed(s.to_owned())
    }
}

/// Runs the tools of one source.
pub trait Executor: Send + Sync + fmt::Debug {
    /// Calls `tool` (the local name) with validated arguments.
    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>>;

    /// Calls `tool` on behalf of `session` (its context, its per-session state). The default
    /// ignores the session.
    fn call_in(
        &self,
        session: &Arc<Session>,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>> {
        let _ = session;
        self.call(tool, arguments)
    }

    /// How long a call may run when this executor sets its own limit (a gateway source's
    /// `call_timeout_ms`); `None`, the default: the engine's call timeout.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }
}
