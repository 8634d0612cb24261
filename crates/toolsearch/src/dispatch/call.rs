//! The one execution path of every tool call, direct or proxied: validate the arguments, ask
//! the approval hook, run the executor under a timeout (a panic or an error becomes a result),
//! map the outcome to what the model receives. An external tool's call stops before the
//! executor: its validated arguments go back to the host. Dropping the returned future cancels the
//! executor's future with it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::hooks::{ApprovalHook, UnauthorizedHook};
use super::validate::ArgValidator;
use super::{Approval, CallInfo};
use crate::error::ToolError;
use crate::exec::{
    ApprovalAnswer, ApprovalRequest, CallResult, ExecError, Executor, Session, request_approver,
};
use crate::policy::ToolGlobs;

/// Default time a tool call may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

const UNCERTAIN: &str = "The outcome may be uncertain: inspect the current state before retrying, above all for a call that changes data.";

/// Hooks and limits shared by every call.
#[derive(Clone)]
pub struct CallPath {
    pub(crate) approval: Option<ApprovalHook>,
    pub(crate) on_unauthorized: Option<UnauthorizedHook>,
    pub(crate) timeout: Duration,
    pub(crate) max_tool_calls: Option<u64>,
    /// Tools the session's person is asked about before they run (`[approval] tools`).
    pub(crate) ask_for: Option<ToolGlobs>,
}

impl Default for CallPath {
    fn default() -> Self {
        Self {
            approval: None,
            on_unauthorized: None,
            timeout: DEFAULT_TIMEOUT,
            max_tool_calls: None,
            ask_for: None,
        }
    }
}

impl std::fmt::Debug for CallPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPath")
            .field("approval", &self.approval.is_some())
            .field("on_unauthorized", &self.on_unauthorized.is_some())
            .field("timeout", &self.timeout)
            .field("max_tool_calls", &self.max_tool_calls)
            .field("ask_for", &self.ask_for.is_some())
            .finish()
    }
}

/// The tool a call resolves to.
pub(crate) struct Target<'a> {
    pub group: Option<&'a str>,
    pub tool: &'a str,
    pub source: &'a str,
    pub schema: &'a RawValue,
    pub validator: &'a ArgValidator,
    pub executor: Option<&'a Arc<dyn Executor>>,
    /// The host runs it (see [`ToolDef::external`](crate::ToolDef::external)).
    pub external: bool,
}

/// What the call path gives back when the call was not refused.
#[derive(Debug)]
pub(crate) enum Ran {
    /// The tool's own result.
    Result(CallResult),
    /// An external tool: everything before running it passed; the host runs it with these
    /// validated arguments.
    Deferred(Map<String, Value>),
}

impl Target<'_> {
    pub(crate) fn label(&self) -> String {
        match self.group {
            Some(g) => format!("{:?} in group {g:?}", self.tool),
            None => format!("{:?}", self.tool),
        }
    }
}

impl CallPath {
    /// Runs one call of `target`: the tool's own result, or the model-facing error of a call
    /// that did not run or did not finish.
    pub(crate) async fn dispatch(
        &self,
        session: &Arc<Session>,
        target: Target<'_>,
        arguments: Map<String, Value>,
    ) -> Result<Ran, ToolError> {
        let span = tracing::info_span!(
            "dispatch",
            group = target.group,
            tool = target.tool,
            source = target.source
        );
        async {
            let started = Instant::now();
            let (outcome, result) = self.run(session, &target, arguments).await;
            tracing::info!(
                outcome,
                duration_us = started.elapsed().as_micros() as u64,
                "tool call"
            );
            result
        }
        .instrument(span)
        .await
    }

