//! The gateway over streamable HTTP, and HTTP upstreams: gateway A serves the reference
//! server-everything over HTTP with a bearer token; rmcp's HTTP client and a second gateway
//! (B, with A as an HTTP upstream) use it.

mod common;

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;
use toolsearch_mcp::http::{HttpOptions, HttpServer, serve_http};

/// The bearer token: `$HOME`'s value, so that gateway B can read it as `${env:HOME}` (tests may
/// not set variables: unsafe code is forbidden here).
fn token() -> String {
    std::env::var("HOME").expect("HOME is set")
}

async fn gateway(toml: &str) -> Arc<Gateway> {
    let config = parse_config("test.toml", toml, std::path::Path::new(".")).expect("valid config");
    Gateway::start(config, Default::default())
        .await
        .expect("gateway starts")
}

async fn gateway_a() -> (Arc<Gateway>, HttpServer) {
    let g = gateway(&format!(
        "[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n",
        common::everything_js()
    ))
    .await;
    let options =
        HttpOptions::new("127.0.0.1:0".parse().expect("addr")).with_bearer_token(Some(token()));
    let server = serve_http(g.clone(), options).await.expect("bind");
    (g, server)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn client_transport(
    url: String,
    token: Option<&str>,
) -> StreamableHttpClientTransport<reqwest::Client> {
    toolsearch_mcp::upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(t) = token {
        config = config.auth_header(t.to_owned());
    }
    StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_client_uses_the_gateway_and_the_token_is_required() {
    let (g, server) = gateway_a().await;
    let url = format!("http://{}/", server.local_addr);

    let client =
        ().serve(client_transport(url.clone(), Some(&token())))
            .await
            .expect("initialize with the token");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 5);
    let r = client
        .call_tool(CallToolRequestParams::new("call_tool").with_arguments(object(
            json!({"group": "everything", "tool": "echo", "arguments": {"message": "over http"}}),
        )))
        .await
        .expect("tools/call");
    assert!(
        serde_json::to_string(&r)
            .expect("json")
            .contains("over http")
    );
    client.cancel().await.expect("close");

    assert!(
        ().serve(client_transport(url.clone(), None)).await.is_err(),
        "no token must be refused"
    );
    assert!(
        ().serve(client_transport(url.clone(), Some("wrong")))
            .await
            .is_err(),
        "a wrong token must be refused"
    );

    // A browser page from another origin is refused; loopback origins pass the Origin check.
    toolsearch_mcp::upstream::install_crypto_provider();
    let post = |origin: &'static str| {
        reqwest::Client::new()
            .post(url.clone())
            .header("Authorization", format!("Bearer {}", token()))
            .header("Origin", origin)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .send()
    };
    assert_eq!(
        post("https://evil.example").await.expect("answer").status(),
        403
    );
    assert_ne!(
        post("http://localhost:3000")
            .await
            .expect("answer")
            .status(),
        403
    );

    server.shutdown().await;
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_uses_another_over_http_as_an_upstream() {
    let (a, server) = gateway_a().await;
    let b = gateway(&format!(
        "[[source]]\nname = \"remote\"\nurl = \"http://{}/\"\nheaders = {{ Authorization = \"Bearer ${{env:HOME}}\" }}\ngroup = \"remote\"\ndescription = \"Another toolsearch gateway\"\n\n[[source]]\nname = \"locked\"\nurl = \"http://{}/\"\ngroup = \"locked\"\ndescription = \"The same gateway without credentials\"\n",
        server.local_addr, server.local_addr
    ))
    .await;
    let statuses = b.statuses();
    assert_eq!(statuses[0].status, Ok(()), "{statuses:?}");
    assert_eq!(statuses[0].tools, 5, "A's controls are B's remote tools");
    let locked = statuses[1].status.as_ref().expect_err("no token");
    assert!(locked.contains("unauthorized"), "{locked}");

    // B → A → server-everything.
    let r = b
        .engine()
        .handle(
            "call_tool",
            json!({"group": "remote", "tool": "call_tool", "arguments": {"group": "everything", "tool": "echo", "arguments": {"message": "two hops"}}}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        serde_json::to_string(&r)
            .expect("json")
            .contains("two hops")
    );

    // A revokes the token mid-session: B's next call is refused with needs_auth.
    server.set_bearer_token(Some("rotated-elsewhere".into()));
    let r = b
        .engine()
        .handle(
            "call_tool",
            json!({"group": "remote", "tool": "list_tool_groups", "arguments": {}}),
        )
        .await;
    assert!(r.is_error);
    let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
    assert_eq!(v["error"], "needs_auth", "{v}");
    assert_eq!(v["upstream"], "remote");
    assert_eq!(v["hint"], "call the auth tool to re-authorize remote");

    b.shutdown().await;
    server.shutdown().await;
    a.shutdown().await;
}

/// `[limits] max_tool_calls` counts per downstream session. A legacy HTTP session is one run; on
/// protocol 2026-07-28 there are no sessions, so each request is its own run (README).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_limits_count_per_session_and_per_request_when_stateless() {
    let g = gateway(&format!(
        "[limits]\nmax_tool_calls = 3\n\n[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n",
        common::everything_js()
    ))
    .await;
    let server = serve_http(
        g.clone(),
        HttpOptions::new("127.0.0.1:0".parse().expect("addr")),
    )
    .await
    .expect("bind");
    let url = format!("http://{}/", server.local_addr);
    let echo = || {
        CallToolRequestParams::new("call_tool").with_arguments(object(
            json!({"group": "everything", "tool": "echo", "arguments": {"message": "hi"}}),
        ))
    };
    let limited = |r: &rmcp::model::CallToolResult| {
        serde_json::to_string(r)
            .expect("json")
            .contains("usage_limit")
    };
    for modern in [false, true] {
        let lifecycle = if modern {
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            }
        } else {
            rmcp::ClientLifecycleMode::Initialize
        };
        let client = rmcp::ClientServiceExt::serve_with_lifecycle(
            (),
            client_transport(url.clone(), None),
            lifecycle,
        )
        .await
        .expect("connect");
        let first = client.call_tool(echo()).await.expect("call");
        assert!(!limited(&first), "{first:?}");
        let second = client.call_tool(echo()).await.expect("call");
        assert_eq!(
            limited(&second),
            !modern,
            "a proxied call costs 2 of 3: {second:?}"
        );
        client.cancel().await.expect("close");
    }
    server.shutdown().await;
    g.shutdown().await;
}

