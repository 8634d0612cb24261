//! The seed examples and rules of the reference, asserted directly (independent of golden files).

use serde_json::json;
use toolsearch::Settings;

use crate::common::{engine, names, run};

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(g, t)| ((*g).to_owned(), (*t).to_owned()))
        .collect()
}

#[test]
fn payment_finds_payment_lookup_and_refund_payment_after_the_exact_tool() {
    let e = engine("seed.json", Settings::default());
    let out = run(&e, "discover_tools", json!({"query": "payment"}));
    assert_eq!(
        names(&out)[..3],
        pairs(&[
            ("billing", "payment"),
            ("billing", "payment_lookup"),
            ("billing", "refund_payment")
        ])
    );
    // Not a single exact match, so auto stays summary.
    assert_eq!(out.value()["detail"], "summary");
}

#[test]
fn customer_name_is_found_by_words_in_crm() {
    let e = engine("seed.json", Settings::default());
    let out = run(
        &e,
        "discover_tools",
        json!({"query": "customer name", "group": "crm"}),
    );
    assert_eq!(
        names(&out)[0],
        ("crm".to_owned(), "customer_name".to_owned())
    );
    assert!(names(&out).iter().all(|(g, _)| g == "crm"));
}

#[test]
fn canonical_names_order_the_browse() {
    let e = engine("seed.json", Settings::default().with_max_results(100));
    let out = run(&e, "list_tools", json!({"limit": 100}));
    let got: Vec<String> = names(&out)
        .into_iter()
        .map(|(g, t)| format!("{g}/{t}"))
        .collect();
    // a___b < a__?! ('_' > '?') … a_u__b < billing… < crm… < my_utools__select.
    assert_eq!(
        got,
        [
            "a/?!",
            "a/_b",
            "a_/b",
            "billing/invoice_pdf",
            "billing/payment",
            "billing/payment_lookup",
            "billing/refund_payment",
            "crm/customer_name",
            "crm/getHTTPServer",
            "crm/update_account",
            "my_tools/select"
        ]
    );
}

#[test]
fn exact_canonical_name_expands_to_the_full_definition() {
    let e = engine("seed.json", Settings::default());
    let out = run(
        &e,
        "discover_tools",
        json!({"query": "  MY_UTOOLS__SELECT "}),
    );
    let v = out.value();
    assert_eq!(v["detail"], "full");
    assert_eq!(v["tools"][0]["tool"], "select");
    assert_eq!(
        v["tools"][0]["parameters_json_schema"],
        json!({"type": "object", "properties": {}})
    );
    // limit 1 over many candidates never expands, nor does an offset.
    let out = run(
        &e,
        "discover_tools",
        json!({"query": "payment", "limit": 1}),
    );
    assert_eq!(out.value()["detail"], "summary");
    let out = run(
        &e,
        "discover_tools",
        json!({"query": "my_utools__select", "offset": 1}),
    );
    assert_eq!(out.value()["detail"], "summary");
}

#[test]
fn camel_case_words_match_whole() {
    let e = engine("seed.json", Settings::default());
    let out = run(&e, "discover_tools", json!({"query": "http server"}));
    assert_eq!(
        names(&out)[0],
        ("crm".to_owned(), "getHTTPServer".to_owned())
    );
}

#[test]
fn never_searchable_fields_never_match() {
    let e = engine("seed.json", Settings::default());
    // Words found only in: an enum value, a default, group descriptions, source instructions,
    // a return schema.
    for q in [
        "zanzibar",
        "nobody",
        "invoices refunds",
        "records operations",
        "stable identifiers labels",
        "zorblax",
    ] {
        let out = run(&e, "discover_tools", json!({"query": q}));
        assert_eq!(out.value()["total"], 0, "{q}: {}", out.json);
    }
    // The same words do match once they are in a searchable field.
    let out = run(&e, "discover_tools", json!({"query": "portal"}));
    assert_eq!(out.value()["total"], 1);
}

