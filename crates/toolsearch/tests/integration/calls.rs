//! The call path: typed local tools, validation before dispatch, every outcome and hook.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::{
    Approval, CallInfo, CallResult, Engine, EngineBuilder, ExecError, GroupSpec, Settings, Surface,
    Toolset,
};

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// Numeric customer ID.
    customer_id: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[derive(Deserialize, JsonSchema)]
struct Wait {
    millis: u64,
}

/// Counts how often each executor body actually ran.
#[derive(Default)]
struct Runs {
    lookup: AtomicUsize,
    failing: AtomicUsize,
    wait_finished: AtomicUsize,
    wait_dropped: AtomicUsize,
}

struct DropFlag(Arc<Runs>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.wait_dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn crm(runs: &Arc<Runs>) -> Toolset {
    let (r1, r2, r3) = (runs.clone(), runs.clone(), runs.clone());
    Toolset::new()
        .tool(
            "customer_name",
            "Look up the display name for a customer ID.",
            move |a: Lookup| {
                let r = r1.clone();
                async move {
                    r.lookup.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({"name": format!("Customer {}", a.customer_id)}))
                }
            },
        )
        .tool(
            "delete_everything",
            "Delete all customer records.",
            move |_: Empty| {
                let r = r2.clone();
                async move {
                    r.failing.fetch_add(1, Ordering::SeqCst);
                    Err::<Value, _>(ExecError::from("database is read-only"))
                }
            },
        )
        .tool("crash", "A tool that panics.", |_: Empty| async move {
            if true {
                panic!("index out of bounds in crash");
            }
            Ok(())
        })
        .tool(
            "slow_export",
            "Export all records slowly.",
            move |w: Wait| {
                let r = r3.clone();
                async move {
                    let _flag = DropFlag(r.clone());
                    tokio::time::sleep(Duration::from_millis(w.millis)).await;
                    r.wait_finished.fetch_add(1, Ordering::SeqCst);
                    Ok("exported")
                }
            },
        )
        .tool(
            "private_data",
            "Read data behind the identity provider.",
            |_: Empty| async move {
                Err::<Value, _>(ExecError::Unauthorized {
                    upstream: "idp".into(),
                    message: "token expired".into(),
                })
            },
        )
        .tool(
            "tracker_issues",
            "List the issues of a tracker that needs a login.",
            |_: Empty| async move {
                Err::<Value, _>(ExecError::NeedsLogin {
                    upstream: "tracker".into(),
                    message: "no token".into(),
                    hint: "run: toolsearch auth login tracker".into(),
                })
            },
        )
}

fn builder(runs: &Arc<Runs>) -> EngineBuilder {
    let clock = Toolset::new().tool(
        "now",
        "The current time.",
        |_: Empty| async move { Ok("12:00") },
    );
    Engine::builder()
        .source(crm(runs).into_group("crm-svc", GroupSpec::new("crm", "Customer records")))
        .source(clock.into_direct("clock"))
        .sources(crate::common::fixture_sources("seed.json").into_iter().filter(|s| s.source == "seed.json" && matches!(&s.presentation, toolsearch::Presentation::Group(g) if g.name == "billing")))
        .call_timeout(Duration::from_millis(200))
}

async fn call(e: &Engine, group: &str, tool: &str, arguments: Value) -> CallResult {
    e.handle(
        "call_tool",
        json!({"group": group, "tool": tool, "arguments": arguments}),
    )
    .await
}

fn error_of(r: &CallResult) -> Value {
    assert!(r.is_error, "{r:?}");
    serde_json::from_str(r.first_text().expect("text")).expect("error JSON")
}

