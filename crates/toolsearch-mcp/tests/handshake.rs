//! Toward an HTTP upstream: the newest protocol when its `server/discover` answer says so, and
//! the `initialize` handshake when that answer is of no use (an empty or malformed result), so
//! such an upstream connects instead of being retried for ever on a probe that cannot work.

mod common;

use serde_json::{Value, json};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;

/// A gateway over one HTTP upstream (the `whoami` server) whose discovery answer is
/// `discover` (rmcp's own when `None`): the protocol version it settled on, and what its tool
/// answered through the gateway.
async fn connect_with(discover: Option<Value>) -> (Option<String>, String, bool) {
    let addr = common::serve_rmcp_http_answering_discover(|| common::Whoami, discover).await;
    let toml = format!(
        "[[source]]\nname = \"who\"\nurl = \"http://{addr}/mcp\"\ngroup = \"who\"\ndescription = \"Says who is asking\"\n"
    );
    let config = parse_config("gateway.toml", &toml, std::path::Path::new(".")).expect("config");
    let g = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        Gateway::start(config, Default::default()),
    )
    .await
    .expect("settles")
    .expect("starts");
    let status = g.statuses().remove(0).status;
    assert_eq!(status, Ok(()), "the upstream connected");
    let version = g
        .upstream("who")
        .expect("an upstream")
        .protocol_version()
        .await;
    let r = g
        .engine()
        .handle(
            "call_tool",
            json!({"group": "who", "tool": "whoami", "arguments": {}}),
        )
        .await;
    let text = r.first_text().unwrap_or_default().to_owned();
    g.shutdown().await;
    (version, text, r.is_error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_discover_answer_falls_back_to_initialize() {
    // rmcp's own answer: the newest protocol, no handshake.
    let (newest, text, is_error) = connect_with(None).await;
    assert!(!is_error, "{text}");
    let newest = newest.expect("a version");
    // An empty result, and one of the wrong shape: the initialize handshake, on the newest
    // version that has one, and the tool answers.
    for unusable in [json!({}), json!({"supportedVersions": "all of them"})] {
        let (version, text, is_error) = connect_with(Some(unusable.clone())).await;
        assert!(!is_error, "{unusable}: {text}");
        assert!(text.starts_with("tenant="), "{unusable}: {text}");
        let version = version.expect("a version");
        assert_ne!(version, newest, "{unusable}: it cannot have discovered");
        assert_eq!(
            version,
            rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE.as_str(),
            "{unusable}"
        );
    }
}
