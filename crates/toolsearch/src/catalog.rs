//! The catalog model: tools, groups, sources, and the directory snapshot built from them.

mod catalog_json;
pub mod directory;
pub mod file;
pub mod name;
mod schema;
pub mod schema_text;
mod visibility;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::exec::Executor;

pub use catalog_json::catalog_json;
pub use directory::{
    DirectEntry, Directory, DirectoryError, GroupEntry, NEEDS_LOGIN, ToolEntry, ToolId, login_hint,
};
pub use file::{CatalogFile, CatalogFileError, load_catalog_file, parse_catalog};
pub use name::canonical_name;
pub use schema::Schema;
pub use visibility::{View, Visibility};

/// One tool as a source describes it (the shape of an MCP `tools/list` entry).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolDef {
    /// Local name, unique inside its group.
    pub name: String,
    /// Full description (may be empty).
    pub description: String,
    /// JSON Schema of the arguments; always an object.
    pub input_schema: Schema,
    /// JSON Schema of the structured result, when the source declares one.
    pub output_schema: Option<Schema>,
    /// A CodeAct program may call it (the source owner's choice; default `false`).
    pub codeact: bool,
    /// The host runs it, not the engine: a call ends with a deferred request the host
    /// completes (catalog files: `"x-toolsearch-external": true`). Only a grouped tool can be.
    pub external: bool,
    /// The other fields its source listed it with (an MCP server's `title`, `annotations`,
    /// `icons`, `_meta`), as one JSON object kept as they came: shown with its full definition
    /// and, for a direct tool, in the tool list. Never searched.
    pub listed: Option<Schema>,
}

impl ToolDef {
    /// A tool with an empty object input schema and no output schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema: Schema::new(&empty_object_schema()),
            output_schema: None,
            codeact: false,
            external: false,
            listed: None,
        }
    }

    /// Sets the other fields its source listed it with (see [`ToolDef::listed`]); an empty
    /// object is none.
    pub fn with_listed(mut self, fields: Map<String, Value>) -> Self {
        self.listed = (!fields.is_empty()).then(|| Schema::new(&fields));
        self
    }

    /// Sets whether a CodeAct program may call it.
    pub fn with_codeact(mut self, eligible: bool) -> Self {
        self.codeact = eligible;
        self
    }

    /// Sets whether the host runs it (see [`ToolDef::external`]).
    pub fn with_external(mut self, external: bool) -> Self {
        self.external = external;
        self
    }

    /// Sets the input schema.
    pub fn with_input_schema(mut self, schema: Map<String, Value>) -> Self {
        self.input_schema = Schema::new(&schema);
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Map<String, Value>) -> Self {
        self.output_schema = Some(Schema::new(&schema));
        self
    }
}

/// `{"type":"object","properties":{}}`, the schema of a tool that declares none.
pub fn empty_object_schema() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("object".into()));
    m.insert("properties".into(), Value::Object(Map::new()));
    m
}

/// Which of a source's tools a CodeAct program may call: the source owner's choice
/// (`codeact` on a `[[source]]`), never a side effect of grouping. Tools stay callable through
/// `call_tool` either way.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum CodeActTools {
    /// None of them (the default); tools marked one by one keep their own choice.
    #[default]
    None,
    /// Every tool of the source.
    All,
    /// The tools with these local names.
    Only(Vec<String>),
}

impl CodeActTools {
    /// Whether the choice names tool `name` (`None` names no tool).
    pub fn includes(&self, name: &str) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

/// A model-facing group a source places its tools in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupSpec {
    /// Group name (see [`name::group_name_problem`]).
    pub name: String,
    /// What the group is for; shown when listing groups.
    pub description: String,
}

impl GroupSpec {
    /// A group with a name and a description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
        }
    }
}

/// How a source's tools reach the model.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Presentation {
    /// Behind the controls, in a group.
    Group(GroupSpec),
    /// As ordinary top-level tools.
    Direct,
}

/// What one source yields: a name, where its tools go, its guidance, its tools, and what runs
/// them (none for a static catalog: its tools are discoverable but `not_executable`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SourceTools {
    /// Source name (unique among sources), used in messages.
    pub source: String,
    /// Where the tools are presented.
    pub presentation: Presentation,
    /// The source's guidance, returned with full definitions only.
    pub instructions: Vec<String>,
    /// The tools.
    pub tools: Vec<ToolDef>,
    /// Runs the tools.
    pub executor: Option<Arc<dyn Executor>>,
    /// Why the source is unavailable right now (`None`: available). Its tools stay
    /// discoverable; its group says so in `list_tool_groups`.
    pub unavailable: Option<String>,
    /// The source has not finished connecting (a gateway upstream at start-up). Its group
    /// offers the controls even before it has tools; see [`Directory::offers_controls`].
    ///
    /// [`Directory::offers_controls`]: directory::Directory::offers_controls
    pub connecting: bool,
}

impl SourceTools {
    /// A source whose tools live in `group`.
    pub fn grouped(source: impl Into<String>, group: GroupSpec, tools: Vec<ToolDef>) -> Self {
        Self {
            source: source.into(),
            presentation: Presentation::Group(group),
            instructions: Vec::new(),
            tools,
            executor: None,
            unavailable: None,
            connecting: false,
        }
    }

    /// A source whose tools are listed directly.
    pub fn direct(source: impl Into<String>, tools: Vec<ToolDef>) -> Self {
        Self {
            source: source.into(),
            presentation: Presentation::Direct,
            instructions: Vec::new(),
            tools,
            executor: None,
            unavailable: None,
            connecting: false,
        }
    }

    /// Sets what runs the tools.
    pub fn with_executor(mut self, executor: Arc<dyn Executor>) -> Self {
        self.executor = Some(executor);
        self
    }

    /// Marks the source unavailable, with the reason.
    pub fn with_unavailable(mut self, reason: Option<String>) -> Self {
        self.unavailable = reason;
        self
    }

    /// Marks the source as still connecting (see [`SourceTools::connecting`]).
    pub fn with_connecting(mut self, connecting: bool) -> Self {
        self.connecting = connecting;
        self
    }

    /// Makes the tools `choice` names callable from CodeAct programs (others keep their own
    /// [`ToolDef::codeact`]).
    pub fn with_codeact(mut self, choice: &CodeActTools) -> Self {
        for t in &mut self.tools {
            t.codeact |= choice.includes(&t.name);
        }
        self
    }

    /// Sets the source's instructions.
    pub fn with_instructions(mut self, instructions: Vec<String>) -> Self {
        self.instructions = instructions;
        self
    }
}