#[tokio::test]
async fn a_typed_local_tool_result_passes_through() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let r = call(&e, "crm", "customer_name", json!({"customer_id": 7})).await;
    assert!(!r.is_error);
    assert_eq!(r.structured_content, Some(json!({"name": "Customer 7"})));
    assert_eq!(r.first_text(), Some(r#"{"name":"Customer 7"}"#));
    // Direct tools take the same path.
    let r = e.handle("now", json!({})).await;
    assert_eq!(r.structured_content, Some(json!("12:00")));
    // The typed input's schema is what the model sees.
    let d = e
        .handle(
            "describe_tool",
            json!({"group": "crm", "tool": "customer_name"}),
        )
        .await;
    let v: Value = serde_json::from_str(d.first_text().expect("text")).expect("json");
    let schema = &v["tool"]["parameters_json_schema"];
    assert_eq!(schema["required"], json!(["customer_id"]));
    assert_eq!(
        schema["properties"]["customer_id"]["description"],
        "Numeric customer ID."
    );
    assert!(schema.get("$schema").is_none());
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_executor() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    for bad in [
        json!({"customer_id": "seven"}),
        json!({}),
        json!({"customer_id": -1}),
    ] {
        let v = error_of(&call(&e, "crm", "customer_name", bad.clone()).await);
        assert_eq!(v["error"], "invalid_arguments", "{bad}: {v}");
        assert!(v["violations"].as_array().is_some_and(|l| !l.is_empty()));
    }
    let v = error_of(&call(&e, "crm", "customer_name", json!({"customer_id": "x"})).await);
    assert_eq!(v["path"], "/customer_id");
    assert_eq!(
        runs.lookup.load(Ordering::SeqCst),
        0,
        "the executor ran on invalid arguments"
    );
    assert!(
        !call(&e, "crm", "customer_name", json!({"customer_id": 1}))
            .await
            .is_error
    );
    assert_eq!(runs.lookup.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn envelope_errors() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let v = error_of(&call(&e, "nope", "x", json!({})).await);
    assert_eq!(v["error"], "unknown_group");
    assert_eq!(v["groups"].as_array().expect("groups").len(), 2);
    let v = error_of(&call(&e, "crm", "customer", json!({})).await);
    assert_eq!(v["error"], "unknown_tool");
    assert!(
        v["message"]
            .as_str()
            .expect("msg")
            .contains("discover_tools")
    );
    for (args, path) in [
        (
            json!({"group": "crm", "tool": "customer_name"}),
            "/arguments",
        ),
        (
            json!({"group": "crm", "tool": "customer_name", "arguments": {}, "extra": 1}),
            "/extra",
        ),
        (
            json!({"group": "crm", "tool": "customer_name", "arguments": [1]}),
            "/arguments",
        ),
        (
            json!({"group": 1, "tool": "customer_name", "arguments": {}}),
            "/group",
        ),
    ] {
        let v = error_of(&e.handle("call_tool", args.clone()).await);
        assert_eq!(
            (v["error"].as_str(), v["path"].as_str()),
            (Some("invalid_request"), Some(path)),
            "{args}"
        );
    }
    let v = error_of(&e.handle("summon_demon", json!({})).await);
    assert_eq!(v["error"], "unknown_tool");
    assert!(
        v["message"]
            .as_str()
            .expect("msg")
            .contains("discover_tools, describe_tool, call_tool")
    );
    assert_eq!(runs.lookup.load(Ordering::SeqCst), 0);
}

/// What models get wrong and the envelope takes: `arguments` as the JSON text of an object, a
/// control's integer as a string of digits. Nothing else is coerced: the tool's own arguments
/// are validated as they are.
#[tokio::test]
async fn the_envelope_takes_arguments_as_json_text_and_integers_as_digit_strings() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let r = e
        .handle(
            "call_tool",
            json!({"group": "crm", "tool": "customer_name", "arguments": "{\"customer_id\": 7}"}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.structured_content, Some(json!({"name": "Customer 7"})));
    assert_eq!(runs.lookup.load(Ordering::SeqCst), 1);
    // Text that is not an object's, and a tool argument given as digits, are refused.
    for (arguments, path) in [
        (json!("[1]"), "/arguments"),
        (json!("{\"customer_id\": 7"), "/arguments"),
        (json!("7"), "/arguments"),
    ] {
        let v = error_of(&call(&e, "crm", "customer_name", arguments.clone()).await);
        assert_eq!(
            (v["error"].as_str(), v["path"].as_str()),
            (Some("invalid_request"), Some(path)),
            "{arguments}"
        );
    }
    let v = error_of(&call(&e, "crm", "customer_name", json!({"customer_id": "7"})).await);
    assert_eq!(v["error"], "invalid_arguments", "{v}");
    assert_eq!(runs.lookup.load(Ordering::SeqCst), 1);

    // A control's integer as a string of digits is that integer; no other string is.
    let page = |args: Value| {
        let e = &e;
        async move {
            let r = e.handle("list_tools", args).await;
            let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
            (r.is_error, v)
        }
    };
    let (err, v) = page(json!({"limit": "2", "offset": "1"})).await;
    assert!(!err, "{v}");
    assert_eq!(v["tools"].as_array().expect("tools").len(), 2);
    assert_eq!(v["next_offset"], 3);
    let (_, by_number) = page(json!({"limit": 2, "offset": 1})).await;
    assert_eq!(v, by_number);
    for bad in [
        json!("two"),
        json!(" 2"),
        json!("-2"),
        json!("2.0"),
        json!(""),
    ] {
        let (err, v) = page(json!({ "limit": bad })).await;
        assert!(err, "{bad}: {v}");
        assert_eq!(v["path"], "/limit", "{bad}");
    }
}

#[tokio::test]
async fn static_catalog_tools_are_discoverable_but_not_executable() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let found = e.handle("discover_tools", json!({"query": "refund"})).await;
    assert!(found.first_text().expect("text").contains("refund_payment"));
    let v = error_of(&call(&e, "billing", "refund_payment", json!({"payment_id": "p1"})).await);
    assert_eq!(v["error"], "not_executable");
}

#[tokio::test]
async fn failures_and_panics_become_tool_failed_and_the_engine_keeps_serving() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let v = error_of(&call(&e, "crm", "delete_everything", json!({})).await);
    assert_eq!(v["error"], "tool_failed");
    let msg = v["message"].as_str().expect("msg");
    assert!(
        msg.contains("database is read-only")
            && msg.contains("uncertain")
            && msg.contains("inspect"),
        "{msg}"
    );
    let v = error_of(&call(&e, "crm", "crash", json!({})).await);
    assert_eq!(v["error"], "tool_failed");
    assert!(
        v["message"]
            .as_str()
            .expect("msg")
            .contains("index out of bounds in crash")
    );
    // Still serving.
    assert!(
        !call(&e, "crm", "customer_name", json!({"customer_id": 2}))
            .await
            .is_error
    );
}

