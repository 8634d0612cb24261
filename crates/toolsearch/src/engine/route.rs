//! Routing one call: resolved once ([`resolve`](super::resolve)), charged to the session,
//! answered by the discovery controls, a run, or the one call path, then recorded.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Map, Value};

use super::answer::Answer;
use super::deferred::{Request, Via};
use super::resolve::{Caller, Names, Reached, Route, ToolRef};
use super::snapshot::Snapshot;
use super::{CallerView, Engine, run_discovery};
use crate::catalog::{View, Visibility};
use crate::controls::{Control, ControlOutput};
use crate::dispatch::call::Ran;
use crate::dispatch::{AuditRecord, CALLER_PATH, CallEvent, SearchEvent};
use crate::error::ToolError;
use crate::exec::Session;
use crate::policy::CLIENT_PATH;
use crate::search::LearnedIndex;

/// Who called what, by which names.
#[derive(Debug, Clone, Copy)]
pub(super) struct Called<'a> {
    pub names: Names,
    pub caller: Caller,
    pub name: &'a str,
}

impl Engine {
    /// One tool call on the MCP surface: resolved, then answered under the caller's rate
    /// limit, with its audit record and its events (refused calls are recorded too).
    pub(super) async fn call(
        &self,
        session: &Arc<Session>,
        caller: Caller,
        name: &str,
        arguments: Value,
    ) -> Answer {
        let snap = self.snapshot();
        let visible = self.visibility(&snap, session);
        let view = View::new(snap.directory(), visible.as_deref());
        let route = self.resolve(&snap, view, Names::Surface, caller, name, arguments);
        let reached = self.tracks().then(|| Reached::of(&snap, &route, name));
        let called = Called {
            names: Names::Surface,
            caller,
            name,
        };
        let answer = self.answer(session, &snap, visible, called, route);
        self.recorded(session, name, reached, answer, Via::Surface)
            .await
    }

    /// Whether anything records calls (an audit sink or an observer).
    pub(super) fn records(&self) -> bool {
        self.audit.is_some() || self.observer.is_some()
    }

    /// Whether what a call reached is needed after it: to record it, or to learn from it.
    pub(super) fn tracks(&self) -> bool {
        self.records() || self.learning.is_some()
    }

