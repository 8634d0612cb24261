//! Calls waiting for their client's input (protocol 2026-07-28): an upstream asked something
//! during a client's `tools/call` (an elicitation, a sampling request, its roots), the client's
//! request was answered `input_required` with those questions, and the call goes on in the
//! background until the client repeats the request with the answers and the `requestState` it
//! was given.
//!
//! A state is honoured once, for the caller it was issued to and the very call (tool and
//! arguments) it was issued for, within ten minutes; a call nobody resumes in that time is
//! ended, which cancels what it waited for upstream.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::InputRequiredResult;
use serde_json::Value;
use toolsearch::CallResult;

use crate::approval::fresh_state;
use crate::downstream::Parked;

/// How long a parked call waits for its client to come back.
const TTL: Duration = Duration::from_secs(600);

/// Calls parked at most at once (beyond it, one more is ended, saying why).
const MAX_PARKED: usize = 1_000;

/// What every state this registry hands out starts with, so that an answer to a call no longer
/// waiting is told apart from anything else a client may echo.
const STATE_PREFIX: &str = "call-";

/// One parked call, and the request it was parked for.
#[derive(Debug)]
struct Entry {
    caller: Option<String>,
    name: String,
    arguments: Value,
    parked: Parked<CallResult>,
}

/// The parked calls, by the `requestState` each was handed out with.
#[derive(Debug, Default)]
pub(crate) struct AwaitingInput {
    calls: Mutex<HashMap<String, Entry>>,
}

/// What a request echoing a parked call's state gets.
#[derive(Debug)]
pub(crate) enum Resumed {
    /// The call, to go on with.
    Call(Parked<CallResult>),
    /// No call waits under that state (answered already, ended, or expired).
    Gone,
    /// The state belongs to another caller's call, or to a call of other arguments.
    NotThisCall,
}

/// Whether `state` is one this registry hands out (live or not).
pub(crate) fn is_call_state(state: &str) -> bool {
    state.starts_with(STATE_PREFIX)
}

impl AwaitingInput {
    /// Parks `parked` (the call `caller` made of `name` with `arguments`) and gives the
    /// `input_required` result asking its questions; `Err` (the call is ended) when too many
    /// calls wait already.
    pub(crate) fn park(
        self: &Arc<Self>,
        caller: Option<&str>,
        name: &str,
        arguments: Value,
        parked: Parked<CallResult>,
    ) -> Result<InputRequiredResult, String> {
        let Some(state) = fresh_state().map(|s| format!("{STATE_PREFIX}{s}")) else {
            return Err("the gateway could not draw a random request state".into());
        };
        let questions = parked.questions();
        {
            let mut calls = self.calls.lock();
            if calls.len() >= MAX_PARKED {
                return Err(format!(
                    "{MAX_PARKED} calls are waiting for their clients' answers already; the call was ended, try again later"
                ));
            }
            calls.insert(
                state.clone(),
                Entry {
                    caller: caller.map(str::to_owned),
                    name: name.to_owned(),
                    arguments,
                    parked,
                },
            );
        }
        let registry = Arc::downgrade(self);
        let expiring = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(TTL).await;
            expire(&registry, &expiring);
        });
        Ok(InputRequiredResult::new(Some(questions), Some(state)))
    }

    /// The parked call `state` names, when it is `caller`'s call of `name` with `arguments`.
    pub(crate) fn take(
        &self,
        state: &str,
        caller: Option<&str>,
        name: &str,
        arguments: &Value,
    ) -> Resumed {
        let mut calls = self.calls.lock();
        let Some(entry) = calls.get(state) else {
            return Resumed::Gone;
        };
        if entry.caller.as_deref() != caller || entry.name != name || entry.arguments != *arguments
        {
            return Resumed::NotThisCall;
        }
        match calls.remove(state) {
            Some(entry) => Resumed::Call(entry.parked),
            None => Resumed::Gone,
        }
    }

    /// How many calls are parked.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.calls.lock().len()
    }
}

/// Ends the call parked under `state`, if it still waits (dropped outside the lock).
fn expire(registry: &Weak<AwaitingInput>, state: &str) {
    let Some(registry) = registry.upgrade() else {
        return;
    };
    let entry = registry.calls.lock().remove(state);
    drop(entry);
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::downstream::tests::{Dropped, asking, link, parked_of};
    use crate::downstream::{Route, serve};

    /// A parked call (it asked its client something), and the flag set when it ends.
    async fn parked_call(route: &Route) -> (Parked<CallResult>, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let ask = asking("who?", Arc::new(AtomicBool::new(false)));
        let flag = dropped.clone();
        let call = async move {
            let _flag = Dropped(flag);
            let answer = ask.await;
            CallResult::text(format!("{}", answer.is_ok()), false)
        };
        let served = serve(route.clone(), false, CancellationToken::new(), call).await;
        (parked_of(served), dropped)
    }

    #[tokio::test]
    async fn a_state_resumes_its_callers_very_call_once() {
        let (link, _running) = link();
        let route = Route::new(link, None, None);
        let awaiting = Arc::new(AwaitingInput::default());
        let (parked, _) = parked_call(&route).await;
        let arguments = json!({"group": "g", "tool": "t"});
        let asked = awaiting
            .park(Some("alice"), "call_tool", arguments.clone(), parked)
            .expect("parked");
        let state = asked.request_state.clone().expect("a state");
        assert!(is_call_state(&state) && state.len() == STATE_PREFIX.len() + 32);
        assert!(
            asked
                .input_requests
                .is_some_and(|q| q.contains_key("upstream-1"))
        );

        let other = json!({"group": "g", "tool": "u"});
        for (caller, name, args) in [
            (Some("bob"), "call_tool", &arguments),
            (None, "call_tool", &arguments),
            (Some("alice"), "invoke_tool", &arguments),
            (Some("alice"), "call_tool", &other),
        ] {
            assert!(
                matches!(
                    awaiting.take(&state, caller, name, args),
                    Resumed::NotThisCall
                ),
                "{caller:?} {name} {args}"
            );
        }
        // Still there for its own caller, once.
        assert_eq!(awaiting.len(), 1);
        assert!(matches!(
            awaiting.take(&state, Some("alice"), "call_tool", &arguments),
            Resumed::Call(_)
        ));
        assert!(matches!(
            awaiting.take(&state, Some("alice"), "call_tool", &arguments),
            Resumed::Gone
        ));
        assert!(matches!(
            awaiting.take("call-forged", Some("alice"), "call_tool", &arguments),
            Resumed::Gone
        ));
        assert!(!is_call_state("0123abcd"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_nobody_resumes_ends_after_ten_minutes() {
        let (link, _running) = link();
        let route = Route::new(link, None, None);
        let awaiting = Arc::new(AwaitingInput::default());
        let (parked, dropped) = parked_call(&route).await;
        let asked = awaiting
            .park(None, "call_tool", Value::Null, parked)
            .expect("parked");
        let state = asked.request_state.expect("a state");
        tokio::time::sleep(TTL - Duration::from_secs(1)).await;
        assert_eq!(awaiting.len(), 1);
        assert!(!dropped.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(awaiting.len(), 0);
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(dropped.load(Ordering::SeqCst), "the call ended");
        assert!(matches!(
            awaiting.take(&state, None, "call_tool", &Value::Null),
            Resumed::Gone
        ));
    }
}