#[tokio::test]
async fn a_hung_call_times_out_and_its_executor_is_cancelled() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let v = error_of(&call(&e, "crm", "slow_export", json!({"millis": 5_000})).await);
    assert_eq!(v["error"], "timeout");
    assert!(v["message"].as_str().expect("msg").contains("uncertain"));
    assert_eq!(
        runs.wait_dropped.load(Ordering::SeqCst),
        1,
        "the executor future was dropped"
    );
    assert_eq!(runs.wait_finished.load(Ordering::SeqCst), 0);
    // Within the limit it completes.
    assert!(
        !call(&e, "crm", "slow_export", json!({"millis": 1}))
            .await
            .is_error
    );
    assert_eq!(runs.wait_finished.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancelling_the_caller_cancels_the_executor() {
    let runs = Arc::new(Runs::default());
    let e = Arc::new(
        builder(&runs)
            .call_timeout(Duration::from_secs(30))
            .build()
            .expect("valid"),
    );
    let e2 = e.clone();
    let task =
        tokio::spawn(
            async move { call(&e2, "crm", "slow_export", json!({"millis": 10_000})).await },
        );
    tokio::time::sleep(Duration::from_millis(50)).await;
    task.abort();
    let _ = task.await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(runs.wait_dropped.load(Ordering::SeqCst), 1);
    assert_eq!(runs.wait_finished.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn approval_denies_before_anything_runs() {
    let runs = Arc::new(Runs::default());
    let asked: Arc<Mutex<Vec<CallInfo>>> = Arc::default();
    let seen = asked.clone();
    let e = builder(&runs)
        .approval(move |info: CallInfo| {
            let deny = info.tool == "customer_name";
            seen.lock().expect("lock").push(info);
            async move {
                if deny {
                    Approval::Deny("customer data needs a human's OK".into())
                } else {
                    Approval::Approve
                }
            }
        })
        .build()
        .expect("valid");
    let v = error_of(&call(&e, "crm", "customer_name", json!({"customer_id": 1})).await);
    assert_eq!(v["error"], "denied");
    assert!(
        v["message"]
            .as_str()
            .expect("msg")
            .contains("customer data needs a human's OK")
    );
    assert_eq!(runs.lookup.load(Ordering::SeqCst), 0, "a denied call ran");
    assert!(!e.handle("now", json!({})).await.is_error);
    let asked = asked.lock().expect("lock");
    assert_eq!(asked[0].group.as_deref(), Some("crm"));
    assert_eq!(asked[0].source, "crm-svc");
    assert_eq!(
        (asked[1].group.as_deref(), asked[1].tool.as_str()),
        (None, "now")
    );
    // Invalid arguments are refused before approval is even asked.
    drop(asked);
}

#[tokio::test]
async fn unauthorized_gives_needs_auth_and_fires_the_hook_once() {
    let runs = Arc::new(Runs::default());
    let fired: Arc<Mutex<Vec<String>>> = Arc::default();
    let f = fired.clone();
    let e = builder(&runs)
        .on_unauthorized(move |upstream| f.lock().expect("lock").push(upstream.to_owned()))
        .build()
        .expect("valid");
    let v = error_of(&call(&e, "crm", "private_data", json!({})).await);
    assert_eq!(v["error"], "needs_auth");
    assert_eq!(v["hint"], "call the auth tool to re-authorize idp");
    assert_eq!(v["upstream"], "idp");
    assert_eq!(*fired.lock().expect("lock"), ["idp"]);
    // A source that needs a person to log in: its own hint, the hook once more.
    let v = error_of(&call(&e, "crm", "tracker_issues", json!({})).await);
    assert_eq!(v["error"], "needs_auth");
    assert_eq!(v["hint"], "run: toolsearch auth login tracker");
    assert_eq!(v["upstream"], "tracker");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("Nothing ran")),
        "{v}"
    );
    assert_eq!(*fired.lock().expect("lock"), ["idp", "tracker"]);
}

#[tokio::test]
async fn usage_limits_stop_calls_before_dispatch() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).max_tool_calls(5).build().expect("valid");
    assert!(
        !e.handle("discover_tools", json!({"query": "customer"}))
            .await
            .is_error
    ); // 1
    assert!(
        !call(&e, "crm", "customer_name", json!({"customer_id": 1}))
            .await
            .is_error
    ); // 3
    assert!(
        !call(&e, "crm", "customer_name", json!({"customer_id": 1}))
            .await
            .is_error
    ); // 5
    let v = error_of(&call(&e, "crm", "customer_name", json!({"customer_id": 1})).await);
    assert_eq!(v["error"], "usage_limit");
    assert_eq!(
        (v["limit"].as_u64(), v["used"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(
        runs.lookup.load(Ordering::SeqCst),
        2,
        "the refused call reached the executor"
    );
    assert_eq!(e.session().calls(), 5);
    // A separate session has its own count.
    let s = Arc::new(toolsearch::Session::new());
    assert!(!e.handle_in(&s, "now", json!({})).await.is_error);
    assert_eq!(s.calls(), 1);
}

#[tokio::test]
async fn model_facing_tools_and_instructions() {
    let runs = Arc::new(Runs::default());
    let e = builder(&runs).build().expect("valid");
    let names: Vec<String> = e.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "discover_tools",
            "describe_tool",
            "call_tool",
            "list_tools",
            "list_tool_groups",
            "now"
        ]
    );
    let text = e.instructions().expect("instructions");
    for needle in [
        "discover_tools",
        "describe_tool",
        "call_tool",
        "next_offset",
        "never blindly repeat a mutation",
    ] {
        assert!(text.contains(needle), "{needle}");
    }
    // Only direct tools: no controls, no instructions.
    let direct_only = Engine::builder()
        .source(
            Toolset::new()
                .tool("now", "t", |_: Empty| async move { Ok(1) })
                .into_direct("clock"),
        )
        .build()
        .expect("valid");
    assert_eq!(direct_only.tools().len(), 1);
    assert!(direct_only.instructions().is_none());
    let v = error_of(&direct_only.handle("discover_tools", json!({})).await);
    assert_eq!(v["error"], "unknown_tool");
}

