//! `toolsearch serve` as an operator meets it: SIGTERM and SIGINT on both transports leave no
//! process behind, SIGHUP kills neither, malformed JSON-RPC on stdio is answered as the
//! specification says, and `check` refuses what could never work.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{HttpGateway, alive, children_of, misbehaving_source, signal, temp_dir, wait_until};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

fn config(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, toml).expect("config");
    path
}

/// The upstream children of gateway `pid` (once it has started them all).
fn upstream_children(pid: u32, count: usize) -> Vec<u32> {
    let mut found = Vec::new();
    wait_until("the upstreams to start", Duration::from_secs(20), || {
        found = children_of(pid);
        found.len() >= count
    });
    found
}

fn sleep_call() -> CallToolRequestParams {
    let args = json!({"group": "sleepy", "tool": "sleep", "arguments": {"ms": 60000}});
    CallToolRequestParams::new("call_tool").with_arguments(match args {
        Value::Object(m) => m,
        _ => unreachable!(),
    })
}

/// SIGTERM or SIGINT while an upstream is inside a call: the gateway exits and takes every
/// upstream process with it.
async fn stdio_stop(sig: &str) {
    let dir = temp_dir(&format!("sig-{sig}"));
    let config = config(
        &dir,
        &format!(
            "{}{}",
            misbehaving_source("sleepy", ""),
            misbehaving_source("other", "")
        ),
    );
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
    cmd.arg("serve").arg("--config").arg(&config);
    let transport = TokioChildProcess::new(cmd).expect("spawn serve");
    let gateway = transport.id().expect("gateway pid");
    let client = ().serve(transport).await.expect("initialize");
    let upstreams = upstream_children(gateway, 2);
    // Wait until the upstream is ready, then leave a call hanging in it.
    let peer = client.peer().clone();
    let mut ready = false;
    for _ in 0..400 {
        let r = peer
            .call_tool(CallToolRequestParams::new("list_tool_groups"))
            .await
            .expect("answer");
        if !serde_json::to_string(&r)
            .expect("json")
            .contains("unavailable")
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "the upstreams connected");
    let pending = tokio::spawn(async move { peer.call_tool(sleep_call()).await });
    tokio::time::sleep(Duration::from_millis(300)).await;

    // SIGHUP reloads the (unchanged) config: the gateway keeps serving.
    signal(gateway, "HUP");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(alive(gateway), "SIGHUP must not kill the gateway");
    let groups = client
        .call_tool(CallToolRequestParams::new("list_tool_groups"))
        .await
        .expect("still answering after SIGHUP");
    assert!(!groups.is_error.unwrap_or(false));

    signal(gateway, sig);
    wait_until(
        &format!("the gateway to exit on SIG{sig}"),
        Duration::from_secs(15),
        || !alive(gateway),
    );
    for pid in upstreams {
        wait_until(
            "the upstream to be gone with it",
            Duration::from_secs(5),
            || !alive(pid),
        );
    }
    // The call ends with the gateway: an error result that names its upstream when the
    // gateway answered it before exiting (a stdio call lane fails it as the upstream closes),
    // else the client's transport closed under it.
    if let Ok(r) = pending.await.expect("task") {
        let text = serde_json::to_string(&r).expect("json");
        assert!(r.is_error == Some(true), "not an error: {text}");
        assert!(text.contains("sleepy"), "{text}");
    }
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_on_stdio_ends_the_gateway_and_its_upstreams() {
    stdio_stop("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_on_stdio_ends_the_gateway_and_its_upstreams() {
    stdio_stop("INT").await;
}

#[test]
fn http_serving_survives_sighup_and_stops_cleanly_on_sigterm() {
    http_stop("TERM");
}

#[test]
fn http_serving_stops_cleanly_on_sigint() {
    http_stop("INT");
}

fn http_stop(sig: &str) {
    let dir = temp_dir(&format!("sig-http-{sig}"));
    let config = config(&dir, &misbehaving_source("sleepy", ""));
    let mut http = HttpGateway::start(&config);
    let gateway = http.child.id();
    let upstreams = upstream_children(gateway, 1);

    // SIGHUP reloads the (unchanged) config: the gateway keeps serving.
    signal(gateway, "HUP");
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(gateway), "SIGHUP must not kill the gateway");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        toolsearch_mcp::upstream::install_crypto_provider();
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(http.url.clone());
        let client = ().serve(transport).await.expect("still serving after SIGHUP");
        let tools = client.list_all_tools().await.expect("tools/list");
        assert!(!tools.is_empty());
        let _ = client.cancel().await;
    });

    signal(gateway, sig);
    let status = http.child.wait().expect("exit");
    assert!(status.success(), "{status:?}");
    for pid in upstreams {
        wait_until("the upstream to be gone", Duration::from_secs(5), || {
            !alive(pid)
        });
    }
}

