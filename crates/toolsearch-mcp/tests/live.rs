//! A live catalog: an upstream (the official TypeScript SDK, `tests/mcp-servers/dynamic-server.mjs`)
//! adds a tool and sends `notifications/tools/list_changed`; the next control call sees it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_tool_list_change_reaches_the_catalog() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/dynamic-server.mjs");
    let sdk = script.with_file_name("node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.exists(),
        "run `npm ci` in tests/mcp-servers (.ci/run does)"
    );
    let toml = format!(
        "[[source]]\nname = \"dynamic\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"dyn\"\ndescription = \"Tools that appear at run time\"\n",
        script.display().to_string()
    );
    let g = Gateway::start(
        parse_config("live.toml", &toml, std::path::Path::new(".")).expect("valid"),
        Default::default(),
    )
    .await
    .expect("starts");
    let discover = |q: &'static str| {
        let g = g.clone();
        async move {
            let r = g
                .engine()
                .handle("discover_tools", json!({"query": q}))
                .await;
            serde_json::from_str::<Value>(r.first_text().unwrap_or("{}")).expect("json")
        }
    };
    assert_eq!(discover("sprout").await["total"], 0);

    let r = g
        .engine()
        .handle(
            "call_tool",
            json!({"group": "dyn", "tool": "grow", "arguments": {"name": "sprout"}}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");

    let started = Instant::now();
    while discover("sprout").await["total"] != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the new tool never reached the catalog"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = g
        .engine()
        .handle(
            "call_tool",
            json!({"group": "dyn", "tool": "sprout", "arguments": {}}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.first_text()
            .unwrap_or_default()
            .contains("hello from sprout")
    );
    g.shutdown().await;
}