#[tokio::test]
async fn the_toolproxy_surface_searches_names_descriptions_and_groups_and_calls() {
    let runs = Arc::new(Runs::default());
    let settings = Settings::default().with_surface(Surface::Toolproxy);
    let e = builder(&runs).settings(settings).build().expect("valid");
    let defs = e.tools();
    assert_eq!(defs[0].name, "search_proxy_tools");
    assert_eq!(defs[1].name, "call_proxy_tool");
    assert_eq!(
        defs[0].input_schema["properties"]["group"]["enum"],
        json!(["billing", "crm", null])
    );
    assert_eq!(
        defs[1].input_schema["properties"]["group"]["enum"],
        json!(["billing", "crm"])
    );
    let r = e
        .handle(
            "search_proxy_tools",
            json!({"query": "customer display name"}),
        )
        .await;
    let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
    assert_eq!(v["detail"], "full");
    assert_eq!(v["tools"][0]["tool"], "customer_name");
    assert!(v["tools"][0]["parameters_json_schema"].is_object());
    // "amount" is only a parameter name (amount_cents): not searched on this surface.
    let r = e
        .handle("search_proxy_tools", json!({"query": "amount"}))
        .await;
    let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
    assert_eq!(v["total"], 0, "{v}");
    let r = e
        .handle(
            "call_proxy_tool",
            json!({"group": "crm", "tool": "customer_name", "arguments": {"customer_id": 3}}),
        )
        .await;
    assert_eq!(r.structured_content, Some(json!({"name": "Customer 3"})));
    assert!(e.handle("discover_tools", json!({})).await.is_error);
    assert!(
        e.instructions()
            .expect("instructions")
            .contains("call_proxy_tool")
    );
}

