//! Vendor formats end to end in the engine: the export, a search answered in each vendor's
//! shape from the same index and caller policy, and a deferred tool called by its exported
//! name on the one call path (validation, approval, limits).

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::vendor::{Format, exported_name};
use toolsearch::{
    Approval, CLIENT_PATH, CallInfo, Engine, EngineBuilder, GroupSpec, Policy, Settings, Toolset,
};
use toolsearch::{PolicyRule, Session};

#[derive(Deserialize, JsonSchema)]
struct Id {
    /// An ID.
    id: u64,
}

fn tools(names: &[&'static str]) -> Toolset {
    names.iter().copied().fold(Toolset::new(), |set, name| {
        set.tool(name, &format!("{name} by id"), move |a: Id| async move {
            Ok(json!({"tool": name, "id": a.id}))
        })
    })
}

fn builder() -> EngineBuilder {
    Engine::builder()
        .settings(Settings::default())
        .source(
            tools(&["find_customer", "customer_orders"])
                .into_group("crm-service", GroupSpec::new("crm", "Customer records")),
        )
        .source(
            tools(&["get_invoice", "refund_payment", "v1/charge.create"]).into_group(
                "billing-service",
                GroupSpec::new("billing", "Invoices, charges and refunds"),
            ),
        )
        .source(tools(&["clock"]).into_direct("clock-service"))
}

fn caller(client: &str) -> Arc<Session> {
    Arc::new(Session::with_context(BTreeMap::from([(
        CLIENT_PATH.to_owned(),
        client.to_owned(),
    )])))
}

fn names(tools: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for t in tools {
        match t["tools"].as_array() {
            Some(inner) => out.extend(
                inner
                    .iter()
                    .map(|f| f["name"].as_str().expect("valid").to_owned()),
            ),
            None => out.push(t["name"].as_str().unwrap_or("").to_owned()),
        }
    }
    out
}

#[tokio::test]
async fn anthropic_search_references_a_tool_the_model_then_calls() {
    let e = builder().build().expect("valid");
    let exported = e.export(Format::Anthropic).expect("valid");
    let charge = exported_name("billing__v1/charge.create").into_owned();
    assert_ne!(charge, "billing__v1/charge.create");
    assert_eq!(
        names(&exported),
        [
            "tool_search",
            "clock",
            "billing__get_invoice",
            "billing__refund_payment",
            charge.as_str(),
            "crm__customer_orders",
            "crm__find_customer"
        ]
    );

    let found = e
        .handle_vendor(
            Format::Anthropic,
            "tool_search",
            json!({"query": "refund payment", "limit": 2}),
        )
        .await;
    assert!(!found.is_error);
    assert_eq!(
        found.value[0],
        json!({"type": "tool_reference", "tool_name": "billing__refund_payment"})
    );
    assert!(found.value.as_array().expect("valid").len() <= 2);

    let r = e
        .handle_vendor(
            Format::Anthropic,
            "billing__refund_payment",
            json!({"id": 7}),
        )
        .await;
    assert!(!r.is_error, "{}", r.value);
    let text = r.value[0]["text"].as_str().expect("valid");
    assert_eq!(
        serde_json::from_str::<Value>(text).expect("valid"),
        json!({"tool": "refund_payment", "id": 7})
    );

    // The short form maps back to its tool.
    let r = e
        .handle_vendor(Format::Anthropic, &charge, json!({"id": 1}))
        .await;
    assert!(!r.is_error, "{}", r.value);
    assert!(
        r.value[0]["text"]
            .as_str()
            .expect("valid")
            .contains("v1/charge.create")
    );

    // Arguments are validated before anything runs.
    let bad = e
        .handle_vendor(
            Format::Anthropic,
            "billing__refund_payment",
            json!({"id": "seven"}),
        )
        .await;
    assert!(bad.is_error);
    let err: Value =
        serde_json::from_str(bad.value[0]["text"].as_str().expect("valid")).expect("valid");
    assert_eq!(err["error"], "invalid_arguments");

    let unknown = e
        .handle_vendor(Format::Anthropic, "billing__nothing", json!({}))
        .await;
    assert!(unknown.is_error);
    assert!(
        unknown.value[0]["text"]
            .as_str()
            .expect("valid")
            .contains("unknown_tool")
    );
    // A discovery control is not a vendor tool.
    let control = e
        .handle_vendor(Format::Anthropic, "discover_tools", json!({"query": "x"}))
        .await;
    assert!(control.is_error);

    let nothing = e
        .handle_vendor(
            Format::Anthropic,
            "tool_search",
            json!({"query": "zebra xylophone"}),
        )
        .await;
    assert!(!nothing.is_error);
    assert_eq!(nothing.value[0]["type"], "text");

    let direct = e
        .handle_vendor(Format::Anthropic, "clock", json!({"id": 3}))
        .await;
    assert!(!direct.is_error, "{}", direct.value);
}

#[tokio::test]
async fn openai_search_loads_a_namespace_and_the_call_answers_its_call_id() {
    let e = builder().build().expect("valid");
    let exported = e.export(Format::Openai).expect("valid");
    assert_eq!(exported[0]["type"], "tool_search");
    let spaces: Vec<&str> = exported[2..]
        .iter()
        .map(|t| t["name"].as_str().expect("valid"))
        .collect();
    assert_eq!(spaces, ["billing", "crm"]);

    let out = e
        .handle_vendor(
            Format::Openai,
            "tool_search",
            json!({"call_id": "call_1", "arguments": {"query": "customer orders", "limit": 3}}),
        )
        .await;
    assert!(!out.is_error, "{}", out.value);
    assert_eq!(out.value["type"], "tool_search_output");
    assert_eq!(out.value["call_id"], "call_1");
    assert_eq!(out.value["execution"], "client");
    let first = &out.value["tools"][0];
    assert_eq!(first["type"], "namespace");
    assert_eq!(first["name"], "crm");
    assert_eq!(first["tools"][0]["name"], "crm__customer_orders");
    assert!(first["tools"][0]["parameters"]["properties"]["id"].is_object());
    let loaded: usize = out.value["tools"]
        .as_array()
        .expect("valid")
        .iter()
        .map(|n| n["tools"].as_array().expect("valid").len())
        .sum();
    assert!(loaded <= 3);

    // A function_call's arguments arrive as JSON text.
    let r = e
        .handle_vendor(
            Format::Openai,
            "crm__customer_orders",
            json!({"call_id": "call_2", "arguments": "{\"id\": 12}"}),
        )
        .await;
    assert!(!r.is_error, "{}", r.value);
    assert_eq!(r.value["type"], "function_call_output");
    assert_eq!(r.value["call_id"], "call_2");
    assert_eq!(
        serde_json::from_str::<Value>(r.value["output"].as_str().expect("valid")).expect("valid"),
        json!({"tool": "customer_orders", "id": 12})
    );

    let bad = e
        .handle_vendor(
            Format::Openai,
            "tool_search",
            json!({"call_id": "c", "arguments": {}}),
        )
        .await;
    assert!(bad.is_error);
    assert_eq!(bad.value["error"], "invalid_request");
}

#[tokio::test]
async fn a_caller_exports_searches_and_calls_only_what_it_may_see() {
    let e = builder()
        .policy(
            Policy::new(&[PolicyRule::for_client(
                "bob",
                &["billing/*"],
                &["billing/refund_*"],
            )])
            .expect("valid"),
        )
        .build()
        .expect("valid");
    let bob = caller("bob");
    let exported = e.export_for(&bob, Format::Anthropic).expect("valid");
    let exported = names(&exported);
    assert!(exported.contains(&"billing__get_invoice".to_owned()));
    assert!(
        !exported
            .iter()
            .any(|n| n.contains("refund") || n.contains("crm") || n == "clock")
    );
    let openai = e.export_for(&bob, Format::Openai).expect("valid");
    assert_eq!(openai.len(), 2, "the search tool and bob's one namespace");

    let found = e
        .handle_vendor_in(
            &bob,
            Format::Anthropic,
            "tool_search",
            json!({"query": "refund_payment"}),
        )
        .await;
    assert!(
        found
            .value
            .as_array()
            .expect("valid")
            .iter()
            .all(|b| b["type"] == "text"
                || !b["tool_name"].as_str().expect("valid").contains("refund")),
        "{}",
        found.value
    );
    let found = e
        .handle_vendor_in(
            &bob,
            Format::Anthropic,
            "tool_search",
            json!({"query": "refund invoice"}),
        )
        .await;
    assert_eq!(
        found.value,
        json!([{"type": "tool_reference", "tool_name": "billing__get_invoice"}])
    );

    // A hidden tool answers exactly as one that does not exist.
    let hidden = e
        .handle_vendor_in(
            &bob,
            Format::Anthropic,
            "billing__refund_payment",
            json!({"id": 1}),
        )
        .await;
    let missing = e
        .handle_vendor_in(
            &bob,
            Format::Anthropic,
            "billing__refund_paymenx",
            json!({"id": 1}),
        )
        .await;
    assert!(hidden.is_error);
    assert_eq!(
        hidden.value.to_string().replace("refund_payment", "X"),
        missing.value.to_string().replace("refund_paymenx", "X")
    );

    let nobody = caller("mallory");
    assert_eq!(
        e.export_for(&nobody, Format::Anthropic).expect("valid"),
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn a_vendor_call_is_approved_and_counted_like_any_other() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let e = builder()
        .approval(move |info: CallInfo| {
            seen.lock()
                .expect("valid")
                .push(format!("{:?}/{}", info.group, info.tool));
            async move {
                if info.tool == "refund_payment" {
                    Approval::Deny("the person said no".into())
                } else {
                    Approval::Approve
                }
            }
        })
        .max_tool_calls(3)
        .build()
        .expect("valid");
    let denied = e
        .handle_vendor(
            Format::Openai,
            "billing__refund_payment",
            json!({"call_id": "c", "arguments": {"id": 1}}),
        )
        .await;
    assert!(denied.is_error);
    assert!(
        denied.value["output"]
            .as_str()
            .expect("valid")
            .contains("denied")
    );
    assert_eq!(
        asked.lock().expect("valid").as_slice(),
        ["Some(\"billing\")/refund_payment"]
    );

    let ok = e
        .handle_vendor(
            Format::Anthropic,
            "tool_search",
            json!({"query": "invoice"}),
        )
        .await;
    assert!(!ok.is_error);
    let ok = e
        .handle_vendor(Format::Anthropic, "billing__get_invoice", json!({"id": 2}))
        .await;
    assert!(!ok.is_error);
    // Three calls made (each vendor call counts once): the fourth is over the limit.
    let over = e
        .handle_vendor(Format::Anthropic, "billing__get_invoice", json!({"id": 2}))
        .await;
    assert!(over.is_error);
    assert!(
        over.value[0]["text"]
            .as_str()
            .expect("valid")
            .contains("usage_limit")
    );
}

/// An Anthropic `tool_use` input that is not an object is a malformed call: refused in the
/// format's error shape before it is charged, so the one call the session may make still runs.
#[tokio::test]
async fn an_anthropic_input_that_is_not_an_object_is_refused_before_it_is_charged() {
    let e = builder().max_tool_calls(1).build().expect("valid");
    for bad in [json!("id=2"), json!([2]), json!(2)] {
        let refused = e
            .handle_vendor(Format::Anthropic, "billing__get_invoice", bad)
            .await;
        assert!(refused.is_error);
        let text = refused.value[0]["text"].as_str().expect("text");
        assert!(
            text.contains("billing__get_invoice takes a JSON object of arguments"),
            "{text}"
        );
    }
    let ok = e
        .handle_vendor(Format::Anthropic, "billing__get_invoice", json!({"id": 2}))
        .await;
    assert!(!ok.is_error, "{}", ok.value);
    let over = e
        .handle_vendor(Format::Anthropic, "billing__get_invoice", json!({"id": 2}))
        .await;
    assert!(
        over.value.to_string().contains("usage_limit"),
        "{}",
        over.value
    );
}

/// Golden files of the vendor wire formats: the exports and the search answers over the
/// golden seed catalog, pinned in `tests/golden/vendor_<case>.json` (regenerate with
/// `UPDATE_GOLDEN=1`; review the diff).
#[tokio::test]
async fn vendor_answers_match_golden_files() {
    use crate::common::{crate_dir, engine};
    use crate::golden_files::Golden;
    let mut golden = Golden::new(crate_dir().join("tests/golden"));
    let e = engine("seed_golden.json", Settings::default());
    let mut cases: Vec<(&str, Value, Value, bool)> = Vec::new();
    for (name, format) in [
        ("export_anthropic", Format::Anthropic),
        ("export_openai", Format::Openai),
    ] {
        let tools = e.export(format).expect("exportable");
        cases.push((name, json!(format.as_str()), Value::Array(tools), false));
    }
    let searches = [
        (
            "search_anthropic",
            Format::Anthropic,
            json!({"query": "refund a payment", "limit": 3}),
        ),
        (
            "search_anthropic_none",
            Format::Anthropic,
            json!({"query": "zebra xylophone"}),
        ),
        (
            "search_anthropic_bad_limit",
            Format::Anthropic,
            json!({"query": "refund", "limit": 0}),
        ),
        (
            "search_openai",
            Format::Openai,
            json!({"call_id": "call_1", "arguments": {"query": "customer email", "limit": 4}}),
        ),
        (
            "search_openai_none",
            Format::Openai,
            json!({"call_id": "call_2", "arguments": "{\"query\": \"zebra xylophone\"}"}),
        ),
        (
            "search_openai_no_query",
            Format::Openai,
            json!({"call_id": "call_3", "arguments": {}}),
        ),
    ];
    for (name, format, args) in searches {
        let out = e.handle_vendor(format, "tool_search", args.clone()).await;
        cases.push((name, args, out.value, out.is_error));
    }
    for (name, arguments, result, is_error) in cases {
        let record = json!({"arguments": arguments, "is_error": is_error, "result": result});
        let fresh = serde_json::to_string_pretty(&record).expect("json") + "\n";
        let Some(pinned) = golden.pinned(&format!("vendor_{name}.json"), &fresh) else {
            continue;
        };
        let pinned: Value = serde_json::from_str(&pinned).expect("golden parses");
        let want = serde_json::to_string(&pinned["result"]).expect("json");
        let got = serde_json::to_string(&result).expect("json");
        if want != got || pinned["is_error"] != is_error {
            golden.fail(format!("{name}:\n  want {want}\n  got  {got}"));
        }
    }
    golden.finish();
}

/// With nothing grouped the export has no search tool, and a search anyway finds nothing
/// (it is not an unknown tool).
#[tokio::test]
async fn a_catalog_of_direct_tools_only_exports_them_and_searches_nothing() {
    let e = Engine::builder()
        .source(tools(&["clock"]).into_direct("clock-service"))
        .build()
        .expect("valid");
    assert_eq!(
        names(&e.export(Format::Anthropic).expect("export")),
        ["clock"]
    );
    let out = e
        .handle_vendor(
            Format::Openai,
            "tool_search",
            json!({"arguments": {"query": "clock"}}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(out.value["tools"], json!([]));
}

/// A call the vendor's code execution makes runs only when the tool's source lets programs
/// call it, as a CodeAct program's would; the model's own call of the same tool runs.
#[tokio::test]
async fn a_programmatic_vendor_call_needs_a_tool_programs_may_call() {
    use toolsearch::CodeActTools;
    let e = Engine::builder()
        .source(
            tools(&["find_customer", "delete_customer"])
                .codeact(CodeActTools::Only(vec!["find_customer".into()]))
                .into_group("crm-service", GroupSpec::new("crm", "Customer records")),
        )
        .build()
        .expect("valid");
    let exported = e.export(Format::Openai).expect("export");
    let crm = exported[1]["tools"].as_array().expect("crm's functions");
    assert_eq!(crm[0]["name"], "crm__delete_customer");
    assert!(
        crm[0].get("allowed_callers").is_none(),
        "programs may not call it"
    );
    assert_eq!(crm[1]["allowed_callers"], json!(["direct", "programmatic"]));
    let s = e.session().clone();
    let ok = e
        .handle_vendor_program_in(
            &s,
            Format::Openai,
            "crm__find_customer",
            json!({"call_id": "c1", "arguments": {"id": 1}}),
        )
        .await;
    assert!(!ok.is_error, "{}", ok.value);
    let denied = e
        .handle_vendor_program_in(
            &s,
            Format::Anthropic,
            "crm__delete_customer",
            json!({"id": 1}),
        )
        .await;
    assert!(denied.is_error);
    assert_eq!(
        denied.error.as_ref().expect("error")["error"],
        "codeact_denied"
    );
    let direct = e
        .handle_vendor_in(
            &s,
            Format::Anthropic,
            "crm__delete_customer",
            json!({"id": 1}),
        )
        .await;
    assert!(!direct.is_error, "{}", direct.value);
}
