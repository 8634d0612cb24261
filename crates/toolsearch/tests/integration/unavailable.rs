//! Discovery answers say which groups in their scope are unavailable (a source still
//! connecting, or down), so an empty or short answer is never silent about why.

use serde_json::{Value, json};
use toolsearch::{Engine, GroupSpec, Settings, SourceTools, ToolDef};

fn engine() -> Engine {
    engine_with(Settings::default())
}

fn engine_with(settings: Settings) -> Engine {
    let mut crm = vec![ToolDef::new("customer_name", "Look up a customer's name.")];
    crm.extend((0..20).map(|i| {
        ToolDef::new(
            format!("report_{i:02}"),
            "A customer report of the kind its name says, for one account.",
        )
    }));
    let up = SourceTools::grouped("crm-svc", GroupSpec::new("crm", "Customer records"), crm);
    // A source still connecting: its group is there, with no tools yet.
    let connecting = SourceTools::grouped(
        "fs",
        GroupSpec::new("files", "Read and write files"),
        Vec::new(),
    )
    .with_connecting(true)
    .with_unavailable(Some("still connecting".into()));
    // A source that crashed keeps its tools discoverable; its group says it is down.
    let down = SourceTools::grouped(
        "billing-svc",
        GroupSpec::new("billing", "Invoices and payments"),
        vec![ToolDef::new(
            "refund_payment",
            "Refund a customer's payment.",
        )],
    )
    .with_unavailable(Some("the process exited".into()));
    Engine::builder()
        .settings(settings)
        .sources([up, connecting, down])
        .build()
        .expect("valid")
}

async fn answer(e: &Engine, control: &str, args: Value) -> Value {
    let r = e.handle(control, args).await;
    assert!(!r.is_error, "{r:?}");
    serde_json::from_str(r.first_text().expect("text")).expect("json")
}

#[tokio::test]
async fn discovery_names_the_unavailable_groups_in_its_scope() {
    let e = engine();
    let both = json!([
        {"group": "billing", "reason": "billing-svc: the process exited"},
        {"group": "files", "reason": "fs: still connecting"},
    ]);
    // Every group in scope: both unavailable groups, found or not.
    let v = answer(&e, "discover_tools", json!({"query": "customer name"})).await;
    assert_eq!(v["tools"][0]["tool"], "customer_name", "{v}");
    assert_eq!(v["unavailable"], both, "{v}");
    let v = answer(&e, "discover_tools", json!({"query": "read a file"})).await;
    assert_eq!(v["unavailable"], both, "{v}");
    let v = answer(&e, "list_tools", json!({"detail": "full"})).await;
    assert_eq!(v["unavailable"], both, "{v}");
    // One group in scope: only its own state.
    let v = answer(&e, "discover_tools", json!({"query": "", "group": "files"})).await;
    assert_eq!(
        (v["total"].as_u64(), v["tools"].as_array().map(Vec::len)),
        (Some(0), Some(0))
    );
    assert_eq!(v["unavailable"], json!([both[1]]), "{v}");
    let v = answer(
        &e,
        "discover_tools",
        json!({"query": "refund", "group": "billing"}),
    )
    .await;
    assert_eq!(v["tools"][0]["tool"], "refund_payment", "{v}");
    assert_eq!(v["unavailable"], json!([both[0]]), "{v}");
    // A group that is up: no key at all.
    let v = answer(
        &e,
        "discover_tools",
        json!({"query": "customer", "group": "crm"}),
    )
    .await;
    assert!(v.get("unavailable").is_none(), "{v}");
}

#[tokio::test]
async fn the_note_counts_in_the_byte_budget() {
    let limit = |n: usize| json!({"detail": "summary", "limit": n});
    let whole = answer(&engine(), "list_tools", limit(10)).await;
    let size = serde_json::to_string(&whole).expect("json").len();
    assert!(
        size > 1100,
        "the test needs an answer over the smallest budget: {size}"
    );
    let mut settings = Settings::default();
    settings.max_search_bytes = size - 1;
    let e = engine_with(settings);
    let r = e.handle("list_tools", limit(10)).await;
    let text = r.first_text().expect("text").to_owned();
    assert!(
        text.len() < size,
        "{} bytes over a {}-byte budget",
        text.len(),
        size - 1
    );
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["unavailable"], whole["unavailable"]);
    assert_eq!(v["tools"].as_array().map(Vec::len), Some(9), "{v}");
    assert_eq!(v["next_offset"], 9);
}

/// A source that needs a person to log in: its group says so in those words, and a call of a
/// tool it would list answers `needs_auth` with the command to run.
#[tokio::test]
async fn a_source_that_needs_a_login_says_how_to_give_it_one() {
    let needs_login = SourceTools::grouped(
        "linear",
        GroupSpec::new("issues", "Linear issues and projects"),
        Vec::new(),
    )
    .with_unavailable(Some(toolsearch::NEEDS_LOGIN.into()));
    let down = SourceTools::grouped(
        "fs",
        GroupSpec::new("files", "Read and write files"),
        Vec::new(),
    )
    .with_unavailable(Some("the process exited".into()));
    let up = SourceTools::grouped(
        "crm-svc",
        GroupSpec::new("crm", "Customer records"),
        vec![ToolDef::new("customer_name", "Look up a customer's name.")],
    );
    let e = Engine::builder()
        .sources([up, needs_login, down])
        .build()
        .expect("valid");
    let r = e.handle("list_tool_groups", json!({})).await;
    let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
    let lines = v["groups"].as_array().expect("groups");
    let issues = lines
        .iter()
        .find(|l| l["group"] == "issues")
        .unwrap_or_else(|| panic!("{:?}", r.first_text()));
    assert_eq!(issues["unavailable"], "needs login", "{lines:?}");
    let files = lines.iter().find(|l| l["group"] == "files").expect("files");
    assert_ne!(files["unavailable"], "needs login", "{lines:?}");

    let r = e
        .handle(
            "call_tool",
            json!({"group": "issues", "tool": "create_issue", "arguments": {}}),
        )
        .await;
    assert!(r.is_error, "{r:?}");
    let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
    assert_eq!(v["error"], "needs_auth", "{v}");
    assert_eq!(v["hint"], "run: toolsearch auth login linear", "{v}");
    assert_eq!(v["upstream"], "linear", "{v}");
    // A group down for another reason is unavailable, not a login.
    let r = e
        .handle(
            "call_tool",
            json!({"group": "files", "tool": "read", "arguments": {}}),
        )
        .await;
    let v: Value = serde_json::from_str(r.first_text().expect("text")).expect("json");
    assert_eq!(v["error"], "unavailable", "{v}");
}
