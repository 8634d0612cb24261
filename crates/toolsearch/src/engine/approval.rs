//! Whether a call will need the person's approval, answered before it is made: a client on a
//! protocol that asks between requests (MCP 2026-07-28's `input_required`) must be asked
//! before the call runs, not from inside it.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Engine;
use crate::catalog::View;
use crate::config::Surface;
use crate::controls::{self, Control};
use crate::dispatch::ArgValidator;
use crate::exec::{ApprovalRequest, Session};
use crate::policy::ToolGlobs;

impl Engine {
    /// Whether some tools run only with the person's approval (`[approval] tools`).
    pub fn asks_for_approval(&self) -> bool {
        self.path.ask_for.is_some()
    }

    /// The approval the model's call `name(arguments)` would ask for: `Some` when it reaches a
    /// tool matched by `[approval] tools` that `session`'s caller can see, with arguments that
    /// pass its schema (a call that would be refused anyway is not put to the person). Nothing
    /// is counted, charged or recorded. A program's calls are not foreseen here: they are
    /// asked about while the program runs.
    pub fn approval_request(
        &self,
        session: &Arc<Session>,
        name: &str,
        arguments: &Value,
    ) -> Option<ApprovalRequest> {
        let globs = self.path.ask_for.as_ref()?;
        let snap = self.snapshot();
        let dir = snap.directory();
        let visible = self.visibility(&snap, session);
        let view = View::new(dir, visible.as_deref());
        let control = controls::control_for(&self.settings, name).filter(|_| dir.offers_controls());
        let grouped = |id: u32, args: Map<String, Value>| {
            let entry = dir.tool(id);
            let group = &dir.group_of(id).name;
            let validator = snap.validators().grouped(id);
            gated(
                globs,
                Some(group),
                &entry.name,
                validator,
                entry.input_schema_json(),
                args,
            )
        };
        match control {
            Some(Control::Invoke) => {
                let (id, args) = self.invoke_target(view, name, arguments).ok()?;
                grouped(id, args)
            }
            Some(c) if c.is_call() => {
                let (id, _, args) = self.proxied_target(view, name, arguments.clone()).ok()?;
                grouped(id, args)
            }
            Some(_) => None,
            None => {
                let args = match arguments {
                    Value::Object(m) => m.clone(),
                    Value::Null => Map::new(),
                    _ => return None,
                };
                if self.settings.surface == Surface::Capabilities
                    && let Some(id) = view.tool_by_canonical(name)
                {
                    return grouped(id, args);
                }
                let (index, d) = view.direct().find(|(_, d)| d.def.name == name)?;
                let validator = snap.validators().direct(index);
                gated(
                    globs,
                    None,
                    &d.def.name,
                    validator,
                    d.def.input_schema.json(),
                    args,
                )
            }
        }
    }
}

/// The question about `group/tool` called with `args`: when it is gated (a cheap glob test
/// first) and its arguments are valid — a call refused anyway is not put to the person.
fn gated(
    globs: &ToolGlobs,
    group: Option<&str>,
    tool: &str,
    validator: &ArgValidator,
    schema: &RawValue,
    args: Map<String, Value>,
) -> Option<ApprovalRequest> {
    if !globs.matches(group, tool) {
        return None;
    }
    let args = Value::Object(args);
    let Ok(Ok(())) = validator.check(schema, &args) else {
        return None;
    };
    let Value::Object(args) = args else {
        return None;
    };
    Some(ApprovalRequest::new(
        group.map(str::to_owned),
        tool.to_owned(),
        args,
    ))
}
