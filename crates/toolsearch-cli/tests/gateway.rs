//! `toolsearch serve` end to end: rmcp's client drives the gateway over stdio, and the gateway
//! aggregates the official MCP reference servers (`tests/mcp-servers`, installed by `.ci/run`).

use std::path::{Path, PathBuf};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};

mod common;

use common::{HttpGateway, reference_server_js, root, run_python, temp_dir};

fn write_config(dir: &Path) -> PathBuf {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).expect("dir");
    std::fs::write(files.join("notes.txt"), "remember the milk\n").expect("file");
    let config = format!(
        r#"
[[source]]
name = "everything"
command = "node"
args = [{everything:?}]
group = "everything"
description = "The MCP reference test server: echo, sums, samples"

[[source]]
name = "fs"
command = "node"
args = [{fs:?}, {files:?}]
group = "files"
description = "Read and write project files"

[[source]]
name = "memory"
command = "node"
args = [{memory:?}]
env = {{ MEMORY_FILE_PATH = {mem:?} }}
group = "memory"
description = "A knowledge graph of entities and relations"
"#,
        everything = reference_server_js("everything"),
        fs = reference_server_js("filesystem"),
        memory = reference_server_js("memory"),
        files = files.display().to_string(),
        mem = dir.join("memory.jsonl").display().to_string(),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).expect("config");
    path
}

async fn connect(config: &Path) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
    cmd.arg("serve").arg("--config").arg(config);
    ().serve(TokioChildProcess::new(cmd).expect("spawn toolsearch serve"))
        .await
        .expect("initialize")
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
) -> (Value, bool) {
    let r = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments)))
        .await
        .expect("tools/call answered");
    let v = serde_json::to_value(&r).expect("json");
    let text = v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let parsed = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (
        if v.get("structuredContent").is_some() {
            v
        } else {
            parsed
        },
        r.is_error.unwrap_or(false),
    )
}

