//! The agent loop in OpenAI's Responses API shapes, with a scripted model (no network): the
//! request carries `toolsearch`'s OpenAI export (a client-executed `tool_search` and one
//! namespace of deferred functions per group); the model emits a `tool_search_call`, the
//! agent answers it with the engine's `tool_search_output` (the matching namespace and its
//! functions), the model emits a `function_call` for a loaded function, the agent answers it
//! with a `function_call_output`. Then it searches again and calls `ask_person`, an external
//! tool: the engine's reply carries the deferred request, the host asks the person and
//! completes it, and the `function_call_output` is the host's answer. The model answers.
//!
//! Run: `cargo run -p toolsearch --example openai_loop`. It asserts its final answer.

#[path = "support/tools.rs"]
mod tools;

use serde_json::{Value, json};
use toolsearch::vendor::Format;

use tools::{arguments_for, completed_by_host, engine};

/// A deterministic stand-in for the model: it reads the input items so far and returns the
/// response's output items.
fn scripted_model(input: &[Value]) -> Vec<Value> {
    let last = input.last().expect("an item");
    match last["type"].as_str() {
        Some("message") => vec![json!({
            "type": "tool_search_call", "id": "ts_1", "call_id": "call_search",
            "execution": "client", "status": "completed",
            "arguments": {"query": "customer display name", "limit": 3}
        })],
        Some("tool_search_output") => {
            // The loaded namespaces are now callable: take the first function.
            let namespace = &last["tools"][0];
            let function = &namespace["tools"][0];
            let arguments = arguments_for(&function["parameters"], 42);
            let n = input.len();
            vec![json!({
                "type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
                "namespace": namespace["name"], "name": function["name"],
                "arguments": Value::Object(arguments).to_string(), "status": "completed"
            })]
        }
        Some("function_call_output") => {
            let answer: Value =
                serde_json::from_str(last["output"].as_str().expect("output")).expect("JSON");
            if answer.get("name").is_some() {
                // The customer's name: now ask the person before writing to her.
                return vec![json!({
                    "type": "tool_search_call", "id": "ts_2", "call_id": "call_search_2",
                    "execution": "client", "status": "completed",
                    "arguments": {"query": "ask the person a yes or no question", "limit": 1}
                })];
            }
            let name = input
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .filter_map(|i| serde_json::from_str::<Value>(i["output"].as_str()?).ok())
                .find_map(|v| v["name"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "unknown".into());
            vec![json!({
                "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "annotations": [],
                             "text": format!("Customer 42 is {name}; the person said {} to emailing her.",
                                             answer["answer"].as_str().unwrap_or("nothing"))}]
            })]
        }
        other => panic!("unexpected last item {other:?}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let engine = engine();
    let tools = engine
        .export(Format::Openai)
        .expect("an exportable catalog");
    let namespaces: Vec<&str> = tools
        .iter()
        .filter(|t| t["type"] == "namespace")
        .map(|t| t["name"].as_str().unwrap_or(""))
        .collect();
    println!(
        "tools: tool_search and the namespaces {}",
        namespaces.join(", ")
    );

    let mut input =
        vec![json!({"type": "message", "role": "user", "content": "Who is customer 42?"})];
    let answer = 'turns: loop {
        for item in scripted_model(&input) {
            input.push(item.clone());
            let (name, call) = match item["type"].as_str() {
                Some("tool_search_call") => (
                    "tool_search",
                    json!({"call_id": item["call_id"], "arguments": item["arguments"]}),
                ),
                Some("function_call") => (
                    item["name"].as_str().expect("name"),
                    json!({"call_id": item["call_id"], "arguments": item["arguments"]}),
                ),
                _ => break 'turns item["content"][0]["text"].as_str().unwrap_or("").to_owned(),
            };
            println!("→ {name} {call}");
            let out = engine.handle_vendor(Format::Openai, name, call).await;
            // An external tool: the reply carries the deferred request; the host runs it and
            // the model receives what `complete_vendor` returns.
            let out = completed_by_host(&engine, out);
            assert!(!out.is_error, "{name} failed: {}", out.value);
            println!("← {}", out.value);
            input.push(out.value);
        }
    };
    println!("\nanswer: {answer}");
    assert_eq!(
        answer,
        "Customer 42 is Ada Lovelace; the person said yes to emailing her."
    );
    assert_eq!(engine.session().calls(), 4, "two searches and two calls");
    assert_eq!(engine.open_deferred_calls(), 0, "the host completed it");
}
