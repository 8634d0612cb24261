//! An agent loop with a scripted model (no network): it sees only the controls, discovers a
//! tool, describes it, calls it with arguments built from the schema it read; then it finds
//! `ask_person`, an external tool: the engine validates the call and hands it to the host,
//! which asks the person and completes it; the model reads the answer, and answers.
//!
//! Run: `cargo run -p toolsearch --example agent_loop`. It asserts its final answer.

#[path = "support/tools.rs"]
mod tools;

use serde_json::{Value, json};
use toolsearch::Outcome;

use tools::{arguments_for, engine, host_runs};

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
    /// Discover with `query`, describe the best hit, call it (turns `first`.. `first + 2`).
    fn find_and_call(transcript: &[(String, Value)], first: usize, query: &str, id: u64) -> Turn {
        match transcript.len() - first {
            0 => Turn::Call("discover_tools".into(), json!({"query": query})),
            1 => {
                let top = &transcript[first].1["tools"][0];
                Turn::Call(
                    "describe_tool".into(),
                    json!({"group": top["group"], "tool": top["tool"]}),
                )
            }
            _ => {
                let tool = &transcript[first + 1].1["tool"];
                let arguments = arguments_for(&tool["parameters_json_schema"], id);
                Turn::Call(
                    "call_tool".into(),
                    json!({"group": tool["group"], "tool": tool["tool"], "arguments": arguments}),
                )
            }
        }
    }

    fn next(&self, transcript: &[(String, Value)]) -> Turn {
        match transcript.len() {
            0..=2 => Self::find_and_call(transcript, 0, "customer display name", self.customer_id),
            3..=5 => Self::find_and_call(
                transcript,
                3,
                "ask the person a yes or no question",
                self.customer_id,
            ),
            _ => {
                let name = transcript[2].1["name"].as_str().unwrap_or("unknown");
                let answer = transcript[5].1["answer"].as_str().unwrap_or("no answer");
                Turn::Answer(format!(
                    "{}: customer {} is {name}; asked whether to email her, the person said {answer}.",
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
                let reply = engine.reply(&name, arguments).await;
                // An external tool's call comes back to the host: run it, then give the model
                // what `complete` returns, as this call's result.
                let result = match &reply.outcome {
                    Outcome::Deferred {
                        call_id,
                        canonical_name,
                        arguments,
                        ..
                    } => {
                        println!(
                            "⇢ deferred to the host: {canonical_name} {}",
                            Value::Object(arguments.clone())
                        );
                        let done = host_runs(canonical_name, arguments);
                        engine.complete(call_id, done).expect("an open call")
                    }
                    _ => reply.result,
                };
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
    assert_eq!(
        answer,
        "Who is customer 42?: customer 42 is Ada Lovelace; asked whether to email her, the person said yes."
    );
    assert_eq!(
        engine.session().calls(),
        2 * (1 + 1 + 2),
        "twice: discover + describe + call_tool (two)"
    );
    assert_eq!(engine.open_deferred_calls(), 0, "the host completed it");
}
