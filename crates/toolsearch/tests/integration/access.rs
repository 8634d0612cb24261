//! What a caller may do beyond seeing: approval-gated tools (the session's person asked first,
//! denied when nobody can be asked), the per-caller rate limit, and the audit record of every
//! call (never arguments or results).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::{
    ApprovalAnswer, ApprovalRequest, Approver, AuditRecord, AuditSink, BoxFuture, CALLER_PATH,
    CLIENT_PATH, CallEvent, Engine, EngineBuilder, GroupSpec, Observer, Policy, PolicyRule,
    RateLimit, SearchEvent, Session, ToolGlobs, Toolset, with_approver,
};

#[derive(Deserialize, JsonSchema)]
struct Amount {
    /// Cents.
    cents: u64,
}

fn engine(
    tweak: impl FnOnce(EngineBuilder) -> EngineBuilder,
    ran: &Arc<Mutex<Vec<u64>>>,
) -> Engine {
    let ran = ran.clone();
    let billing = Toolset::new()
        .tool("refund_payment", "Refund a payment.", move |a: Amount| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap_or_else(|p| p.into_inner()).push(a.cents);
                Ok(json!({"refunded": a.cents}))
            }
        })
        .tool("get_invoice", "Read an invoice.", |a: Amount| async move {
            Ok(json!({"invoice": a.cents}))
        });
    tweak(Engine::builder().source(billing.into_group("b", GroupSpec::new("billing", "Money"))))
        .build()
        .expect("engine")
}

fn caller(name: &str) -> Arc<Session> {
    Arc::new(Session::with_context(BTreeMap::from([
        (CLIENT_PATH.to_owned(), name.to_owned()),
        (CALLER_PATH.to_owned(), name.to_owned()),
    ])))
}

async fn call(e: &Engine, s: &Arc<Session>, tool: &str, cents: u64) -> Value {
    let r = e
        .handle_in(
            s,
            "call_tool",
            json!({"group": "billing", "tool": tool, "arguments": {"cents": cents}}),
        )
        .await;
    serde_json::from_str(r.first_text().expect("text")).expect("JSON")
}

/// Answers every question the same way, and remembers what it was asked.
#[derive(Debug)]
struct Person(bool, Mutex<Vec<ApprovalRequest>>);

impl Approver for Person {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<ApprovalAnswer> {
        self.1
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        let yes = self.0;
        Box::pin(async move {
            if yes {
                ApprovalAnswer::Accept
            } else {
                ApprovalAnswer::Decline("the person declined".into())
            }
        })
    }
}

#[tokio::test]
async fn approval_gated_tools_run_only_when_the_person_accepts() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let e = engine(
        |b| b.ask_before(ToolGlobs::new(&["billing/refund_*".to_owned()]).expect("glob")),
        &ran,
    );
    // Nobody to ask: denied, and it says why.
    let out = call(&e, &caller("a"), "refund_payment", 5).await;
    assert_eq!(out["error"], "denied");
    assert!(
        out["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be asked"),
        "{out}"
    );
    // Declined.
    let s = caller("b");
    let person = Arc::new(Person(false, Mutex::default()));
    s.set_approver(person.clone());
    let out = call(&e, &s, "refund_payment", 6).await;
    assert_eq!(out["error"], "denied");
    assert!(
        out["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the person declined")
    );
    // Accepted: it runs, and the person saw the tool and its arguments.
    let s = caller("c");
    let yes = Arc::new(Person(true, Mutex::default()));
    s.set_approver(yes.clone());
    let out = call(&e, &s, "refund_payment", 7).await;
    assert_eq!(out["refunded"], 7, "{out}");
    let asked = yes.1.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].group.as_deref(), asked[0].tool.as_str()),
        (Some("billing"), "refund_payment")
    );
    assert_eq!(asked[0].arguments["cents"], 7);
    // A tool no glob names is not asked about.
    let out = call(&e, &caller("d"), "get_invoice", 8).await;
    assert_eq!(out["invoice"], 8);
    assert_eq!(*ran.lock().unwrap_or_else(|p| p.into_inner()), [7]);
}

