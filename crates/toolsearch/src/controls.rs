//! The model-facing controls: their definitions, and the handlers of the discovery controls.

pub(crate) mod args;
pub mod capabilities;
pub mod codeact;
pub mod definitions;
mod describe;
mod discover;
mod groups;

use serde_json::Value;

pub use definitions::{ToolDefinition, control_definitions, control_definitions_for, instructions};
pub(crate) use describe::resolve;

use crate::catalog::{Directory, View, Visibility};
use crate::config::{Settings, Surface};
use crate::error::{ErrorCode, ToolError};
use crate::outcome::Outcome;
use crate::search::semantic::Embeddings;
use crate::search::{LearnedIndex, SearchIndex, Searcher};
use crate::skills::Skills;

/// What the discovery controls answer from: one snapshot's directory and indexes, the
/// settings, the embedder (when there is one) and the skills catalog with its indexes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Context<'a> {
    /// The directory snapshot.
    pub dir: &'a Directory,
    /// Its indexes.
    pub index: &'a SearchIndex,
    /// The settings.
    pub settings: &'a Settings,
    /// The embedder of `semantic` and `hybrid`.
    pub semantic: Option<&'a Embeddings>,
    /// The skills catalog and its indexes (`capabilities` surface).
    pub skills: Option<(&'a Skills, &'a SearchIndex)>,
    /// The caller's catalog (`None`: every tool).
    pub visible: Option<&'a Visibility>,
    /// What the caller's class taught (`None`: nothing).
    pub learned: Option<&'a LearnedIndex>,
}

impl<'a> Context<'a> {
    /// A context without an embedder or skills.
    pub fn new(dir: &'a Directory, index: &'a SearchIndex, settings: &'a Settings) -> Self {
        Self {
            dir,
            index,
            settings,
            semantic: None,
            skills: None,
            visible: None,
            learned: None,
        }
    }

    /// Sets the learned field the searches rank with (the caller class's; see
    /// [`Searcher::with_learned`]).
    pub fn with_learned(mut self, learned: Option<&'a LearnedIndex>) -> Self {
        self.learned = learned;
        self
    }

    /// Sets the caller's catalog: tools it does not show do not exist for these controls.
    pub fn with_visible(mut self, visible: Option<&'a Visibility>) -> Self {
        self.visible = visible;
        self
    }

    /// The directory as the caller sees it.
    pub fn view(&self) -> View<'a> {
        View::new(self.dir, self.visible)
    }

    /// Sets the embedder.
    pub fn with_semantic(mut self, semantic: Option<&'a Embeddings>) -> Self {
        self.semantic = semantic;
        self
    }

    /// Sets the skills catalog and its indexes.
    pub fn with_skills(mut self, skills: Option<(&'a Skills, &'a SearchIndex)>) -> Self {
        self.skills = skills;
        self
    }

    /// The searcher over the directory.
    pub fn searcher(&self) -> Searcher<'a, Directory> {
        Searcher::new(self.dir, self.index, self.settings, self.semantic).with_learned(self.learned)
    }
}

/// What a control returns to the model: compact JSON, flagged when it is an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlOutput {
    /// The result, compact UTF-8 JSON.
    pub json: String,
    /// `true` for error results (`{"isError": true, ...}`).
    pub is_error: bool,
    /// How it ended: [`Outcome::Ok`], or the error result's code.
    pub outcome: Outcome,
    /// What the control's search did, when it searched (`discover_tools`,
    /// `search_proxy_tools`, `search_capabilities`) and answered.
    pub searched: Option<Searched>,
}

/// How a discovery control's search went: the method that ranked, whether it found
/// anything, and what its answer listed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Searched {
    /// The method that ranked (an empty query browses by the keyword rules).
    pub method: crate::config::SearchMethod,
    /// At least one tool (or skill) matched.
    pub found: bool,
    /// The query as asked.
    pub query: String,
    /// The tools the answer listed, by canonical name, best first: a later successful call
    /// of one of them in the session is a use of this query (learning from use).
    pub listed: Vec<String>,
}

impl ControlOutput {
    pub(crate) fn ok(json: String) -> Self {
        Self {
            json,
            is_error: false,
            outcome: Outcome::Ok,
            searched: None,
        }
    }

    /// A run's answer: its JSON and how it ended.
    pub(crate) fn ended(json: String, outcome: Outcome) -> Self {
        Self {
            json,
            is_error: outcome.is_error(),
            outcome,
            searched: None,
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
            outcome: Outcome::Error(e.code),
            searched: None,
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
    /// `run_code` (CodeAct).
    RunCode,
    /// `run_program` (CodeAct).
    RunProgram,
}

impl Control {
    /// Whether it calls a catalog tool (and so counts as two tool calls).
    pub fn is_call(self) -> bool {
        matches!(self, Self::Call | Self::CallProxy | Self::Invoke)
    }

    /// Whether it runs a CodeAct program.
    pub fn is_run(self) -> bool {
        matches!(self, Self::RunCode | Self::RunProgram)
    }

    /// Whether it only reads the catalog (answered by [`run_discovery`]).
    pub fn is_discovery(self) -> bool {
        !self.is_call() && !self.is_run()
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
    let codeact = &settings.codeact;
    table
        .iter()
        .find(|(cn, _)| cn.as_str() == name)
        .map(|(_, c)| *c)
        .or_else(|| (codeact.enabled && name == n.run_code).then_some(Control::RunCode))
        .or_else(|| {
            (codeact.offers_programs() && name == n.run_program).then_some(Control::RunProgram)
        })
}

/// The controls of the surface a CodeAct program may call, by name: the discovery controls
/// and the call control (never `run_code` or `run_program`).
pub fn host_functions(settings: &Settings) -> Vec<String> {
    settings
        .names
        .for_surface(settings.surface)
        .into_iter()
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// Runs a discovery control against a snapshot. The call controls are answered by the
/// dispatcher ([`Engine::handle`](crate::Engine::handle)); here they are an `invalid_request`.
pub fn run_discovery(ctx: &Context<'_>, control: Control, arguments: &Value) -> ControlOutput {
    let settings = ctx.settings;
    let unsearched = |r: Result<String, ToolError>| r.map(|json| (json, None));
    let searched = |r: Result<(String, Searched), ToolError>| r.map(|(json, s)| (json, Some(s)));
    let out = match control {
        Control::Discover => searched(discover::discover(ctx, arguments)),
        Control::List => unsearched(discover::list(ctx, arguments)),
        Control::Describe => unsearched(describe::describe(ctx.view(), settings, arguments)),
        Control::ListGroups => unsearched(groups::list_groups(ctx.view(), settings, arguments)),
        Control::SearchProxy => searched(discover::search_proxy(ctx, arguments)),
        Control::SearchCapabilities => searched(capabilities::search_capabilities(ctx, arguments)),
        Control::GetSkill => unsearched(capabilities::get_skill(
            settings,
            ctx.skills.map(|(s, _)| s),
            arguments,
        )),
        Control::Call
        | Control::CallProxy
        | Control::Invoke
        | Control::RunCode
        | Control::RunProgram => Err(ToolError::new(
            ErrorCode::InvalidRequest,
            "calls and runs go through Engine::handle; this is not a discovery control",
        )),
    };
    match out {
        Ok((json, searched)) => ControlOutput {
            searched,
            ..ControlOutput::ok(json)
        },
        Err(e) => e.into(),
    }
}
