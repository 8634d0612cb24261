//! Learning from use in the served gateway, in front of the real server-everything: with
//! `[learning] enabled`, a search followed by a successful call of a tool it listed is kept
//! in the file as the query and the tool's canonical name — nothing else — and a gateway
//! started again over that file ranks with it.

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;

async fn start(dir: &std::path::Path) -> Arc<Gateway> {
    let toml = format!(
        "[search]\nmethod = \"bm25\"\n\n[learning]\nenabled = true\nfile = \"learned.jsonl\"\n\n[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n",
        common::everything_js()
    );
    let config = parse_config("learning.toml", &toml, dir).expect("valid");
    Gateway::start(config, Default::default())
        .await
        .expect("starts")
}

async fn found(g: &Gateway, query: &str) -> Vec<String> {
    let r = g
        .engine()
        .handle("discover_tools", json!({"query": query}))
        .await;
    let v: Value = serde_json::from_str(r.first_text().unwrap_or_default()).expect("JSON");
    v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["tool"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_learns_a_search_then_a_call_and_keeps_it() {
    let dir = std::env::temp_dir().join(format!("toolsearch-learning-gw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let g = start(&dir).await;
    assert!(found(&g, "parrot").await.is_empty(), "nothing says parrot");
    let listed = found(&g, "parrot back what I say, echo it").await;
    assert!(listed.contains(&"echo".to_owned()), "{listed:?}");
    let r = g
        .engine()
        .handle(
            "call_tool",
            json!({"group": "everything", "tool": "echo", "arguments": {"message": "a secret argument"}}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(found(&g, "parrot").await, ["echo"]);
    g.shutdown().await;
    let text = std::fs::read_to_string(dir.join("learned.jsonl")).expect("the file");
    assert_eq!(
        text,
        "{\"query\":\"parrot back what I say, echo it\",\"tool\":\"everything__echo\"}\n"
    );
    assert!(!text.contains("secret"), "never arguments");
    let again = start(&dir).await;
    assert_eq!(
        found(&again, "parrot").await,
        ["echo"],
        "kept across restarts"
    );
    again.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
