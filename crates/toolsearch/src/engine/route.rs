//! Routing one call: a control of the surface, a grouped tool by its canonical name (the
//! capabilities surface's per-turn tools), or a direct tool — each charged to the session,
//! then answered by the discovery controls or sent down the one call path.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Map, Value};

use super::snapshot::Snapshot;
use super::{Engine, run_discovery};
use crate::catalog::{DirectEntry, ToolId, View};
use crate::config::Surface;
use crate::controls::{self, Control, ControlOutput, args};
use crate::dispatch::call::Target;
use crate::dispatch::{AuditRecord, CALLER_PATH, CallEvent, SearchEvent};
use crate::error::ToolError;
use crate::exec::{CallResult, Session};
use crate::policy::CLIENT_PATH;

/// Who makes a call: the model, or a CodeAct program through a host function (which counts a
/// proxied call once — the run is its envelope — and may call only eligible tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    Model,
    Code,
}

/// What a call answers, before it becomes an MCP result or a program's value.
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
    /// How the call ended, for the audit log: `ok`, `tool_error`, or an error code.
    fn outcome(&self) -> String {
        match self {
            Self::Control(out) if out.is_error => {
                out.value()["error"].as_str().unwrap_or("error").to_owned()
            }
            Self::Control(_) => "ok".to_owned(),
            Self::Tool(r) if r.is_error => "tool_error".to_owned(),
            Self::Tool(_) => "ok".to_owned(),
            Self::Error(e) => e.code.as_str().to_owned(),
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

/// What a call reached, for its audit record and its event: a call control's target as
/// asked, else the name called.
pub(super) enum Reached {
    /// A grouped tool that exists (named by id: nothing is copied on the call's path).
    Tool(Arc<Snapshot>, ToolId),
    /// A control, a direct tool, or a target that does not exist, as asked.
    Named {
        group: Option<String>,
        tool: String,
        /// The tool (or control) exists: only then do its names label a metric.
        known: bool,
    },
}

impl Reached {
    /// What labels its event: the names of what exists, else no group and `""`.
    fn labels(&self) -> (Option<&str>, &str) {
        match self {
            Self::Tool(snap, id) => {
                let dir = snap.directory();
                (Some(dir.group_of(*id).name.as_str()), &dir.tool(*id).name)
            }
            Self::Named {
                group,
                tool,
                known: true,
            } => (group.as_deref(), tool),
            Self::Named { .. } => (None, ""),
        }
    }

    /// Its group and tool for the audit record, as asked.
    fn into_names(self) -> (Option<String>, String) {
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
    /// One tool call: the caller's rate limit, the answer, its audit record and its events
    /// (refused calls are recorded too).
    pub(super) async fn call(
        &self,
        session: &Arc<Session>,
        caller: Caller,
        name: &str,
        arguments: Value,
    ) -> Answer {
        let reached = (self.audit.is_some() || self.observer.is_some())
            .then(|| self.reached(name, &arguments));
        self.recorded(
            session,
            name,
            reached,
            self.answer(session, caller, name, arguments),
        )
        .await
    }

    /// Runs `answer` under the caller's rate limit, then records what it `reached` (when
    /// anything records): the audit line and the observer's events.
    pub(super) async fn recorded(
        &self,
        session: &Arc<Session>,
        name: &str,
        reached: Option<Reached>,
        answer: impl std::future::Future<Output = Answer>,
    ) -> Answer {
        let started = Instant::now();
        let answer = match self.rate.as_ref().map(|r| r.take(session)) {
            Some(Err(wait)) => {
                let ms = wait.as_millis().max(1) as u64;
                Answer::Error(
                    ToolError::rate_limited(format!(
                        "Too many calls: this caller's rate limit is reached. Nothing ran; try again in {ms} ms."
                    ))
                    .with("retry_after_ms", ms),
                )
            }
            _ => answer.await,
        };
        let Some(reached) = reached else {
            return answer;
        };
        let elapsed = started.elapsed();
        let outcome = answer.outcome();
        if let Some(observer) = &self.observer {
            if let Answer::Control(ControlOutput {
                searched: Some(s), ..
            }) = &answer
            {
                observer.search(&SearchEvent {
                    control: name,
                    method: s.method,
                    found: s.found,
                });
            }
            let (group, tool) = reached.labels();
            observer.call(&CallEvent::new(group, tool, &outcome, elapsed));
        }
        if let Some(sink) = &self.audit {
            let client = session
                .context(CLIENT_PATH)
                .or_else(|| session.context(CALLER_PATH))
                .map(str::to_owned);
            let (group, tool) = reached.into_names();
            sink.record(&AuditRecord {
                ts: SystemTime::now(),
                client,
                group,
                tool,
                outcome,
                ms: elapsed.as_secs_f64() * 1000.0,
            });
        }
        answer
    }

    /// What a call reached: a call control's target (as asked), a grouped tool called by its
    /// canonical name, else the name called.
    fn reached(&self, name: &str, arguments: &Value) -> Reached {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        let snap = self.snapshot();
        let dir = snap.directory();
        let named = |group: Option<String>, tool: String, known: bool| Reached::Named {
            group,
            tool,
            known,
        };
        match controls::control_for(&self.settings, name) {
            Some(Control::Invoke) => {
                let id = text("toolId");
                match id.and_then(|id| dir.tool_by_canonical(id)) {
                    Some(t) => Reached::Tool(snap.clone(), t),
                    None => named(None, id.unwrap_or_default().to_owned(), false),
                }
            }
            Some(c) if c.is_call() => {
                let (group, tool) = (text("group"), text("tool"));
                match group.zip(tool).and_then(|(g, t)| dir.tool_id(g, t)) {
                    Some(t) => Reached::Tool(snap.clone(), t),
                    None => named(
                        group.map(str::to_owned),
                        tool.unwrap_or_default().to_owned(),
                        false,
                    ),
                }
            }
            Some(_) => named(None, name.to_owned(), true),
            None => match dir.tool_by_canonical(name) {
                Some(t) if self.settings.surface == Surface::Capabilities => {
                    Reached::Tool(snap.clone(), t)
                }
                _ => {
                    let known = dir.direct().iter().any(|d| d.def.name == name);
                    named(None, name.to_owned(), known)
                }
            },
        }
    }

    pub(super) async fn answer(
        &self,
        session: &Arc<Session>,
        caller: Caller,
        name: &str,
        arguments: Value,
    ) -> Answer {
        let snap = self.snapshot();
        let dir = snap.directory();
        let visible = self.visibility(&snap, session);
        let view = View::new(dir, visible.as_deref());
        let control = controls::control_for(&self.settings, name)
            .filter(|_| dir.offers_controls())
            .filter(|c| caller == Caller::Model || !c.is_run());
        let by_model = caller == Caller::Model;
        let direct = || view.direct().find(|(_, d)| by_model && d.def.name == name);
        // On the capabilities surface a grouped tool is callable by its canonical name (the
        // per-turn tools of `turn_tools`).
        let by_canonical = || {
            (by_model && self.settings.surface == Surface::Capabilities && control.is_none())
                .then(|| view.tool_by_canonical(name))
                .flatten()
        };
        let cost = match control {
            Some(c) if c.is_call() && by_model => 2,
            Some(_) => 1,
            None if direct().is_some() || by_canonical().is_some() => 1,
            None => return Answer::Error(self.unknown_name(view, name)),
        };
        if let Err(e) = self.charge(session, cost) {
            return Answer::Error(e);
        }
        if let Some(id) = by_canonical() {
            return match arguments {
                Value::Object(args) => self.dispatch_grouped(session, &snap, id, args).await,
                Value::Null => self.dispatch_grouped(session, &snap, id, Map::new()).await,
                _ => Answer::Error(ToolError::invalid_request(
                    "",
                    format!("{name} takes a JSON object of arguments"),
                )),
            };
        }
        match control {
            Some(c) if c.is_run() => Answer::Control(self.run_code(session, c, arguments).await),
            Some(Control::Invoke) => match self.invoke_target(view, name, &arguments) {
                Ok((id, args)) => {
                    self.dispatch_checked(session, &snap, caller, id, args)
                        .await
                }
                Err(e) => Answer::Error(e),
            },
            Some(c) if c.is_call() => match self.proxied_target(view, name, arguments) {
                Ok((id, _, args)) => {
                    self.dispatch_checked(session, &snap, caller, id, args)
                        .await
                }
                Err(e) => Answer::Error(e),
            },
            Some(c) => {
                let out = match &self.semantic {
                    // Embedding the query is CPU work (or a blocking request): off the executor.
                    Some(sem) => {
                        let (sem, settings) = (sem.clone(), self.settings.clone());
                        let skills = self.skills.clone();
                        let snap = snap.clone();
                        let visible = visible.clone();
                        let job = tokio::task::spawn_blocking(move || {
                            run_discovery(
                                &snap,
                                &settings,
                                Some(&sem),
                                skills.as_deref(),
                                visible.as_deref(),
                                c,
                                &arguments,
                            )
                        });
                        match job.await {
                            Ok(out) => out,
                            Err(e) => {
                                ToolError::search_unavailable(format!("the search stopped: {e}"))
                                    .into()
                            }
                        }
                    }
                    None => run_discovery(
                        &snap,
                        &self.settings,
                        None,
                        self.skills.as_deref(),
                        visible.as_deref(),
                        c,
                        &arguments,
                    ),
                };
                Answer::Control(out)
            }
            None => {
                let Some((index, d)) = view.direct().find(|(_, d)| d.def.name == name) else {
                    return Answer::Error(self.unknown_name(view, name));
                };
                let args = match arguments {
                    Value::Object(m) => m,
                    Value::Null => Map::new(),
                    _ => {
                        return Answer::Error(ToolError::invalid_request(
                            "",
                            format!("{name} takes a JSON object of arguments"),
                        ));
                    }
                };
                self.dispatch_direct(session, &snap, index, d, args).await
            }
        }
    }

    /// A direct tool (the `index`-th of the directory's) down the one call path.
    pub(super) async fn dispatch_direct(
        &self,
        session: &Arc<Session>,
        snap: &Snapshot,
        index: usize,
        d: &DirectEntry,
        args: Map<String, Value>,
    ) -> Answer {
        let target = Target {
            group: None,
            tool: &d.def.name,
            source: &d.source,
            schema: d.def.input_schema.json(),
            validator: snap.validators().direct(index),
            executor: d.executor.as_ref(),
        };
        self.path.dispatch(session, target, args).await.into()
    }

    /// Charges `cost` tool calls to `session`: a `usage_limit` error when over its limit.
    pub(super) fn charge(&self, session: &Session, cost: u64) -> Result<(), ToolError> {
        session.charge(cost, self.path.max_tool_calls).map(drop).map_err(|used| {
            let limit = self.path.max_tool_calls.unwrap_or_default();
            ToolError::usage_limit(format!("This run may make at most {limit} tool calls and has made {used}; this call ({cost} counted) was not run."))
                .with("limit", limit)
                .with("used", used)
        })
    }

    /// A grouped tool called through a call control: from a program, only when its source lets
    /// programs call it.
    async fn dispatch_checked(
        &self,
        session: &Arc<Session>,
        snap: &Snapshot,
        caller: Caller,
        id: u32,
        args: Map<String, Value>,
    ) -> Answer {
        let dir = snap.directory();
        let entry = dir.tool(id);
        if caller == Caller::Code && !entry.codeact {
            let group = &dir.group_of(id).name;
            return Answer::Error(
                ToolError::codeact_denied(format!(
                    "{:?} in group {group:?} may not be called from a program (its source does not allow it); nothing ran. Call it with {} outside the program.",
                    entry.name,
                    self.call_control_name()
                ))
                .with("group", group.as_str())
                .with("tool", entry.name.as_str()),
            );
        }
        self.dispatch_grouped(session, snap, id, args).await
    }

    pub(super) async fn dispatch_grouped(
        &self,
        session: &Arc<Session>,
        snap: &Snapshot,
        id: u32,
        args: Map<String, Value>,
    ) -> Answer {
        let dir = snap.directory();
        let entry = dir.tool(id);
        let group = &dir.group_of(id).name;
        let target = Target {
            group: Some(group),
            tool: &entry.name,
            source: &entry.source,
            schema: entry.input_schema_json(),
            validator: snap.validators().grouped(id),
            executor: entry.executor.as_ref(),
        };
        self.path.dispatch(session, target, args).await.into()
    }

    /// Checks an `invoke_tool` call: a known `toolId` (canonical name) and its arguments.
    pub(super) fn invoke_target(
        &self,
        view: View<'_>,
        control: &str,
        arguments: &Value,
    ) -> Result<(u32, Map<String, Value>), ToolError> {
        let Value::Object(obj) = arguments else {
            return Err(ToolError::invalid_request(
                "",
                format!("{control} takes a JSON object: {{\"toolId\": ..., \"args\": {{...}}}}"),
            ));
        };
        let tool_id = args::req_str(obj, "toolId")?;
        let Some(id) = view.tool_by_canonical(tool_id) else {
            return Err(ToolError::unknown_tool(format!(
                    "There is no tool with toolId {tool_id:?}. Call {} to find tools and use a toolId it returns, exactly.",
                    self.settings.names.search_capabilities
                ),
            )
            .with("toolId", tool_id));
        };
        Ok((id, controls::capabilities::invoke_args(control, obj)?))
    }

    /// Checks a `call_tool` envelope: exactly `group`, `tool` and an `arguments` object.
    pub(super) fn proxied_target(
        &self,
        view: View<'_>,
        control: &str,
        arguments: Value,
    ) -> Result<(u32, String, Map<String, Value>), ToolError> {
        const KEYS: [&str; 3] = ["group", "tool", "arguments"];
        let obj = args::object(control, &arguments, &KEYS)?;
        if let Some(missing) = KEYS.iter().find(|k| !obj.contains_key(**k)) {
            return Err(ToolError::invalid_request(
                &args::pointer(missing),
                format!("{control} takes exactly group, tool and arguments; {missing} is missing"),
            ));
        }
        let group = args::req_str(obj, "group")?.to_owned();
        let tool = args::req_str(obj, "tool")?;
        let id = controls::resolve(view, &self.settings, &group, tool)?;
        let Value::Object(mut obj) = arguments else {
            unreachable!("checked to be an object above")
        };
        // Models often send the arguments object as its JSON text: that text is taken as the
        // object it parses to (nothing else is coerced).
        let arguments = match obj.remove("arguments") {
            Some(Value::Object(m)) => Some(m),
            Some(Value::String(s)) => args::object_text(&s),
            _ => None,
        };
        match arguments {
            Some(m) => Ok((id, group, m)),
            None => Err(ToolError::invalid_request(
                "/arguments",
                "arguments must be a JSON object matching the tool's parameter schema (use {} for none)",
            )),
        }
    }

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
