//! Whether a call will need the person's approval, answered before it is made: a client on a
//! protocol that asks between requests (MCP 2026-07-28's `input_required`) must be asked
//! before the call runs, not from inside it.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Engine;
use super::resolve::{Caller, Names, Route};
use crate::catalog::View;
use crate::dispatch::call::Target;
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
        let visible = self.visibility(&snap, session);
        let view = View::new(snap.directory(), visible.as_deref());
        let route = self.resolve(
            &snap,
            view,
            Names::Surface,
            Caller::Model,
            name,
            arguments.clone(),
        );
        let Ok(Route::Tool {
            tool,
            args: Ok(args),
            ..
        }) = route
        else {
            return None;
        };
        gated(globs, &tool.target(&snap), args)
    }
}

/// The question about `group/tool` called with `args`: when it is gated (a cheap glob test
/// first) and its arguments are valid — a call refused anyway is not put to the person.
fn gated(
    globs: &ToolGlobs,
    target: &Target<'_>,
    args: Map<String, Value>,
) -> Option<ApprovalRequest> {
    if !globs.matches(target.group, target.tool) {
        return None;
    }
    let args = Value::Object(args);
    let Ok(Ok(())) = target.validator.check(target.schema, &args) else {
        return None;
    };
    let Value::Object(args) = args else {
        return None;
    };
    Some(ApprovalRequest::new(
        target.group.map(str::to_owned),
        target.tool.to_owned(),
        args,
    ))
}