/// Calls `name` until `ready` holds for its answer (upstreams connect in the background after
/// the gateway answers `initialize`); fails after 30 s.
async fn until(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let started = std::time::Instant::now();
    loop {
        let (v, _) = call(client, name, arguments.clone()).await;
        if ready(&v) {
            return v;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "sources never became ready: {v}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Waits until `list_tool_groups` lists no group as unavailable (still connecting).
async fn until_connected(client: &RunningService<RoleClient, ()>) -> Value {
    until(client, "list_tool_groups", json!({}), |v| {
        v["groups"]
            .as_array()
            .is_some_and(|g| g.iter().all(|g| g.get("unavailable").is_none()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_client_discovers_describes_and_calls_reference_servers_through_the_gateway() {
    let dir = temp_dir("e2e");
    let client = connect(&write_config(&dir)).await;

    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("toolsearch")
    );
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or_default()
            .contains("discover_tools")
    );

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "discover_tools",
            "describe_tool",
            "call_tool",
            "list_tools",
            "list_tool_groups"
        ],
        "only the controls are listed"
    );

    let groups = until_connected(&client).await;
    let groups: Vec<(String, u64)> = groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["group"].as_str().expect("g").to_owned(),
                g["count"].as_u64().expect("count"),
            )
        })
        .collect();
    assert_eq!(
        groups.iter().map(|g| g.0.as_str()).collect::<Vec<_>>(),
        ["everything", "files", "memory"]
    );
    assert!(groups.iter().all(|g| g.1 > 0), "{groups:?}");

    // Discover → describe → call, on server-everything's echo.
    let (found, is_error) = call(
        &client,
        "discover_tools",
        json!({"query": "echo", "group": "everything"}),
    )
    .await;
    assert!(!is_error, "{found}");
    assert_eq!(found["tools"][0]["tool"], "echo", "{found}");
    let (described, _) = call(
        &client,
        "describe_tool",
        json!({"group": "everything", "tool": "echo"}),
    )
    .await;
    assert!(
        described["tool"]["parameters_json_schema"]["properties"]["message"].is_object(),
        "{described}"
    );
    let (echoed, is_error) = call(&client, "call_tool", json!({"group": "everything", "tool": "echo", "arguments": {"message": "hi from toolsearch"}})).await;
    assert!(!is_error);
    assert!(
        echoed.to_string().contains("hi from toolsearch"),
        "{echoed}"
    );

    // Invalid arguments are refused by the gateway before the upstream sees them.
    let (refused, is_error) = call(
        &client,
        "call_tool",
        json!({"group": "everything", "tool": "echo", "arguments": {"message": 5}}),
    )
    .await;
    assert!(is_error);
    assert_eq!(refused["error"], "invalid_arguments", "{refused}");
    assert_eq!(refused["path"], "/message");

    // The filesystem server reads a real file; the memory server keeps state across calls.
    let (read, is_error) = call(&client, "call_tool", json!({"group": "files", "tool": "read_text_file", "arguments": {"path": dir.join("files/notes.txt").display().to_string()}})).await;
    assert!(!is_error, "{read}");
    assert!(read.to_string().contains("remember the milk"), "{read}");
    let (_, is_error) = call(&client, "call_tool", json!({"group": "memory", "tool": "create_entities", "arguments": {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}})).await;
    assert!(!is_error);
    let (graph, _) = call(
        &client,
        "call_tool",
        json!({"group": "memory", "tool": "read_graph", "arguments": {}}),
    )
    .await;
    assert!(
        graph.to_string().contains("wrote the first program"),
        "{graph}"
    );

    // Unknown names are tool errors, not protocol failures.
    let (unknown, is_error) = call(
        &client,
        "call_tool",
        json!({"group": "nope", "tool": "x", "arguments": {}}),
    )
    .await;
    assert!(is_error);
    assert_eq!(unknown["error"], "unknown_group");

    client.cancel().await.expect("close");
}

#[test]
fn check_reports_every_source() {
    let dir = temp_dir("check");
    let config = write_config(&dir);
    let mut text = std::fs::read_to_string(&config).expect("read");
    text.push_str("\n[[source]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\ngroup = \"broken\"\ndescription = \"Never starts\"\n");
    std::fs::write(&config, text).expect("write");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .expect("run check");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("source") && lines[0].contains("status"),
        "{out}"
    );
    for (name, group) in [
        ("everything", "everything"),
        ("fs", "files"),
        ("memory", "memory"),
    ] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing: {out}"));
        assert!(line.contains(group) && line.ends_with("ok"), "{line}");
    }
    let broken = lines
        .iter()
        .find(|l| l.starts_with("broken"))
        .expect("broken row");
    assert!(broken.contains("error: cannot start"), "{broken}");
}

/// Runs `tests/python/gateway_client.py MODE ...` and returns its stdout; fails on a failed check.
fn run_python_client(mode: &str, config: &Path, notes: &Path, url: Option<&str>) -> String {
    run_python_client_in("pyenv", mode, config, notes, url)
}

fn run_python_client_in(
    venv: &str,
    mode: &str,
    config: &Path,
    notes: &Path,
    url: Option<&str>,
) -> String {
    let mut args = vec![
        mode.to_owned(),
        env!("CARGO_BIN_EXE_toolsearch").to_owned(),
        config.display().to_string(),
        notes.display().to_string(),
    ];
    args.extend(url.map(str::to_owned));
    run_python(venv, "gateway_client.py", &args)
}

