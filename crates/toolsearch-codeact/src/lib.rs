#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// Layers, bottom to top: alloc (memory accounting, the only unsafe), convert (JSON ↔ Python
// values), interpreter (one program on its thread), then the runner below.

mod alloc;
mod convert;
mod interpreter;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};
use toolsearch::{CodeError, CodeJob, CodeOutcome, CodeRunner, Host, HostReply, RunFuture};

pub use alloc::SandboxAllocator;

/// Stack of an interpreter thread. Reserved, not committed: the pages a program does not
/// touch cost nothing.
const STACK_BYTES: usize = 64 << 20;

/// Runs CodeAct programs in the monty sandbox, each on a thread of its own that ends with
/// its run.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct MontyRunner;

impl MontyRunner {
    /// A runner.
    pub fn new() -> Self {
        Self
    }
}

impl CodeRunner for MontyRunner {
    fn run<'a>(&'a self, job: CodeJob, host: &'a dyn Host) -> RunFuture<'a, CodeOutcome> {
        Box::pin(run(job, host))
    }
}

/// Interrupts its run's interpreter when dropped (the run's future was dropped, or it ended).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

async fn run(job: CodeJob, host: &dyn Host) -> CodeOutcome {
    let timeout = job.limits.timeout;
    let deadline = Instant::now() + timeout;
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let interrupt = cancel.0.clone();
    let (requests_tx, mut requests) = mpsc::unbounded_channel();
    let (done_tx, mut done) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("codeact".to_owned())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let ended = interpreter::run(job, deadline, requests_tx, interrupt);
            let _ = done_tx.send(ended);
        });
    if let Err(e) = spawned {
        return CodeOutcome::new(
            Err(CodeError::Failed(format!(
                "the sandbox could not start an interpreter: {e}"
            ))),
            String::new(),
            0,
        );
    }
    warn_once_without_allocator();
    let deadline = tokio::time::Instant::from_std(deadline);
    loop {
        tokio::select! {
            biased;
            ended = &mut done => return outcome(ended),
            request = requests.recv() => {
                // The interpreter is done with host calls: its answer follows.
                let Some(request) = request else { return outcome(done.await) };
                let reply = match tokio::time::timeout_at(
                    deadline,
                    host.call(&request.function, request.kwargs),
                )
                .await
                {
                    Ok(reply) => reply,
                    Err(_) => HostReply::Stop(CodeError::Timeout(timeout)),
                };
                let _ = request.reply.send(reply);
            }
        }
    }
}

fn outcome(ended: Result<interpreter::Ended, oneshot::error::RecvError>) -> CodeOutcome {
    match ended {
        Ok(e) => CodeOutcome::new(e.result, e.stdout, e.calls),
        Err(_) => CodeOutcome::new(
            Err(CodeError::Failed(
                "the interpreter stopped without an answer".to_owned(),
            )),
            String::new(),
            0,
        ),
    }
}

/// Says once, in the log, when memory limits cannot be enforced because
/// [`SandboxAllocator`] is not the global allocator.
fn warn_once_without_allocator() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let counted = std::thread::spawn(|| {
            alloc::enter_sandbox_thread();
            alloc::counting()
        })
        .join()
        .unwrap_or(false);
        if !counted {
            tracing::warn!(
                "CodeAct memory limits are not enforced: toolsearch_codeact::SandboxAllocator is not the global allocator"
            );
        }
    });
}
