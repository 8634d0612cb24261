//! An agent loop with a scripted model (no network): it sees only the controls, discovers a
//! tool, describes it, calls it with arguments built from the schema it read, and answers.
//!
//! Run: `cargo run -p toolsearch --example agent_loop`. It asserts its final answer.

#[path = "support/tools.rs"]
mod tools;

use serde_json::{Value, json};

use tools::{arguments_for, engine};

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
                let arguments = arguments_for(&tool["parameters_json_schema"], self.customer_id);
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
    let engine = engine();

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
