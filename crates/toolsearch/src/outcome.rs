//! How a call ended, as the audit log, the metrics and the HTTP search endpoint tell it apart:
//! it answered, the tool answered an error, or it did not run or finish (with the error's code)
//! — or, for an external tool, the engine's part ended with a request the host completes.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::ErrorCode;

/// How one call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Outcome {
    /// It answered (a control's own answer, or the tool's result).
    Ok,
    /// The tool ran and answered an error result (`isError`).
    ToolError,
    /// It did not run or did not finish: the model-facing error's code.
    Error(ErrorCode),
    /// An external tool: the arguments passed validation, policy, approval and usage, and
    /// the host now runs it, then completes `call_id` with
    /// [`Engine::complete`](crate::Engine::complete) or [`Engine::fail`](crate::Engine::fail).
    /// Nothing is sent to the model until then.
    Deferred {
        /// Completes the call once.
        call_id: String,
        /// The tool's group.
        group: String,
        /// Its local name.
        tool: String,
        /// Its canonical name (`<escaped group>__<tool>`).
        canonical_name: String,
        /// The validated arguments.
        arguments: Map<String, Value>,
    },
}

impl Outcome {
    /// Its name in records and metric labels: `ok`, `tool_error`, the error code, or
    /// `deferred`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Error(code) => code.as_str(),
            Self::Deferred { .. } => "deferred",
        }
    }

    /// Whether the model is told of an error (a tool's error result included).
    pub const fn is_error(&self) -> bool {
        matches!(self, Self::ToolError | Self::Error(_))
    }

    /// The deferred request as `{"deferred": {"call_id", "group", "tool", "canonical_name",
    /// "arguments"}}` (what `toolsearch control call_tool` prints); `None` for any other
    /// ending.
    pub fn deferred_json(&self) -> Option<Value> {
        let Self::Deferred {
            call_id,
            group,
            tool,
            canonical_name,
            arguments,
        } = self
        else {
            return None;
        };
        Some(serde_json::json!({"deferred": {
            "call_id": call_id,
            "group": group,
            "tool": tool,
            "canonical_name": canonical_name,
            "arguments": arguments,
        }}))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_record_labels() {
        assert_eq!(Outcome::Ok.as_str(), "ok");
        assert_eq!(Outcome::ToolError.to_string(), "tool_error");
        assert_eq!(
            Outcome::Error(ErrorCode::RateLimited).as_str(),
            "rate_limited"
        );
        assert!(!Outcome::Ok.is_error());
        assert!(Outcome::ToolError.is_error());
        assert!(Outcome::Error(ErrorCode::Timeout).is_error());
    }
}
