//! The indexed keyword ranking against the reference transcription of the rules, on random
//! catalogs and on the ToolBench catalog with its real queries; and paging end to end.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolsearch::search::KeywordIndex;
use toolsearch::search::reference::rank_all;
use toolsearch::{Directory, Engine, GroupSpec, Settings, SourceTools, ToolDef, load_catalog_file};

use crate::common::{shared_data, shared_data_or_skip};

const VOCAB: &[&str] = &[
    "pay",
    "payment",
    "Payments",
    "get",
    "getHTTPServer",
    "user",
    "UserName",
    "id",
    "a",
    "ab",
    "ba",
    "x_y",
    "refund",
    "Größe",
    "größer",
    "日本",
    "v2",
    "base64Encode",
    "HTTP",
    "é",
];
const PUNCT: &[&str] = &[" ", "_", "-", ", ", ". ", "/", "  ", "'"];

fn text(max_words: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec((0..VOCAB.len(), 0..PUNCT.len()), 0..max_words).prop_map(|parts| {
        parts
            .iter()
            .map(|(w, p)| format!("{}{}", VOCAB[*w], PUNCT[*p]))
            .collect::<String>()
    })
}

fn schema() -> impl Strategy<Value = Map<String, Value>> {
    (
        proptest::collection::vec((text(2), text(4), text(2)), 0..3),
        text(3),
    )
        .prop_map(|(props, root_desc)| {
            let mut properties = Map::new();
            for (name, desc, enum_word) in props {
                let name = if name.is_empty() {
                    "p".to_owned()
                } else {
                    name
                };
                properties.insert(
                    name,
                    json!({"type": "string", "description": desc, "enum": [enum_word]}),
                );
            }
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m.insert("description".into(), json!(root_desc));
            m.insert("properties".into(), Value::Object(properties));
            m
        })
}

fn catalog() -> impl Strategy<Value = Vec<SourceTools>> {
    let groups = ["a", "a_", "ab", "pay_ments", "User-x"];
    proptest::collection::vec((0..groups.len(), text(3), text(6), schema()), 1..25).prop_map(
        move |tools| {
            let mut by_group: BTreeMap<&str, Vec<ToolDef>> = BTreeMap::new();
            for (g, name, desc, schema) in tools {
                let name = name.trim().to_owned();
                let name = if name.is_empty() {
                    "t".to_owned()
                } else {
                    name
                };
                let list = by_group.entry(groups[g]).or_default();
                if list.iter().all(|t| t.name != name) {
                    list.push(ToolDef::new(name, desc).with_input_schema(schema));
                }
            }
            by_group
                .into_iter()
                .map(|(g, tools)| {
                    SourceTools::grouped(g, GroupSpec::new(g, format!("group {g}")), tools)
                })
                .collect()
        },
    )
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        text(5),
        Just(String::new()),
        Just("  ?! ".to_owned()),
        Just("a_u__pay".to_owned())
    ]
}

fn check_against_reference(
    dir: &Directory,
    q: &str,
    scope: std::ops::Range<u32>,
) -> Result<(), TestCaseError> {
    let want = rank_all(dir, q, scope.clone());
    let index = KeywordIndex::build(dir);
    let got = index.search(dir, q, scope.clone(), usize::MAX);
    prop_assert_eq!(got.total, want.len(), "total for {:?}", q);
    prop_assert_eq!(&got.matches, &want, "order for {:?}", q);
    for need in [1usize, 3] {
        let top = index.search(dir, q, scope.clone(), need);
        prop_assert_eq!(&top.matches[..], &want[..need.min(want.len())]);
        prop_assert_eq!(top.total, want.len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn index_ranks_exactly_like_the_reference(sources in catalog(), q in query(), group_pick in 0usize..8) {
        let dir = Directory::build(sources.clone()).expect("generated catalogs are valid");
        check_against_reference(&dir, &q, 0..dir.tools().len() as u32)?;
        if let Some(g) = dir.groups().get(group_pick) {
            check_against_reference(&dir, &q, g.tools.clone())?;
        }
        // An exact local name always comes first.
        if let Some(t) = dir.tools().first() {
            let name = t.name.clone();
            let got = KeywordIndex::build(&dir).search(&dir, &name, 0..dir.tools().len() as u32, 1);
            prop_assert!(got.matches[0].rank.exact);
        }
    }

    #[test]
    fn pages_fit_the_budget_and_chain_without_gap_or_repeat(
        sources in catalog(),
        q in query(),
        budget in 1024usize..3000,
        max_results in 1usize..8,
        full in any::<bool>(),
    ) {
        let settings = Settings::default().with_max_search_bytes(budget).with_max_results(max_results);
        let engine = Engine::new(settings, sources.clone()).expect("valid");
        let snap = engine.snapshot();
        let dir = snap.directory();
        let want: Vec<(String, String)> = rank_all(dir, &q, 0..dir.tools().len() as u32)
            .iter()
            .map(|m| (dir.group_of(m.tool).name.clone(), dir.tool(m.tool).name.clone()))
            .collect();
        let detail = if full { "full" } else { "summary" };
        let mut offset = 0usize;
        let mut seen = Vec::new();
        for _ in 0..=want.len() + 1 {
            let out = engine
                .handle_control("discover_tools", &json!({"query": q, "detail": detail, "offset": offset}))
                .expect("control");
            let v = out.value();
            if out.is_error {
                // Only a punctuation-only query with no exact match, or a first entry larger than
                // the whole budget, may fail.
                let code = v["error"].as_str().unwrap_or_default().to_owned();
                prop_assert!(code == "entry_too_large" || (code == "invalid_request" && want.is_empty()), "{}", out.json);
                break;
            }
            prop_assert!(out.json.len() <= budget, "{} > {}", out.json.len(), budget);
            prop_assert_eq!(v["total"].as_u64(), Some(want.len() as u64));
            let tools = v["tools"].as_array().expect("tools");
            prop_assert!(tools.len() <= max_results);
            for t in tools {
                seen.push((t["group"].as_str().expect("g").to_owned(), t["tool"].as_str().expect("t").to_owned()));
            }
            match v["next_offset"].as_u64() {
                Some(n) => {
                    prop_assert_eq!(n as usize, offset + tools.len());
                    prop_assert!(!tools.is_empty());
                    offset = n as usize;
                }
                None => {
                    prop_assert_eq!(&seen, &want);
                    break;
                }
            }
        }
        prop_assert_eq!(&seen[..], &want[..seen.len()]);
    }
}

/// The ToolBench catalog with its own queries: the index agrees with the reference.
#[test]
fn toolbench_queries_rank_like_the_reference() {
    let Some(path) = shared_data_or_skip("toolbench-stable/catalog.json") else {
        return;
    };
    let sources = load_catalog_file(&path)
        .expect("catalog")
        .into_sources("toolbench", false);
    let dir = Directory::build(sources.clone()).expect("valid");
    let queries =
        std::fs::read_to_string(shared_data("toolbench-stable/queries.jsonl")).expect("queries");
    let all = 0..dir.tools().len() as u32;
    let index = KeywordIndex::build(&dir);
    for line in queries.lines().step_by(40) {
        let q: Value = serde_json::from_str(line).expect("jsonl");
        let q = q["query"].as_str().expect("query");
        let want = rank_all(&dir, q, all.clone());
        let got = index.search(&dir, q, all.clone(), 20);
        assert_eq!(got.total, want.len(), "{q}");
        assert_eq!(got.matches, want[..20.min(want.len())], "{q}");
    }
}
