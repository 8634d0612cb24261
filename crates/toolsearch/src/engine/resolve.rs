//! Where a call goes: one resolver, over what the caller sees, for every path that needs to
//! know — the call itself, the approval asked before it, a vendor-format call, and the audit
//! record and metrics event made after it. A tool the caller cannot see resolves exactly as
//! one that does not exist.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Engine;
use super::snapshot::Snapshot;
use crate::catalog::{ToolId, View};
use crate::config::Surface;
use crate::controls::{self, Control, args};
use crate::dispatch::call::Target;
use crate::error::ToolError;
use crate::vendor::SEARCH_TOOL;

/// Who makes a call: the model, or a program (a CodeAct program through a host function, or
/// a vendor's code execution), which may call only tools whose source lets programs call them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    Model,
    Code,
}

/// The names a call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Names {
    /// The MCP surface's: its controls, the direct tools, and on the capabilities surface a
    /// grouped tool's canonical name.
    Surface,
    /// A vendor format's: its search tool, a deferred tool's exported name, a direct tool's.
    Vendor,
}

/// A tool a call reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolRef {
    /// A grouped tool of the directory.
    Grouped(ToolId),
    /// The `n`-th direct tool of the directory.
    Direct(usize),
}

impl ToolRef {
    /// The tool as the one call path takes it.
    pub(super) fn target(self, snap: &Snapshot) -> Target<'_> {
        let dir = snap.directory();
        match self {
            Self::Grouped(id) => {
                let entry = dir.tool(id);
                Target {
                    group: Some(&dir.group_of(id).name),
                    tool: &entry.name,
                    source: &entry.source,
                    schema: entry.input_schema_json(),
                    validator: snap.validators().grouped(id),
                    executor: entry.executor.as_ref(),
                    external: entry.external,
                }
            }
            Self::Direct(index) => {
                let d = &dir.direct()[index];
                Target {
                    group: None,
                    tool: &d.def.name,
                    source: &d.source,
                    schema: d.def.input_schema.json(),
                    validator: snap.validators().direct(index),
                    executor: d.executor.as_ref(),
                    external: d.def.external,
                }
            }
        }
    }

    /// Its canonical name (a direct tool's is its name).
    pub(super) fn canonical_name(self, snap: &Snapshot) -> String {
        let dir = snap.directory();
        match self {
            Self::Grouped(id) => dir.tool(id).canonical.clone(),
            Self::Direct(index) => dir.direct()[index].def.name.clone(),
        }
    }

    /// Whether its source lets programs call it.
    pub(super) fn codeact(self, snap: &Snapshot) -> bool {
        let dir = snap.directory();
        match self {
            Self::Grouped(id) => dir.tool(id).codeact,
            Self::Direct(index) => dir.direct()[index].def.codeact,
        }
    }
}

/// What a name called with its arguments reaches. Anything but an unknown name is charged to
/// the session (see [`Route::cost`]) before it is answered, errors included.
#[derive(Debug)]
pub(super) enum Route {
    /// A control the engine answers itself (a discovery control or a run), with its arguments.
    Control(Control, Value),
    /// A tool, with its arguments — or why they are not an object of arguments.
    Tool {
        tool: ToolRef,
        args: Result<Map<String, Value>, ToolError>,
        /// Reached through a call control's envelope.
        enveloped: bool,
    },
    /// A call control whose envelope names no tool the caller sees, or is malformed before
    /// naming one: its error, and the group and tool as asked.
    Unreached {
        error: ToolError,
        group: Option<String>,
        tool: String,
    },
}

impl Route {
    /// The tool calls it counts: a call control's envelope counts its own call and its
    /// target's when the model makes it; everything else, one.
    pub(super) fn cost(&self, caller: Caller) -> u64 {
        match self {
            Self::Tool {
                enveloped: true, ..
            }
            | Self::Unreached { .. }
                if caller == Caller::Model =>
            {
                2
            }
            _ => 1,
        }
    }
}

/// What a call reached, for its audit record and its event.
#[derive(Debug)]
pub(super) enum Reached {
    /// A grouped tool (named by id: nothing is copied on the call's path).
    Tool(Arc<Snapshot>, ToolId),
    /// A control, a direct tool, or a target that does not exist, as asked.
    Named {
        group: Option<String>,
        tool: String,
        /// The tool (or control) exists: only then do its names label a metric.
        known: bool,
        /// The source of a direct tool.
        source: Option<Arc<str>>,
    },
}

