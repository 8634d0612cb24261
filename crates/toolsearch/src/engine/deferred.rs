//! External tools' calls while the host runs them: each open call under its id until the
//! host completes or fails it (once), or until its session ends (the session's calls are then
//! dropped with it). The call's audit record and event are made when it is completed, with
//! the time from the call to its completion.

use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Instant, SystemTime};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::Engine;
use super::vendor::VendorReply;
use crate::dispatch::{AuditRecord, CallEvent};
use crate::error::ToolError;
use crate::exec::{CallResult, ExecError, Session};
use crate::outcome::Outcome;
use crate::vendor::{self, Format};

/// How many completed (or dropped) ids are remembered, to say why one is no longer open.
const REMEMBERED: usize = 1024;

/// The key of a session's own list of its open calls (see [`SessionCalls`]).
const SESSION_KEY: &str = "toolsearch.deferred";

/// Why a deferred call could not be completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeferredError {
    /// No external call was ever opened under this id (by this engine).
    #[error("no external tool call is open under {0:?}")]
    Unknown(String),
    /// The call was already completed or failed: a call completes once.
    #[error("the external tool call {0:?} was already completed")]
    Completed(String),
    /// The call's session ended before the host completed it; the call was dropped.
    #[error("the session of the external tool call {0:?} ended; the call was dropped")]
    SessionEnded(String),
    /// A vendor-format completion of a call the model did not make in a vendor format.
    #[error(
        "the external tool call {0:?} was not made in a vendor format; complete it with complete or fail"
    )]
    NotVendor(String),
}

/// How the model made the call: what its completion is shaped as.
#[derive(Debug, Clone)]
pub(super) enum Via {
    /// The MCP surface's controls (`call_tool`).
    Surface,
    /// A vendor format, with the OpenAI `call_id` of the model's call when it gave one.
    Vendor(Format, Option<String>),
}

/// A deferred call before it is opened: what the call path approved.
#[derive(Debug)]
pub(super) struct Request {
    pub group: String,
    pub tool: String,
    pub canonical_name: String,
    pub arguments: serde_json::Map<String, Value>,
}

/// One open call.
#[derive(Debug)]
struct Open {
    session: Weak<Session>,
    group: String,
    tool: String,
    /// Its canonical name (what a successful completion teaches, when the engine learns).
    canonical: String,
    /// Whom its record names (`None` also when nothing records).
    client: Option<String>,
    /// Its record and event are made on completion.
    recorded: bool,
    started: Instant,
    via: Via,
}

/// Why an id is no longer open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    Completed,
    SessionEnded,
}

#[derive(Debug, Default)]
struct State {
    open: FxHashMap<String, Open>,
    closed: VecDeque<(String, Closed)>,
}

impl State {
    fn close(&mut self, call_id: String, why: Closed) {
        if self.closed.len() == REMEMBERED {
            self.closed.pop_front();
        }
        self.closed.push_back((call_id, why));
    }

    fn why_closed(&self, call_id: &str) -> DeferredError {
        match self.closed.iter().rev().find(|(id, _)| id == call_id) {
            Some((_, Closed::Completed)) => DeferredError::Completed(call_id.to_owned()),
            Some((_, Closed::SessionEnded)) => DeferredError::SessionEnded(call_id.to_owned()),
            None => DeferredError::Unknown(call_id.to_owned()),
        }
    }
}

/// The engine's open external calls.
#[derive(Debug)]
pub(super) struct DeferredCalls {
    state: Mutex<State>,
    /// Makes ids unlike another engine's (or another process's).
    prefix: u64,
    next: AtomicU64,
}

impl Default for DeferredCalls {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            prefix: RandomState::new().hash_one(std::process::id()),
            next: AtomicU64::new(1),
        }
    }
}

/// A session's own list of its open calls: dropped with the session, it drops them.
#[derive(Debug)]
struct SessionCalls {
    calls: Weak<DeferredCalls>,
    ids: Mutex<Vec<String>>,
}

impl Drop for SessionCalls {
    fn drop(&mut self) {
        let ids = std::mem::take(self.ids.get_mut());
        let Some(calls) = self.calls.upgrade() else {
            return;
        };
        let mut state = calls.state.lock();
        let mut dropped = 0usize;
        for id in ids {
            if state.open.remove(&id).is_some() {
                state.close(id, Closed::SessionEnded);
                dropped += 1;
            }
        }
        if dropped > 0 {
            tracing::info!(
                dropped,
                "a session ended with external tool calls open; they were dropped"
            );
        }
    }
}

impl Engine {
    /// Opens the deferred call `request` for `session`: the host's outcome, under a new id.
    pub(super) fn open_deferred(
        &self,
        session: &Arc<Session>,
        request: Request,
        via: Via,
    ) -> Outcome {
        let calls = &self.deferred;
        let n = calls.next.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("ext_{:016x}_{n}", calls.prefix);
        let recorded = self.records();
        let open = Open {
            session: Arc::downgrade(session),
            group: request.group.clone(),
            tool: request.tool.clone(),
            canonical: request.canonical_name.clone(),
            client: recorded.then(|| super::route::client_of(session)).flatten(),
            recorded,
            started: Instant::now(),
            via,
        };
        let weak = Arc::downgrade(calls);
        if let Some(list) = session.state_or_insert_with(SESSION_KEY, || SessionCalls {
            calls: weak,
            ids: Mutex::new(Vec::new()),
        }) {
            list.ids.lock().push(call_id.clone());
        }
        calls.state.lock().open.insert(call_id.clone(), open);
        tracing::info!(
            group = request.group,
            tool = request.tool,
            call_id,
            "deferred to the host"
        );
        Outcome::Deferred {
            call_id,
            group: request.group,
            tool: request.tool,
            canonical_name: request.canonical_name,
            arguments: request.arguments,
        }
    }