/// POSTs `body` to the gateway with the headers a streamable HTTP client sends.
async fn raw_post(
    url: &str,
    authorization: &str,
    session: Option<&str>,
    body: Vec<u8>,
) -> reqwest::Response {
    toolsearch_mcp::upstream::install_crypto_provider();
    let mut req = reqwest::Client::new()
        .post(url)
        .header("Authorization", authorization)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("MCP-Protocol-Version", "2025-06-18");
    if let Some(s) = session {
        req = req.header("Mcp-Session-Id", s);
    }
    req.body(body).send().await.expect("an answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_get_json_rpc_errors_and_sessions_end_with_200() {
    let (g, server) = gateway_a().await;
    let url = format!("http://{}/", server.local_addr);
    let auth = format!("Bearer {}", token());

    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for (body, code) in [
        (b"{not json".to_vec(), -32700),
        (b"\xff\xfe".to_vec(), -32700),
        (deep.into_bytes(), -32700),
        (b"[]".to_vec(), -32600),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}"#.to_vec(),
            -32600,
        ),
    ] {
        let shown = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
        let r = raw_post(&url, &auth, None, body).await;
        assert_eq!(r.status(), 400, "{shown}");
        let v: Value = serde_json::from_str(&r.text().await.expect("body")).expect("JSON-RPC");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["error"]["code"], code, "{shown}: {v}");
    }
    let too_large = raw_post(&url, &auth, None, vec![b' '; 5 * 1024 * 1024]).await;
    assert_eq!(too_large.status(), 413);

    // The scheme of `Authorization` is case-insensitive (RFC 9110): `bearer` works.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let r = raw_post(
        &url,
        &format!("bearer {}", token()),
        None,
        init.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.status(), 200);
    let session = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    assert_eq!(
        raw_post(&url, "Basic abc", None, init.to_string().into_bytes())
            .await
            .status(),
        401
    );

    // Ending the session is a plain success.
    let deleted = reqwest::Client::new()
        .delete(&url)
        .header("Authorization", &auth)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await
        .expect("an answer");
    assert_eq!(deleted.status(), 200);

    server.shutdown().await;
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_sessions_are_bounded_and_closed_ones_make_room() {
    let g = gateway(&format!(
        "[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n",
        common::everything_js()
    ))
    .await;
    let options = HttpOptions::new("127.0.0.1:0".parse().expect("addr"))
        .with_bearer_token(Some(token()))
        .with_session_limits(Some(2), None);
    let server = serve_http(g.clone(), options).await.expect("bind");
    let url = format!("http://{}/", server.local_addr);
    let auth = format!("Bearer {}", token());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
    .into_bytes();
    let open = || raw_post(&url, &auth, None, init.clone());
    let first = open().await;
    assert_eq!(first.status(), 200);
    let first_id = first.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_owned();
    assert_eq!(open().await.status(), 200);
    let refused = open().await;
    assert_eq!(refused.status(), 503, "over the limit");
    assert!(refused.headers().contains_key("retry-after"));
    let v: Value = serde_json::from_str(&refused.text().await.expect("body")).expect("JSON-RPC");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("2 open sessions"),
        "{v}"
    );

    // An existing session still works, and ending one makes room.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let r = raw_post(&url, &auth, Some(&first_id), list.into_bytes()).await;
    assert_eq!(r.status(), 200);
    let deleted = reqwest::Client::new()
        .delete(&url)
        .header("Authorization", &auth)
        .header("Mcp-Session-Id", &first_id)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await
        .expect("an answer");
    assert_eq!(deleted.status(), 200);
    let mut reopened = 503;
    for _ in 0..50 {
        reopened = open().await.status().as_u16();
        if reopened == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(reopened, 200);
    server.shutdown().await;
    g.shutdown().await;
}