impl Reached {
    /// What `route` (resolved from `name` in `snap`) reached; `Err` is a name that reaches
    /// nothing.
    pub(super) fn of(snap: &Arc<Snapshot>, route: &Result<Route, ToolError>, name: &str) -> Self {
        let named = |group: Option<&str>, tool: &str, known: bool| Self::Named {
            group: group.map(str::to_owned),
            tool: tool.to_owned(),
            known,
            source: None,
        };
        match route {
            Ok(Route::Tool {
                tool: ToolRef::Grouped(id),
                ..
            }) => Self::Tool(snap.clone(), *id),
            Ok(Route::Tool {
                tool: ToolRef::Direct(n),
                ..
            }) => Self::Named {
                group: None,
                tool: name.to_owned(),
                known: true,
                source: snap.directory().direct().get(*n).map(|d| d.source.clone()),
            },
            Ok(Route::Control(..)) => named(None, name, true),
            Ok(Route::Unreached { group, tool, .. }) => named(group.as_deref(), tool, false),
            Err(_) => named(None, name, false),
        }
    }

    /// A control the engine answers itself, by its name (the vendor formats' search tool).
    pub(super) fn control(name: &str) -> Self {
        Self::Named {
            group: None,
            tool: name.to_owned(),
            known: true,
            source: None,
        }
    }

    /// The source of the tool reached, when a source's tool was reached.
    pub(super) fn source(&self) -> Option<&str> {
        match self {
            Self::Tool(snap, id) => Some(&snap.directory().tool(*id).source),
            Self::Named { source, .. } => source.as_deref(),
        }
    }

    /// What labels its event: the names of what exists, else no group and `""`.
    pub(super) fn labels(&self) -> (Option<&str>, &str) {
        match self {
            Self::Tool(snap, id) => {
                let dir = snap.directory();
                (Some(dir.group_of(*id).name.as_str()), &dir.tool(*id).name)
            }
            Self::Named {
                group,
                tool,
                known: true,
                ..
            } => (group.as_deref(), tool),
            Self::Named { .. } => (None, ""),
        }
    }

    /// Its group and tool for the audit record, as asked.
    pub(super) fn into_names(self) -> (Option<String>, String) {
        match self {
            Self::Tool(snap, id) => {
                let dir = snap.directory();
                (
                    Some(dir.group_of(id).name.clone()),
                    dir.tool(id).name.clone(),
                )
            }
            Self::Named { group, tool, .. } => (group, tool),
        }
    }
}

impl Engine {
    /// Where `caller`'s call of `name(arguments)` goes, among `names`, as `view` shows the
    /// catalog; `Err` is a name that reaches nothing (an `unknown_tool` error, not charged).
    pub(super) fn resolve(
        &self,
        snap: &Snapshot,
        view: View<'_>,
        names: Names,
        caller: Caller,
        name: &str,
        arguments: Value,
    ) -> Result<Route, ToolError> {
        match names {
            Names::Surface => self.resolve_surface(view, caller, name, arguments),
            Names::Vendor => Self::resolve_vendor(snap, view, name, arguments),
        }
    }

    fn resolve_surface(
        &self,
        view: View<'_>,
        caller: Caller,
        name: &str,
        arguments: Value,
    ) -> Result<Route, ToolError> {
        let control = controls::control_for(&self.settings, name)
            .filter(|_| view.dir().offers_controls())
            .filter(|c| caller == Caller::Model || !c.is_run());
        match control {
            Some(Control::Invoke) => return Ok(self.invoked(view, name, &arguments)),
            Some(c) if c.is_call() => return Ok(self.enveloped(view, name, arguments)),
            Some(c) => return Ok(Route::Control(c, arguments)),
            None => {}
        }
        if caller != Caller::Model {
            return Err(self.unknown_name(view, name));
        }
        // On the capabilities surface a grouped tool is callable by its canonical name (the
        // per-turn tools of `turn_tools`).
        let grouped = (self.settings.surface == Surface::Capabilities)
            .then(|| view.tool_by_canonical(name))
            .flatten();
        let tool = match grouped {
            Some(id) => ToolRef::Grouped(id),
            None => match view.direct().find(|(_, d)| d.def.name == name) {
                Some((index, _)) => ToolRef::Direct(index),
                None => return Err(self.unknown_name(view, name)),
            },
        };
        Ok(Route::Tool {
            tool,
            args: object_args(name, arguments),
            enveloped: false,
        })
    }

    fn resolve_vendor(
        snap: &Snapshot,
        view: View<'_>,
        name: &str,
        arguments: Value,
    ) -> Result<Route, ToolError> {
        let grouped = snap
            .short_forms()
            .resolve(view.dir(), name)
            .filter(|&id| view.sees(id));
        let tool = match grouped {
            Some(id) => ToolRef::Grouped(id),
            None => match view.direct().find(|(_, d)| d.def.name == name) {
                Some((index, _)) => ToolRef::Direct(index),
                None => {
                    return Err(ToolError::unknown_tool(format!(
                        "There is no tool named {name:?}. Call {SEARCH_TOOL} to find tools and call one by a name it returns, exactly."
                    ))
                    .with("tool", name));
                }
            },
        };
        Ok(Route::Tool {
            tool,
            args: object_args(name, arguments),
            enveloped: false,
        })
    }