#[test]
fn ref_is_not_resolved_but_defs_are_searched() {
    let e = engine("seed.json", Settings::default());
    // "refunded" appears only in refund_payment's $defs description.
    let out = run(&e, "discover_tools", json!({"query": "refunded"}));
    assert_eq!(names(&out), pairs(&[("billing", "refund_payment")]));
}

#[test]
fn whole_word_beats_substring_and_field_priority_decides_ties() {
    let e = engine("seed.json", Settings::default());
    // "invoice": whole word in invoice_pdf's name; whole word in payment's description;
    // substring of invoice_id (property name) elsewhere only.
    let out = run(&e, "discover_tools", json!({"query": "invoice"}));
    assert_eq!(
        names(&out),
        pairs(&[("billing", "invoice_pdf"), ("billing", "payment")])
    );
}

#[test]
fn no_grouped_tools_means_no_controls() {
    let sources = vec![toolsearch::SourceTools::direct(
        "d",
        vec![toolsearch::ToolDef::new("now", "")],
    )];
    let e = toolsearch::Engine::new(Settings::default(), sources).expect("valid");
    assert!(e.control_definitions().is_empty());
    assert!(e.instructions().is_none());
    assert!(e.handle_control("discover_tools", &json!({})).is_none());
}

#[test]
fn control_names_are_configurable_and_clashes_are_errors() {
    let mut names_cfg = toolsearch::ControlNames::default();
    names_cfg.discover = "find".into();
    let e = engine(
        "seed.json",
        Settings::default().with_names(names_cfg.clone()),
    );
    assert!(e.handle_control("discover_tools", &json!({})).is_none());
    assert!(!run(&e, "find", json!({"query": "payment"})).is_error);
    let defs = e.control_definitions();
    assert_eq!(defs[0].name, "find");
    assert!(defs[0].description.contains("describe_tool"));
    assert!(
        e.instructions()
            .expect("instructions")
            .contains("call find with")
    );
    names_cfg.discover = "now".into();
    let err = toolsearch::Engine::new(
        Settings::default().with_names(names_cfg),
        crate::common::fixture_sources("seed.json"),
    )
    .expect_err("clash with the direct tool now");
    assert!(err.to_string().contains("\"now\""), "{err}");
}

#[test]
fn limit_schema_maximum_follows_max_results() {
    let e = engine("seed.json", Settings::default().with_max_results(7));
    let defs = e.control_definitions();
    assert_eq!(defs[0].input_schema["properties"]["limit"]["maximum"], 7);
    let out = run(&e, "discover_tools", json!({"limit": 8}));
    assert!(out.is_error);
    assert_eq!(out.value()["path"], "/limit");
}

#[test]
fn snapshots_are_replaced_for_the_next_call() {
    let e = engine("seed.json", Settings::default());
    let mut sources = crate::common::fixture_sources("seed.json");
    sources.push(toolsearch::SourceTools::grouped(
        "late",
        toolsearch::GroupSpec::new("late", "Added later"),
        vec![toolsearch::ToolDef::new("zebra_feed", "Feed the zebra.")],
    ));
    assert_eq!(
        run(&e, "discover_tools", json!({"query": "zebra"})).value()["total"],
        0
    );
    e.reload(sources).expect("valid");
    assert_eq!(
        run(&e, "discover_tools", json!({"query": "zebra"})).value()["total"],
        1
    );
}

#[test]
fn an_exact_match_with_the_top_coverage_still_leaves_room_for_the_rest() {
    // Regression: exact tools were counted twice when choosing which matches to rank fully.
    let e = engine("seed.json", Settings::default());
    let out = run(
        &e,
        "discover_tools",
        json!({"query": "payment_lookup", "limit": 2}),
    );
    let v = out.value();
    assert_eq!(v["total"], 4, "{v}");
    assert_eq!(
        names(&out),
        pairs(&[("billing", "payment_lookup"), ("billing", "payment")]),
        "{v}"
    );
    assert_eq!(v["next_offset"], 2);
}
