//! CodeAct through the engine, against typed local tools: the programs of the contract, the
//! accounting, eligibility, ordering, every limit and escape attempt, and saved programs.

#[path = "../../../tests/support/golden.rs"]
mod golden;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use golden::Golden;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::{
    Approval, CodeActSettings, CodeActTools, Engine, EngineBuilder, ExecError, GroupSpec, Session,
    Settings, Toolset,
};
use toolsearch_codeact::{MontyRunner, SandboxAllocator};

#[global_allocator]
static GLOBAL: SandboxAllocator<std::alloc::System> = SandboxAllocator(std::alloc::System);

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The customer's display name.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct CustomerId {
    /// Numeric customer ID.
    customer_id: u64,
}

/// Every tool call the local tools received, in order.
type Log = Arc<Mutex<Vec<String>>>;

fn record(log: &Log, line: String) {
    log.lock().unwrap_or_else(|p| p.into_inner()).push(line);
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `crm`: two tools programs may call, one they may not. `find_customer` takes a moment, and
/// logs when it begins and ends (so overlapping calls would show).
fn crm(log: &Log) -> Toolset {
    let (a, b, c) = (log.clone(), log.clone(), log.clone());
    Toolset::new()
        .tool(
            "find_customer",
            "Find a customer by display name; returns the customer ID.",
            move |l: Lookup| {
                let log = a.clone();
                async move {
                    record(&log, format!("begin find_customer {}", l.name));
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    record(&log, format!("end find_customer {}", l.name));
                    match l.name.as_str() {
                        "Ada Lovelace" => Ok(json!({"customer_id": 42})),
                        "Alan Turing" => Ok(json!({"customer_id": 7})),
                        other => Err(ExecError::from(format!("no customer named {other}"))),
                    }
                }
            },
        )
        .tool(
            "customer_orders",
            "List a customer's orders with their amounts.",
            move |x: CustomerId| {
                let log = b.clone();
                async move {
                    record(&log, format!("customer_orders {}", x.customer_id));
                    Ok(json!({"orders": [{"id": 1, "amount": 30}, {"id": 2, "amount": 12}]}))
                }
            },
        )
        .tool(
            "delete_customer",
            "Delete a customer account for good.",
            move |x: CustomerId| {
                let log = c.clone();
                async move {
                    record(&log, format!("delete_customer {}", x.customer_id));
                    Ok(json!({"deleted": x.customer_id}))
                }
            },
        )
        .codeact(CodeActTools::Only(vec![
            "find_customer".into(),
            "customer_orders".into(),
        ]))
}

fn engine_with(
    log: &Log,
    codeact: CodeActSettings,
    tweak: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Engine {
    let builder = Engine::builder()
        .settings(Settings::default().with_codeact(codeact))
        .source(crm(log).into_group(
            "crm-service",
            GroupSpec::new("crm", "Customer records and orders"),
        ))
        .code_runner(Arc::new(MontyRunner::new()));
    tweak(builder).build().expect("a valid engine")
}

fn engine(log: &Log) -> Engine {
    engine_with(log, CodeActSettings::enabled(), |b| b)
}

fn parse(text: Option<&str>) -> Value {
    serde_json::from_str(text.expect("a text result")).expect("JSON")
}

async fn run_in(engine: &Engine, session: &Arc<Session>, code: &str, inputs: Value) -> Value {
    let r = engine
        .handle_in(session, "run_code", json!({"code": code, "inputs": inputs}))
        .await;
    let v = parse(r.first_text());
    assert_eq!(r.is_error, v.get("isError") == Some(&json!(true)), "{v}");
    v
}

async fn run(engine: &Engine, code: &str) -> Value {
    run_in(engine, &Arc::new(Session::new()), code, json!({})).await
}

/// The first program of the contract: discover, then call, in one `run_code`.
#[tokio::test]
async fn discover_then_call_in_one_run() {
    let log = Log::default();
    let e = engine(&log);
    let out = run(
        &e,
        r#"
found = await discover_tools(query="find customer by name", group="crm")
tool = found["tools"][0]
res = await call_tool(group=tool["group"], tool=tool["tool"], arguments={"name": "Ada Lovelace"})
print("called", tool["tool"])
res["structuredContent"]["customer_id"]
"#,
    )
    .await;
    assert_eq!(
        out,
        json!({"result": 42, "stdout": "called find_customer\n", "calls": 2})
    );
    assert_eq!(
        entries(&log),
        [
            "begin find_customer Ada Lovelace",
            "end find_customer Ada Lovelace"
        ]
    );
}

/// A chain of calls whose intermediate results never leave the program.
#[tokio::test]
async fn a_chain_sums_what_it_read() {
    let log = Log::default();
    let e = engine(&log);
    let out = run_in(
        &e,
        &Arc::new(Session::new()),
        r#"
c = await call_tool(group="crm", tool="find_customer", arguments={"name": inputs["name"]})
o = await call_tool(group="crm", tool="customer_orders",
                    arguments={"customer_id": c["structuredContent"]["customer_id"]})
sum(x["amount"] for x in o["structuredContent"]["orders"])
"#,
        json!({"name": "Ada Lovelace"}),
    )
    .await;
    assert_eq!(out["result"], 42);
    assert_eq!(out["calls"], 2);
    assert_eq!(entries(&log)[2], "customer_orders 42");
}

/// The run counts one call; from code a `call_tool` counts one and a search one.
#[tokio::test]
async fn usage_counts_the_run_and_each_host_call() {
    let log = Log::default();
    let e = engine(&log);
    let s = Arc::new(Session::new());
    run_in(
        &e,
        &s,
        r#"await call_tool(group="crm", tool="customer_orders", arguments={"customer_id": 1})"#,
        json!({}),
    )
    .await;
    assert_eq!(s.calls(), 2, "a run plus one target");
    let s = Arc::new(Session::new());
    run_in(
        &e,
        &s,
        r#"
await discover_tools(query="orders")
await call_tool(group="crm", tool="customer_orders", arguments={"customer_id": 1})
"#,
        json!({}),
    )
    .await;
    assert_eq!(s.calls(), 3, "one more search");
    // The session's own limit is checked before each host call.
    let e = engine_with(&log, CodeActSettings::enabled(), |b| b.max_tool_calls(2));
    let s = Arc::new(Session::new());
    let out = run_in(
        &e,
        &s,
        r#"
a = await discover_tools(query="orders")
b = await discover_tools(query="orders")
[a.get("error"), b.get("error")]
"#,
        json!({}),
    )
    .await;
    assert_eq!(out["result"], json!([null, "usage_limit"]));
}

/// A program cannot wait for the host: its call of an external tool is refused with
/// `not_executable`, saying to call it with `call_tool`, and nothing is deferred; outside the
/// program the same call defers.
#[tokio::test]
async fn a_program_calling_an_external_tool_is_told_to_use_call_tool() {
    let log = Log::default();
    let schema = json!({"type": "object", "properties": {"question": {"type": "string"}}});
    let people = Toolset::new()
        .external(
            "ask_person",
            "Ask the person a question.",
            schema.as_object().cloned().unwrap_or_default(),
        )
        .codeact(CodeActTools::All)
        .into_group(
            "host",
            GroupSpec::new("people", "The person running the agent"),
        );
    let e = engine_with(&log, CodeActSettings::enabled(), |b| b.source(people));
    let out = run(
        &e,
        r#"
r = await call_tool(group="people", tool="ask_person", arguments={"question": "Ship it?"})
[r["error"], "call_tool" in r["message"]]
"#,
    )
    .await;
    assert_eq!(out["result"], json!(["not_executable", true]), "{out}");
    assert_eq!(e.open_deferred_calls(), 0);
    let r = e
        .reply(
            "call_tool",
            json!({"group": "people", "tool": "ask_person", "arguments": {"question": "Ship it?"}}),
        )
        .await;
    assert_eq!(r.outcome.as_str(), "deferred");
    assert_eq!(e.open_deferred_calls(), 1);
}

/// A tool its source keeps from programs is refused from code, and stays callable.
#[tokio::test]
async fn an_ineligible_tool_is_refused_from_code_but_callable_through_call_tool() {
    let log = Log::default();
    let e = engine(&log);
    let out = run(
        &e,
        r#"await call_tool(group="crm", tool="delete_customer", arguments={"customer_id": 9})"#,
    )
    .await;
    assert_eq!(out["result"]["isError"], true);
    assert_eq!(out["result"]["error"], "codeact_denied");
    assert!(entries(&log).is_empty(), "nothing ran");
    let r = e
        .handle(
            "call_tool",
            json!({"group": "crm", "tool": "delete_customer", "arguments": {"customer_id": 9}}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(entries(&log), ["delete_customer 9"]);
    // `codeact_eligible` tells the model which is which.
    let d = |tool: &str| {
        let out = e
            .handle_control("describe_tool", &json!({"group": "crm", "tool": tool}))
            .expect("a control");
        out.value()["tool"]["codeact_eligible"].clone()
    };
    assert_eq!(d("find_customer"), json!(true));
    assert_eq!(d("delete_customer"), json!(false));
}

/// Host calls run one at a time in program order, also inside `asyncio.gather`.
#[tokio::test]
async fn gather_runs_host_calls_one_at_a_time_in_program_order() {
    let log = Log::default();
    let e = engine(&log);
    let out = run(
        &e,
        r#"
import asyncio
a, b, c = await asyncio.gather(
    call_tool(group="crm", tool="find_customer", arguments={"name": "Ada Lovelace"}),
    call_tool(group="crm", tool="customer_orders", arguments={"customer_id": 1}),
    call_tool(group="crm", tool="find_customer", arguments={"name": "Alan Turing"}),
)
[a["structuredContent"]["customer_id"], len(b["structuredContent"]["orders"]),
 c["structuredContent"]["customer_id"]]
"#,
    )
    .await;
    assert_eq!(out["result"], json!([42, 2, 7]));
    assert_eq!(
        entries(&log),
        [
            "begin find_customer Ada Lovelace",
            "end find_customer Ada Lovelace",
            "customer_orders 1",
            "begin find_customer Alan Turing",
            "end find_customer Alan Turing",
        ]
    );
}

/// Validation and the approval hook apply to targets called from code.
#[tokio::test]
async fn validation_and_approval_apply_from_code() {
    let log = Log::default();
    let e = engine_with(&log, CodeActSettings::enabled(), |b| {
        b.approval(|call| async move {
            if call.tool == "customer_orders" {
                Approval::Deny("orders are private today".into())
            } else {
                Approval::Approve
            }
        })
    });
    let out = run(
        &e,
        r#"
bad = await call_tool(group="crm", tool="find_customer", arguments={"name": 5})
denied = await call_tool(group="crm", tool="customer_orders", arguments={"customer_id": 1})
[bad["error"], bad["path"], denied["error"]]
"#,
    )
    .await;
    assert_eq!(
        out["result"],
        json!(["invalid_arguments", "/name", "denied"])
    );
    assert!(entries(&log).is_empty(), "nothing ran");
}

fn assert_error(out: &Value, code: &str, needle: &str) {
    assert_eq!(out["isError"], true, "{out}");
    assert_eq!(out["error"], code, "{out}");
    let message = out["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{needle:?} not in {message:?}");
}

/// Every limit ends only its own run; the engine answers the next call.
#[tokio::test]
async fn limits_end_the_run_and_the_engine_keeps_serving() {
    let log = Log::default();
    let limits = CodeActSettings::enabled()
        .with_timeout(Duration::from_millis(400))
        .with_max_memory_mb(16)
        .with_max_calls(3);
    let e = engine_with(&log, limits, |b| b);
    let started = Instant::now();
    let out = run(
        &e,
        "while True:
    pass
",
    )
    .await;
    assert_error(&out, "timeout", "0.4 s");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let out = run(
        &e,
        "items = []
while True:
    items.append('x' * 10000)
",
    )
    .await;
    assert_error(&out, "resource_limit", "16 MiB");
    let out = run(
        &e,
        "x = 'a' * (512 * 1024 * 1024)
len(x)
",
    )
    .await;
    assert_error(&out, "resource_limit", "memory");
    let out = run(
        &e,
        "def f(n):
    return f(n + 1)
f(0)
",
    )
    .await;
    assert_error(&out, "resource_limit", "RecursionError");

    let out = run(
        &e,
        "for i in range(5):
    print(i)
    await discover_tools(query='orders')
",
    )
    .await;
    assert_error(&out, "usage_limit", "max_calls");
    assert_eq!(out["calls"], 3);
    assert_eq!(
        out["stdout"],
        "0
1
2
3
"
    );

    let out = run(
        &e,
        "def broken(:
    pass
",
    )
    .await;
    assert_error(&out, "code_failed", "SyntaxError");
    let out = run(
        &e,
        "x = 1
y = x / 0
",
    )
    .await;
    assert_error(&out, "code_failed", "ZeroDivisionError");
    assert_error(&out, "code_failed", "(line 2)");

    let out = run(&e, "1 + 1").await;
    assert_eq!(out, json!({"result": 2, "stdout": "", "calls": 0}));
}

/// Files, environment, clock, network and processes are out of reach.
#[tokio::test]
async fn the_sandbox_has_no_way_out() {
    let log = Log::default();
    let e = engine(&log);
    for code in [
        "open('/etc/passwd').read()",
        "from pathlib import Path
Path('/etc/passwd').read_text()",
        "import os
os.getenv('HOME')",
        "import os
os.environ['PATH']",
        "import socket",
        "import subprocess",
        "import sys
sys.modules",
        "__import__('os').system('true')",
        "import datetime\ndatetime.datetime.now()",
        "import time\ntime.time()",
        "import os\nos.listdir('/')",
    ] {
        let out = run(&e, code).await;
        assert_eq!(out["isError"], true, "{code}: {out}");
        assert_eq!(out["error"], "code_failed", "{code}: {out}");
    }
    let out = run(&e, "2 ** 10").await;
    assert_eq!(out["result"], 1024);
}

fn programs_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("toolsearch-codeact-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("programs/sub")).expect("dir");
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
}

/// The second program of the contract: a saved `lookup.codeact.py` run with inputs; and every
/// way out of the programs folder refused.
#[tokio::test]
async fn saved_programs_run_and_paths_stay_inside_their_folder() {
    let dir = programs_dir("paths");
    let programs = dir.join("programs");
    write(
        &programs.join("lookup.codeact.py"),
        r#"
async def main(inputs):
    c = await call_tool(group="crm", tool="find_customer", arguments={"name": inputs["name"]})
    return {"id": c["structuredContent"]["customer_id"], "name": inputs["name"]}
"#,
    );
    write(
        &programs.join("sub/twice.codeact.py"),
        "async def main(inputs):
    return inputs['n'] * 2
",
    );
    write(
        &programs.join("nomain.codeact.py"),
        "x = 1
",
    );
    write(
        &dir.join("outside.codeact.py"),
        "async def main(inputs):
    return 'escaped'
",
    );
    std::os::unix::fs::symlink(
        dir.join("outside.codeact.py"),
        programs.join("link.codeact.py"),
    )
    .expect("symlink");
    let log = Log::default();
    let e = engine_with(
        &log,
        CodeActSettings::enabled().with_programs(vec![programs.clone()]),
        |b| b,
    );
    let call = |path: &str, inputs: Value| {
        let e = &e;
        let path = path.to_owned();
        async move {
            let r = e
                .handle("run_program", json!({"path": path, "inputs": inputs}))
                .await;
            parse(r.first_text())
        }
    };
    let out = call("lookup.codeact.py", json!({"name": "Ada Lovelace"})).await;
    assert_eq!(
        out,
        json!({"result": {"id": 42, "name": "Ada Lovelace"}, "stdout": "", "calls": 1})
    );
    assert_eq!(
        call("sub/twice.codeact.py", json!({"n": 21})).await["result"],
        42
    );
    let out = call("nomain.codeact.py", json!({})).await;
    assert_error(&out, "code_failed", "async def main(inputs)");
    let outside = dir.join("outside.codeact.py").display().to_string();
    for (path, needle) in [
        ("../outside.codeact.py", "without `..`"),
        ("sub/../../outside.codeact.py", "without `..`"),
        (outside.as_str(), "relative"),
        ("link.codeact.py", "symbolic link"),
        ("lookup.py", ".codeact.py"),
        ("missing.codeact.py", "no saved program"),
    ] {
        let out = call(path, json!({})).await;
        assert_error(&out, "invalid_request", needle);
        assert_eq!(out["path"], "/path", "{path}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The controls, `codeact_eligible` and the instructions appear only with CodeAct on;
/// `run_program` only with program folders.
#[tokio::test]
async fn codeact_is_offered_only_when_enabled() {
    let log = Log::default();
    let names = |e: &Engine| e.tools().into_iter().map(|t| t.name).collect::<Vec<_>>();
    let off = Engine::builder()
        .source(crm(&log).into_group("crm-service", GroupSpec::new("crm", "Customer records")))
        .build()
        .expect("engine");
    assert!(!names(&off).contains(&"run_code".to_owned()));
    assert!(!off.instructions().unwrap_or_default().contains("run_code"));
    let full = off
        .handle_control(
            "describe_tool",
            &json!({"group": "crm", "tool": "find_customer"}),
        )
        .expect("control")
        .value();
    assert!(full["tool"].get("codeact_eligible").is_none(), "{full}");
    let r = off.handle("run_code", json!({"code": "1"})).await;
    assert_eq!(parse(r.first_text())["error"], "unknown_tool");

    let on = engine(&log);
    assert!(names(&on).contains(&"run_code".to_owned()));
    assert!(!names(&on).contains(&"run_program".to_owned()));
    assert!(on.instructions().unwrap_or_default().contains("run_code"));
    let dir = programs_dir("offered");
    let with_programs = engine_with(
        &log,
        CodeActSettings::enabled().with_programs(vec![dir.join("programs")]),
        |b| b,
    );
    assert!(names(&with_programs).contains(&"run_program".to_owned()));
    let _ = std::fs::remove_dir_all(&dir);

    let no_runner = Engine::builder()
        .settings(Settings::default().with_codeact(CodeActSettings::enabled()))
        .source(crm(&log).into_group("crm-service", GroupSpec::new("crm", "Customer records")))
        .build();
    assert!(
        no_runner
            .expect_err("no runner")
            .to_string()
            .contains("code runner")
    );
}

/// Bad `run_code` arguments are `invalid_request`, and nothing runs.
#[tokio::test]
async fn bad_arguments_are_invalid_requests() {
    let log = Log::default();
    let e = engine(&log);
    for (args, path) in [
        (json!({}), "/code"),
        (json!({"code": 5}), "/code"),
        (json!({"code": ""}), "/code"),
        (json!({"code": "x".repeat(65_537)}), "/code"),
        (json!({"code": "1", "inputs": [1]}), "/inputs"),
        (json!({"code": "1", "extra": true}), "/extra"),
    ] {
        let r = e.handle("run_code", args.clone()).await;
        let out = parse(r.first_text());
        assert_eq!(out["error"], "invalid_request", "{args}: {out}");
        assert_eq!(out["path"], path, "{args}: {out}");
    }
}

/// Each surface's own controls are the program's functions; the others are not defined.
#[tokio::test]
async fn every_surface_gives_programs_its_own_controls() {
    use toolsearch::Surface;
    let log = Log::default();
    let on = |surface: Surface| {
        let settings = Settings::default()
            .with_surface(surface)
            .with_codeact(CodeActSettings::enabled());
        engine_with(&log, CodeActSettings::enabled(), move |b| {
            b.settings(settings)
        })
    };
    let proxy = on(Surface::Toolproxy);
    let out = run(
        &proxy,
        r#"
r = await search_proxy_tools(query="customer orders amounts")
t = r["tools"][0]
o = await call_proxy_tool(group=t["group"], tool=t["tool"], arguments={"customer_id": 3})
d = await call_proxy_tool(group="crm", tool="delete_customer", arguments={"customer_id": 3})
[t["tool"], t["codeact_eligible"], len(o["structuredContent"]["orders"]), d["error"]]
"#,
    )
    .await;
    assert_eq!(
        out["result"],
        json!(["customer_orders", true, 2, "codeact_denied"])
    );
    let out = run(&proxy, "await discover_tools(query='x')").await;
    assert_error(&out, "code_failed", "NameError");

    let caps = on(Surface::Capabilities);
    let out = run(
        &caps,
        r#"
s = await search_capabilities(query="customer orders amounts")
hit = s["tools"]["groups"][0]["hits"][0]["toolId"]
r = await invoke_tool(toolId=hit, args={"customer_id": 5})
d = await invoke_tool(toolId="crm__delete_customer", args={"customer_id": 5})
[hit, len(r["structuredContent"]["orders"]), d["error"]]
"#,
    )
    .await;
    assert_eq!(
        out["result"],
        json!(["crm__customer_orders", 2, "codeact_denied"])
    );
    assert!(caps.instructions().unwrap_or_default().contains("run_code"));
    assert!(!entries(&log).iter().any(|l| l.starts_with("delete")));
}

/// A program cannot reach `run_code` itself, nor a direct tool, nor a name it was not given.
#[tokio::test]
async fn programs_reach_only_the_surface_controls() {
    let log = Log::default();
    let e = engine(&log);
    for code in [
        "await run_code(code='1')",
        "await delete_customer(customer_id=1)",
        "await discover_tools('orders')",
    ] {
        let out = run(&e, code).await;
        assert_eq!(out["error"], "code_failed", "{code}: {out}");
    }
    let out = run(&e, "await discover_tools('orders')").await;
    assert_error(&out, "code_failed", "keyword arguments only");
    assert!(entries(&log).is_empty());
}

/// A run whose caller goes away is interrupted, even in a busy loop that catches exceptions:
/// its interpreter ends long before its own 30 s deadline. (Python runs one run at a time, so
/// the next run could not start while the abandoned loop still ran.)
#[tokio::test]
async fn an_interpreter_never_outlives_its_call() {
    let log = Log::default();
    let e = engine_with(
        &log,
        CodeActSettings::enabled().with_timeout(Duration::from_secs(30)),
        |b| b,
    );
    let busy = "while True:\n    try:\n        pass\n    except Exception:\n        pass\n";
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        e.handle("run_code", json!({"code": busy})),
    )
    .await;
    assert!(
        abandoned.is_err(),
        "the busy run is still going after 300 ms"
    );
    let started = Instant::now();
    let out = run(&e, "sum(range(10))").await;
    assert_eq!(out["result"], 45);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the next run waited {:?}",
        started.elapsed()
    );
}

/// Golden files: the exact bytes a model receives from CodeAct, pinned in
/// `tests/golden/<case>.json` (the definitions of the controls with CodeAct on, a full entry,
/// a run's result and its errors). Regenerate with `UPDATE_GOLDEN=1`; review the diff.
#[tokio::test]
async fn golden_files() {
    let dir = programs_dir("golden");
    let log = Log::default();
    let e = engine_with(
        &log,
        CodeActSettings::enabled().with_programs(vec![dir.join("programs")]),
        |b| b,
    );
    let tools: Vec<Value> = e
        .tools()
        .into_iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
        .collect();
    let mut cases: Vec<(&str, String)> = vec![
        (
            "tools_with_codeact",
            serde_json::to_string_pretty(&tools).expect("JSON"),
        ),
        (
            "instructions_with_codeact",
            serde_json::to_string_pretty(&e.instructions()).expect("JSON"),
        ),
    ];
    let describe = e
        .handle(
            "describe_tool",
            json!({"group": "crm", "tool": "delete_customer"}),
        )
        .await;
    cases.push((
        "describe_codeact_eligible",
        describe.first_text().unwrap_or_default().to_owned(),
    ));
    for (name, code) in [
        (
            "run_code_ok",
            "c = await call_tool(group='crm', tool='find_customer', arguments={'name': 'Ada Lovelace'})\nprint('found')\n(c['structuredContent'], (1, 2.5), {1: None})",
        ),
        ("run_code_failed", "x = 1\ny = x / 0\n"),
        (
            "run_code_denied",
            "await call_tool(group='crm', tool='delete_customer', arguments={'customer_id': 1})",
        ),
        ("run_code_syntax_error", "print('a'\n"),
    ] {
        let r = e.handle("run_code", json!({"code": code})).await;
        cases.push((name, r.first_text().unwrap_or_default().to_owned()));
    }
    let mut golden = Golden::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"));
    for (name, got) in cases {
        golden.check(&format!("{name}.json"), &format!("{got}\n"));
    }
    golden.finish();
    let _ = std::fs::remove_dir_all(&dir);
}