    /// An `invoke_tool` call: a known `toolId` (canonical name) and its arguments.
    fn invoked(&self, view: View<'_>, control: &str, arguments: &Value) -> Route {
        let Value::Object(obj) = arguments else {
            return Route::Unreached {
                error: ToolError::invalid_request(
                    "",
                    format!(
                        "{control} takes a JSON object: {{\"toolId\": ..., \"args\": {{...}}}}"
                    ),
                ),
                group: None,
                tool: String::new(),
            };
        };
        let tool_id = match args::req_str(obj, "toolId") {
            Ok(t) => t,
            Err(error) => {
                let tool = obj
                    .get("toolId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Route::Unreached {
                    error,
                    group: None,
                    tool: tool.to_owned(),
                };
            }
        };
        let Some(id) = view.tool_by_canonical(tool_id) else {
            return Route::Unreached {
                error: ToolError::unknown_tool(format!(
                    "There is no tool with toolId {tool_id:?}. Call {} to find tools and use a toolId it returns, exactly.",
                    self.settings.names.search_capabilities
                ))
                .with("toolId", tool_id),
                group: None,
                tool: tool_id.to_owned(),
            };
        };
        Route::Tool {
            tool: ToolRef::Grouped(id),
            args: controls::capabilities::invoke_args(control, obj),
            enveloped: true,
        }
    }

    /// A `call_tool` envelope: exactly `group`, `tool` and an `arguments` object. A malformed
    /// envelope's error comes first; a target it names that the caller sees is still reached.
    fn enveloped(&self, view: View<'_>, control: &str, arguments: Value) -> Route {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        let target = text("group")
            .zip(text("tool"))
            .map(|(g, t)| controls::resolve(view, &self.settings, g, t));
        let shape = envelope_shape(control, &arguments);
        let error = match (target, shape) {
            (Some(Ok(id)), shape) => {
                return Route::Tool {
                    tool: ToolRef::Grouped(id),
                    args: shape.and_then(|()| envelope_args(arguments)),
                    enveloped: true,
                };
            }
            (_, Err(error)) | (Some(Err(error)), Ok(())) => error,
            // The shape's checks require both names.
            (None, Ok(())) => ToolError::invalid_request("", format!("{control} names no tool")),
        };
        // Named as asked (copied only on this path).
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        Route::Unreached {
            error,
            group: text("group").map(str::to_owned),
            tool: text("tool").unwrap_or_default().to_owned(),
        }
    }

    /// `name` is nothing the caller can call: the error lists what it can.
    fn unknown_name(&self, view: View<'_>, name: &str) -> ToolError {
        let mut names: Vec<String> = controls::control_definitions(&self.settings, view.dir())
            .into_iter()
            .map(|d| d.name)
            .collect();
        names.extend(view.direct().map(|(_, d)| d.def.name.clone()));
        ToolError::unknown_tool(format!(
            "There is no tool named {name:?}. The tools are: {}.",
            names.join(", ")
        ))
        .with("tool", name)
    }
}

/// A tool's arguments called by its own name: an object (null: none).
fn object_args(name: &str, arguments: Value) -> Result<Map<String, Value>, ToolError> {
    match arguments {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(ToolError::invalid_request(
            "",
            format!("{name} takes a JSON object of arguments"),
        )),
    }
}

/// Checks a `call_tool` envelope's shape: exactly `group`, `tool` and `arguments`, the names
/// as strings.
fn envelope_shape(control: &str, arguments: &Value) -> Result<(), ToolError> {
    const KEYS: [&str; 3] = ["group", "tool", "arguments"];
    let obj = args::object(control, arguments, &KEYS)?;
    if let Some(missing) = KEYS.iter().find(|k| !obj.contains_key(**k)) {
        return Err(ToolError::invalid_request(
            &args::pointer(missing),
            format!("{control} takes exactly group, tool and arguments; {missing} is missing"),
        ));
    }
    args::req_str(obj, "group")?;
    args::req_str(obj, "tool")?;
    Ok(())
}

/// The arguments a well-shaped `call_tool` envelope forwards.
fn envelope_args(arguments: Value) -> Result<Map<String, Value>, ToolError> {
    let arguments = match arguments {
        Value::Object(mut obj) => obj.remove("arguments"),
        _ => None,
    };
    // Models often send the arguments object as its JSON text: that text is taken as the
    // object it parses to (nothing else is coerced).
    let arguments = match arguments {
        Some(Value::Object(m)) => Some(m),
        Some(Value::String(s)) => args::object_text(&s),
        _ => None,
    };
    arguments.ok_or_else(|| {
        ToolError::invalid_request(
            "/arguments",
            "arguments must be a JSON object matching the tool's parameter schema (use {} for none)",
        )
    })
}
