//! A `tools/call` of one downstream session: the engine's call with the session's approver
//! and relays, a cancelled call's answer, and a call parked for its client's input — asked
//! (its questions), resumed by the answers, or answered once it no longer waits.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use toolsearch::{Approver, CallResult, with_approver};

use super::{Handler, caller_key};
use crate::approval::{self, Answered, Elicit};
use crate::awaiting_input::{self, Resumed};
use crate::convert;
use crate::downstream::{self, Route, Served};

/// What a call cancelled before its answer says (the client cancelled it, or the gateway is
/// stopping and ends every request), naming its target when the arguments do.
fn cancelled_message(name: &str, target: Option<(String, String)>) -> String {
    let target = match target {
        Some((g, t)) => format!(" ({g}/{t})"),
        None => String::new(),
    };
    format!(
        "the call of {name}{target} was cancelled before it was answered (the client cancelled it, or the gateway is stopping); it may or may not have run: inspect its effects before calling it again"
    )
}

/// What an answer to a parked call that no longer waits gets.
const NOT_WAITING: &str = "the call these answers are for is no longer waiting for them (it was answered already, was cancelled, or waited more than ten minutes); nothing more of it ran: inspect its effects, then call the tool again";

impl Handler {
    /// Answers one `tools/call` (inside its span, with the caller's trace context set).
    pub(super) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.session(&context)?;
        let engine = self.gateway.engine();
        let arguments = match request.arguments {
            Some(m) => Value::Object(m),
            None => Value::Null,
        };
        // On 2026-07-28 a server asks its client between requests: what the upstreams ask
        // during a call is answered `input_required`, and the call waits for the next request.
        let between_requests = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let route = || {
            Route::new(
                self.link(&context.peer),
                context.meta.get_progress_token(),
                between_requests
                    .then(|| context.client_capabilities())
                    .flatten(),
            )
        };
        // The client comes back with the answers to what a parked call of its asked.
        if let Some(state) = request
            .request_state
            .as_deref()
            .filter(|s| awaiting_input::is_call_state(s))
        {
            let caller = caller_key(&context);
            let awaiting = self.gateway.awaiting_input();
            let parked = match awaiting.take(state, caller, &request.name, &arguments) {
                Resumed::Call(parked) => parked,
                Resumed::Gone => {
                    return Ok(CallToolResponse::Complete(convert::mcp_result(
                        CallResult::text(NOT_WAITING, true),
                    )));
                }
                Resumed::NotThisCall => {
                    return Err(McpError::invalid_params(
                        "requestState was issued for another call (another caller, tool or arguments)",
                        None,
                    ));
                }
            };
            let served = parked
                .resume(
                    route(),
                    request.input_responses.as_ref(),
                    context.ct.clone(),
                )
                .await;
            return Ok(self.answer_of(served, caller, &request.name, arguments, None));
        }
        // A client's first search, the instant `initialize` returns, finds the tools of the
        // sources still connecting: it waits for them (bounded), never answers empty silently.
        self.gateway.await_startup(&request.name, &arguments).await;
        let approver: Option<Arc<dyn Approver>> = if engine.asks_for_approval() {
            let can_ask = approval::can_elicit(context.client_capabilities().as_ref());
            match (can_ask, between_requests) {
                (false, _) => None,
                (true, false) => Some(Arc::new(Elicit::new(context.peer.clone()))),
                (true, true) => {
                    match engine.approval_request(&session, &request.name, &arguments) {
                        None => Some(Arc::new(Answered::none(approval::NOT_ASKED))),
                        Some(asked) => {
                            let caller = caller_key(&context);
                            let waiting = self.gateway.waiting();
                            match waiting.answer(
                                request.request_state.as_deref(),
                                request.input_responses.as_ref(),
                                caller,
                                &asked,
                            ) {
                                Some(answer) => Some(Arc::new(Answered::new(asked, &answer))),
                                None => match waiting.ask(caller, asked) {
                                    Some(question) => {
                                        return Ok(CallToolResponse::InputRequired(question));
                                    }
                                    None => Some(Arc::new(Answered::none(
                                        "too many approval questions are waiting for an answer; try again later",
                                    ))),
                                },
                            }
                        }
                    }
                }
            }
        } else {
            None
        };
        // What a cancelled call's answer names: read now, the arguments go to the call.
        let part = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let target = part("group").zip(part("tool"));
        // What a parked call is kept under: only a 2026-07-28 call can be parked.
        let asked_with = between_requests.then(|| arguments.clone());
        let call = {
            let engine = engine.clone();
            let name = request.name.clone();
            async move {
                let call = engine.handle_in(&session, &name, arguments);
                match approver {
                    Some(a) => with_approver(a, call).await,
                    None => call.await,
                }
            }
        };
        // The upstreams this call reaches relay their requests to this client from here (or,
        // on 2026-07-28, ask them in this request's answer), send it their progress, and are
        // told when the client cancels.
        let served = downstream::serve(route(), !between_requests, context.ct.clone(), call).await;
        let caller = caller_key(&context);
        Ok(self.answer_of(
            served,
            caller,
            &request.name,
            asked_with.unwrap_or_default(),
            target,
        ))
    }

    /// The answer to a `tools/call` that ended `served`: its result, what a cancelled call
    /// says, or the questions of a call parked for its client's input (kept under `caller`,
    /// `name` and `arguments`).
    fn answer_of(
        &self,
        served: Served<CallResult>,
        caller: Option<&str>,
        name: &str,
        arguments: Value,
        target: Option<(String, String)>,
    ) -> CallToolResponse {
        let result = match served {
            Served::Done(result) => result,
            Served::Cancelled => CallResult::text(cancelled_message(name, target), true),
            Served::Asks(parked) => {
                match self
                    .gateway
                    .awaiting_input()
                    .park(caller, name, arguments, parked)
                {
                    Ok(questions) => return CallToolResponse::InputRequired(questions),
                    Err(why) => CallResult::text(why, true),
                }
            }
        };
        CallToolResponse::Complete(convert::mcp_result(result))
    }
}
