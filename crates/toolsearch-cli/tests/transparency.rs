//! What works with an MCP server directly works through the gateway, and nothing crosses it
//! that should not: a stdio upstream's environment holds only what its source gives it, and a
//! client's first search, sent the instant `initialize` returns, finds the tools of upstreams
//! that are still starting (or says why it cannot).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{ArgumentInfo, CallToolRequestParams, CompleteRequestParams, Reference};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

mod common;

use common::{
    HttpGateway, Listening, everything_source, misbehaving_source, python, reference_server_js,
    root, run_python, temp_dir,
};

type Client = RunningService<RoleClient, ()>;

/// A fresh folder for test `name` with `text` as its `gateway.toml`; the config's path.
fn write_config(name: &str, text: &str) -> PathBuf {
    let path = temp_dir(name).join("gateway.toml");
    std::fs::write(&path, text).expect("config");
    path
}

/// `toolsearch serve` over stdio with `env` added to the environment it inherits.
async fn stdio_client(config: &Path, env: &[(&str, &str)]) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
    cmd.arg("serve").arg("--config").arg(config);
    cmd.envs(env.iter().copied());
    ().serve(TokioChildProcess::new(cmd).expect("spawn toolsearch serve"))
        .await
        .expect("initialize")
}

async fn http_client(url: &str, token: &str) -> Client {
    toolsearch_mcp::upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = Some(token.to_owned());
    ().serve(StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        config,
    ))
    .await
    .expect("initialize over HTTP")
}

/// One `tools/call`: the first text block parsed as JSON (or kept as a string), and `isError`.
async fn call(client: &rmcp::Peer<RoleClient>, name: &str, arguments: Value) -> (Value, bool) {
    let Value::Object(arguments) = arguments else {
        unreachable!("arguments are an object")
    };
    let r = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .expect("tools/call answered");
    let text = r
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    (
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        r.is_error.unwrap_or(false),
    )
}

/// The secrets the gateway's environment holds in the environment test: none may reach the
/// upstream, by name or by value.
const SECRETS: [(&str, &str); 3] = [
    ("KB_TOKEN", "kb-secret-4f1c"),
    ("TOOLSEARCH_HTTP_TOKEN", "gateway-secret-9d2e"),
    ("UNRELATED_SECRET", "unrelated-secret-77ab"),
];

fn env_config(name: &str) -> PathBuf {
    let text = format!(
        r#"
[[source]]
name = "everything"
command = "node"
args = [{everything:?}]
inherit_env = ["PASSED_ON"]
env = {{ SET_HERE = "literal", FROM_SECRET = "${{env:FORWARDED}}" }}
group = "everything"
description = "The MCP reference test server"

[[source]]
name = "kb"
url = "http://127.0.0.1:9/mcp"
headers = {{ Authorization = "Bearer ${{env:KB_TOKEN}}" }}
group = "kb"
description = "A knowledge base that is never reachable here"
"#,
        everything = reference_server_js("everything"),
    );
    write_config(name, &text)
}

/// Calls server-everything's `get-env` through the gateway and checks that the child's
/// environment is exactly the default variables the gateway has, its `inherit_env` and its
/// `env`, and that no secret of the gateway's reached it.
async fn check_environment(client: &Client) {
    let (env, is_error) = call(
        client,
        "call_tool",
        json!({"group": "everything", "tool": "get-env", "arguments": {}}),
    )
    .await;
    assert!(!is_error, "{env}");
    let text = env.to_string();
    let got: BTreeSet<&str> = env
        .as_object()
        .unwrap_or_else(|| panic!("get-env answers an object: {env}"))
        .keys()
        .map(String::as_str)
        .collect();
    let mut want: BTreeSet<&str> = toolsearch_mcp::config::DEFAULT_INHERITED_ENV
        .iter()
        .copied()
        .filter(|name| std::env::var_os(name).is_some())
        .collect();
    want.extend(["PASSED_ON", "SET_HERE", "FROM_SECRET"]);
    assert_eq!(got, want, "the upstream's environment");
    assert_eq!(env["PASSED_ON"], "passed on");
    assert_eq!(env["SET_HERE"], "literal");
    assert_eq!(env["FROM_SECRET"], "forwarded on purpose");
    for (name, value) in SECRETS {
        assert!(
            !text.contains(name) && !text.contains(value),
            "{name} reached the upstream: {text}"
        );
    }
}

