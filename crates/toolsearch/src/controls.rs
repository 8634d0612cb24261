//! The model-facing controls: their definitions, and the handlers of the discovery controls.

pub(crate) mod args;
pub mod capabilities;
pub mod definitions;
mod describe;
mod discover;
mod error;
mod groups;

use crate::search::semantic::SemanticSearch;
use crate::skills::Skills;
use serde_json::Value;

pub use definitions::{ToolDefinition, control_definitions, instructions};
pub(crate) use describe::resolve;
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

/// Which control a name refers to.
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
    /// `search_proxy_tools`.
    SearchProxy,
    /// `call_proxy_tool`.
    CallProxy,
    /// `search_capabilities`.
    SearchCapabilities,
    /// `invoke_tool`.
    Invoke,
    /// `get_skill_content`.
    GetSkill,
}

impl Control {
    /// Whether it calls a catalog tool (and so counts as two tool calls).
    pub fn is_call(self) -> bool {
        matches!(self, Self::Call | Self::CallProxy | Self::Invoke)
    }
}

/// Resolves a control name of the configured surface.
pub fn control_for(settings: &Settings, name: &str) -> Option<Control> {
    let n = &settings.names;
    let table: &[(&String, Control)] = match settings.surface {
        Surface::Toolsearch => &[
            (&n.discover, Control::Discover),
            (&n.describe, Control::Describe),
            (&n.list, Control::List),
            (&n.list_groups, Control::ListGroups),
            (&n.call, Control::Call),
        ],
        Surface::Toolproxy => &[
            (&n.search_proxy, Control::SearchProxy),
            (&n.call_proxy, Control::CallProxy),
        ],
        Surface::Capabilities => &[
            (&n.search_capabilities, Control::SearchCapabilities),
            (&n.invoke, Control::Invoke),
            (&n.get_skill, Control::GetSkill),
        ],
    };
    table
        .iter()
        .find(|(cn, _)| cn.as_str() == name)
        .map(|(_, c)| *c)
}

/// Runs a discovery control against a snapshot. The call controls are answered by the
/// dispatcher ([`Engine::handle`](crate::Engine::handle)); here they are an `invalid_request`.
pub fn run_discovery(
    dir: &Directory,
    settings: &Settings,
    semantic: Option<&SemanticSearch>,
    skills: Option<&Skills>,
    control: Control,
    arguments: &Value,
) -> ControlOutput {
    let out = match control {
        Control::Discover => discover::discover(dir, settings, semantic, arguments),
        Control::List => discover::list(dir, settings, arguments),
        Control::Describe => describe::describe(dir, settings, arguments),
        Control::ListGroups => groups::list_groups(dir, settings, arguments),
        Control::SearchProxy => discover::search_proxy(dir, settings, semantic, arguments),
        Control::SearchCapabilities => {
            capabilities::search_capabilities(dir, settings, semantic, skills, arguments)
        }
        Control::GetSkill => capabilities::get_skill(settings, skills, arguments),
        Control::Call | Control::CallProxy | Control::Invoke => Err(ToolError::new(
            "invalid_request",
            "calls go through Engine::handle; this is not a discovery control",
        )),
    };
    match out {
        Ok(json) => ControlOutput::ok(json),
        Err(e) => e.into(),
    }
}
