//! Asking the person before an approval-gated tool runs (`[approval] tools`), through the
//! client of the request: on sessions before protocol 2026-07-28 the gateway sends an MCP
//! elicitation while the call waits ([`Elicit`]); on 2026-07-28, where a server may not send
//! requests of its own, the call answers `input_required` with the same elicitation and runs
//! when the client repeats it with the person's answer ([`Waiting`], [`Answered`]).
//!
//! The question names the tool and shows its arguments; its form has no fields, so the answer
//! is the person's action alone: accept runs the call, decline or cancel denies it.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequiredResult, InputResponses,
};
use rmcp::service::{Peer, RoleServer};
use toolsearch::{ApprovalAnswer, ApprovalRequest, Approver, BoxFuture};

/// The key of the approval question among an `input_required` result's requests.
pub const INPUT_KEY: &str = "approval";

/// How long a person has to answer an elicitation sent during a call.
const ELICIT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an `input_required` question stays answerable.
const WAITING_TTL: Duration = Duration::from_secs(600);

/// Questions waiting for their answer at most (beyond it, calls that need one are denied).
const MAX_WAITING: usize = 10_000;

/// Whether the client of a request can show a form to its person.
pub(crate) fn can_elicit(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The question put to the person: the tool, its group and its arguments.
pub(crate) fn question(request: &ApprovalRequest) -> ElicitRequestParams {
    let what = match &request.group {
        Some(g) => format!("{:?} in group {g:?}", request.tool),
        None => format!("{:?}", request.tool),
    };
    let arguments = serde_json::to_string_pretty(&request.arguments).unwrap_or_default();
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "The agent wants to call {what} with these arguments:\n{arguments}\nAllow this call?"
        ),
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    }
}

/// What the person's answer means for the call.
fn answer_of(result: &ElicitResult) -> ApprovalAnswer {
    match result.action {
        ElicitationAction::Accept => ApprovalAnswer::Accept,
        ElicitationAction::Decline => ApprovalAnswer::Decline("the person declined it".into()),
        ElicitationAction::Cancel => ApprovalAnswer::Decline("the person cancelled it".into()),
        _ => ApprovalAnswer::Decline("the client gave an answer that is not an approval".into()),
    }
}

/// Asks through a live session's client with an MCP elicitation (protocols before
/// 2026-07-28); no answer within five minutes, or a client that fails to ask, denies.
#[derive(Debug)]
pub(crate) struct Elicit {
    peer: Peer<RoleServer>,
}

impl Elicit {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

impl Approver for Elicit {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<ApprovalAnswer> {
        let peer = self.peer.clone();
        Box::pin(async move {
            match peer
                .create_elicitation_with_timeout(question(&request), Some(ELICIT_TIMEOUT))
                .await
            {
                Ok(result) => answer_of(&result),
                Err(e) => {
                    ApprovalAnswer::Decline(format!("the client could not ask the person ({e})"))
                }
            }
        })
    }
}

/// On 2026-07-28: the one call the person answered gets that answer; anything else asked
/// during the request (a program's calls, which cannot wait for another request) is denied,
/// saying why.
#[derive(Debug)]
pub(crate) struct Answered {
    asked: Option<(ApprovalRequest, ApprovalAnswer)>,
    otherwise: String,
}

impl Answered {
    /// The person's answer to `request`.
    pub(crate) fn new(request: ApprovalRequest, result: &ElicitResult) -> Self {
        Self {
            asked: Some((request, answer_of(result))),
            otherwise: NOT_ASKED.into(),
        }
    }

    /// No answer: every question is denied with `why`.
    pub(crate) fn none(why: impl Into<String>) -> Self {
        Self {
            asked: None,
            otherwise: why.into(),
        }
    }
}

/// Why a call reached during a 2026-07-28 request cannot be put to the person.
pub(crate) const NOT_ASKED: &str = "on this protocol (MCP 2026-07-28) the person is asked between requests, which a program cannot wait for; call the tool directly";

impl Approver for Answered {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<ApprovalAnswer> {
        let answer = match &self.asked {
            Some((asked, answer)) if *asked == request => answer.clone(),
            _ => ApprovalAnswer::Decline(self.otherwise.clone()),
        };
        Box::pin(async move { answer })
    }
}

/// One question sent in an `input_required` result, until its answer comes back.
#[derive(Debug)]
struct Question {
    caller: Option<String>,
    request: ApprovalRequest,
    asked: Instant,
}

/// The questions sent in `input_required` results, by the opaque `requestState` handed out
/// with each: the client echoes it with the answer, and it is honoured once, for the caller it
/// was issued to and the very call it was asked about, within ten minutes. The state is kept
/// here, never in what the client holds.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    questions: Mutex<HashMap<String, Question>>,
}

impl Waiting {
    /// The `input_required` result asking about `request` for `caller`, or `None` when too
    /// many questions are waiting already.
    pub(crate) fn ask(
        &self,
        caller: Option<&str>,
        request: ApprovalRequest,
    ) -> Option<InputRequiredResult> {
        let state = fresh_state()?;
        let input = InputRequest::Elicitation(ElicitRequest::new(question(&request)));
        let mut questions = self.questions.lock();
        if questions.len() >= MAX_WAITING {
            questions.retain(|_, q| q.asked.elapsed() < WAITING_TTL);
            if questions.len() >= MAX_WAITING {
                return None;
            }
        }
        questions.insert(
            state.clone(),
            Question {
                caller: caller.map(str::to_owned),
                request,
                asked: Instant::now(),
            },
        );
        Some(InputRequiredResult::new(
            Some(BTreeMap::from([(INPUT_KEY.to_owned(), input)])),
            Some(state),
        ))
    }