    /// The host ran the external tool of `call_id` and it answered `result`: what the model
    /// receives as the `call_tool` result (under the original call's id). A call completes
    /// once; an unknown, completed or dropped id is an error.
    pub fn complete(&self, call_id: &str, result: CallResult) -> Result<CallResult, DeferredError> {
        let open = self.close_deferred(call_id)?;
        if !result.is_error
            && let Some(session) = open.session.upgrade()
        {
            self.learn_call(&session, &open.canonical);
        }
        self.record_deferred(open, outcome_of(&result));
        Ok(result)
    }

    /// The host could not run the external tool of `call_id`: the model-facing error the model
    /// receives as the `call_tool` result, as for any tool that answered `error`
    /// (`tool_failed` for [`ExecError::Failed`], `unavailable`, ...).
    pub fn fail(&self, call_id: &str, error: ExecError) -> Result<CallResult, DeferredError> {
        let (_, e) = self.fail_deferred(call_id, error)?;
        Ok(CallResult::from_error(&e))
    }

    /// [`complete`](Self::complete) for a call the model made in a vendor format: the reply
    /// in that format (OpenAI's under the model's `call_id`).
    pub fn complete_vendor(
        &self,
        call_id: &str,
        result: CallResult,
    ) -> Result<VendorReply, DeferredError> {
        let (format, vendor_id) = self.vendor_of(call_id)?;
        let result = self.complete(call_id, result)?;
        Ok(VendorReply::answered(
            vendor::call_reply(format, &result, vendor_id.as_deref()),
            outcome_of(&result),
        ))
    }

    /// [`fail`](Self::fail) for a call the model made in a vendor format: the error reply in
    /// that format.
    pub fn fail_vendor(
        &self,
        call_id: &str,
        error: ExecError,
    ) -> Result<VendorReply, DeferredError> {
        let (format, vendor_id) = self.vendor_of(call_id)?;
        let (_, e) = self.fail_deferred(call_id, error)?;
        Ok(VendorReply::failed(
            vendor::error_reply(format, &e, vendor_id.as_deref()),
            &e,
        ))
    }

    /// How many external calls are open (across sessions).
    pub fn open_deferred_calls(&self) -> usize {
        self.deferred.state.lock().open.len()
    }

    fn vendor_of(&self, call_id: &str) -> Result<(Format, Option<String>), DeferredError> {
        let state = self.deferred.state.lock();
        match state.open.get(call_id) {
            None => Err(state.why_closed(call_id)),
            Some(Open {
                via: Via::Vendor(format, id),
                ..
            }) => Ok((*format, id.clone())),
            Some(_) => Err(DeferredError::NotVendor(call_id.to_owned())),
        }
    }

    fn fail_deferred(
        &self,
        call_id: &str,
        error: ExecError,
    ) -> Result<(Outcome, ToolError), DeferredError> {
        let open = self.close_deferred(call_id)?;
        let label = format!("{:?} in group {:?}", open.tool, open.group);
        let e = self.path.exec_error(&label, error);
        let outcome = Outcome::Error(e.code);
        self.record_deferred(open, outcome.clone());
        Ok((outcome, e))
    }

    /// Takes the open call `call_id` out of the open ones.
    fn close_deferred(&self, call_id: &str) -> Result<Open, DeferredError> {
        let open = {
            let mut state = self.deferred.state.lock();
            let Some(open) = state.open.remove(call_id) else {
                return Err(state.why_closed(call_id));
            };
            state.close(call_id.to_owned(), Closed::Completed);
            open
        };
        if let Some(session) = open.session.upgrade()
            && let Some(list) = session.state_or_insert_with(SESSION_KEY, || SessionCalls {
                calls: Weak::new(),
                ids: Mutex::new(Vec::new()),
            })
        {
            list.ids.lock().retain(|id| id != call_id);
        }
        Ok(open)
    }

    /// The completed call's audit record and event.
    fn record_deferred(&self, open: Open, outcome: Outcome) {
        if !open.recorded {
            return;
        }
        let elapsed = open.started.elapsed();
        if let Some(observer) = &self.observer {
            observer.call(&CallEvent::new(
                Some(&open.group),
                &open.tool,
                outcome.clone(),
                elapsed,
            ));
        }
        if let Some(sink) = &self.audit {
            sink.record(&AuditRecord {
                ts: SystemTime::now(),
                client: open.client,
                group: Some(open.group),
                tool: open.tool,
                outcome,
                ms: elapsed.as_secs_f64() * 1000.0,
            });
        }
    }
}

/// How a call the host answered with `result` ended.
fn outcome_of(result: &CallResult) -> Outcome {
    if result.is_error {
        Outcome::ToolError
    } else {
        Outcome::Ok
    }
}