fn gateway_env() -> Vec<(&'static str, &'static str)> {
    let mut env = SECRETS.to_vec();
    env.extend([
        ("PASSED_ON", "passed on"),
        ("FORWARDED", "forwarded on purpose"),
    ]);
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_upstream_gets_only_the_default_variables_its_inherit_env_and_its_env() {
    let config = env_config("env-stdio");
    let client = stdio_client(&config, &gateway_env()).await;
    check_environment(&client).await;
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_neither_the_gateways_token_nor_another_sources_secret_reaches_an_upstream() {
    let config = env_config("env-http");
    let http = HttpGateway::start_with(&config, &gateway_env());
    let client = http_client(&http.url, "gateway-secret-9d2e").await;
    check_environment(&client).await;
    client.cancel().await.expect("close");
}

/// A config whose one source, the reference server, takes two seconds before it even starts.
fn slow_everything_config(name: &str) -> PathBuf {
    write_config(
        name,
        &format!(
            r#"
[[source]]
name = "everything"
command = "sh"
args = ["-c", "sleep 2; exec node \"$0\"", {everything:?}]
group = "everything"
description = "The MCP reference test server, slow to start"
"#,
            everything = reference_server_js("everything")
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_search_the_instant_initialize_returns_finds_a_slow_upstreams_tools() {
    // The upstream takes two seconds before it even starts its server.
    let config = slow_everything_config("startup-slow");
    let started = Instant::now();
    let client = stdio_client(&config, &[]).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "initialize waited for the upstream: {:?}",
        started.elapsed()
    );
    let (found, is_error) = call(&client, "discover_tools", json!({"query": "echo"})).await;
    assert!(!is_error, "{found}");
    assert_eq!(found["tools"][0]["tool"], "echo", "{found}");
    assert!(found.get("unavailable").is_none(), "{found}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the upstream cannot have answered before it started"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_the_instant_initialize_returns_finds_a_slow_upstreams_prompt() {
    // As a client completing a prompt's argument first: the upstream takes two seconds before
    // it even starts its server, and the completion waits for it rather than answering that
    // the prompt is unknown.
    let config = slow_everything_config("startup-slow-prompts");
    let started = Instant::now();
    let client = stdio_client(&config, &[]).await;
    let completed = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("everything__completable-prompt"),
            ArgumentInfo::new("department", "Eng"),
        ))
        .await
        .expect("completion/complete");
    assert_eq!(completed.completion.values, ["Engineering"]);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the upstream cannot have answered before it started"
    );
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert!(
        prompts
            .iter()
            .any(|p| p.name == "everything__completable-prompt"),
        "{prompts:?}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_connects_is_waited_for_then_named_with_the_reason() {
    let config = write_config(
        "startup-never",
        &format!(
            "[limits]\nstartup_wait_ms = 1500\n\n{}{}",
            misbehaving_source("hung", "hang-init"),
            misbehaving_source("quick", "")
        ),
    );
    let started = Instant::now();
    let client = stdio_client(&config, &[]).await;
    // A search scoped to the quick source does not wait for the hung one.
    let (found, is_error) = call(
        &client,
        "discover_tools",
        json!({"query": "echo", "group": "quick"}),
    )
    .await;
    assert!(!is_error, "{found}");
    assert_eq!(found["tools"][0]["tool"], "echo", "{found}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    // One over every group waits the configured time, then answers with what is there and
    // says which group is missing and why.
    let asked = Instant::now();
    let (found, is_error) = call(&client, "discover_tools", json!({"query": "echo"})).await;
    let waited = asked.elapsed();
    assert!(!is_error, "{found}");
    assert!(
        waited >= Duration::from_millis(1400) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(
        found["unavailable"],
        json!([{"group": "hung", "reason": "hung: still connecting"}]),
        "{found}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_tool_keeps_its_title_annotations_and_execution_behind_the_controls_and_when_direct()
 {
    let config = write_config(
        "fields",
        &format!(
            r#"{grouped}
[[source]]
name = "everything-direct"
command = "node"
args = [{everything:?}]
presentation = "direct"
"#,
            grouped = everything_source(),
            everything = reference_server_js("everything")
        ),
    );
    let client = stdio_client(&config, &[]).await;
    // What the reference server lists for get-env, field for field.
    let annotations = json!({
        "readOnlyHint": true,
        "destructiveHint": false,
        "idempotentHint": true,
        "openWorldHint": false
    });
    let (described, is_error) = call(
        &client,
        "describe_tool",
        json!({"group": "everything", "tool": "get-env"}),
    )
    .await;
    assert!(!is_error, "{described}");
    assert_eq!(
        described["tool"]["title"], "Print Environment Tool",
        "{described}"
    );
    assert_eq!(described["tool"]["annotations"], annotations, "{described}");
    // `execution` too, which rmcp's tool type has no field for (read off the wire).
    let execution = json!({"taskSupport": "forbidden"});
    assert_eq!(described["tool"]["execution"], execution, "{described}");
    let (found, _) = call(
        &client,
        "discover_tools",
        json!({"query": "environment variables", "group": "everything", "detail": "full"}),
    )
    .await;
    let entry = found["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|e| e["tool"] == "get-env"))
        .unwrap_or_else(|| panic!("get-env found: {found}"));
    assert_eq!(entry["annotations"], annotations, "{entry}");
    assert_eq!(entry["execution"], execution, "{entry}");
    // Direct: the tool list carries them as the upstream listed them (once it is connected).
    let started = Instant::now();
    let get_env = loop {
        let tools = client.list_all_tools().await.expect("tools/list");
        if let Some(t) = tools.into_iter().find(|t| t.name == "get-env") {
            break t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "get-env never listed direct"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let listed = serde_json::to_value(&get_env).expect("json");
    assert_eq!(listed["title"], "Print Environment Tool", "{listed}");
    assert_eq!(listed["annotations"], annotations, "{listed}");
    client.cancel().await.expect("close");
}

/// The conformance fixture over stdio as a `[[source]]` in group `name`, with `extra` keys.
fn fixture_source(name: &str, extra: &str) -> String {
    let js = root().join("tests/mcp-servers/conformance-server.mjs");
    format!(
        "[[source]]\nname = {name:?}\ncommand = \"node\"\nargs = [{:?}, \"--stdio\"]\ngroup = {name:?}\ndescription = \"The MCP conformance suite's server\"\n{extra}\n\n",
        js.display().to_string()
    )
}

#[test]
fn an_upstreams_requests_and_notices_reach_the_session_whose_call_caused_them() {
    // The Python SDK's server over HTTP, which speaks 2026-07-28 and asks in input_required.
    let mut asker = std::process::Command::new(python("pyenv"));
    asker
        .arg(root().join("tests/python/upstream_server.py"))
        .arg("--http")
        .stderr(std::process::Stdio::null());
    let asker = Listening::start(asker, "the Python SDK's server");
    let config = write_config(
        "relay",
        &format!(
            "[codeact]\nenabled = true\n\n{}{}[[source]]\nname = \"asker\"\nurl = {:?}\ngroup = \"asker\"\ndescription = \"Asks before it acts\"\n",
            fixture_source("shared", "sampling = false"),
            fixture_source("own", "per_session = true\ncodeact = true"),
            asker.1,
        ),
    );
    let http = HttpGateway::start(&config);
    let out = run_python("pyenv", "relay_client.py", std::slice::from_ref(&http.url));
    assert!(out.contains("30 passed, 0 failed"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_cancel_reaches_the_upstream_call_through_call_tool() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;

    let config = write_config("cancel", &misbehaving_source("waiter", ""));
    let client = stdio_client(&config, &[]).await;
    let envelope = |tool: &str| {
        let Value::Object(arguments) = json!({"group": "waiter", "tool": tool, "arguments": {}})
        else {
            unreachable!("an object")
        };
        CallToolRequestParams::new("call_tool").with_arguments(arguments)
    };
    let (before, _) = call(
        &client,
        "call_tool",
        json!({"group": "waiter", "tool": "cancelled", "arguments": {}}),
    )
    .await;
    assert_eq!(before["count"], 0, "{before}");
    let handle = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(envelope("until_cancelled"))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle
        .cancel(Some("the person changed their mind".into()))
        .await
        .expect("cancelled");
    let started = Instant::now();
    loop {
        let (after, _) = call(
            &client,
            "call_tool",
            json!({"group": "waiter", "tool": "cancelled", "arguments": {}}),
        )
        .await;
        if after["count"] == 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the upstream never heard of the cancel: {after}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.cancel().await.expect("close");
}

#[test]
fn the_typescript_sdks_client_gets_what_an_upstream_sends_over_http_and_stdio() {
    let remote = Listening::conformance_fixture(Path::new("node"));
    let config = write_config(
        "ts-client",
        &format!(
            "{}[[source]]\nname = \"remote\"\nurl = {:?}\npresentation = \"direct\"\n",
            fixture_source("own", "per_session = true"),
            remote.1
        ),
    );
    let http = HttpGateway::start(&config);
    let script = root().join("tests/mcp-servers/ts-client.mjs");
    let stdio = vec![
        "--stdio".to_owned(),
        env!("CARGO_BIN_EXE_toolsearch").to_owned(),
        config.display().to_string(),
    ];
    for args in [vec![http.url.clone()], stdio] {
        let out = std::process::Command::new("node")
            .arg(&script)
            .args(&args)
            .output()
            .expect("run the TypeScript SDK client");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("8 passed, 0 failed"),
            "{args:?}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A client that keeps every `notifications/resources/updated` it gets.
#[derive(Clone, Default)]
struct Updates(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(params.uri);
    }
}

/// The offered URI of server-everything's first resource, once its tools are found.
async fn everything_resource(client: &rmcp::Peer<RoleClient>) -> String {
    let (found, _) = call(client, "discover_tools", json!({"query": "echo"})).await;
    assert!(found["total"].as_u64() > Some(0), "{found}");
    let resources = client.list_all_resources().await.expect("resources/list");
    resources
        .first()
        .map(|r| r.uri.to_string())
        .expect("a resource")
}

/// Asks server-everything to send an update for each subscribed resource (every 5 s).
async fn start_updates(client: &rmcp::Peer<RoleClient>) {
    let (_, is_error) = call(
        client,
        "call_tool",
        json!({"group": "everything", "tool": "toggle-subscriber-updates", "arguments": {}}),
    )
    .await;
    assert!(!is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_resources_updates_reach_the_session_under_the_name_it_used() {
    let config = write_config("subscribe", &everything_source());
    let updates = Updates::default();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
    cmd.arg("serve").arg("--config").arg(&config);
    let client = updates
        .clone()
        .serve(TokioChildProcess::new(cmd).expect("spawn toolsearch serve"))
        .await
        .expect("initialize");
    let offered = everything_resource(&client).await;
    assert!(offered.starts_with("toolsearch://everything/"), "{offered}");
    #[allow(deprecated)] // the handshake-era subscription, which this client speaks
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new(offered.clone()))
        .await
        .expect("subscribed");
    start_updates(&client).await;
    let started = Instant::now();
    loop {
        let got = updates.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if !got.is_empty() {
            assert!(got.iter().all(|u| *u == offered), "{got:?}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no update for {offered}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_clients_listen_stream_gets_the_updates_of_the_resources_it_names() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let config = write_config("listen", &everything_source());
    let http = HttpGateway::start(&config);
    toolsearch_mcp::upstream::install_crypto_provider();
    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(http.url.clone()),
    );
    let client = ()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover");
    let version = client.peer_info().map(|i| i.protocol_version.to_string());
    assert_eq!(version.as_deref(), Some("2026-07-28"));
    let offered = everything_resource(&client).await;
    let unknown = "toolsearch://everything/no/such/resource".to_owned();
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscriptions([offered.clone(), unknown.clone()])
        .build();
    let mut subscription = client
        .peer()
        .listen(filter)
        .await
        .expect("the gateway accepts resource subscriptions");
    let acknowledged = subscription.acknowledged().resource_subscriptions.clone();
    assert!(
        acknowledged.is_some_and(|uris| uris.contains(&offered)),
        "{:?}",
        subscription.acknowledged()
    );
    start_updates(&client).await;
    // The stream carries the tool-list changes it asked for too, and the updates of the other
    // URI it named when the upstream follows that one as well: the offered resource's update
    // is looked for among them.
    let update = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match subscription.next().await.expect("a valid notification") {
                Some(ServerNotification::ResourceUpdatedNotification(update))
                    if update.params.uri == unknown =>
                {
                    continue;
                }
                Some(ServerNotification::ResourceUpdatedNotification(update)) => break update,
                Some(ServerNotification::ToolListChangedNotification(_)) => continue,
                other => panic!("a resource update, not {other:?}"),
            }
        }
    })
    .await
    .expect("an update in time");
    assert_eq!(update.params.uri, offered);
    drop(subscription);
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, in the protocols it speaks
async fn a_log_level_set_before_an_upstream_connects_reaches_it_when_it_connects() {
    // Two upstreams that take 1.5 s to start: one shared, one opened per session.
    let config = write_config(
        "late-level",
        &format!(
            "{}{}per_session = true\n",
            misbehaving_source("shared", "slow-start"),
            misbehaving_source("own", "slow-start"),
        ),
    );
    let client = stdio_client(&config, &[]).await;
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Error,
        ))
        .await
        .expect("logging/setLevel");
    for group in ["shared", "own"] {
        let (level, is_error) = call(
            &client,
            "call_tool",
            json!({"group": group, "tool": "log_level", "arguments": {}}),
        )
        .await;
        assert!(!is_error, "{group}: {level}");
        assert_eq!(
            level, "error",
            "{group}: the upstream was not told the level"
        );
    }
    client.cancel().await.expect("close");
}
