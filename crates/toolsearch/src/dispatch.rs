//! Executing tools: results, executors, typed local tools, argument validation, hooks, and the
//! one call path every direct or proxied call takes.

pub(crate) mod call;
pub mod hooks;
pub mod local;
mod validate;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

pub use call::CallPath;
pub use hooks::{Approval, CallInfo, Session};
pub use local::Toolset;
pub(crate) use validate::ArgValidator;

use crate::controls::ToolError;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A tool result as MCP's `CallToolResult` carries it (content blocks as JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallResult {
    /// Content blocks (`{"type": "text", "text": ...}`, images, resources, ...).
    pub content: Vec<Value>,
    /// Structured result, when the tool gives one.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reports an error.
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// Protocol metadata of the result (`_meta`), passed through.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl CallResult {
    /// A result made of one text block.
    pub fn text(text: impl Into<String>, is_error: bool) -> Self {
        Self {
            content: vec![json!({"type": "text", "text": text.into()})],
            structured_content: None,
            is_error,
            meta: None,
        }
    }

    /// A structured result, also given as compact JSON text for clients that read text only.
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![json!({"type": "text", "text": value.to_string()})],
            structured_content: Some(value),
            is_error: false,
            meta: None,
        }
    }

    /// A result from its parts.
    pub fn new(content: Vec<Value>, structured_content: Option<Value>, is_error: bool) -> Self {
        Self {
            content,
            structured_content,
            is_error,
            meta: None,
        }
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: Option<Value>) -> Self {
        self.meta = meta;
        self
    }

    /// The text of the first text block, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.content
            .iter()
            .find(|c| c["type"] == "text")
            .and_then(|c| c["text"].as_str())
    }

    /// A model-facing error result (its JSON as text).
    pub fn from_error(e: &ToolError) -> Self {
        Self::text(e.to_json(), true)
    }
}

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
}
