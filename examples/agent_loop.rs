//! An agent loop with a scripted model (no network): it sees only the controls, discovers a
//! tool, describes it, calls it with arguments built from the schema it read, and answers.
//!
//! Run: `cargo run -p toolsearch --example agent_loop`. It asserts its final answer.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::dispatch::Toolset;
use toolsearch::exec::ExecError;
use toolsearch::{Engine, GroupSpec};

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

/// One model turn: a tool call, or the final answer.
enum Turn {
    Call(String, Value),
    Answer(String),
}

/// A deterministic stand-in for an LLM, following the generated instructions: discover,
/// describe the best summary, call it with arguments that satisfy the schema, answer.
struct ScriptedModel {
    task: String,
    customer_id: u64,
}

impl ScriptedModel {
    fn next(&self, transcript: &[(String, Value)]) -> Turn {
        match transcript.len() {
            0 => Turn::Call(
                "discover_tools".into(),
                json!({"query": "customer display name"}),
            ),
            1 => {
                let top = &transcript[0].1["tools"][0];
                Turn::Call(
                    "describe_tool".into(),
                    json!({"group": top["group"], "tool": top["tool"]}),
                )
            }
            2 => {
                let tool = &transcript[1].1["tool"];
                let schema = &tool["parameters_json_schema"];
                let mut arguments = serde_json::Map::new();
                for name in schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if schema["properties"][name]["type"] == "integer" {
                        arguments.insert(name.to_owned(), json!(self.customer_id));
                    }
                }
                Turn::Call(
                    "call_tool".into(),
                    json!({"group": tool["group"], "tool": tool["tool"], "arguments": arguments}),
                )
            }
            _ => {
                let name = transcript[2].1["name"].as_str().unwrap_or("unknown");
                Turn::Answer(format!(
                    "{}: customer {} is {name}.",
                    self.task, self.customer_id
                ))
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let engine = Engine::builder()
        .source(crm().into_group(
            "crm-service",
            GroupSpec::new("crm", "Customer records and account operations"),
        ))
        .source(billing().into_group(
            "billing-service",
            GroupSpec::new("billing", "Invoices, payments and refunds"),
        ))
        .build()
        .expect("a valid catalog");

    let model_sees: Vec<String> = engine.tools().into_iter().map(|t| t.name).collect();
    println!("model sees: {}", model_sees.join(", "));
    println!(
        "instructions:\n{}\n",
        engine.instructions().unwrap_or_default()
    );

    let model = ScriptedModel {
        task: "Who is customer 42?".into(),
        customer_id: 42,
    };
    let mut transcript: Vec<(String, Value)> = Vec::new();
    let answer = loop {
        match model.next(&transcript) {
            Turn::Call(name, arguments) => {
                println!("→ {name} {arguments}");
                let result = engine.handle(&name, arguments).await;
                assert!(!result.is_error, "{name} failed: {result:?}");
                let value = match result.structured_content {
                    Some(v) => v,
                    None => serde_json::from_str(result.first_text().unwrap_or("null"))
                        .unwrap_or(Value::Null),
                };
                println!("← {value}");
                transcript.push((name, value));
            }
            Turn::Answer(text) => break text,
        }
    };
    println!("\nanswer: {answer}");
    assert_eq!(answer, "Who is customer 42?: customer 42 is Ada Lovelace.");
    assert_eq!(
        engine.session().calls(),
        1 + 1 + 2,
        "discover + describe + call_tool (two)"
    );
}