/// Sleeps for the `millis` it is given, under its own call limit (a gateway source's
/// `call_timeout_ms`).
#[derive(Debug)]
struct OwnLimit(Duration);

impl toolsearch::Executor for OwnLimit {
    fn call(
        &self,
        _tool: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> toolsearch::BoxFuture<Result<CallResult, ExecError>> {
        let millis = arguments["millis"].as_u64().unwrap_or(0);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            Ok(CallResult::text("slept", false))
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.0)
    }
}

#[tokio::test]
async fn an_executor_with_its_own_limit_is_timed_by_it() {
    let sleep = || {
        let Value::Object(schema) = json!({"type": "object",
            "properties": {"millis": {"type": "integer"}}, "required": ["millis"]})
        else {
            unreachable!("an object")
        };
        toolsearch::ToolDef::new("sleep", "Sleeps.").with_input_schema(schema)
    };
    let source = |name: &str, limit_ms: u64| {
        toolsearch::SourceTools::grouped(name, GroupSpec::new(name, "Sleeps"), vec![sleep()])
            .with_executor(Arc::new(OwnLimit(Duration::from_millis(limit_ms))))
    };
    // The engine's limit is 200 ms; one source allows 50 ms, the other 1 s.
    let runs = Arc::new(Runs::default());
    let e = builder(&runs)
        .source(source("short", 50))
        .source(source("long", 1000))
        .build()
        .expect("valid");
    let v = error_of(&call(&e, "short", "sleep", json!({"millis": 150})).await);
    assert_eq!(v["error"], "timeout");
    assert!(
        v["message"].as_str().expect("msg").contains("0.05 s"),
        "{v}"
    );
    let r = call(&e, "long", "sleep", json!({"millis": 400})).await;
    assert!(!r.is_error, "{r:?}");
}