/// A `serve` child over stdio with a static catalog, driven line by line.
struct RawStdio {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl RawStdio {
    fn start() -> Self {
        let catalog = common::root().join("examples/catalog.json");
        let dir = temp_dir("raw-stdio");
        let config = config(
            &dir,
            &format!(
                "[[source]]\nname = \"example\"\ncatalog = {:?}\n",
                catalog.display().to_string()
            ),
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("newline");
        stdin.flush().expect("flush");
    }

    fn answer(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("an answer within 10 s");
        serde_json::from_str(&line).expect("a JSON line")
    }
}

impl Drop for RawStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn malformed_json_rpc_on_stdio_is_answered_per_the_specification() {
    let mut gw = RawStdio::start();
    let error = |v: &Value| (v["id"].clone(), v["error"]["code"].as_i64().unwrap_or(0));

    // Before and after initialize alike, garbage gets an answer instead of silence.
    gw.send(b"{this is not json");
    assert_eq!(error(&gw.answer()), (Value::Null, -32700));
    gw.send(b"\xff\xfe\xfd");
    assert_eq!(error(&gw.answer()), (Value::Null, -32700));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    gw.send(deep.as_bytes());
    assert_eq!(error(&gw.answer()), (Value::Null, -32700));
    let huge = vec![b' '; 17 * 1024 * 1024];
    gw.send(&huge);
    assert_eq!(error(&gw.answer()), (Value::Null, -32600));