/// The official Python SDK (from PyPI, installed by `.ci/run` into `target/pyenv`) drives the
/// gateway with both of its clients: `ClientSession` (initialize handshake) over stdio, and the
/// default `Client`, which negotiates protocol 2026-07-28, over stdio and over HTTP; the SDK's
/// last 1.x release (`target/pyenv-1x`) drives it with its `ClientSession`.
#[test]
fn the_python_sdk_clients_work_with_the_gateway() {
    let dir = temp_dir("python");
    let config = write_config(&dir);
    let notes = dir.join("files/notes.txt");
    let out = run_python_client("session-stdio", &config, &notes, None);
    assert!(out.contains("7 passed, 0 failed"), "{out}");
    let out = run_python_client("client-stdio", &config, &notes, None);
    assert!(out.contains("13 passed, 0 failed"), "{out}");
    let http = HttpGateway::start(&config);
    let out = run_python_client("client-http", &config, &notes, Some(&http.url));
    assert!(out.contains("13 passed, 0 failed"), "{out}");
    // Clients still on the SDK's last 1.x release (the initialize handshake only).
    let out = run_python_client_in("pyenv-1x", "session-stdio", &config, &notes, None);
    assert!(out.contains("7 passed, 0 failed"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capabilities_surface_serves_search_invoke_and_skills_over_mcp() {
    let dir = temp_dir("caps");
    let config = write_config(&dir);
    let skill = dir.join("skills/notes-keeper");
    std::fs::create_dir_all(&skill).expect("dir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes-keeper\ndescription: How to keep notes in text files\n---\nWrite one note per line.\n",
    )
    .expect("skill");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        format!("surface = \"capabilities\"\nskills = [\"skills\"]\n{text}"),
    )
    .expect("config");
    let client = connect(&config).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["search_capabilities", "invoke_tool", "get_skill_content"]
    );
    let desc = tools[0].description.as_deref().unwrap_or_default();
    for server in ["everything", "files", "memory"] {
        assert!(desc.contains(server), "{desc}");
    }

    // Upstreams connect after `initialize` is answered: wait until all three are searched.
    let query = json!({"query": "read the contents of a text file", "topKTools": 3});
    until(
        &client,
        "search_capabilities",
        json!({"query": "echo add read entity", "topKTools": 50}),
        |v| {
            v["tools"]["groups"]
                .as_array()
                .is_some_and(|g| g.len() == 3)
        },
    )
    .await;
    let (found, is_error) = call(&client, "search_capabilities", query).await;
    assert!(!is_error, "{found}");
    let first = &found["tools"]["groups"][0];
    assert_eq!(first["server"]["name"], "files", "{found}");
    assert_eq!(found["skills"][0]["skillId"], "notes-keeper", "{found}");

    // invoke_tool on the filesystem server, args given flat (no "args" key).
    let notes = dir.join("files/notes.txt").display().to_string();
    let (read, is_error) = call(
        &client,
        "invoke_tool",
        json!({"toolId": "files__read_text_file", "path": notes}),
    )
    .await;
    assert!(!is_error, "{read}");
    assert!(read.to_string().contains("remember the milk"), "{read}");
    let (echo, is_error) = call(
        &client,
        "invoke_tool",
        json!({"toolId": "everything__echo", "args": {"message": "hi"}}),
    )
    .await;
    assert!(!is_error && echo.to_string().contains("hi"), "{echo}");
    let (body, is_error) = call(
        &client,
        "get_skill_content",
        json!({"skillId": "notes-keeper"}),
    )
    .await;
    assert!(!is_error);
    assert_eq!(body, "Write one note per line.\n");
    client.cancel().await.expect("close");
}

/// A config in a fresh folder `name`: `before`, then source `py` (the Python SDK's server over
/// stdio, group `py`) followed by `after` (more of its keys, or more sources).
fn python_config(name: &str, before: &str, after: &str) -> PathBuf {
    let dir = temp_dir(name);
    let config = format!(
        "{before}\n[[source]]\nname = \"py\"\ncommand = {:?}\nargs = [{:?}]\ngroup = \"py\"\ndescription = \"A Python SDK server\"\n{after}",
        common::python("pyenv").display().to_string(),
        root()
            .join("tests/python/upstream_server.py")
            .display()
            .to_string()
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).expect("config");
    path
}

/// A source's `tools` filter hides what it does not keep (from discovery and from calls), and
/// its `call_timeout_ms` times its calls instead of `[limits] call_timeout_ms`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sources_tool_filter_and_call_timeout_apply_to_its_tools() {
    let path = python_config(
        "source-filter",
        "[limits]\ncall_timeout_ms = 20000\n",
        "tools = { allow = [\"shout\", \"f*\"], deny = [\"fail\"] }\ncall_timeout_ms = 300\n",
    );
    let client = connect(&path).await;
    until_connected(&client).await;
    let (listed, _) = call(&client, "list_tools", json!({"group": "py"})).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["tool"].as_str())
        .collect();
    // `confirm` is not allowed, `fail` is denied.
    assert_eq!(names, ["shout"], "{listed}");
    let (failed, is_error) = call(
        &client,
        "call_tool",
        json!({"group": "py", "tool": "fail", "arguments": {"why": "x"}}),
    )
    .await;
    assert!(is_error && failed["error"] == "unknown_tool", "{failed}");
    let (slow, is_error) = call(
        &client,
        "call_tool",
        json!({"group": "py", "tool": "shout", "arguments": {"text": "hi", "delay_ms": 3000}}),
    )
    .await;
    assert!(is_error && slow["error"] == "timeout", "{slow}");
    assert!(slow["message"].to_string().contains("0.3 s"), "{slow}");
    let (quick, is_error) = call(
        &client,
        "call_tool",
        json!({"group": "py", "tool": "shout", "arguments": {"text": "hi"}}),
    )
    .await;
    assert!(!is_error, "{quick}");
    client.cancel().await.expect("close");
}