    /// Runs `answer` under the caller's rate limit, then records what it `reached` (when
    /// anything records): the audit line and the observer's events. An external tool's call
    /// is opened instead (made `via` the surface or a vendor format); it is recorded when the
    /// host completes it.
    pub(super) async fn recorded(
        &self,
        session: &Arc<Session>,
        name: &str,
        reached: Option<Reached>,
        answer: impl std::future::Future<Output = Answer>,
        via: Via,
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
        let answer = match answer {
            Answer::Deferred(request) => {
                return Answer::Opened(self.open_deferred(session, request, via));
            }
            answer => answer,
        };
        if self.learning.is_some() {
            match (&answer, &reached) {
                (
                    Answer::Control(ControlOutput {
                        searched: Some(s),
                        is_error: false,
                        ..
                    }),
                    _,
                ) => self.note_listing(session, s),
                (Answer::Tool(r), Some(Reached::Tool(snap, id))) if !r.is_error => {
                    self.learn_call(session, &snap.directory().tool(*id).canonical);
                }
                _ => {}
            }
        }
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
            observer.call(
                &CallEvent::new(group, tool, outcome.clone(), elapsed).of_source(reached.source()),
            );
        }
        if let Some(sink) = &self.audit {
            let (group, tool) = reached.into_names();
            sink.record(&AuditRecord {
                ts: SystemTime::now(),
                client: client_of(session),
                group,
                tool,
                outcome,
                ms: elapsed.as_secs_f64() * 1000.0,
            });
        }
        answer
    }

    /// Answers a resolved call: charged, then a control's answer or the tool's. The vendor
    /// formats' search tool is answered by their own path.
    pub(super) async fn answer(
        &self,
        session: &Arc<Session>,
        snap: &Arc<Snapshot>,
        visible: Option<Arc<Visibility>>,
        called: Called<'_>,
        route: Result<Route, ToolError>,
    ) -> Answer {
        let route = match route {
            Ok(route) => route,
            Err(e) => return Answer::Error(e),
        };
        if let Err(e) = self.charge(session, route.cost(called.caller)) {
            return Answer::Error(e);
        }
        match route {
            Route::Control(c, arguments) if c.is_run() => {
                Answer::Control(self.run_code(session, c, arguments).await)
            }
            Route::Control(c, arguments) => {
                let learned = self.learned_field(snap, session);
                Answer::Control(self.discovery(snap, visible, learned, c, arguments).await)
            }
            Route::Unreached { error, .. }
            | Route::Tool {
                args: Err(error), ..
            } => Answer::Error(error),
            Route::Tool {
                tool,
                args: Ok(args),
                ..
            } => self.dispatch(session, snap, called, tool, args).await,
        }
    }

    /// A discovery control over what the caller sees; an embedding query runs off the
    /// executor (CPU work, or a blocking request).
    async fn discovery(
        &self,
        snap: &Arc<Snapshot>,
        visible: Option<Arc<Visibility>>,
        learned: Option<Arc<LearnedIndex>>,
        control: Control,
        arguments: Value,
    ) -> ControlOutput {
        let Some(sem) = &self.semantic else {
            let caller = CallerView {
                visible: visible.as_deref(),
                learned: learned.as_deref(),
            };
            return run_discovery(
                snap,
                &self.settings,
                None,
                self.skills.as_deref(),
                caller,
                control,
                &arguments,
            );
        };
        let (sem, settings) = (sem.clone(), self.settings.clone());
        let skills = self.skills.clone();
        let snap = snap.clone();
        let job = tokio::task::spawn_blocking(move || {
            let caller = CallerView {
                visible: visible.as_deref(),
                learned: learned.as_deref(),
            };
            run_discovery(
                &snap,
                &settings,
                Some(&sem),
                skills.as_deref(),
                caller,
                control,
                &arguments,
            )
        });
        match job.await {
            Ok(out) => out,
            Err(e) => ToolError::search_unavailable(format!("the search stopped: {e}")).into(),
        }
    }

    /// A tool down the one call path: from a program, only
    /// when its source lets programs call it.
    async fn dispatch(
        &self,
        session: &Arc<Session>,
        snap: &Snapshot,
        called: Called<'_>,
        tool: ToolRef,
        args: Map<String, Value>,
    ) -> Answer {
        let target = tool.target(snap);
        if called.caller == Caller::Code && target.external {
            return Answer::Error(
                ToolError::not_executable(format!(
                    "{} is an external tool: the host runs it, and a program cannot wait for the host, so nothing ran. Call it with {} outside the program.",
                    target.label(),
                    self.call_control_name()
                ))
                .with("group", target.group.unwrap_or_default())
                .with("tool", target.tool),
            );
        }
        if called.caller == Caller::Code && !tool.codeact(snap) {
            let name = called.name;
            return Answer::Error(match (called.names, target.group) {
                (Names::Surface, Some(group)) => ToolError::codeact_denied(format!(
                    "{:?} in group {group:?} may not be called from a program (its source does not allow it); nothing ran. Call it with {} outside the program.",
                    target.tool,
                    self.call_control_name()
                ))
                .with("group", group)
                .with("tool", target.tool),
                _ => ToolError::codeact_denied(format!(
                    "{name:?} may not be called from a program (its source does not allow it); nothing ran. Call it directly, outside the code."
                ))
                .with("tool", name),
            });
        }
        let (group, tool_name) = (target.group.map(str::to_owned), target.tool.to_owned());
        match self.path.dispatch(session, target, args).await {
            Ok(Ran::Result(result)) => Answer::Tool(result),
            Ok(Ran::Deferred(arguments)) => Answer::Deferred(Request {
                canonical_name: tool.canonical_name(snap),
                group: group.unwrap_or_default(),
                tool: tool_name,
                arguments,
            }),
            Err(e) => Answer::Error(e),
        }
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
}

/// Whom a session's records name: its client's name (`identity.client`), else its caller's
/// stable id.
pub(super) fn client_of(session: &Session) -> Option<String> {
    session
        .context(CLIENT_PATH)
        .or_else(|| session.context(CALLER_PATH))
        .map(str::to_owned)
}