/// Each legacy HTTP session follows list changes in a task of its own; when the session ends,
/// the task ends too (they used to pile up, ~15 MB per 1,000 closed sessions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_sessions_leave_no_task_behind() {
    let (g, server) = gateway_a().await;
    let url = format!("http://{}/", server.local_addr);
    let before = g.change_listeners();
    let mut clients = Vec::new();
    for _ in 0..5 {
        let client =
            ().serve(client_transport(url.clone(), Some(&token())))
                .await
                .expect("initialize");
        client.list_all_tools().await.expect("tools/list");
        clients.push(client);
    }
    assert_eq!(
        g.change_listeners(),
        before + 5,
        "one listener per open session"
    );
    for c in clients {
        c.cancel().await.expect("close");
    }
    let started = std::time::Instant::now();
    while g.change_listeners() != before {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "listeners left behind: {} (were {before})",
            g.change_listeners()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.shutdown().await;
    g.shutdown().await;
}

/// `GET`/`HEAD`/`POST` of `path` without a token: status, `Allow`, the body if it is JSON.
async fn probe(base: &str, method: reqwest::Method, path: &str) -> (u16, String, Option<Value>) {
    toolsearch_mcp::upstream::install_crypto_provider();
    let r = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .send()
        .await
        .expect("an answer");
    let status = r.status().as_u16();
    let allow = r
        .headers()
        .get("allow")
        .map(|v| v.to_str().expect("ascii").to_owned())
        .unwrap_or_default();
    let text = r.text().await.expect("body");
    let body = serde_json::from_str(&text).ok();
    (status, allow, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_probes_answer_without_a_token_and_name_only_sources_not_ready() {
    let (dir, _, static_source) = common::static_source(
        "health",
        r#"{"groups":[{"name":"crm","description":"Customer records","tools":[{"name":"customer_secret_lookup"}]}]}"#,
    );
    let broken = "[[source]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\ngroup = \"broken\"\ndescription = \"Never starts\"\n";

    // One source that never starts: live, not ready, and only its name is said.
    let g = gateway(&format!("{static_source}\n{broken}")).await;
    g.settled().await;
    let options =
        HttpOptions::new("127.0.0.1:0".parse().expect("addr")).with_bearer_token(Some(token()));
    let server = serve_http(g.clone(), options).await.expect("bind");
    let base = format!("http://{}", server.local_addr);
    let (status, _, body) = probe(&base, reqwest::Method::GET, "/healthz").await;
    assert_eq!((status, body), (200, Some(json!({"status": "ok"}))));
    let (status, _, body) = probe(&base, reqwest::Method::GET, "/readyz").await;
    assert_eq!(status, 503);
    assert_eq!(
        body,
        Some(json!({"status": "not_ready", "sources": ["broken"]}))
    );
    let (status, _, body) = probe(&base, reqwest::Method::HEAD, "/readyz").await;
    assert_eq!((status, body), (503, None));
    let (status, allow, _) = probe(&base, reqwest::Method::POST, "/healthz").await;
    assert_eq!((status, allow.as_str()), (405, "GET, HEAD"));
    // The probes open nothing else: MCP still needs the token.
    let (status, _, _) = probe(&base, reqwest::Method::GET, "/mcp").await;
    assert_eq!(status, 401);
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let r = raw_post(&format!("{base}/"), "Bearer wrong", None, init.to_vec()).await;
    assert_eq!(r.status().as_u16(), 401);
    server.shutdown().await;
    g.shutdown().await;

    // Every source ready.
    let g = gateway(&static_source).await;
    g.settled().await;
    let server = serve_http(
        g.clone(),
        HttpOptions::new("127.0.0.1:0".parse().expect("addr")),
    )
    .await
    .expect("bind");
    let base = format!("http://{}", server.local_addr);
    let (status, _, body) = probe(&base, reqwest::Method::GET, "/readyz").await;
    assert_eq!((status, body), (200, Some(json!({"status": "ready"}))));
    server.shutdown().await;
    g.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
