//! The examples' catalog: a `crm` and a `billing` group of local tools, where customer 42 is
//! Ada Lovelace, and a `people` group whose `ask_person` the host runs (an external tool: the
//! engine defers it, the host asks the person and completes the call).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolsearch::{CallResult, Engine, ExecError, GroupSpec, Outcome, Toolset, VendorReply};

/// What the scripted models ask the person.
pub const QUESTION: &str = "May I email Ada Lovelace about her invoices?";

#[derive(Deserialize, JsonSchema)]
struct CustomerId {
    /// Numeric customer ID.
    customer_id: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Invoices {
    /// Numeric customer ID.
    customer_id: u64,
    /// Only invoices not yet paid.
    #[serde(default)]
    unpaid_only: bool,
}

fn crm() -> Toolset {
    Toolset::new()
        .tool(
            "customer_name",
            "Look up the display name for a customer ID.",
            |a: CustomerId| async move {
                match a.customer_id {
                    42 => Ok(json!({"name": "Ada Lovelace"})),
                    id => Err(ExecError::from(format!("no customer {id}"))),
                }
            },
        )
        .tool(
            "update_contact_email",
            "Change the contact email address of a customer account.",
            |a: CustomerId| async move { Ok(json!({"updated": a.customer_id})) },
        )
}

fn billing() -> Toolset {
    Toolset::new().tool(
        "list_invoices",
        "List a customer's invoices with due dates and balances.",
        |a: Invoices| async move {
            Ok(json!({"customer_id": a.customer_id, "unpaid_only": a.unpaid_only, "invoices": []}))
        },
    )
}

fn people() -> Toolset {
    let schema = json!({
        "type": "object",
        "properties": {"question": {"type": "string", "description": "One yes-or-no question"}},
        "required": ["question"]
    });
    Toolset::new().external(
        "ask_person",
        "Ask the person running the agent a yes-or-no question and wait for the answer.",
        schema.as_object().cloned().unwrap_or_default(),
    )
}

/// The host's side of an external tool the model called (`canonical_name` with validated
/// `arguments`): here the person, scripted, says yes.
pub fn host_runs(canonical_name: &str, arguments: &Map<String, Value>) -> CallResult {
    assert_eq!(
        canonical_name, "people__ask_person",
        "the one external tool"
    );
    let question = arguments["question"].as_str().unwrap_or_default();
    println!("  (the host asks the person: {question:?}; the person says yes)");
    CallResult::structured(json!({"question": question, "answer": "yes"}))
}

/// A vendor-format reply as the model receives it: when the call reached an external tool,
/// the host runs it and the reply is what `complete_vendor` returns (OpenAI's under the
/// model's `call_id`).
#[allow(
    dead_code,
    reason = "agent_loop includes this file and does not use it"
)]
pub fn completed_by_host(engine: &Engine, reply: VendorReply) -> VendorReply {
    let Outcome::Deferred {
        call_id,
        canonical_name,
        arguments,
        ..
    } = &reply.outcome
    else {
        return reply;
    };
    println!("⇢ deferred to the host: {}", reply.value);
    let done = host_runs(canonical_name, arguments);
    engine.complete_vendor(call_id, done).expect("an open call")
}

/// The engine over the three groups, with the default settings.
pub fn engine() -> Engine {
    Engine::builder()
        .source(crm().into_group(
            "crm-service",
            GroupSpec::new("crm", "Customer records and account operations"),
        ))
        .source(billing().into_group(
            "billing-service",
            GroupSpec::new("billing", "Invoices, payments and refunds"),
        ))
        .source(people().into_group(
            "host",
            GroupSpec::new("people", "Questions for the person running the agent"),
        ))
        .build()
        .expect("a valid catalog")
}

/// What a scripted model puts in a call: every required integer property of `schema` set to
/// `id` (the customer the task is about), a required `question` set to [`QUESTION`].
pub fn arguments_for(
    schema: &serde_json::Value,
    id: u64,
) -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    for name in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
    {
        if schema["properties"][name]["type"] == "integer" {
            arguments.insert(name.to_owned(), json!(id));
        } else if name == "question" {
            arguments.insert(name.to_owned(), json!(QUESTION));
        }
    }
    arguments
}
