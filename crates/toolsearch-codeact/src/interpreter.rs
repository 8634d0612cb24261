//! One program on its own thread: compiled and run by monty, its host calls handed to the
//! async side one at a time and awaited before the interpreter goes on (so they happen in
//! program order, also inside `asyncio.gather`), its limits applied, and how it ended.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::Instant;

use monty::{FunctionCall, MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
    PrintWriter, PrintWriterCallback, ResourceLimits, ResourceTracker,
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use toolsearch::{CodeError, CodeJob, HostReply, MAX_STDOUT_BYTES};

use crate::alloc::{enter_sandbox_thread, vm_turn};
use crate::convert::{self, TooDeep};

/// Deepest Python call stack.
pub(crate) const MAX_RECURSION: usize = 200;
/// Most unknown-name lookups a run may make (each answered "undefined").
const MAX_LOOKUPS: usize = 10_000;

/// A host call on its way to the async side, with where its reply goes.
pub(crate) struct HostRequest {
    pub(crate) function: String,
    pub(crate) kwargs: Map<String, Value>,
    pub(crate) reply: std_mpsc::SyncSender<HostReply>,
}

/// How the interpreter thread's run ended.
pub(crate) struct Ended {
    pub(crate) result: Result<Value, CodeError>,
    pub(crate) stdout: String,
    pub(crate) calls: usize,
}

/// `print()` output, kept up to [`MAX_STDOUT_BYTES`]; the rest is dropped. monty polls it
/// every few hundred instructions, which is when a run whose caller went away is interrupted.
#[derive(Debug, Default)]
struct Stdout {
    text: String,
    truncated: bool,
    cancel: Arc<AtomicBool>,
}

impl Stdout {
    fn push_str(&mut self, s: &str) {
        if self.truncated {
            return;
        }
        let room = MAX_STDOUT_BYTES - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return;
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.truncated = true;
    }
}

impl PrintWriterCallback for Stdout {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push_str(&output);
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push_str(end.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn poll_flush(&mut self) -> Result<(), MontyException> {
        if self.cancel.load(Ordering::Relaxed) {
            // Not an `Exception`: `except Exception` does not swallow it.
            return Err(MontyException::new(
                ExcType::KeyboardInterrupt,
                Some("the run was cancelled: its caller went away".into()),
            ));
        }
        Ok(())
    }
}

/// Where a program's error happened: `(line N)` of the innermost frame in its own file.
fn line_of(e: &MontyException) -> Option<u32> {
    e.traceback().last().map(|f| f.start.line)
}

/// A Python exception as the model reads it: `Type: message (line N)`.
fn describe(e: &MontyException) -> String {
    match line_of(e) {
        Some(line) => format!("{} (line {line})", e.summary()),
        None => e.summary(),
    }
}

/// The run's error for an exception that ended it.
fn failure(e: &MontyException, job: &CodeJob) -> CodeError {
    let summary = e.summary();
    match e.exc_type() {
        ExcType::MemoryError => CodeError::ResourceLimit(format!(
            "The program went past its memory limit of {} MiB and was stopped: {}",
            job.limits.max_memory >> 20,
            describe(e)
        )),
        ExcType::RecursionError => CodeError::ResourceLimit(format!(
            "The program's calls nested deeper than {MAX_RECURSION} and it was stopped: {}",
            describe(e)
        )),
        ExcType::TimeoutError if summary.contains("time limit exceeded") => {
            CodeError::Timeout(job.limits.timeout)
        }
        _ => CodeError::Failed(describe(e)),
    }
}

/// Runs `job` on the current thread (a fresh one), sending host calls through `host`; setting
/// `cancel` interrupts it.
pub(crate) fn run(
    job: CodeJob,
    deadline: Instant,
    host: mpsc::UnboundedSender<HostRequest>,
    cancel: Arc<AtomicBool>,
) -> Ended {
    enter_sandbox_thread();
    let mut run = Run {
        job: &job,
        deadline,
        host,
        stdout: Stdout {
            cancel,
            ..Stdout::default()
        },
        calls: 0,
        lookups: 0,
        resolved: Vec::new(),
    };
    let result = match catch_unwind(AssertUnwindSafe(|| run.execute())) {
        Ok(r) => r,
        Err(_) => Err(CodeError::Failed(
            "the interpreter failed on this program (an internal error); it was stopped".to_owned(),
        )),
    };
    Ended {
        result,
        stdout: run.stdout.text,
        calls: run.calls,
    }
}

/// One run's state on its interpreter thread.
struct Run<'j> {
    job: &'j CodeJob,
    deadline: Instant,
    host: mpsc::UnboundedSender<HostRequest>,
    stdout: Stdout,
    calls: usize,
    lookups: usize,
    /// Replies to host calls whose futures the program has not collected yet.
    resolved: Vec<(u32, MontyObject)>,
}

impl Run<'_> {
    fn remaining(&self) -> std::time::Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn execute(&mut self) -> Result<Value, CodeError> {
        let job = self.job;
        let mut names = vec!["inputs".to_owned()];
        names.extend(job.functions.iter().map(|f| python_name(f)));
        let mut values = vec![convert::dict(&job.inputs)];
        values.extend(job.functions.iter().map(|f| MontyObject::Function {
            name: f.clone(),
            docstring: None,
        }));
        let limits = ResourceLimits::default()
            .max_duration(self.remaining())
            .max_memory(job.limits.max_memory)
            .max_recursion_depth(MAX_RECURSION);
        let started = {
            let _turn = vm_turn();
            MontyRun::new(
                job.code.clone(),
                &job.filename,
                names,
                CompileOptions::default(),
            )
            .and_then(|runner| {
                runner.start(
                    values,
                    ResourceTracker::new(limits),
                    PrintWriter::Callback(&mut self.stdout),
                )
            })
        };
        let mut progress = started.map_err(|e| failure(&e, job))?;
        loop {
            let next = match progress {
                RunProgress::Complete(value) => {
                    return convert::to_json(&value).map_err(|TooDeep| {
                        CodeError::Failed(format!(
                            "ValueError: the result is nested deeper than {} levels",
                            convert::MAX_DEPTH
                        ))
                    });
                }
                RunProgress::FunctionCall(call) => self.host_call(call)?,
                RunProgress::ResolveFutures(state) => {
                    let mut ready = Vec::new();
                    for id in state.pending_call_ids() {
                        if let Some(i) = self.resolved.iter().position(|(r, _)| r == id) {
                            let (id, value) = self.resolved.swap_remove(i);
                            ready.push((id, ExtFunctionResult::Return(value)));
                        }
                    }
                    let _turn = vm_turn();
                    if ready.is_empty() {
                        // Awaiting something no host call will ever answer.
                        state.abort(
                            MontyException::new(
                                ExcType::RuntimeError,
                                Some("the program awaits a future that nothing resolves".into()),
                            ),
                            PrintWriter::Callback(&mut self.stdout),
                        )
                    } else {
                        state.resume(ready, PrintWriter::Callback(&mut self.stdout))
                    }
                }
                RunProgress::NameLookup(lookup) => {
                    self.lookups += 1;
                    let _turn = vm_turn();
                    if self.lookups > MAX_LOOKUPS {
                        lookup.abort(
                            MontyException::new(
                                ExcType::RuntimeError,
                                Some("too many lookups of undefined names".into()),
                            ),
                            PrintWriter::Callback(&mut self.stdout),
                        )
                    } else {
                        lookup.resume(
                            NameLookupResult::Undefined,
                            PrintWriter::Callback(&mut self.stdout),
                        )
                    }
                }
                RunProgress::OsCall(os) => {
                    let what = os.function_call.name().to_owned();
                    let _turn = vm_turn();
                    os.abort(
                        MontyException::new(
                            ExcType::PermissionError,
                            Some(format!(
                                "{what} is not allowed here: programs have no filesystem, network, environment or clock"
                            )),
                        ),
                        PrintWriter::Callback(&mut self.stdout),
                    )
                }
            };
            progress = next.map_err(|e| failure(&e, job))?;
        }
    }

    /// One host call: refused in Python when it has positional arguments; else sent to the
    /// host and awaited, its reply kept for the future the program awaits.
    fn host_call(
        &mut self,
        mut call: FunctionCall,
    ) -> Result<Result<RunProgress, MontyException>, CodeError> {
        let function = call.function_name.clone();
        if call.object_id.is_some() || !self.job.functions.contains(&function) {
            // Not a host function (calling an undefined name lands here): a NameError.
            let _turn = vm_turn();
            return Ok(call.resume(
                ExtFunctionResult::NotFound(function),
                PrintWriter::Callback(&mut self.stdout),
            ));
        }
        if !call.args.is_empty() {
            let _turn = vm_turn();
            return Ok(call.resume(
                MontyException::new(
                    ExcType::TypeError,
                    Some(format!(
                        "{function}() takes keyword arguments only, e.g. {function}(query=\"...\")"
                    )),
                ),
                PrintWriter::Callback(&mut self.stdout),
            ));
        }
        let mut kwargs = Map::new();
        for (k, v) in &call.kwargs {
            let MontyObject::String(key) = k else {
                continue;
            };
            let value = convert::to_json(v).map_err(|TooDeep| {
                CodeError::Failed(format!(
                    "ValueError: an argument of {function}() is nested deeper than {} levels",
                    convert::MAX_DEPTH
                ))
            })?;
            kwargs.insert(key.clone(), value);
        }
        let (reply_tx, reply_rx) = std_mpsc::sync_channel(1);
        let sent = self.host.send(HostRequest {
            function,
            kwargs,
            reply: reply_tx,
        });
        // The run's caller is gone (its future was dropped): stop here.
        let reply = match sent {
            Ok(()) => reply_rx
                .recv()
                .map_err(|_| CodeError::Timeout(self.job.limits.timeout))?,
            Err(_) => return Err(CodeError::Timeout(self.job.limits.timeout)),
        };
        let value = match reply {
            HostReply::Value(v) => {
                self.calls += 1;
                convert::to_python(&v)
            }
            HostReply::Stop(e) => return Err(e),
            _ => {
                return Err(CodeError::Failed(
                    "the host gave an unknown reply".to_owned(),
                ));
            }
        };
        self.resolved.push((call.call_id, value));
        // The interpreter's clock runs only while it executes: give it what is left of the
        // run's wall time.
        call.tracker_mut().set_max_duration(self.remaining());
        let _turn = vm_turn();
        Ok(call.resume_pending(PrintWriter::Callback(&mut self.stdout)))
    }
}

/// A control's name as a Python identifier (`-` is not allowed in one: it becomes `_`).
pub(crate) fn python_name(control: &str) -> String {
    control.replace('-', "_")
}
