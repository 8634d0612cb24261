//! The model-facing controls: their definitions, and the handlers of the discovery controls.

mod args;
pub mod definitions;
mod describe;
mod discover;
mod error;
mod groups;

use serde_json::Value;

pub use definitions::{ControlDef, control_definitions, instructions};
pub use error::ToolError;

use crate::catalog::Directory;
use crate::config::{Settings, Surface};

/// What a control returns to the model: compact JSON, flagged when it is an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlOutput {
    /// The result, compact UTF-8 JSON.
    pub json: String,
    /// `true` for error results (`{"isError": true, ...}`).
    pub is_error: bool,
}

impl ControlOutput {
    pub(crate) fn ok(json: String) -> Self {
        Self {
            json,
            is_error: false,
        }
    }

    /// The result parsed back into a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

impl From<ToolError> for ControlOutput {
    fn from(e: ToolError) -> Self {
        Self {
            json: e.to_json(),
            is_error: true,
        }
    }
}

/// Which discovery control a name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// `discover_tools`.
    Discover,
    /// `describe_tool`.
    Describe,
    /// `list_tools`.
    List,
    /// `list_tool_groups`.
    ListGroups,
    /// `call_tool`.
    Call,
}

/// Resolves a control name of the `toolsearch` surface.
pub fn control_for(settings: &Settings, name: &str) -> Option<Control> {
    if settings.surface != Surface::Toolsearch {
        return None;
    }
    let n = &settings.names;
    [
        (&n.discover, Control::Discover),
        (&n.describe, Control::Describe),
        (&n.list, Control::List),
        (&n.list_groups, Control::ListGroups),
        (&n.call, Control::Call),
    ]
    .into_iter()
    .find(|(cn, _)| cn.as_str() == name)
    .map(|(_, c)| c)
}

/// Runs a discovery control against a snapshot. `call_tool` is not a discovery control and is
/// answered by the dispatcher; here it is an `invalid_request`.
pub fn run_discovery(
    dir: &Directory,
    settings: &Settings,
    control: Control,
    arguments: &Value,
) -> ControlOutput {
    let out = match control {
        Control::Discover => discover::discover(dir, settings, arguments),
        Control::List => discover::list(dir, settings, arguments),
        Control::Describe => describe::describe(dir, settings, arguments),
        Control::ListGroups => groups::list_groups(dir, settings, arguments),
        Control::Call => Err(ToolError::new(
            "invalid_request",
            format!(
                "{} needs an executor; it is not a discovery control",
                settings.names.call
            ),
        )),
    };
    match out {
        Ok(json) => ControlOutput::ok(json),
        Err(e) => e.into(),
    }
}