/// `toolsearch catalog` writes the live tools of a config's sources as a catalog file that
/// `search` then ranks; a source that does not answer is left out and named.
#[test]
fn catalog_writes_the_live_tools_for_search_on_your_own_catalog() {
    let path = python_config(
        "catalog-command",
        "",
        "\n[[source]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\ngroup = \"broken\"\ndescription = \"Never starts\"\n",
    );
    let out = path.with_file_name("catalog.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["catalog", "--config"])
        .arg(&path)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run catalog");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("source \"broken\" left out: cannot start"),
        "{err}"
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("written")).expect("JSON");
    let groups = written["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 1, "{written}");
    assert_eq!(groups[0]["name"], "py");
    let shout = groups[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "shout")
        .expect("shout listed");
    assert_eq!(shout["inputSchema"]["properties"]["text"]["type"], "string");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["search", "--catalog"])
        .arg(&out)
        .args(["--method", "bm25", "upper-case some text"])
        .output()
        .expect("run search");
    let ranked = String::from_utf8_lossy(&o.stdout);
    let first = ranked.lines().nth(1).unwrap_or_default();
    assert!(first.contains("py/shout"), "{ranked}");
}

/// The official Python SDK's servers as stdio upstreams — `MCPServer` on the newest release
/// and `FastMCP` on the last 1.x (tests/python/upstream_server.py) — answer calls through the
/// gateway (on its call lane, with string request ids), overlapping calls each get their own
/// answer, and a tool that raises is an error result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_servers_answer_as_upstreams_overlapping_calls_each_their_own() {
    let dir = temp_dir("python-upstreams");
    let script = root().join("tests/python/upstream_server.py");
    let mut config = String::new();
    for venv in ["pyenv", "pyenv-1x"] {
        config += &format!(
            "[[source]]\nname = {venv:?}\ncommand = {:?}\nargs = [{:?}]\ngroup = {venv:?}\ndescription = \"A Python SDK server\"\n\n",
            common::python(venv).display().to_string(),
            script.display().to_string()
        );
    }
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).expect("config");
    let client = connect(&path).await;
    until_connected(&client).await;
    for group in ["pyenv", "pyenv-1x"] {
        // Overlapping calls, the earlier ones answered later: each gets its own answer.
        let calls = (0..12).map(|i| {
            let client = &client;
            async move {
                let text = format!("call {i} on {group}");
                let answer = call(
                    client,
                    "call_tool",
                    json!({"group": group, "tool": "shout",
                           "arguments": {"text": text, "delay_ms": (12 - i) * 20}}),
                )
                .await;
                (text.to_uppercase(), answer)
            }
        });
        for (expected, (answer, is_error)) in futures_util::future::join_all(calls).await {
            assert!(!is_error, "{group}: {answer}");
            // The newest SDK adds structuredContent ({"result": …}) beside the text.
            let text = match &answer {
                Value::String(s) => s.as_str(),
                v => v["content"][0]["text"].as_str().unwrap_or_default(),
            };
            assert_eq!(text, expected, "{group}: {answer}");
        }
        let (failed, is_error) = call(
            &client,
            "call_tool",
            json!({"group": group, "tool": "fail", "arguments": {"why": "disk on fire"}}),
        )
        .await;
        assert!(is_error, "{group}: {failed}");
        assert!(
            failed.to_string().contains("disk on fire"),
            "{group}: {failed}"
        );
    }
    client.cancel().await.expect("close");
}
