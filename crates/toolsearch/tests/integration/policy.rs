//! Per-caller catalogs: a caller sees only what the policies that apply to it allow, in every
//! answer, before ranking and paging; a hidden tool answers exactly as one that does not exist.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::{
    CLIENT_PATH, Engine, GroupSpec, Policy, PolicyRule, Session, Settings, Surface, Toolset,
};

#[derive(Deserialize, JsonSchema)]
struct Id {
    /// An ID.
    id: u64,
}

fn tools(names: &[&'static str]) -> Toolset {
    names.iter().copied().fold(Toolset::new(), |set, name| {
        set.tool(
            name,
            &format!("{name} by id: invoice, customer, refund"),
            move |a: Id| async move { Ok(json!({"tool": name, "id": a.id})) },
        )
    })
}

fn engine(surface: Surface) -> Engine {
    Engine::builder()
        .settings(Settings::default().with_surface(surface))
        .source(
            tools(&["find_customer", "customer_orders"])
                .into_group("crm-service", GroupSpec::new("crm", "Customer records")),
        )
        .source(tools(&["get_invoice", "refund_payment"]).into_group(
            "billing-service",
            GroupSpec::new("billing", "Invoices and refunds"),
        ))
        .source(tools(&["clock"]).into_direct("clock-service"))
        .policy(
            Policy::new(&[
                PolicyRule::for_client("alice", &["crm/*", "clock"], &[]),
                PolicyRule::for_client("bob", &["billing/*"], &["billing/refund_*"]),
            ])
            .expect("valid"),
        )
        .build()
        .expect("engine")
}

fn caller(client: &str) -> Arc<Session> {
    Arc::new(Session::with_context(BTreeMap::from([(
        CLIENT_PATH.to_owned(),
        client.to_owned(),
    )])))
}

async fn call(e: &Engine, s: &Arc<Session>, name: &str, args: Value) -> Value {
    let r = e.handle_in(s, name, args).await;
    serde_json::from_str(r.first_text().expect("text")).expect("JSON")
}

fn tool_names(v: &Value) -> Vec<String> {
    v["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    format!(
                        "{}/{}",
                        t["group"].as_str().unwrap_or(""),
                        t["tool"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn each_caller_sees_and_calls_only_its_own_catalog() {
    let e = engine(Surface::Toolsearch);
    let (alice, bob, nobody) = (caller("alice"), caller("bob"), caller("mallory"));

    let all = call(&e, &alice, "discover_tools", json!({"query": ""})).await;
    assert_eq!(
        tool_names(&all),
        ["crm/customer_orders", "crm/find_customer"]
    );
    assert_eq!(all["total"], 2);
    let found = call(
        &e,
        &alice,
        "discover_tools",
        json!({"query": "invoice refund"}),
    )
    .await;
    assert_eq!(
        tool_names(&found),
        ["crm/customer_orders", "crm/find_customer"]
    );
    assert_eq!(found["total"], 2, "only alice's tools match and count");
    let groups = call(&e, &alice, "list_tool_groups", json!({})).await;
    assert_eq!(
        groups["groups"],
        json!([{"group": "crm", "description": "Customer records", "count": 2}])
    );
    assert_eq!(groups["total"], 1);

    // bob: billing without refunds; the exact name of a hidden tool finds nothing.
    let found = call(
        &e,
        &bob,
        "discover_tools",
        json!({"query": "refund_payment"}),
    )
    .await;
    assert_eq!(tool_names(&found), ["billing/get_invoice"]);
    assert_eq!(found["total"], 1);
    let listed = call(
        &e,
        &bob,
        "list_tools",
        json!({"group": "billing", "detail": "full"}),
    )
    .await;
    assert_eq!(tool_names(&listed), ["billing/get_invoice"]);

    // Hidden answers exactly as missing: a hidden group as a group that does not exist, a
    // hidden tool as a tool that does not exist.
    let hidden_group = call(
        &e,
        &alice,
        "describe_tool",
        json!({"group": "billing", "tool": "get_invoice"}),
    )
    .await;
    let no_group = call(
        &e,
        &alice,
        "describe_tool",
        json!({"group": "nosuch", "tool": "get_invoice"}),
    )
    .await;
    assert_eq!(hidden_group["error"], "unknown_group");
    assert_eq!(
        hidden_group.to_string().replace("billing", "X"),
        no_group.to_string().replace("nosuch", "X")
    );
    let hidden_tool = call(
        &e,
        &bob,
        "call_tool",
        json!({"group": "billing", "tool": "refund_payment", "arguments": {"id": 1}}),
    )
    .await;
    let no_tool = call(
        &e,
        &bob,
        "call_tool",
        json!({"group": "billing", "tool": "refund_nothing", "arguments": {"id": 1}}),
    )
    .await;
    assert_eq!(hidden_tool["error"], "unknown_tool");
    assert_eq!(
        hidden_tool.to_string().replace("refund_payment", "X"),
        no_tool.to_string().replace("refund_nothing", "X")
    );
    let ok = call(
        &e,
        &bob,
        "call_tool",
        json!({"group": "billing", "tool": "get_invoice", "arguments": {"id": 3}}),
    )
    .await;
    assert_eq!(ok["tool"], "get_invoice", "{ok}");

    // Direct tools too: alice has the clock, bob does not.
    let names = |s: &Session| {
        e.tools_for(s)
            .into_iter()
            .map(|t| t.name)
            .collect::<Vec<_>>()
    };
    assert!(names(&alice).contains(&"clock".to_owned()));
    assert!(!names(&bob).contains(&"clock".to_owned()));
    let r = call(&e, &bob, "clock", json!({"id": 1})).await;
    assert_eq!(r["error"], "unknown_tool");
    assert!(
        !r["message"]
            .as_str()
            .unwrap_or_default()
            .contains("clock\","),
        "{r}"
    );

    // A caller no policy applies to sees nothing.
    let none = call(&e, &nobody, "discover_tools", json!({"query": ""})).await;
    assert_eq!(none["total"], 0);
    let groups = call(&e, &nobody, "list_tool_groups", json!({})).await;
    assert_eq!(groups["total"], 0);
}

#[tokio::test]
async fn other_surfaces_filter_their_answers_and_definitions() {
    let e = engine(Surface::Toolproxy);
    let (alice, bob) = (caller("alice"), caller("bob"));
    let defs = e.tools_for(&alice);
    let search = defs
        .iter()
        .find(|d| d.name == "search_proxy_tools")
        .expect("control");
    assert_eq!(
        search.input_schema["properties"]["group"]["enum"],
        json!(["crm", null])
    );
    let found = call(
        &e,
        &bob,
        "search_proxy_tools",
        json!({"query": "refund invoice"}),
    )
    .await;
    assert_eq!(tool_names(&found), ["billing/get_invoice"]);

    let e = engine(Surface::Capabilities);
    let defs = e.tools_for(&bob);
    let search = defs
        .iter()
        .find(|d| d.name == "search_capabilities")
        .expect("control");
    assert!(search.description.contains("billing") && !search.description.contains("crm"));
    let found = call(
        &e,
        &bob,
        "search_capabilities",
        json!({"query": "customer refund invoice"}),
    )
    .await;
    let ids: Vec<&str> = found["tools"]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["hits"].as_array().expect("hits").iter())
        .filter_map(|h| h["toolId"].as_str())
        .collect();
    assert_eq!(ids, ["billing__get_invoice"]);
    let r = call(
        &e,
        &bob,
        "invoke_tool",
        json!({"toolId": "crm__find_customer", "args": {"id": 1}}),
    )
    .await;
    assert_eq!(r["error"], "unknown_tool");
}
