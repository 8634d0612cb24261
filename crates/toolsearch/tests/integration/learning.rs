//! Learning from use through the engine: a discovery query followed in the same session by a
//! successful call of a tool its answer listed is learned for the caller's class, kept in the
//! file, and ranks that class's later searches — never another class's.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsearch::{
    CLIENT_PATH, CallResult, Engine, ExecError, GroupSpec, Learning, Policy, PolicyRule,
    SearchMethod, Session, Settings, SourceTools, Toolset,
};

fn billing() -> SourceTools {
    let schema = json!({"type": "object", "properties": {"question": {"type": "string"}}});
    Toolset::new()
        .tool(
            "refund_payment",
            "Refund a payment to the customer's card.",
            |a: Map<String, Value>| async move {
                match a.get("fail") {
                    Some(_) => Err(ExecError::from("the bank said no")),
                    None => Ok(json!({"refunded": true})),
                }
            },
        )
        .tool(
            "charge_card",
            "Charge the customer's card for an order.",
            |_: Map<String, Value>| async move { Ok(json!({"charged": true})) },
        )
        .external(
            "ask_person",
            "Ask the person running the agent a question.",
            schema.as_object().cloned().unwrap_or_default(),
        )
        .into_group("b", GroupSpec::new("billing", "Payments"))
}

fn engine(learning: &Arc<Learning>, policy: Option<Policy>) -> Engine {
    // `keyword`, the surface's default, keeps its exact rules and ignores what was learned.
    let mut b = Engine::builder()
        .settings(Settings::default().with_method(SearchMethod::Bm25))
        .source(billing())
        .learning(learning.clone());
    if let Some(p) = policy {
        b = b.policy(p);
    }
    b.build().expect("engine")
}

fn caller(name: &str) -> Arc<Session> {
    Arc::new(Session::with_context(BTreeMap::from([(
        CLIENT_PATH.to_owned(),
        name.to_owned(),
    )])))
}

/// The tools `discover_tools` lists for `query` in `session`.
async fn found(e: &Engine, session: &Arc<Session>, query: &str) -> Vec<String> {
    let r = e
        .reply_in(session, "discover_tools", json!({"query": query}))
        .await;
    let v: Value = serde_json::from_str(r.result.first_text().expect("text")).expect("JSON");
    v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["tool"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn call(e: &Engine, session: &Arc<Session>, tool: &str, arguments: Value) -> CallResult {
    e.reply_in(
        session,
        "call_tool",
        json!({"group": "billing", "tool": tool, "arguments": arguments}),
    )
    .await
    .result
}

#[tokio::test]
async fn a_successful_call_of_a_listed_tool_teaches_its_query() {
    let learning = Arc::new(Learning::in_memory());
    let e = engine(&learning, None);
    let s = caller("alice");
    // Nothing answers "vanish" yet.
    assert!(found(&e, &s, "vanish").await.is_empty());
    let listed = found(&e, &s, "make the charge vanish and refund it").await;
    assert!(listed.contains(&"refund_payment".to_owned()), "{listed:?}");
    // A failed call teaches nothing; a call of a tool no answer listed neither.
    assert!(
        call(&e, &s, "refund_payment", json!({"fail": 1}))
            .await
            .is_error
    );
    assert!(learning.learned().is_empty());
    let other = caller("carol");
    assert!(!call(&e, &other, "refund_payment", json!({})).await.is_error);
    assert!(learning.learned().is_empty(), "carol searched nothing");
    // The successful call after the search is a use.
    assert!(!call(&e, &s, "refund_payment", json!({})).await.is_error);
    let learned = learning.learned();
    assert_eq!(
        learned
            .queries("", "billing__refund_payment")
            .collect::<Vec<_>>(),
        ["make the charge vanish and refund it"]
    );
    assert_eq!(learned.len(), 1, "nothing else");
    // And it ranks: "vanish" now finds the refund, for anyone (no policy: one class).
    assert_eq!(
        found(&e, &caller("dave"), "vanish").await,
        ["refund_payment"]
    );
    // `keyword` keeps its exact contract: what was learned is not its business.
    let keyword = Engine::builder()
        .source(billing())
        .learning(learning.clone())
        .build()
        .expect("engine");
    assert!(found(&keyword, &caller("dave"), "vanish").await.is_empty());
}

#[tokio::test]
async fn an_external_call_the_host_completes_is_a_use() {
    let learning = Arc::new(Learning::in_memory());
    let e = engine(&learning, None);
    let s = caller("alice");
    let listed = found(&e, &s, "ask the person running this").await;
    assert!(listed.contains(&"ask_person".to_owned()), "{listed:?}");
    let r = e
        .reply_in(
            &s,
            "call_tool",
            json!({"group": "billing", "tool": "ask_person", "arguments": {"question": "ok?"}}),
        )
        .await;
    let toolsearch::Outcome::Deferred { call_id, .. } = r.outcome else {
        panic!("deferred: {r:?}");
    };
    assert!(learning.learned().is_empty(), "not before it completes");
    e.complete(&call_id, CallResult::text("yes", false))
        .expect("open");
    assert_eq!(
        learning
            .learned()
            .queries("", "billing__ask_person")
            .count(),
        1
    );
}

#[tokio::test]
async fn what_one_class_taught_never_ranks_for_another() {
    let learning = Arc::new(Learning::in_memory());
    let policy = Policy::new(&[
        PolicyRule::for_client("alice", &["billing/*"], &[]),
        PolicyRule::for_client("bob", &["billing/*"], &[]),
    ])
    .expect("policy");
    let e = engine(&learning, Some(policy));
    let (alice, bob) = (caller("alice"), caller("bob"));
    found(&e, &alice, "make the charge vanish and refund it").await;
    assert!(!call(&e, &alice, "refund_payment", json!({})).await.is_error);
    assert_eq!(found(&e, &alice, "vanish").await, ["refund_payment"]);
    assert!(
        found(&e, &bob, "vanish").await.is_empty(),
        "bob's class learned nothing"
    );
    // Another session of alice's class gains from it.
    assert_eq!(
        found(&e, &caller("alice"), "vanish").await,
        ["refund_payment"]
    );
}

#[tokio::test]
async fn what_was_learned_is_kept_in_the_file_and_can_be_forgotten() {
    let dir = std::env::temp_dir().join(format!("toolsearch-learning-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("learned.jsonl");
    {
        let learning = Arc::new(Learning::open(&path).expect("open"));
        let e = engine(&learning, None);
        let s = caller("alice");
        found(&e, &s, "make the charge vanish and refund it").await;
        assert!(!call(&e, &s, "refund_payment", json!({})).await.is_error);
    }
    let text = std::fs::read_to_string(&path).expect("file");
    assert_eq!(
        text,
        "{\"query\":\"make the charge vanish and refund it\",\"tool\":\"billing__refund_payment\"}\n",
        "the query and the tool, nothing else"
    );
    let learning = Arc::new(Learning::open(&path).expect("reopen"));
    let e = engine(&learning, None);
    assert_eq!(
        found(&e, &caller("bob"), "vanish").await,
        ["refund_payment"]
    );
    assert_eq!(
        learning
            .forget(Some("billing__refund_payment"))
            .expect("forget"),
        1
    );
    assert!(found(&e, &caller("bob"), "vanish").await.is_empty());
    assert_eq!(std::fs::read_to_string(&path).expect("file"), "");
    let _ = std::fs::remove_dir_all(&dir);
}