    gw.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(gw.answer()["id"], 1);
    gw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    // A request whose id is known is answered with that id.
    gw.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":"x"}"#);
    let v = gw.answer();
    assert_eq!(v["id"], 2, "{v}");
    assert!(
        [-32600, -32602].contains(&v["error"]["code"].as_i64().unwrap_or(0)),
        "{v}"
    );
    gw.send(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":123}}"#);
    assert_eq!(error(&gw.answer()), (json!(3), -32602));
    gw.send(br#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#);
    assert_eq!(error(&gw.answer()), (json!(4), -32601));

    // And the session still works.
    gw.send(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#);
    let v = gw.answer();
    assert_eq!(v["id"], 5);
    assert_eq!(v["result"]["tools"][0]["name"], "discover_tools", "{v}");
}

#[test]
fn check_refuses_context_headers_no_session_can_fill_and_unprintable_secrets() {
    let dir = temp_dir("check-context");
    // Gateway A (a static catalog over HTTP) is the upstream that B's sources point at.
    let a_config = config(
        &dir,
        &format!(
            "[[source]]\nname = \"example\"\ncatalog = {:?}\n",
            common::root()
                .join("examples/catalog.json")
                .display()
                .to_string()
        ),
    );
    let a = HttpGateway::start(&a_config);
    let b_dir = dir.join("b");
    std::fs::create_dir_all(&b_dir).expect("dir");
    let b_config = config(
        &b_dir,
        &format!(
            r#"
[[source]]
name = "tenant"
url = "{url}"
context_headers = {{ "X-Tenant-ID" = "identity.tenant_id" }}
group = "tenant"
description = "Needs the caller's tenant"

[[source]]
name = "runs"
url = "{url}"
context_headers = {{ "X-Run-ID" = "run.id" }}
group = "runs"
description = "Needs only the run id"

[[source]]
name = "badsecret"
url = "{url}"
headers = {{ Authorization = "Bearer ${{env:TOOLSEARCH_TEST_SECRET}}" }}
group = "badsecret"
description = "A secret with a newline in it"
"#,
            url = a.url
        ),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["check", "--config"])
        .arg(&b_config)
        .env("TOOLSEARCH_TEST_SECRET", "line1\nline2")
        .output()
        .expect("run check");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing: {out}"))
            .to_owned()
    };
    let tenant = row("tenant");
    assert!(
        tenant.contains("error") && tenant.contains("identity.tenant_id"),
        "{tenant}"
    );
    assert!(row("runs").ends_with("ok"), "{out}");
    let bad = row("badsecret");
    assert!(
        bad.contains("\"Authorization\" is not a valid HTTP header") && !bad.contains("line1"),
        "{bad}"
    );
    assert!(
        !out.contains("line2") && !err.contains("line2"),
        "the secret never shows"
    );
}

#[test]
fn check_tries_each_source_once_waits_a_bounded_time_and_says_why_in_words() {
    let dir = temp_dir("check-once");
    let catalog = common::root().join("examples/catalog.json");
    let cfg = config(
        &dir,
        &format!(
            r#"
[[client]]
name = "ops"
token = "${{env:OPS_TOKEN}}"

[[client]]
name = "nobody"
token = "${{env:NOBODY_TOKEN}}"

[[policy]]
match = {{ client = "ops" }}
deny = ["billing/refund_*"]

[[source]]
name = "examples"
catalog = {catalog:?}

[[source]]
name = "exits"
command = "sh"
args = ["-c", "echo oops >&2; exit 3"]
group = "exits"
description = "Exits at once"

[[source]]
name = "closed"
url = "http://127.0.0.1:1/mcp"
group = "closed"
description = "Nobody listens"

[[source]]
name = "hung"
command = "sleep"
args = ["3600"]
group = "hung"
description = "Never answers"
"#,
            catalog = catalog.display().to_string()
        ),
    );
    let started = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["check", "--wait", "2", "--config"])
        .arg(&cfg)
        .envs([
            ("OPS_TOKEN", "ops-token-1"),
            ("NOBODY_TOKEN", "nobody-token-2"),
        ])
        .env_remove("TOOLSEARCH_LOG")
        .output()
        .expect("run check");
    let took = started.elapsed();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing: {out}"))
            .to_owned()
    };
    assert!(
        row("exits").contains("its stderr ended with: oops"),
        "{out}"
    );
    assert!(row("closed").contains("cannot reach"), "{out}");
    assert!(row("hung").contains("no answer within 2 s"), "{out}");
    // Tried once each: no retry warnings, and nothing raw from the libraries.
    assert!(
        !err.contains("retry") && !err.contains("rmcp") && !err.contains("Error {"),
        "{err}"
    );
    // A rule with only `deny` allows the rest; a client no rule applies to sees nothing.
    let examples = row("examples");
    let total: usize = examples
        .split_whitespace()
        .find_map(|n| n.parse().ok())
        .expect("a tool count");
    let ops: usize = row("ops")
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .expect("a tool count");
    assert!(ops > 0 && ops < total, "{out}");
    assert_eq!(row("nobody").split_whitespace().last(), Some("0"), "{out}");
    assert!(
        err.contains("client \"nobody\" sees no tool") && !err.contains("client \"ops\""),
        "{err}"
    );
    // The hung process is not left behind.
    let mut leftover = String::new();
    wait_until("the hung upstream to end", Duration::from_secs(10), || {
        leftover = String::from_utf8_lossy(
            &Command::new("pgrep")
                .args(["-f", "^sleep 3600$"])
                .output()
                .expect("pgrep")
                .stdout,
        )
        .into_owned();
        leftover.trim().is_empty()
    });

    // A config without sources is refused.
    let empty_dir = dir.join("empty");
    std::fs::create_dir_all(&empty_dir).expect("dir");
    let empty = config(&empty_dir, "");
    let o = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["check", "--config"])
        .arg(&empty)
        .output()
        .expect("run check");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no [[source]]"));
}
