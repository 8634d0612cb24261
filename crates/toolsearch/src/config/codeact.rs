//! `[codeact]`: whether the model may run Python programs (`run_code`, `run_program`), where
//! saved programs live, and the limits of one run.

use std::path::PathBuf;
use std::time::Duration;

use super::range::outside;
use crate::problem::Problems;

/// Default wall time of one run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(10_000);
/// Default memory of one run, in MiB.
pub const DEFAULT_MAX_MEMORY_MB: usize = 64;
/// Default host calls of one run.
pub const DEFAULT_MAX_CALLS: usize = 50;

/// The CodeAct settings (`[codeact]`); off by default.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeActSettings {
    /// `enabled`: offer `run_code` (and `run_program` when `programs` names folders).
    pub enabled: bool,
    /// `programs`: folders of saved `*.codeact.py` programs (relative to the config file).
    pub programs: Vec<PathBuf>,
    /// `timeout_ms`: wall time of one run, host calls included.
    pub timeout: Duration,
    /// `max_memory_mb`: memory one run may hold.
    pub max_memory_mb: usize,
    /// `max_calls`: host calls one run may make.
    pub max_calls: usize,
}

impl Default for CodeActSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            programs: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_memory_mb: DEFAULT_MAX_MEMORY_MB,
            max_calls: DEFAULT_MAX_CALLS,
        }
    }
}

impl CodeActSettings {
    /// CodeAct on, with the default limits and no program folders.
    pub fn enabled() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }

    /// Sets the program folders.
    pub fn with_programs(mut self, folders: Vec<PathBuf>) -> Self {
        self.programs = folders;
        self
    }

    /// Sets the wall time of one run.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the memory of one run, in MiB.
    pub fn with_max_memory_mb(mut self, mb: usize) -> Self {
        self.max_memory_mb = mb;
        self
    }

    /// Sets the host calls of one run.
    pub fn with_max_calls(mut self, calls: usize) -> Self {
        self.max_calls = calls;
        self
    }

    /// Whether `run_program` is offered: CodeAct is on and some program folder is named.
    pub fn offers_programs(&self) -> bool {
        self.enabled && !self.programs.is_empty()
    }

    /// Every problem with these settings, each with its key.
    pub fn problems(&self) -> Problems {
        let mut out = Problems::new();
        let ms = self.timeout.as_millis();
        out.extend(outside("codeact.timeout_ms", ms, &(1..=600_000)));
        out.extend(outside(
            "codeact.max_memory_mb",
            self.max_memory_mb,
            &(1..=4096),
        ));
        out.extend(outside("codeact.max_calls", self.max_calls, &(1..=10_000)));
        out
    }
}
