//! What a call answers, before it becomes an MCP result, a program's value or a vendor reply,
//! and how it ended.

use serde_json::Value;

use crate::controls::ControlOutput;
use crate::error::ToolError;
use crate::exec::CallResult;
use crate::outcome::Outcome;

/// What a call answers.
#[derive(Debug)]
pub(super) enum Answer {
    /// A control's own JSON (discovery, runs), error results included.
    Control(ControlOutput),
    /// A tool's own result.
    Tool(CallResult),
    /// The call did not run (or did not finish): the model-facing error.
    Error(ToolError),
}

impl From<Result<CallResult, ToolError>> for Answer {
    fn from(r: Result<CallResult, ToolError>) -> Self {
        match r {
            Ok(result) => Self::Tool(result),
            Err(e) => Self::Error(e),
        }
    }
}

impl Answer {
    /// How the call ended.
    pub(super) fn outcome(&self) -> Outcome {
        match self {
            Self::Control(out) => out.outcome,
            Self::Tool(r) if r.is_error => Outcome::ToolError,
            Self::Tool(_) => Outcome::Ok,
            Self::Error(e) => Outcome::Error(e.code),
        }
    }

    /// The MCP tool result.
    pub(super) fn into_call_result(self) -> CallResult {
        match self {
            Self::Control(out) => CallResult::text(out.json, out.is_error),
            Self::Tool(result) => result,
            Self::Error(e) => CallResult::from_error(&e),
        }
    }

    /// What a program's host call returns: a control's JSON, the tool's result as MCP gives
    /// it (`content`, `structuredContent`, `isError`), or the error object.
    pub(super) fn into_program_value(self) -> Value {
        match self {
            Self::Control(out) => out.value(),
            Self::Tool(result) => serde_json::to_value(result).unwrap_or(Value::Null),
            Self::Error(e) => e.to_value(),
        }
    }
}
