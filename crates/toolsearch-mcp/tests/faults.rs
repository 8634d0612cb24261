//! Faults against the real server-everything: an upstream killed mid-session is shown as
//! unavailable, fails fast, and is restarted; a source that never starts is listed as
//! unavailable; a hung call times out; shutting down leaves no child process.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;

async fn start() -> Arc<Gateway> {
    let toml = format!(
        "[limits]\ncall_timeout_ms = 1500\n\n[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n\n[[source]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\ngroup = \"broken\"\ndescription = \"Never starts\"\n",
        common::everything_js()
    );
    let config = parse_config("faults.toml", &toml, std::path::Path::new(".")).expect("valid");
    Gateway::start(config, Default::default())
        .await
        .expect("starts despite the broken source")
}

async fn json_of(g: &Gateway, name: &str, args: Value) -> (Value, bool) {
    let r = g.engine().handle(name, args).await;
    let text = r.first_text().unwrap_or_default().to_owned();
    (
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        r.is_error,
    )
}

async fn group_line(g: &Gateway, group: &str) -> Value {
    let (groups, _) = json_of(g, "list_tool_groups", json!({})).await;
    groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|l| l["group"] == group)
        .cloned()
        .expect("group listed")
}

fn echo() -> Value {
    json!({"group": "everything", "tool": "echo", "arguments": {"message": "still here"}})
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

async fn wait_for<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (at most `secs` seconds) until `group`'s echo tool answers without an error again.
async fn echo_answers_again(g: &Gateway, group: &str, what: &str, secs: u64) {
    wait_for(what, Duration::from_secs(secs), || async {
        !json_of(
            g,
            "call_tool",
            json!({"group": group, "tool": "echo", "arguments": {"message": "back"}}),
        )
        .await
        .1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_upstream_is_unavailable_fails_fast_and_comes_back() {
    let g = start().await;
    assert!(!json_of(&g, "call_tool", echo()).await.1);
    assert!(
        group_line(&g, "everything")
            .await
            .get("unavailable")
            .is_none()
    );

    let pid = g
        .upstream("everything")
        .and_then(|u| u.pid())
        .expect("child pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());

    // The group says so, and calls fail fast with a clear error (no hang, nothing ran).
    wait_for(
        "the group to be marked unavailable",
        Duration::from_secs(5),
        || async {
            group_line(&g, "everything")
                .await
                .get("unavailable")
                .is_some()
        },
    )
    .await;
    let line = group_line(&g, "everything").await;
    assert!(
        line["count"].as_u64().unwrap_or(0) > 0,
        "its tools stay discoverable: {line}"
    );
    let started = Instant::now();
    let (err, is_error) = json_of(&g, "call_tool", echo()).await;
    if is_error && err["error"] == "unavailable" {
        assert!(started.elapsed() < Duration::from_secs(1), "failed fast");
        assert!(
            err["message"]
                .as_str()
                .unwrap_or_default()
                .contains("everything"),
            "{err}"
        );
    } // else: the supervisor already restarted it, which the next assertions cover.

    // Restarted with backoff; calls work again.
    wait_for(
        "the upstream to come back",
        Duration::from_secs(10),
        || async { !json_of(&g, "call_tool", echo()).await.1 },
    )
    .await;
    assert!(
        group_line(&g, "everything")
            .await
            .get("unavailable")
            .is_none()
    );
    let new_pid = g
        .upstream("everything")
        .and_then(|u| u.pid())
        .expect("new child");
    assert_ne!(new_pid, pid);

    // A source that never starts is listed, with no tools, as unavailable.
    let broken = group_line(&g, "broken").await;
    assert_eq!(broken["count"], 0);
    assert!(
        broken["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot start"),
        "{broken}"
    );

    g.shutdown().await;
    wait_for("the child to exit", Duration::from_secs(5), || async {
        !alive(new_pid)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_upstream_call_times_out_and_the_gateway_keeps_serving() {
    let g = start().await;
    let started = Instant::now();
    let (err, is_error) = json_of(
        &g,
        "call_tool",
        json!({"group": "everything", "tool": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 1}}),
    )
    .await;
    assert!(is_error);
    assert_eq!(err["error"], "timeout", "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        !json_of(&g, "call_tool", echo()).await.1,
        "the same upstream still answers"
    );
    g.shutdown().await;
}

async fn launch(toml: &str) -> Arc<Gateway> {
    let config = parse_config("faults.toml", toml, std::path::Path::new(".")).expect("valid");
    // An upstream that never answers initialize must not hold the gateway back (its connect
    // timeout is 60 s).
    tokio::time::timeout(
        Duration::from_secs(10),
        Gateway::launch(config, Default::default()),
    )
    .await
    .expect("launch returns while upstreams still connect")
    .expect("launches")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_still_connecting_is_listed_as_such_and_its_calls_answer_unavailable() {
    let toml = format!(
        "{}{}",
        common::misbehaving_source("slow", "hang-init"),
        common::misbehaving_source("quick", "")
    );
    let g = launch(&toml).await;
    // Before anything connected, the controls are already there and say what is going on.
    assert!(
        g.engine()
            .tools()
            .iter()
            .any(|t| t.name == "list_tool_groups")
    );
    let slow = group_line(&g, "slow").await;
    assert!(
        slow["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("still connecting"),
        "{slow}"
    );
    let (err, is_error) = json_of(
        &g,
        "call_tool",
        json!({"group": "slow", "tool": "echo", "arguments": {"message": "x"}}),
    )
    .await;
    assert!(is_error, "{err}");
    // Its tools are not listed yet: the answer says the source is connecting, not "unknown".
    assert_eq!(err["error"], "unavailable", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or_default()
            .contains("still connecting"),
        "{err}"
    );
    // The well-behaved source becomes ready on its own while the other still hangs.
    wait_for("the quick source", Duration::from_secs(15), || async {
        group_line(&g, "quick").await.get("unavailable").is_none()
    })
    .await;
    let (echoed, is_error) = json_of(
        &g,
        "call_tool",
        json!({"group": "quick", "tool": "echo", "arguments": {"message": "ready"}}),
    )
    .await;
    assert!(!is_error, "{echoed}");
    assert!(
        group_line(&g, "slow").await["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("still connecting")
    );
    let statuses = g.statuses();
    assert!(
        statuses[0].connecting && !statuses[1].connecting,
        "{statuses:?}"
    );
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_upstream_is_pinged_after_a_timeout_and_restarted() {
    let toml = format!(
        "[limits]\ncall_timeout_ms = 1000\n\n{}",
        common::misbehaving_source("frozen", "")
    );
    let g = launch(&toml).await;
    g.settled().await;
    let pid = g
        .upstream("frozen")
        .and_then(|u| u.pid())
        .expect("child pid");
    let (err, _) = json_of(
        &g,
        "call_tool",
        json!({"group": "frozen", "tool": "freeze", "arguments": {}}),
    )
    .await;
    assert_eq!(err["error"], "timeout", "{err}");
    // No answer to the health ping (the process is blocked): it is restarted, and calls work
    // again instead of each waiting out the timeout.
    wait_for(
        "the frozen upstream to be replaced",
        Duration::from_secs(20),
        || async { g.upstream("frozen").and_then(|u| u.pid()) != Some(pid) },
    )
    .await;
    echo_answers_again(&g, "frozen", "the restarted upstream", 10).await;
    wait_for(
        "the frozen child to be gone",
        Duration::from_secs(10),
        || async { !alive(pid) },
    )
    .await;
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_call_that_answers_keeps_its_upstream() {
    let toml = format!(
        "[limits]\ncall_timeout_ms = 500\n\n{}",
        common::misbehaving_source("sleepy", "")
    );
    let g = launch(&toml).await;
    g.settled().await;
    let pid = g.upstream("sleepy").and_then(|u| u.pid()).expect("pid");
    let (err, _) = json_of(
        &g,
        "call_tool",
        json!({"group": "sleepy", "tool": "sleep", "arguments": {"ms": 2000}}),
    )
    .await;
    assert_eq!(err["error"], "timeout", "{err}");
    // It answers the health ping, so it is kept.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(g.upstream("sleepy").and_then(|u| u.pid()), Some(pid));
    assert!(
        !json_of(
            &g,
            "call_tool",
            json!({"group": "sleepy", "tool": "echo", "arguments": {"message": "x"}}),
        )
        .await
        .1
    );
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_to_start_say_why_in_plain_words() {
    let toml = format!(
        "{}[[source]]\nname = \"nowhere\"\nurl = \"http://127.0.0.1:1/mcp\"\ngroup = \"nowhere\"\ndescription = \"Nothing listens there\"\n",
        common::misbehaving_source("dies", "die-on-start")
    );
    let config = parse_config("faults.toml", &toml, std::path::Path::new(".")).expect("valid");
    let g = Gateway::start(config, Default::default())
        .await
        .expect("starts");
    let statuses = g.statuses();
    let dies = statuses[0].status.as_ref().expect_err("died");
    assert!(
        dies.contains("ended before it answered initialize")
            && dies.contains("cannot open /srv/db: permission denied"),
        "{dies}"
    );
    let nowhere = statuses[1].status.as_ref().expect_err("refused");
    assert!(
        nowhere.contains("cannot reach http://127.0.0.1:1/mcp")
            && nowhere.to_lowercase().contains("connection refused"),
        "{nowhere}"
    );
    for s in [dies, nowhere] {
        assert!(
            !s.contains("::") && !s.contains('<'),
            "no Rust type names: {s}"
        );
    }
    g.shutdown().await;
}

/// A call in flight when its upstream dies fails at once with an error naming the upstream
/// (not after the call timeout), calls on the other upstream go on, and another call on the
/// same upstream answers again once it is restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_when_its_upstream_dies_fails_at_once() {
    let toml = format!(
        "[limits]\ncall_timeout_ms = 30000\n\n{}{}",
        common::misbehaving_source("mortal", ""),
        common::misbehaving_source("bystander", "")
    );
    let g = launch(&toml).await;
    g.settled().await;
    let pid = g.upstream("mortal").and_then(|u| u.pid()).expect("pid");
    let started = Instant::now();
    let in_flight = tokio::spawn({
        let g = g.clone();
        async move {
            json_of(
                &g,
                "call_tool",
                json!({"group": "mortal", "tool": "sleep", "arguments": {"ms": 20000}}),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!in_flight.is_finished(), "the call is still waiting");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let (err, is_error) = tokio::time::timeout(Duration::from_secs(5), in_flight)
        .await
        .expect("failed at once, not after the call timeout")
        .expect("task");
    assert!(is_error, "{err}");
    assert_eq!(err["error"], "tool_failed", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or_default()
            .contains("mortal"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(6));
    let (answer, is_error) = json_of(
        &g,
        "call_tool",
        json!({"group": "bystander", "tool": "echo", "arguments": {"message": "unharmed"}}),
    )
    .await;
    assert!(!is_error, "{answer}");
    echo_answers_again(&g, "mortal", "the dead upstream to come back", 15).await;
    g.shutdown().await;
}