    async fn run(
        &self,
        session: &Arc<Session>,
        target: &Target<'_>,
        arguments: Map<String, Value>,
    ) -> (&'static str, Result<Ran, ToolError>) {
        let fail = |e: ToolError| (e.code.as_str(), Err(e));
        let arguments = Value::Object(arguments);
        // A body: only under its own target, which the CLI's log filter keeps off unless named.
        tracing::trace!(target: "toolsearch_bodies", arguments = %arguments, "arguments");
        match target.validator.check(target.schema, &arguments) {
            Err(schema_error) => {
                return fail(ToolError::invalid_schema(format!(
                    "The input schema of {} is not a valid JSON Schema ({schema_error}), so its arguments cannot be checked; the call was not made.",
                    target.label()
                )));
            }
            Ok(Err((violations, total))) => {
                return fail(invalid_arguments(target, &violations, total));
            }
            Ok(Ok(())) => {}
        }
        let Value::Object(arguments) = arguments else {
            unreachable!("built from a map above")
        };
        let executor = match (target.executor, target.external) {
            (_, true) => None,
            (Some(executor), false) => Some(executor),
            (None, false) => {
                return fail(ToolError::not_executable(format!(
                    "{} comes from a static catalog and has no executor here, so it cannot be called. Use another tool.",
                    target.label()
                )));
            }
        };
        if self
            .ask_for
            .as_ref()
            .is_some_and(|g| g.matches(target.group, target.tool))
        {
            let Some(approver) = request_approver().or_else(|| session.approver().cloned()) else {
                return fail(ToolError::denied(format!(
                    "{} runs only with a person's approval, and this client cannot be asked (it does not support elicitation); it did not run.",
                    target.label()
                )));
            };
            let request = ApprovalRequest::new(
                target.group.map(str::to_owned),
                target.tool.to_owned(),
                arguments.clone(),
            );
            if let ApprovalAnswer::Decline(why) = approver.ask(request).await {
                return fail(ToolError::denied(format!(
                    "The call of {} was not approved and did not run: {why}",
                    target.label()
                )));
            }
        }
        if let Some(approve) = &self.approval {
            let info = CallInfo {
                group: target.group.map(str::to_owned),
                tool: target.tool.to_owned(),
                source: target.source.to_owned(),
            };
            if let Approval::Deny(why) = approve(info).await {
                return fail(ToolError::denied(format!(
                    "The call of {} was not approved and did not run: {why}",
                    target.label()
                )));
            }
        }
        let Some(executor) = executor else {
            return ("deferred", Ok(Ran::Deferred(arguments)));
        };
        let running =
            AssertUnwindSafe(executor.call_in(session, target.tool, arguments)).catch_unwind();
        let limit = executor.timeout().unwrap_or(self.timeout);
        match tokio::time::timeout(limit, running).await {
            Err(_) => fail(ToolError::timeout(format!(
                "{} did not finish within {} s and was cancelled. {UNCERTAIN}",
                target.label(),
                limit.as_secs_f64()
            ))),
            Ok(Err(panic)) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_owned());
                fail(ToolError::tool_failed(format!(
                    "{} crashed: {what}. {UNCERTAIN}",
                    target.label()
                )))
            }
            Ok(Ok(Ok(result))) => ("ok", Ok(Ran::Result(result))),
            Ok(Ok(Err(e))) => fail(self.exec_error(&target.label(), e)),
        }
    }

    /// The model-facing error of a tool (`label`, as messages name it) that answered `e`.
    pub(crate) fn exec_error(&self, label: &str, e: ExecError) -> ToolError {
        match e {
            ExecError::Failed(m) => {
                ToolError::tool_failed(format!("{} failed: {m}. {UNCERTAIN}", label))
            }
            ExecError::Unauthorized { upstream, message } => {
                if let Some(hook) = &self.on_unauthorized {
                    hook(&upstream);
                }
                ToolError::needs_auth(format!(
                    "{upstream} refused the credentials for {}: {message}",
                    label
                ))
                .with(
                    "hint",
                    format!("call the auth tool to re-authorize {upstream}"),
                )
                .with("upstream", upstream)
            }
            ExecError::NeedsLogin {
                upstream,
                message,
                hint,
            } => {
                if let Some(hook) = &self.on_unauthorized {
                    hook(&upstream);
                }
                ToolError::needs_auth(format!(
                    "{upstream} needs a login before {} can run: {message}. Nothing ran.",
                    label
                ))
                .with("hint", hint)
                .with("upstream", upstream)
            }
            ExecError::Unavailable(m) => ToolError::unavailable(format!(
                "{} cannot be reached: {m}. Nothing ran; try again later or use another tool.",
                label
            )),
            ExecError::InvalidArguments(m) => ToolError::invalid_arguments(format!(
                "The tool refused the arguments of {}: {m}. Nothing ran; fix them and call again.",
                label
            ))
            .with("path", ""),
        }
    }
}

fn invalid_arguments(
    target: &Target<'_>,
    violations: &[super::validate::Violation],
    total: usize,
) -> ToolError {
    let first = violations.first();
    let summary = first
        .map(|v| {
            let at = if v.path.is_empty() {
                "the arguments object".to_owned()
            } else {
                v.path.clone()
            };
            format!("{at}: {}", v.message)
        })
        .unwrap_or_default();
    let list: Vec<Value> = violations
        .iter()
        .map(|v| json!({"path": v.path, "message": v.message}))
        .collect();
    ToolError::invalid_arguments(format!(
            "The arguments do not match the input schema of {} ({total} problem{}; first: {summary}). Nothing ran: fix the arguments against the complete schema (describe the tool if needed) and call again.",
            target.label(),
            if total == 1 { "" } else { "s" }
        ),
    )
    .with("path", first.map(|v| v.path.clone()).unwrap_or_default())
    .with("violations", list)
    .with("violations_total", total)
}