#[tokio::test]
async fn a_request_approver_wins_over_the_session_s_and_approvals_are_foreseen() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let e = engine(
        |b| b.ask_before(ToolGlobs::new(&["billing/refund_*".to_owned()]).expect("glob")),
        &ran,
    );
    assert!(e.asks_for_approval());
    let s = caller("a");
    s.set_approver(Arc::new(Person(false, Mutex::default())));
    // The request's approver is asked, not the session's.
    let yes = Arc::new(Person(true, Mutex::default()));
    let out = with_approver(yes.clone(), call(&e, &s, "refund_payment", 9)).await;
    assert_eq!(out["refunded"], 9, "{out}");
    assert_eq!(yes.1.lock().unwrap_or_else(|p| p.into_inner()).len(), 1);
    // Outside that scope the session's approver answers again.
    let out = call(&e, &s, "refund_payment", 10).await;
    assert_eq!(out["error"], "denied", "{out}");
    assert_eq!(*ran.lock().unwrap_or_else(|p| p.into_inner()), [9]);

    // Foreseen: the gated call with valid arguments, through call_tool; nothing counted.
    let before = s.calls();
    let envelope =
        |tool: &str, args: Value| json!({"group": "billing", "tool": tool, "arguments": args});
    let asked = e
        .approval_request(
            &s,
            "call_tool",
            &envelope("refund_payment", json!({"cents": 3})),
        )
        .expect("asked");
    assert_eq!(
        (
            asked.group.as_deref(),
            asked.tool.as_str(),
            &asked.arguments["cents"]
        ),
        (Some("billing"), "refund_payment", &json!(3))
    );
    assert_eq!(s.calls(), before);
    // Not foreseen: an ungated tool, invalid arguments, an unknown tool, a discovery control.
    for (name, args) in [
        ("call_tool", envelope("get_invoice", json!({"cents": 3}))),
        (
            "call_tool",
            envelope("refund_payment", json!({"cents": "x"})),
        ),
        ("call_tool", envelope("refund_nothing", json!({"cents": 3}))),
        ("discover_tools", json!({"query": "refund"})),
    ] {
        assert!(
            e.approval_request(&s, name, &args).is_none(),
            "{name} {args}"
        );
    }
    // A tool hidden from the caller is never foreseen (the person is not asked about it).
    let hidden = engine(
        |b| {
            b.ask_before(ToolGlobs::new(&["billing/refund_*".to_owned()]).expect("glob"))
                .policy(
                    Policy::new(&[PolicyRule::for_client("a", &["billing/get_*"], &[])])
                        .expect("policy"),
                )
        },
        &ran,
    );
    assert!(
        hidden
            .approval_request(
                &s,
                "call_tool",
                &envelope("refund_payment", json!({"cents": 3}))
            )
            .is_none()
    );
    // Without [approval] nothing is ever foreseen.
    let open = engine(|b| b, &ran);
    assert!(!open.asks_for_approval());
    assert!(
        open.approval_request(
            &s,
            "call_tool",
            &envelope("refund_payment", json!({"cents": 3}))
        )
        .is_none()
    );
}

#[tokio::test]
async fn the_rate_limit_is_per_caller_and_every_call_is_audited() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let sink = records.clone();
    let e = engine(
        |b| {
            b.rate_limit(RateLimit::new(60.0, 2))
                .audit(AuditSink::new(move |r| {
                    sink.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(r.clone())
                }))
        },
        &ran,
    );
    let (alice, bob) = (caller("alice"), caller("bob"));
    assert_eq!(call(&e, &alice, "get_invoice", 1).await["invoice"], 1);
    assert_eq!(call(&e, &alice, "get_invoice", 2).await["invoice"], 2);
    let limited = call(&e, &alice, "get_invoice", 3).await;
    assert_eq!(limited["error"], "rate_limited");
    assert!(
        limited["retry_after_ms"].as_u64().unwrap_or(0) > 0,
        "{limited}"
    );
    assert_eq!(
        call(&e, &bob, "get_invoice", 4).await["invoice"],
        4,
        "bob is unaffected"
    );
    let _ = e
        .handle_in(&bob, "discover_tools", json!({"query": "refund"}))
        .await;

    let records = records.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let brief: Vec<(Option<&str>, Option<&str>, &str, &str)> = records
        .iter()
        .map(|r| {
            (
                r.client.as_deref(),
                r.group.as_deref(),
                r.tool.as_str(),
                r.outcome.as_str(),
            )
        })
        .collect();
    assert_eq!(
        brief,
        [
            (Some("alice"), Some("billing"), "get_invoice", "ok"),
            (Some("alice"), Some("billing"), "get_invoice", "ok"),
            (
                Some("alice"),
                Some("billing"),
                "get_invoice",
                "rate_limited"
            ),
            (Some("bob"), Some("billing"), "get_invoice", "ok"),
            (Some("bob"), None, "discover_tools", "ok"),
        ]
    );
    assert!(records.iter().all(|r| r.ms >= 0.0));
}

/// Remembers the engine's events as `(group, tool, outcome)` and `(control, method, found)`.
#[derive(Debug, Default)]
struct Events {
    calls: Mutex<Vec<(Option<String>, String, String)>>,
    searches: Mutex<Vec<(String, &'static str, bool)>>,
}

impl Observer for Events {
    fn call(&self, e: &CallEvent<'_>) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.push((
            e.group.map(str::to_owned),
            e.tool.to_owned(),
            e.outcome.to_string(),
        ));
    }

    fn search(&self, e: &SearchEvent<'_>) {
        let mut searches = self.searches.lock().unwrap_or_else(|p| p.into_inner());
        searches.push((e.control.to_owned(), e.method.as_str(), e.found));
    }
}

