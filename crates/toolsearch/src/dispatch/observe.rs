//! What the engine tells an observer (the gateway's metrics) about the calls it answers: one
//! event per tool call and one per search a discovery control ran. Every label an event carries
//! is bounded by the catalog and the contract — a tool or group is named only when it exists,
//! outcomes are `ok`, `tool_error` or an error code (an external tool's call is told once the
//! host completes it), methods are the four search methods —
//! never a query, an argument value, or a name as a caller spelled it.

use std::time::Duration;

use crate::config::SearchMethod;
use crate::outcome::Outcome;

/// One tool call the engine answered: the same calls as the audit log's records.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallEvent<'a> {
    /// The group of the tool a call control reached; `None` for a control answered by itself,
    /// a direct tool, or a call that named no existing tool.
    pub group: Option<&'a str>,
    /// The tool reached (a call control's target), or the control or direct tool called; `""`
    /// when the call named no tool or control that exists.
    pub tool: &'a str,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub elapsed: Duration,
    /// The source of the tool reached, when a tool of a source was reached (not a control, nor
    /// a name that reaches nothing).
    pub source: Option<&'a str>,
}

impl<'a> CallEvent<'a> {
    /// An event from its parts (the engine makes them; an observer's tests may too).
    pub fn new(group: Option<&'a str>, tool: &'a str, outcome: Outcome, elapsed: Duration) -> Self {
        Self {
            group,
            tool,
            outcome,
            elapsed,
            source: None,
        }
    }

    /// The same event, of a tool of `source`.
    pub fn of_source(mut self, source: Option<&'a str>) -> Self {
        self.source = source;
        self
    }
}

/// One search a discovery control ran (`discover_tools`, `search_proxy_tools`,
/// `search_capabilities`) and answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchEvent<'a> {
    /// The control's name as the surface shows it.
    pub control: &'a str,
    /// The method that ranked (an empty query browses, by the keyword rules).
    pub method: SearchMethod,
    /// Whether it found anything (for `search_capabilities`: a tool or a skill).
    pub found: bool,
}

/// Receives the engine's events. Called on the call's task, after the answer is made: keep it
/// cheap (count, do not block).
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// A tool call was answered.
    fn call(&self, event: &CallEvent<'_>);
    /// A discovery control searched.
    fn search(&self, event: &SearchEvent<'_>);
}
