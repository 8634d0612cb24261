//! Running a CodeAct program: the job built from `run_code` / `run_program`, the host whose
//! functions are the surface's controls (each host call routed like a model's call — the same
//! usage limits, validation, approval and timeouts — counted once, and refused for tools their
//! source keeps from programs), and the outcome as the model reads it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};

use super::Engine;
use super::resolve::Caller;
use crate::codeact::{CodeError, CodeJob, CodeLimits, Host, HostReply, RunFuture};
use crate::config::Surface;
use crate::controls::codeact::{
    explain_missing_main, outcome_json, run_code_program, saved_program,
};
use crate::controls::{self, Control, ControlOutput};
use crate::error::ToolError;
use crate::exec::Session;

/// The engine side of one run.
struct CodeHost<'a> {
    engine: &'a Engine,
    session: &'a Arc<Session>,
    calls: AtomicUsize,
    max_calls: usize,
}

impl Host for CodeHost<'_> {
    fn call<'a>(
        &'a self,
        function: &'a str,
        kwargs: Map<String, Value>,
    ) -> RunFuture<'a, HostReply> {
        Box::pin(async move {
            let made = self.calls.fetch_add(1, Ordering::AcqRel) + 1;
            if made > self.max_calls {
                return HostReply::Stop(CodeError::UsageLimit(format!(
                    "The program made more than {} host calls (codeact.max_calls) and was stopped; call {made} did not run.",
                    self.max_calls
                )));
            }
            let answer = self
                .engine
                .call(self.session, Caller::Code, function, Value::Object(kwargs))
                .await;
            HostReply::Value(answer.into_program_value())
        })
    }
}

impl Engine {
    /// Answers `run_code` or `run_program`.
    pub(super) async fn run_code(
        &self,
        session: &Arc<Session>,
        control: Control,
        arguments: Value,
    ) -> ControlOutput {
        let Some(runner) = &self.runner else {
            // The builder refuses CodeAct without a runner; kept as an answer, not a panic.
            return ToolError::code_failed("no code runner is configured").into();
        };
        let program = match control {
            Control::RunProgram => saved_program(&self.settings, &arguments),
            _ => run_code_program(&self.settings, &arguments),
        };
        let program = match program {
            Ok(p) => p,
            Err(e) => return e.into(),
        };
        let c = &self.settings.codeact;
        let limits = CodeLimits::new(c.timeout, c.max_memory_mb << 20, c.max_calls);
        let main_call_line = program.main_call_line;
        let job = CodeJob::new(
            program.code,
            program.filename,
            program.inputs,
            controls::host_functions(&self.settings),
            limits,
        );
        let host = CodeHost {
            engine: self,
            session,
            calls: AtomicUsize::new(0),
            max_calls: c.max_calls,
        };
        let mut outcome = runner.run(job, &host).await;
        explain_missing_main(main_call_line, &mut outcome);
        let (json, ended) = outcome_json(&outcome);
        ControlOutput::ended(json, ended)
    }

    /// The name of the surface's call control (what a program's caller should use instead).
    pub(super) fn call_control_name(&self) -> &str {
        let n = &self.settings.names;
        match self.settings.surface {
            Surface::Toolsearch => &n.call,
            Surface::Toolproxy => &n.call_proxy,
            Surface::Capabilities => &n.invoke,
        }
    }
}