#[tokio::test]
async fn an_observer_hears_each_call_and_search_with_only_names_that_exist() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let events = Arc::new(Events::default());
    let observer = events.clone();
    let e = engine(|b| b.observer(observer), &ran);
    let s = caller("alice");
    assert_eq!(call(&e, &s, "get_invoice", 7).await["invoice"], 7);
    assert_eq!(
        call(&e, &s, "no_such_tool_secret", 1).await["error"],
        "unknown_tool"
    );
    let _ = e
        .handle_in(
            &s,
            "call_tool",
            json!({"group": "billing", "tool": "get_invoice", "arguments": {}}),
        )
        .await;
    for query in ["refund a payment", "xylophone", ""] {
        let _ = e
            .handle_in(&s, "discover_tools", json!({"query": query}))
            .await;
    }
    let _ = e.handle_in(&s, "list_tool_groups", json!({})).await;
    let _ = e.handle_in(&s, "made_up_control", json!({})).await;

    let calls = events
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let billing = || Some("billing".to_owned());
    assert_eq!(
        calls,
        [
            (billing(), "get_invoice".into(), "ok".into()),
            (None, String::new(), "unknown_tool".into()),
            (billing(), "get_invoice".into(), "invalid_arguments".into()),
            (None, "discover_tools".into(), "ok".into()),
            (None, "discover_tools".into(), "ok".into()),
            (None, "discover_tools".into(), "ok".into()),
            (None, "list_tool_groups".into(), "ok".into()),
            (None, String::new(), "unknown_tool".into()),
        ]
    );
    let searches = events
        .searches
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let method = e.settings().method.as_str();
    assert_eq!(
        searches,
        [
            ("discover_tools".to_owned(), method, true),
            ("discover_tools".to_owned(), method, false),
            // An empty query browses, by the keyword rules.
            ("discover_tools".to_owned(), "keyword", true),
        ]
    );
}

/// Every path resolves a name over what the caller sees: a tool hidden from the caller is, in
/// the answer, the metrics event and the audit record alike, a tool that does not exist — on
/// the MCP surface and in a vendor format — while another caller who sees it is recorded with
/// its names.
#[tokio::test]
async fn a_hidden_tool_is_recorded_as_one_that_does_not_exist() {
    use toolsearch::vendor::Format;
    let ran = Arc::new(Mutex::new(Vec::new()));
    let events = Arc::new(Events::default());
    let observer = events.clone();
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let sink = records.clone();
    let e = engine(
        |b| {
            b.observer(observer)
                .audit(AuditSink::new(move |r| {
                    sink.lock().expect("lock").push(r.clone())
                }))
                .policy(
                    Policy::new(&[
                        PolicyRule::for_client("alice", &["billing/*"], &[]),
                        PolicyRule::for_client("bob", &["billing/get_*"], &[]),
                    ])
                    .expect("policy"),
                )
        },
        &ran,
    );
    let (alice, bob) = (caller("alice"), caller("bob"));
    assert_eq!(
        call(&e, &bob, "refund_payment", 5).await["error"],
        "unknown_tool"
    );
    assert_eq!(call(&e, &alice, "refund_payment", 6).await["refunded"], 6);
    let exported = e
        .export_for(&alice, Format::Anthropic)
        .expect("export")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .find(|n| n.contains("refund"))
        .expect("the refund tool is exported to alice");
    let hidden = e
        .handle_vendor_in(&bob, Format::Anthropic, &exported, json!({"cents": 7}))
        .await;
    assert_eq!(
        hidden.error.as_ref().map(|v| v["error"].clone()),
        Some(json!("unknown_tool"))
    );
    let seen = e
        .handle_vendor_in(&alice, Format::Anthropic, &exported, json!({"cents": 8}))
        .await;
    assert!(!seen.is_error, "{:?}", seen.value);
    assert_eq!(
        *ran.lock().expect("lock"),
        [6, 8],
        "only the visible calls ran"
    );

    let billing = || Some("billing".to_owned());
    assert_eq!(
        *events.calls.lock().expect("lock"),
        [
            (None, String::new(), "unknown_tool".into()),
            (billing(), "refund_payment".into(), "ok".into()),
            (None, String::new(), "unknown_tool".into()),
            (billing(), "refund_payment".into(), "ok".into()),
        ]
    );
    let brief: Vec<(String, Option<String>, String, String)> = records
        .lock()
        .expect("lock")
        .iter()
        .map(|r| {
            let client = r.client.clone().unwrap_or_default();
            (
                client,
                r.group.clone(),
                r.tool.clone(),
                r.outcome.to_string(),
            )
        })
        .collect();
    assert_eq!(
        brief,
        [
            // As asked: the envelope's names, and the vendor name called.
            (
                "bob".into(),
                billing(),
                "refund_payment".into(),
                "unknown_tool".into()
            ),
            (
                "alice".into(),
                billing(),
                "refund_payment".into(),
                "ok".into()
            ),
            ("bob".into(), None, exported.clone(), "unknown_tool".into()),
            (
                "alice".into(),
                billing(),
                "refund_payment".into(),
                "ok".into()
            ),
        ]
    );
}
