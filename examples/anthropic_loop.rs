//! The agent loop in Anthropic's Messages API shapes, with a scripted model (no network): the
//! request carries `toolsearch`'s Anthropic export (every catalog tool deferred behind
//! `tool_search`); the model searches, a `tool_reference` comes back in the `tool_result`, the
//! API would load that tool's definition, the model calls it by its exported name. Then it
//! searches again and calls `ask_person`, an external tool: the engine's reply carries the
//! deferred request, the host asks the person and completes it, and the `tool_result` is the
//! host's answer. The model answers.
//!
//! Run: `cargo run -p toolsearch --example anthropic_loop`. It asserts its final answer.

#[path = "support/tools.rs"]
mod tools;

use serde_json::{Value, json};
use toolsearch::vendor::Format;

use tools::{arguments_for, completed_by_host, engine};

/// A deterministic stand-in for Claude: it sees the tools the API would show it (those not
/// deferred, and those a `tool_reference` in the conversation has loaded) and answers one
/// assistant message for the request body.
fn scripted_model(request: &Value) -> Value {
    let messages = request["messages"].as_array().expect("messages");
    let last = messages.last().expect("a message");
    let results: Vec<&Value> = last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let Some(result) = results.first() else {
        // The first turn: nothing but tool_search is loaded, so search.
        return json!({"role": "assistant", "content": [
            {"type": "text", "text": "I'll look for a tool that gives a customer's name."},
            {"type": "tool_use", "id": "toolu_1", "name": "tool_search",
             "input": {"query": "customer display name", "limit": 3}}
        ]});
    };
    // The tool results so far (one per user turn after the first).
    let turn = messages.len() / 2;
    let content = result["content"].as_array().expect("tool_result content");
    if let Some(reference) = content.iter().find(|b| b["type"] == "tool_reference") {
        // The API expands the reference into the deferred tool's full definition.
        let name = reference["tool_name"].as_str().expect("tool_name");
        let tool = request["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == name)
            .expect("a reference names an exported tool");
        let input = arguments_for(&tool["input_schema"], 42);
        return json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("toolu_{}", turn + 1), "name": name, "input": input}
        ]});
    }
    let text = content[0]["text"].as_str().expect("the tool's text");
    let answer: Value = serde_json::from_str(text).expect("the tool answers JSON");
    if answer.get("name").is_some() {
        // The customer's name: now ask the person before writing to her.
        return json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("toolu_{}", turn + 1), "name": "tool_search",
             "input": {"query": "ask the person a yes or no question", "limit": 1}}
        ]});
    }
    let name = first_name(messages);
    json!({"role": "assistant", "content": [
        {"type": "text", "text": format!("Customer 42 is {name}; the person said {} to emailing her.",
                                         answer["answer"].as_str().unwrap_or("nothing"))}
    ]})
}

/// The customer's name, from the tool result that gave it.
fn first_name(messages: &[Value]) -> String {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .flat_map(|b| b["content"].as_array().into_iter().flatten())
        .filter_map(|c| c["text"].as_str())
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .find_map(|v| v["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let engine = engine();
    let tools = engine
        .export(Format::Anthropic)
        .expect("an exportable catalog");
    let loaded: Vec<&str> = tools
        .iter()
        .filter(|t| t.get("defer_loading").is_none())
        .map(|t| t["name"].as_str().unwrap_or(""))
        .collect();
    println!(
        "{} tools exported; loaded up front: {}",
        tools.len(),
        loaded.join(", ")
    );

    let mut messages = vec![json!({"role": "user", "content": "Who is customer 42?"})];
    let answer = loop {
        let request =
            json!({"model": "scripted", "max_tokens": 1024, "tools": tools, "messages": messages});
        let reply = scripted_model(&request);
        let uses: Vec<Value> = reply["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .cloned()
            .collect();
        messages.push(reply.clone());
        if uses.is_empty() {
            break reply["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
        }
        let mut results = Vec::new();
        for u in uses {
            let name = u["name"].as_str().expect("name");
            println!("→ {name} {}", u["input"]);
            let out = engine
                .handle_vendor(Format::Anthropic, name, u["input"].clone())
                .await;
            // An external tool: the reply carries the deferred request; the host runs it and
            // the model receives what `complete_vendor` returns.
            let out = completed_by_host(&engine, out);
            assert!(!out.is_error, "{name} failed: {}", out.value);
            println!("← {}", out.value);
            results
                .push(json!({"type": "tool_result", "tool_use_id": u["id"], "content": out.value}));
        }
        messages.push(json!({"role": "user", "content": results}));
    };
    println!("\nanswer: {answer}");
    assert_eq!(
        answer,
        "Customer 42 is Ada Lovelace; the person said yes to emailing her."
    );
    assert_eq!(engine.session().calls(), 4, "two searches and two calls");
    assert_eq!(engine.open_deferred_calls(), 0, "the host completed it");
}
