//! Golden files: the exact bytes a model receives from each control, pinned in
//! `tests/golden/<case>.json`. Regenerate with `UPDATE_GOLDEN=1 cargo test`; review the diff.

use serde_json::{Value, json};
use toolsearch::Settings;

use crate::common::{crate_dir, engine, run};
use crate::golden_files::Golden;

struct Case {
    name: &'static str,
    max_results: usize,
    max_search_bytes: usize,
    control: &'static str,
    args: Value,
    capabilities: bool,
}

fn case(name: &'static str, control: &'static str, args: Value) -> Case {
    Case {
        name,
        max_results: 10,
        max_search_bytes: 32768,
        control,
        args,
        capabilities: false,
    }
}

/// A case on the `capabilities` surface (method bm25, its config default).
fn caps(name: &'static str, control: &'static str, args: Value) -> Case {
    Case {
        capabilities: true,
        ..case(name, control, args)
    }
}

fn cases() -> Vec<Case> {
    let long_query = "x".repeat(2049);
    vec![
        caps(
            "capabilities_search_payment",
            "search_capabilities",
            json!({"query": "refund a payment", "topKTools": 3}),
        ),
        caps(
            "capabilities_search_lenient_top_k",
            "search_capabilities",
            json!({"query": "customer", "topKTools": true, "topKSkills": -1}),
        ),
        caps(
            "capabilities_search_unknown_method",
            "search_capabilities",
            json!({"query": "customer", "method": "magic"}),
        ),
        caps(
            "capabilities_search_unknown_key",
            "search_capabilities",
            json!({"query": "customer", "topK": 3}),
        ),
        caps(
            "capabilities_skill_unknown",
            "get_skill_content",
            json!({"skillId": "pdf"}),
        ),
        case(
            "discover_payment",
            "discover_tools",
            json!({"query": "payment"}),
        ),
        case(
            "discover_customer_name_crm",
            "discover_tools",
            json!({"query": "customer name", "group": "crm"}),
        ),
        case(
            "discover_exact_canonical_auto_full",
            "discover_tools",
            json!({"query": "my_utools__select"}),
        ),
        case(
            "discover_exact_punctuation",
            "discover_tools",
            json!({"query": "?!"}),
        ),
        case(
            "discover_punctuation_no_match",
            "discover_tools",
            json!({"query": "??"}),
        ),
        case(
            "discover_full",
            "discover_tools",
            json!({"query": "invoice", "detail": "full"}),
        ),
        case(
            "discover_summary_of_exact",
            "discover_tools",
            json!({"query": "customer_name", "detail": "summary"}),
        ),
        case(
            "discover_browse_page2",
            "discover_tools",
            json!({"limit": 4, "offset": 4}),
        ),
        case(
            "discover_past_end",
            "discover_tools",
            json!({"query": "payment", "offset": 50}),
        ),
        case(
            "discover_unknown_group",
            "discover_tools",
            json!({"query": "x", "group": "nope"}),
        ),
        case(
            "discover_limit_too_big",
            "discover_tools",
            json!({"limit": 11}),
        ),
        case("discover_limit_zero", "discover_tools", json!({"limit": 0})),
        case(
            "discover_bad_detail",
            "discover_tools",
            json!({"detail": "everything"}),
        ),
        case(
            "discover_unknown_key",
            "discover_tools",
            json!({"query": "x", "filter": 1}),
        ),
        case(
            "discover_query_not_string",
            "discover_tools",
            json!({"query": 5}),
        ),
        case(
            "discover_query_too_long",
            "discover_tools",
            json!({"query": long_query}),
        ),
        case("discover_not_object", "discover_tools", json!([1, 2])),
        case(
            "discover_nulls_are_defaults",
            "discover_tools",
            json!({"query": "refund", "group": null, "limit": null}),
        ),
        case(
            "discover_integral_float_limit",
            "discover_tools",
            json!({"query": "payment", "limit": 2.0}),
        ),
        case(
            "describe_ok",
            "describe_tool",
            json!({"group": "crm", "tool": "customer_name"}),
        ),
        case(
            "describe_unknown_tool_canonical_hint",
            "describe_tool",
            json!({"group": "crm", "tool": "crm__customer_name"}),
        ),
        case(
            "describe_unknown_group",
            "describe_tool",
            json!({"group": "CRM", "tool": "customer_name"}),
        ),
        case(
            "describe_missing_tool",
            "describe_tool",
            json!({"group": "crm"}),
        ),
        case(
            "list_tools_billing_full",
            "list_tools",
            json!({"group": "billing", "detail": "full", "limit": 2}),
        ),
        case(
            "list_tools_auto_rejected",
            "list_tools",
            json!({"detail": "auto"}),
        ),
        case("list_tool_groups", "list_tool_groups", json!({})),
        case(
            "list_tool_groups_offset",
            "list_tool_groups",
            json!({"offset": 3}),
        ),
        Case {
            name: "list_tool_groups_paged",
            max_results: 2,
            ..case("", "list_tool_groups", json!({"offset": 2}))
        },
        Case {
            name: "byte_cut_summaries",
            max_search_bytes: 1024,
            ..case("", "list_tools", json!({}))
        },
        Case {
            name: "byte_cut_full",
            max_search_bytes: 1024,
            ..case(
                "",
                "discover_tools",
                json!({"query": "payment", "detail": "full"}),
            )
        },
        Case {
            name: "describe_too_large",
            max_search_bytes: 1024,
            ..case(
                "",
                "describe_tool",
                json!({"group": "big", "tool": "huge_schema"}),
            )
        },
        Case {
            name: "discover_auto_too_large_falls_back",
            max_search_bytes: 1024,
            ..case("", "discover_tools", json!({"query": "huge_schema"}))
        },
        Case {
            name: "summary_cut_at_256",
            ..case(
                "",
                "discover_tools",
                json!({"query": "verbose", "detail": "summary"}),
            )
        },
    ]
}

#[test]
fn control_results_match_golden_files() {
    let mut golden = Golden::new(crate_dir().join("tests/golden"));
    for c in cases() {
        let mut settings = Settings::default()
            .with_max_results(c.max_results)
            .with_max_search_bytes(c.max_search_bytes);
        if c.capabilities {
            settings = settings
                .with_surface(toolsearch::Surface::Capabilities)
                .with_method(toolsearch::SearchMethod::Bm25);
        }
        let e = engine("seed_golden.json", settings);
        let out = run(&e, c.control, c.args.clone());
        assert!(
            out.json.len() <= c.max_search_bytes || out.is_error,
            "{}: over budget",
            c.name
        );
        let record = json!({"control": c.control, "arguments": c.args, "is_error": out.is_error, "result": out.value()});
        let fresh = serde_json::to_string_pretty(&record).expect("json") + "\n";
        let Some(pinned) = golden.pinned(&format!("{}.json", c.name), &fresh) else {
            continue;
        };
        let pinned: Value = serde_json::from_str(&pinned).expect("golden parses");
        // Compare exact bytes (key order and escapes included), not just JSON equality.
        let want = serde_json::to_string(&pinned["result"]).expect("json");
        if want != out.json || pinned["is_error"] != out.is_error {
            golden.fail(format!("{}:\n  want {want}\n  got  {}", c.name, out.json));
        }
    }
    golden.finish();
}
