//! External tools: the host runs them. A call is validated, policed, approved and counted like
//! any other, then ends with a deferred request; the host completes it once, and what the
//! model receives is the host's result (or error). Calls refused on the way never reach the
//! host; a session that ends drops its open calls.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use toolsearch::vendor::Format;
use toolsearch::{
    Approval, AuditRecord, AuditSink, CLIENT_PATH, CallEvent, CallInfo, CallResult, DeferredError,
    Engine, EngineBuilder, ErrorCode, ExecError, GroupSpec, Observer, Outcome, Policy, PolicyRule,
    RateLimit, SearchEvent, Session, Settings, SourceTools, ToolGlobs, Toolset, load_catalog_file,
    parse_catalog,
};

use crate::common::crate_dir;
use crate::golden_files::Golden;

fn url_schema() -> Map<String, Value> {
    json!({
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The page to open"}},
        "required": ["url"],
        "additionalProperties": false
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// `browser`: `open_tab` the host runs, and `tab_count` the engine runs.
fn browser() -> SourceTools {
    Toolset::new()
        .external(
            "open_tab",
            "Open a web page in a new tab of the user's browser.",
            url_schema(),
        )
        .tool(
            "tab_count",
            "Count the open browser tabs.",
            |_: Map<String, Value>| async move { Ok(json!({"tabs": 3})) },
        )
        .into_group("host", GroupSpec::new("browser", "The user's web browser"))
}

fn builder() -> EngineBuilder {
    Engine::builder().source(browser())
}

fn caller(name: &str) -> Arc<Session> {
    Arc::new(Session::with_context(BTreeMap::from([(
        CLIENT_PATH.to_owned(),
        name.to_owned(),
    )])))
}

fn open_tab(url: Value) -> Value {
    json!({"group": "browser", "tool": "open_tab", "arguments": {"url": url}})
}

/// The deferred request's id, or a failure naming what came instead.
fn call_id(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Deferred { call_id, .. } => call_id.clone(),
        other => panic!("expected a deferred call, got {other:?}"),
    }
}

fn error_of(r: &CallResult) -> Value {
    serde_json::from_str(r.first_text().expect("text")).expect("JSON")
}

/// Remembers `(group, tool, outcome)` of every call event.
#[derive(Debug, Default)]
struct Events(Mutex<Vec<(Option<String>, String, String)>>);

impl Observer for Events {
    fn call(&self, e: &CallEvent<'_>) {
        self.0.lock().expect("lock").push((
            e.group.map(str::to_owned),
            e.tool.to_owned(),
            e.outcome.to_string(),
        ));
    }

    fn search(&self, _: &SearchEvent<'_>) {}
}

#[tokio::test]
async fn an_external_call_defers_to_the_host_and_completes_once() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let sink = records.clone();
    let events = Arc::new(Events::default());
    let e = builder()
        .audit(AuditSink::new(move |r| {
            sink.lock().expect("lock").push(r.clone())
        }))
        .observer(events.clone())
        .build()
        .expect("engine");
    let s = caller("alice");

    // Discovered and described like any tool.
    let found = e
        .reply_in(&s, "discover_tools", json!({"query": "open a web page"}))
        .await;
    let found = error_of(&found.result);
    assert_eq!(found["tools"][0]["tool"], "open_tab", "{found}");
    let described = e
        .reply_in(
            &s,
            "describe_tool",
            json!({"group": "browser", "tool": "open_tab"}),
        )
        .await;
    let described = error_of(&described.result);
    assert_eq!(
        described["tool"]["parameters_json_schema"],
        Value::Object(url_schema())
    );

    // The call: the host gets the validated request, the model nothing yet.
    let reply = e
        .reply_in(&s, "call_tool", open_tab(json!("https://example.org")))
        .await;
    let Outcome::Deferred {
        call_id: id,
        group,
        tool,
        canonical_name,
        arguments,
    } = reply.outcome.clone()
    else {
        panic!("not deferred: {reply:?}");
    };
    assert_eq!(
        (group.as_str(), tool.as_str(), canonical_name.as_str()),
        ("browser", "open_tab", "browser__open_tab")
    );
    assert_eq!(
        Value::Object(arguments),
        json!({"url": "https://example.org"})
    );
    assert!(!reply.result.is_error);
    assert_eq!(
        error_of(&reply.result),
        reply.outcome.deferred_json().expect("deferred")
    );
    assert_eq!(e.open_deferred_calls(), 1);
    // The envelope and its target are counted, as for any tool.
    assert_eq!(s.calls(), 1 + 1 + 2);
    // Nothing is recorded until the host completes it.
    assert!(
        !records
            .lock()
            .expect("lock")
            .iter()
            .any(|r| r.tool == "open_tab")
    );

    // The host completes it: the model receives exactly the host's result.
    let done = CallResult::structured(json!({"opened": true, "tab": 4}));
    assert_eq!(e.complete(&id, done.clone()), Ok(done));
    assert_eq!(e.open_deferred_calls(), 0);
    // Once only; an id never issued is unknown.
    assert_eq!(
        e.complete(&id, CallResult::text("again", false)),
        Err(DeferredError::Completed(id.clone()))
    );
    assert_eq!(
        e.fail(&id, ExecError::Failed("late".into())),
        Err(DeferredError::Completed(id.clone()))
    );
    assert_eq!(
        e.complete("ext_0_1", CallResult::text("x", false)),
        Err(DeferredError::Unknown("ext_0_1".into()))
    );

    // Recorded once, at completion, as the host's result ended.
    let audited: Vec<(Option<String>, Option<String>, String, String)> = records
        .lock()
        .expect("lock")
        .iter()
        .filter(|r| r.tool == "open_tab")
        .map(|r| {
            (
                r.client.clone(),
                r.group.clone(),
                r.tool.clone(),
                r.outcome.to_string(),
            )
        })
        .collect();
    assert_eq!(
        audited,
        [(
            Some("alice".into()),
            Some("browser".into()),
            "open_tab".into(),
            "ok".into()
        )]
    );
    let seen: Vec<_> = events
        .0
        .lock()
        .expect("lock")
        .iter()
        .filter(|(_, t, _)| t == "open_tab")
        .cloned()
        .collect();
    assert_eq!(
        seen,
        [(Some("browser".into()), "open_tab".into(), "ok".into())]
    );

    // Two calls open at once complete independently, each with its own id.
    let a = call_id(
        &e.reply_in(&s, "call_tool", open_tab(json!("https://a.example")))
            .await
            .outcome,
    );
    let b = call_id(
        &e.reply_in(&s, "call_tool", open_tab(json!("https://b.example")))
            .await
            .outcome,
    );
    assert_ne!(a, b);
    assert!(
        e.complete(&b, CallResult::text("b", false)).is_ok(),
        "completing b"
    );
    assert!(e.complete(&a, CallResult::text("a", true)).is_ok());
    let last = records
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("a record");
    assert_eq!(last.outcome, Outcome::ToolError, "a's result was an error");
}

#[tokio::test]
async fn a_failed_external_call_tells_the_model_as_a_tool_failure() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let sink = records.clone();
    let e = builder()
        .audit(AuditSink::new(move |r| {
            sink.lock().expect("lock").push(r.clone())
        }))
        .build()
        .expect("engine");
    let id = call_id(
        &e.reply("call_tool", open_tab(json!("https://example.org")))
            .await
            .outcome,
    );
    let out = e
        .fail(&id, ExecError::Failed("the browser is closed".into()))
        .expect("open");
    assert!(out.is_error);
    let err = error_of(&out);
    assert_eq!(err["error"], "tool_failed");
    let message = err["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("open_tab") && message.contains("the browser is closed"),
        "{message}"
    );
    let id = call_id(
        &e.reply("call_tool", open_tab(json!("https://example.org")))
            .await
            .outcome,
    );
    let out = e
        .fail(&id, ExecError::Unavailable("no browser".into()))
        .expect("open");
    assert_eq!(error_of(&out)["error"], "unavailable");
    let outcomes: Vec<String> = records
        .lock()
        .expect("lock")
        .iter()
        .filter(|r| r.tool == "open_tab")
        .map(|r| r.outcome.to_string())
        .collect();
    assert_eq!(outcomes, ["tool_failed", "unavailable"]);
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_host() {
    let e = builder().build().expect("engine");
    for args in [json!(7), json!(null)] {
        let r = e.reply("call_tool", open_tab(args)).await;
        assert_eq!(
            r.outcome,
            Outcome::Error(ErrorCode::InvalidArguments),
            "{r:?}"
        );
        assert_eq!(error_of(&r.result)["path"], "/url");
    }
    let r = e
        .reply(
            "call_tool",
            json!({"group": "browser", "tool": "open_tab", "arguments": {"url": "x", "extra": 1}}),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Error(ErrorCode::InvalidArguments));
    let r = e
        .reply(
            "call_tool",
            json!({"group": "browser", "tool": "open_tab", "arguments": {}}),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Error(ErrorCode::InvalidArguments));
    assert_eq!(e.open_deferred_calls(), 0);
}

#[tokio::test]
async fn refused_calls_never_defer() {
    let denied = |e: Engine| async move {
        let r = e
            .reply_in(
                &caller("bob"),
                "call_tool",
                open_tab(json!("https://example.org")),
            )
            .await;
        assert_eq!(e.open_deferred_calls(), 0, "{r:?}");
        r.outcome
    };
    // The approval hook says no.
    let e = builder()
        .approval(|_: CallInfo| async { Approval::Deny("not now".into()) })
        .build()
        .expect("engine");
    assert_eq!(denied(e).await, Outcome::Error(ErrorCode::Denied));
    // A person must approve it, and nobody can be asked.
    let e = builder()
        .ask_before(ToolGlobs::new(&["browser/*".to_owned()]).expect("glob"))
        .build()
        .expect("engine");
    assert_eq!(denied(e).await, Outcome::Error(ErrorCode::Denied));
    // The caller's policy hides it: as if it did not exist.
    let e = builder()
        .policy(
            Policy::new(&[PolicyRule::for_client("bob", &["browser/tab_*"], &[])]).expect("policy"),
        )
        .build()
        .expect("engine");
    assert_eq!(denied(e).await, Outcome::Error(ErrorCode::UnknownTool));
    // Over the rate limit.
    let e = builder()
        .rate_limit(RateLimit::new(60.0, 1))
        .build()
        .expect("engine");
    let s = caller("bob");
    let _ = e.reply_in(&s, "list_tool_groups", json!({})).await;
    let r = e
        .reply_in(&s, "call_tool", open_tab(json!("https://example.org")))
        .await;
    assert_eq!(r.outcome, Outcome::Error(ErrorCode::RateLimited));
    assert_eq!(e.open_deferred_calls(), 0);
    // Over the run's usage limit (the envelope and its target count two).
    let e = builder().max_tool_calls(3).build().expect("engine");
    let s = caller("bob");
    let _ = e.reply_in(&s, "list_tool_groups", json!({})).await;
    let _ = e.reply_in(&s, "list_tool_groups", json!({})).await;
    let r = e
        .reply_in(&s, "call_tool", open_tab(json!("https://example.org")))
        .await;
    assert_eq!(r.outcome, Outcome::Error(ErrorCode::UsageLimit));
    assert_eq!(e.open_deferred_calls(), 0);
}

#[tokio::test]
async fn a_person_approves_an_external_call_before_the_host_sees_it() {
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = asked.clone();
    let e = builder()
        .approval(move |info: CallInfo| {
            log.lock().expect("lock").push(info.tool);
            async { Approval::Approve }
        })
        .build()
        .expect("engine");
    let r = e
        .reply("call_tool", open_tab(json!("https://example.org")))
        .await;
    assert!(matches!(r.outcome, Outcome::Deferred { .. }), "{r:?}");
    assert_eq!(*asked.lock().expect("lock"), ["open_tab"]);
}

#[tokio::test]
async fn a_session_that_ends_drops_its_open_calls() {
    let e = builder().build().expect("engine");
    let (gone, stays) = (caller("a"), caller("b"));
    let dropped = call_id(
        &e.reply_in(&gone, "call_tool", open_tab(json!("https://a.example")))
            .await
            .outcome,
    );
    let kept = call_id(
        &e.reply_in(&stays, "call_tool", open_tab(json!("https://b.example")))
            .await
            .outcome,
    );
    assert_eq!(e.open_deferred_calls(), 2);
    drop(gone);
    assert_eq!(
        e.open_deferred_calls(),
        1,
        "the ended session's call is gone"
    );
    assert_eq!(
        e.complete(&dropped, CallResult::text("late", false)),
        Err(DeferredError::SessionEnded(dropped.clone()))
    );
    assert!(e.complete(&kept, CallResult::text("ok", false)).is_ok());
    // A session that ends after its calls were completed leaves nothing behind.
    drop(stays);
    assert_eq!(e.open_deferred_calls(), 0);
}

#[tokio::test]
async fn a_program_cannot_call_an_external_tool() {
    // A vendor's code execution calling for the model's program: refused, nothing deferred.
    let e = Engine::builder()
        .source(
            Toolset::new()
                .external("open_tab", "Open a web page.", url_schema())
                .codeact(toolsearch::CodeActTools::All)
                .into_group("host", GroupSpec::new("browser", "The user's web browser")),
        )
        .build()
        .expect("engine");
    let name = e
        .export(Format::Anthropic)
        .expect("export")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .find(|n| n.contains("open_tab"))
        .expect("exported");
    let r = e
        .handle_vendor_program_in(
            &caller("a"),
            Format::Anthropic,
            &name,
            json!({"url": "https://example.org"}),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Error(ErrorCode::NotExecutable));
    let message = r.error.as_ref().expect("an error")["message"].to_string();
    assert!(message.contains("call_tool"), "{message}");
    assert_eq!(e.open_deferred_calls(), 0);
}

#[tokio::test]
async fn vendor_formats_return_the_request_to_the_host_loop() {
    let e = builder().build().expect("engine");
    let exported = e.export(Format::Anthropic).expect("export");
    let tool = exported
        .iter()
        .find(|t| t["name"] == "browser__open_tab")
        .expect("exported like any deferred tool");
    assert_eq!(tool["defer_loading"], true);

    let r = e
        .handle_vendor(
            Format::Anthropic,
            "browser__open_tab",
            json!({"url": "https://example.org"}),
        )
        .await;
    assert!(!r.is_error);
    let id = call_id(&r.outcome);
    assert_eq!(Some(r.value.clone()), r.outcome.deferred_json());
    let done = e
        .complete_vendor(&id, CallResult::structured(json!({"opened": true})))
        .expect("open");
    assert_eq!(done.value[0]["type"], "text");
    assert_eq!(done.outcome, Outcome::Ok);

    let r = e
        .handle_vendor(
            Format::Openai,
            "browser__open_tab",
            json!({"call_id": "call_9", "arguments": "{\"url\": \"https://example.org\"}"}),
        )
        .await;
    let id = call_id(&r.outcome);
    let failed = e
        .fail_vendor(&id, ExecError::Failed("blocked".into()))
        .expect("open");
    assert!(failed.is_error);
    assert_eq!(failed.value["call_id"], "call_9");
    assert_eq!(failed.value["type"], "function_call_output");

    // A call made through the controls has no vendor reply.
    let id = call_id(
        &e.reply("call_tool", open_tab(json!("https://example.org")))
            .await
            .outcome,
    );
    assert_eq!(
        e.complete_vendor(&id, CallResult::text("x", false)),
        Err(DeferredError::NotVendor(id.clone()))
    );
    assert!(e.complete(&id, CallResult::text("x", false)).is_ok());
}

#[test]
fn catalog_files_mark_external_tools() {
    let fixture = crate_dir().join("tests/fixtures/external.json");
    let file = load_catalog_file(&fixture).expect("parses");
    let tools = &file.groups[0].2;
    assert!(tools.iter().any(|t| t.name == "ask_person" && t.external));
    assert!(tools.iter().any(|t| t.name == "lookup" && !t.external));
    // Anything but true or false is refused, by its place.
    let err = parse_catalog(
        "f.json",
        r#"{"groups":[{"name":"g","description":"d","tools":[{"name":"t","x-toolsearch-external":"yes"}]}]}"#,
    )
    .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("x-toolsearch-external") && text.contains("a string"),
        "{text}"
    );
    // Only a grouped tool can be external.
    let direct = parse_catalog(
        "f.json",
        r#"{"tools":[{"name":"t","x-toolsearch-external":true}]}"#,
    )
    .expect("parses");
    let err =
        Engine::new(Settings::default(), direct.into_sources("f", false)).expect_err("refused");
    assert!(err.to_string().contains("must be grouped"), "{err}");
}

/// The deferred request and a completion in every wire form, pinned (ids are per process:
/// shown as `<call_id>`).
#[tokio::test]
async fn deferred_requests_match_golden_files() {
    let mut golden = Golden::new(crate_dir().join("tests/golden"));
    let e = Engine::new(
        Settings::default(),
        load_catalog_file(&crate_dir().join("tests/fixtures/external.json"))
            .expect("parses")
            .into_sources("external.json", false),
    )
    .expect("engine");
    let masked = |text: String, id: &str| text.replace(id, "<call_id>");
    let args =
        json!({"group": "people", "tool": "ask_person", "arguments": {"question": "Ship it?"}});
    let r = e.reply("call_tool", args).await;
    let id = call_id(&r.outcome);
    golden.check(
        "external_call_tool_deferred.json",
        &masked(r.result.first_text().expect("text").to_owned(), &id),
    );
    let done = e
        .complete(&id, CallResult::structured(json!({"answer": "yes"})))
        .expect("open");
    golden.check(
        "external_call_tool_completed.json",
        &serde_json::to_string(&done).expect("JSON"),
    );
    for (case, format, arguments) in [
        (
            "anthropic",
            Format::Anthropic,
            json!({"question": "Ship it?"}),
        ),
        (
            "openai",
            Format::Openai,
            json!({"call_id": "call_1", "arguments": {"question": "Ship it?"}}),
        ),
    ] {
        let r = e
            .handle_vendor(format, "people__ask_person", arguments)
            .await;
        let id = call_id(&r.outcome);
        golden.check(
            &format!("external_{case}_deferred.json"),
            &masked(r.value.to_string(), &id),
        );
        let done = e
            .complete_vendor(&id, CallResult::structured(json!({"answer": "yes"})))
            .expect("open");
        golden.check(
            &format!("external_{case}_completed.json"),
            &done.value.to_string(),
        );
    }
    golden.finish();
}