    /// The person's answer to `request`, when `state` was issued to `caller` for it, is still
    /// fresh, and `responses` holds a well-formed answer; the question is gone either way.
    pub(crate) fn answer(
        &self,
        state: Option<&str>,
        responses: Option<&InputResponses>,
        caller: Option<&str>,
        request: &ApprovalRequest,
    ) -> Option<ElicitResult> {
        let question = self.questions.lock().remove(state?)?;
        let fits = question.caller.as_deref() == caller
            && question.request == *request
            && question.asked.elapsed() < WAITING_TTL;
        if !fits {
            return None;
        }
        serde_json::from_value(responses?.get(INPUT_KEY)?.clone()).ok()
    }
}

/// 128 random bits, hex: a handle nobody can guess.
pub(crate) fn fresh_state() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    fn refund(amount: i64) -> ApprovalRequest {
        let mut args = Map::new();
        args.insert("amount".into(), json!(amount));
        ApprovalRequest::new(Some("billing".into()), "refund".into(), args)
    }

    fn responses(action: &str) -> InputResponses {
        BTreeMap::from([(
            INPUT_KEY.to_owned(),
            json!({"action": action, "content": {}}),
        )])
    }

    fn state_of(result: &InputRequiredResult) -> String {
        result.request_state.clone().expect("a state")
    }

    #[test]
    fn the_question_names_the_tool_and_shows_the_arguments() {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = question(&refund(42))
        else {
            panic!("a form");
        };
        assert!(
            message.contains("\"refund\" in group \"billing\""),
            "{message}"
        );
        assert!(message.contains("\"amount\": 42"), "{message}");
        assert!(requested_schema.properties.is_empty());
    }

    #[test]
    fn an_answer_counts_once_for_its_caller_and_its_call() {
        let waiting = Waiting::default();
        let asked = waiting.ask(Some("alice"), refund(42)).expect("asked");
        let state = state_of(&asked);
        assert_eq!(state.len(), 32);
        let wire = serde_json::to_value(&asked).expect("json");
        assert_eq!(wire["resultType"], "input_required");
        assert_eq!(
            wire["inputRequests"][INPUT_KEY]["method"],
            "elicitation/create"
        );

        let accept = responses("accept");
        // Another caller, or other arguments, cannot redeem it (and it is spent).
        assert!(
            waiting
                .answer(Some(&state), Some(&accept), Some("bob"), &refund(42))
                .is_none()
        );
        assert!(
            waiting
                .answer(Some(&state), Some(&accept), Some("alice"), &refund(42))
                .is_none()
        );
        let state = state_of(&waiting.ask(Some("alice"), refund(42)).expect("asked"));
        assert!(
            waiting
                .answer(Some(&state), Some(&accept), Some("alice"), &refund(43))
                .is_none()
        );
        let state = state_of(&waiting.ask(Some("alice"), refund(42)).expect("asked"));
        let answer = waiting.answer(Some(&state), Some(&accept), Some("alice"), &refund(42));
        assert_eq!(answer.map(|a| a.action), Some(ElicitationAction::Accept));
        // Spent: the same state again is no answer.
        assert!(
            waiting
                .answer(Some(&state), Some(&accept), Some("alice"), &refund(42))
                .is_none()
        );
        // A state never issued, or no state, is no answer.
        assert!(
            waiting
                .answer(Some("forged"), Some(&accept), Some("alice"), &refund(42))
                .is_none()
        );
        assert!(
            waiting
                .answer(None, Some(&accept), Some("alice"), &refund(42))
                .is_none()
        );
    }

    #[tokio::test]
    async fn answered_gives_the_answer_to_its_call_only() {
        let decline: ElicitResult =
            serde_json::from_value(json!({"action": "decline"})).expect("result");
        let answered = Answered::new(refund(42), &decline);
        assert!(
            matches!(answered.ask(refund(42)).await, ApprovalAnswer::Decline(w) if w.contains("declined"))
        );
        let accept: ElicitResult =
            serde_json::from_value(json!({"action": "accept", "content": {}})).expect("result");
        let answered = Answered::new(refund(42), &accept);
        assert_eq!(answered.ask(refund(42)).await, ApprovalAnswer::Accept);
        assert!(
            matches!(answered.ask(refund(7)).await, ApprovalAnswer::Decline(w) if w == NOT_ASKED)
        );
    }

    #[test]
    fn a_client_without_a_form_cannot_be_asked() {
        let caps = |v: serde_json::Value| serde_json::from_value::<ClientCapabilities>(v).ok();
        assert!(!can_elicit(None));
        assert!(!can_elicit(caps(json!({})).as_ref()));
        assert!(can_elicit(caps(json!({"elicitation": {}})).as_ref()));
        assert!(can_elicit(
            caps(json!({"elicitation": {"form": {}}})).as_ref()
        ));
        assert!(!can_elicit(
            caps(json!({"elicitation": {"url": {}}})).as_ref()
        ));
    }
}
