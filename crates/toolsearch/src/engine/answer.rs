//! What a call answers, before it becomes an MCP result, a program's value or a vendor reply,
//! and how it ended.

use serde_json::Value;

use super::deferred::Request;
use crate::controls::ControlOutput;
use crate::error::ToolError;
use crate::exec::CallResult;
use crate::outcome::Outcome;

/// A tool call's answer as the host receives it: the result for the model, and how the
/// call ended. For an external tool the outcome is [`Outcome::Deferred`] and the result is
/// the deferred request as JSON text, for display: the model is sent nothing until the host
/// completes the call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reply {
    /// What the model receives (the MCP `CallToolResult`).
    pub result: CallResult,
    /// How the call ended.
    pub outcome: Outcome,
}

/// What a call answers.
#[derive(Debug)]
pub(super) enum Answer {
    /// A control's own JSON (discovery, runs), error results included.
    Control(ControlOutput),
    /// A tool's own result.
    Tool(CallResult),
    /// The call did not run (or did not finish): the model-facing error.
    Error(ToolError),
    /// An external tool's call the host runs: approved (not yet opened) on the call path,
    /// then opened as [`Outcome::Deferred`].
    Deferred(Request),
    /// An opened deferred call ([`Outcome::Deferred`]).
    Opened(Outcome),
}

impl Answer {
    /// How the call ended.
    pub(super) fn outcome(&self) -> Outcome {
        match self {
            Self::Control(out) => out.outcome.clone(),
            Self::Tool(r) if r.is_error => Outcome::ToolError,
            Self::Tool(_) => Outcome::Ok,
            Self::Error(e) => Outcome::Error(e.code),
            Self::Opened(outcome) => outcome.clone(),
            // Not opened yet (it is opened before anyone reads its outcome): no id.
            Self::Deferred(r) => Outcome::Deferred {
                call_id: String::new(),
                group: r.group.clone(),
                tool: r.tool.clone(),
                canonical_name: r.canonical_name.clone(),
                arguments: r.arguments.clone(),
            },
        }
    }

    /// The MCP tool result.
    pub(super) fn into_call_result(self) -> CallResult {
        match self {
            Self::Control(out) => CallResult::text(out.json, out.is_error),
            Self::Tool(result) => result,
            Self::Error(e) => CallResult::from_error(&e),
            deferred => CallResult::text(deferred.deferred_json().to_string(), false),
        }
    }

    /// The deferred request as `toolsearch control call_tool` prints it (`null` for any other
    /// answer).
    pub(super) fn deferred_json(&self) -> Value {
        self.outcome().deferred_json().unwrap_or(Value::Null)
    }

    /// What a program's host call returns: a control's JSON, the tool's result as MCP gives
    /// it (`content`, `structuredContent`, `isError`), or the error object.
    pub(super) fn into_program_value(self) -> Value {
        match self {
            Self::Control(out) => out.value(),
            Self::Tool(result) => serde_json::to_value(result).unwrap_or(Value::Null),
            Self::Error(e) => e.to_value(),
            deferred => deferred.deferred_json(),
        }
    }
}
