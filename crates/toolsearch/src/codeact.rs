//! The CodeAct contract: what runs a model's Python program ([`CodeRunner`]), what it is
//! given ([`CodeJob`]), how the program calls back into the engine ([`Host`]) and how a run
//! ends ([`CodeOutcome`]). The engine builds the job and the host; a runner — the
//! `toolsearch-codeact` crate's, on the monty sandbox — executes it. This layer knows nothing
//! of catalogs, search or controls.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Map, Value};

/// A boxed, sendable future that may borrow for `'a`.
pub type RunFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Longest `run_code` program, in characters.
pub const MAX_CODE_CHARS: usize = 65_536;
/// Most bytes of printed text a run returns.
pub const MAX_STDOUT_BYTES: usize = 16 * 1024;

/// The limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeLimits {
    /// Wall time of the whole run, host calls included.
    pub timeout: Duration,
    /// Memory the program may hold, in bytes.
    pub max_memory: usize,
    /// Host calls the program may make.
    pub max_calls: usize,
}

impl CodeLimits {
    /// Limits from their parts.
    pub fn new(timeout: Duration, max_memory: usize, max_calls: usize) -> Self {
        Self {
            timeout,
            max_memory,
            max_calls,
        }
    }
}

/// One program to run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodeJob {
    /// The Python source. Top-level `await` is allowed; the value of its last expression is
    /// the result.
    pub code: String,
    /// The name errors give the source (`run_code.py`, or the program's path).
    pub filename: String,
    /// The `inputs` global.
    pub inputs: Map<String, Value>,
    /// The host functions the program may call (async, keyword arguments only).
    pub functions: Vec<String>,
    /// Its limits.
    pub limits: CodeLimits,
}

impl CodeJob {
    /// A job from its parts.
    pub fn new(
        code: impl Into<String>,
        filename: impl Into<String>,
        inputs: Map<String, Value>,
        functions: Vec<String>,
        limits: CodeLimits,
    ) -> Self {
        Self {
            code: code.into(),
            filename: filename.into(),
            inputs,
            functions,
            limits,
        }
    }
}

/// What a host call gives back to the program.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HostReply {
    /// The value the awaited call returns (a control's JSON, an error object included).
    Value(Value),
    /// The run must end with this error (a run-level limit was reached); nothing ran.
    Stop(CodeError),
}

/// The engine side of a run: the program's host functions.
pub trait Host: Send + Sync {
    /// Calls host function `function` with keyword arguments `kwargs`.
    fn call<'a>(
        &'a self,
        function: &'a str,
        kwargs: Map<String, Value>,
    ) -> RunFuture<'a, HostReply>;
}

/// Why a run did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeError {
    /// A Python exception or syntax error, or something the sandbox does not allow:
    /// `type: message (line N)`.
    #[error("{0}")]
    Failed(String),
    /// The run went past its wall time.
    #[error("the program ran longer than {0:?} and was stopped")]
    Timeout(Duration),
    /// Memory or recursion past its limit.
    #[error("{0}")]
    ResourceLimit(String),
    /// More host calls than allowed.
    #[error("{0}")]
    UsageLimit(String),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodeOutcome {
    /// The program's result as JSON, or why there is none.
    pub result: Result<Value, CodeError>,
    /// What it printed (at most [`MAX_STDOUT_BYTES`]).
    pub stdout: String,
    /// Host calls it made.
    pub calls: usize,
}

impl CodeOutcome {
    /// An outcome from its parts.
    pub fn new(result: Result<Value, CodeError>, stdout: String, calls: usize) -> Self {
        Self {
            result,
            stdout,
            calls,
        }
    }
}

/// Runs programs in a sandbox. One run never outlives the future [`run`](Self::run) returns
/// by more than it takes the interpreter to notice that it was dropped.
pub trait CodeRunner: Send + Sync + fmt::Debug {
    /// Runs `job`, calling `host` for each host call, one at a time, in program order.
    fn run<'a>(&'a self, job: CodeJob, host: &'a dyn Host) -> RunFuture<'a, CodeOutcome>;
}
