//! BM25: analysis, scores that add up, explain, the method inside `discover_tools`, and the
//! eval metrics on hand-computed cases.

use serde_json::json;
use toolsearch::eval::{DEPTH, Scorer};
use toolsearch::search::terms;
use toolsearch::search::{Bm25Index, Scored};
use toolsearch::{Bm25Params, SearchMethod};
use toolsearch::{Directory, Engine, Settings, parse_catalog};

use crate::common::{FILES, engine, names, rank, run};

fn directory(json: &str) -> Directory {
    Directory::build(
        parse_catalog("t.json", json)
            .expect("catalog")
            .into_sources("t", false),
    )
    .expect("directory")
}

#[test]
fn analysis_splits_folds_drops_stop_words_and_stems() {
    assert_eq!(terms("readFile"), ["read", "file"]);
    assert_eq!(terms("The files of the Directories"), ["file", "directori"]);
    assert_eq!(terms("running runs"), ["run", "run"]);
    assert!(terms("the of and to").is_empty());
}

#[test]
fn stemming_finds_inflected_words_and_stop_words_alone_find_nothing() {
    let dir = directory(FILES);
    let s = Settings::default();
    let top = rank(&dir, &s, None, SearchMethod::Bm25, "reading files", 5).expect("rank");
    assert_eq!(dir.tool(top[0].tool).name, "read_file", "{top:?}");
    assert!(
        rank(&dir, &s, None, SearchMethod::Bm25, "the of", 5)
            .expect("rank")
            .is_empty()
    );
}

/// Every hit's score is what `explain` adds up from its terms, each term scoring.
fn assert_scores_are_explained(index: &Bm25Index, dir: &Directory, query: &str, hits: &[Scored]) {
    for hit in hits {
        let e = index.explain(query, hit.tool, dir);
        assert!((e.score - hit.score).abs() < 1e-4, "{e:?} vs {hit:?}");
        assert!(e.terms.iter().all(|t| t.score > 0.0 && t.idf > 0.0));
    }
}

#[test]
fn a_group_texts_terms_score_like_any_field_whether_or_not_the_tools_own_text_repeats_them() {
    // "weather" is in the first group's text (every tool of it) and in one tool's own text of
    // each group; "quality" only in the group text.
    let dir = directory(
        r#"{"groups": [
          {"name": "weather", "description": "Weather forecasts and air quality", "tools": [
            {"name": "forecast", "description": "Daily weather forecast for a city",
             "inputSchema": {"type": "object"}},
            {"name": "pollen", "description": "Pollen counts", "inputSchema": {"type": "object"}},
            {"name": "uv", "description": "UV index", "inputSchema": {"type": "object"}}]},
          {"name": "maps", "description": "Maps and routes", "tools": [
            {"name": "route", "description": "A route that avoids bad weather",
             "inputSchema": {"type": "object"}},
            {"name": "tiles", "description": "Map tiles", "inputSchema": {"type": "object"}}]}
        ]}"#,
    );
    let index = Bm25Index::build(&dir, Bm25Params::default());
    let query = "weather quality";
    let (hits, total) = index.search(query, 0..dir.tools().len() as u32, 10);
    assert_eq!(total, 4, "{hits:?}");
    assert_scores_are_explained(&index, &dir, query, &hits);
    let explained = index.explain(query, hits[0].tool, &dir);
    let weather = explained.terms.iter().find(|t| t.term == "weather");
    assert_eq!(
        weather.map(|t| t.df),
        Some(4),
        "three tools by group, one by its own text"
    );
    // The tool whose own text repeats its group's term ranks first; its group's others tie
    // and follow in canonical order; the other group's tool has the term once, in a longer
    // description, and no "quality".
    let names: Vec<&str> = hits
        .iter()
        .map(|h| dir.tool(h.tool).name.as_str())
        .collect();
    assert_eq!(names, ["forecast", "pollen", "uv", "route"]);
    assert_eq!(hits[1].score, hits[2].score);
    assert!(hits[0].score > hits[1].score);
    // Scoped to one group, only its tools.
    let maps = dir.groups()[dir.group_index("maps").expect("group") as usize]
        .tools
        .clone();
    let (scoped, scoped_total) = index.search(query, maps, 10);
    assert_eq!(scoped_total, 1);
    assert_eq!(dir.tool(scoped[0].tool).name, "route");
}

#[test]
fn scores_are_the_sum_of_the_explained_terms_and_ties_break_by_canonical_name() {
    let dir = directory(FILES);
    let index = Bm25Index::build(&dir, Bm25Params::default());
    let query = "weather forecast for the city of Paris";
    let (hits, total) = index.search(query, 0..dir.tools().len() as u32, 10);
    assert_eq!(total, 2, "only the weather tools share terms");
    assert_scores_are_explained(&index, &dir, query, &hits);
    let best = index.explain(query, hits[0].tool, &dir);
    assert_eq!(dir.tool(hits[0].tool).name, "get_forecast");
    let forecast = best
        .terms
        .iter()
        .find(|t| t.term == "forecast")
        .expect("term");
    assert_eq!(forecast.tf, [1, 1, 0, 1], "name, description, group");
    assert!(
        best.summary()
            .contains("forecast (name ×1, description ×1, group ×1)")
    );

    // Two identical tools score the same; the canonical name decides.
    let twins = directory(
        r#"{"groups":[{"name":"b","description":"x","tools":[{"name":"t","description":"send mail"}]},
                      {"name":"a","description":"x","tools":[{"name":"t","description":"send mail"}]}]}"#,
    );
    let index = Bm25Index::build(&twins, Bm25Params::default());
    let (hits, _) = index.search("mail", 0..2, 2);
    assert_eq!(hits[0].score, hits[1].score);
    assert_eq!(twins.group_of(hits[0].tool).name, "a");
}

#[test]
fn field_weights_and_parameters_change_the_ranking() {
    let dir = directory(
        r#"{"groups":[{"name":"g","description":"d","tools":[
            {"name":"invoice","description":"Create a document."},
            {"name":"create_document","description":"Make an invoice for a customer, an invoice with lines."}]}]}"#,
    );
    let top = |params: Bm25Params| {
        let s = Settings::default().with_bm25(params);
        let hits = rank(&dir, &s, None, SearchMethod::Bm25, "invoice", 2).expect("rank");
        dir.tool(hits[0].tool).name.clone()
    };
    let name_heavy = Bm25Params {
        weights: [5.0, 1.0, 0.5, 1.0],
        ..Bm25Params::default()
    };
    let description_heavy = Bm25Params {
        weights: [0.1, 3.0, 0.5, 1.0],
        ..Bm25Params::default()
    };
    assert_eq!(top(name_heavy), "invoice");
    assert_eq!(top(description_heavy), "create_document");
}

#[test]
fn discover_tools_ranks_by_bm25_when_configured() {
    let bm25 = Settings::default().with_method(SearchMethod::Bm25);
    let e = engine("seed.json", bm25);
    // Natural language that the keyword rules rank by coverage alone.
    let out = run(
        &e,
        "discover_tools",
        json!({"query": "refunds of payments"}),
    );
    let got = names(&out);
    assert_eq!(
        got[0],
        ("billing".into(), "refund_payment".into()),
        "{got:?}"
    );
    assert_eq!(out.value()["total"], got.len());
    // An exact tool name still comes first and alone gets the full entry (detail auto).
    let out = run(&e, "discover_tools", json!({"query": "payment"}));
    assert_eq!(names(&out)[0], ("billing".into(), "payment".into()));
    // Only stop words: an empty result, not an error; no words at all: the usual error.
    let out = run(&e, "discover_tools", json!({"query": "the of"}));
    assert!(!out.is_error);
    assert_eq!(out.value()["total"], 0);
    assert!(run(&e, "discover_tools", json!({"query": "?!?"})).is_error);
    // Paging and scope work as with keyword.
    let all = names(&run(
        &e,
        "discover_tools",
        json!({"query": "payment lookup refund"}),
    ));
    let second = names(&run(
        &e,
        "discover_tools",
        json!({"query": "payment lookup refund", "limit": 1, "offset": 1}),
    ));
    assert_eq!(second[0], all[1]);
    let scoped = names(&run(
        &e,
        "discover_tools",
        json!({"query": "customer payment", "group": "crm"}),
    ));
    assert!(scoped.iter().all(|(g, _)| g == "crm"), "{scoped:?}");
}

#[test]
fn semantic_without_an_embedder_is_a_clear_error() {
    // Semantic is not built yet: a clear error, not a silent fallback.
    let err = Engine::new(
        Settings::default().with_method(SearchMethod::Semantic),
        Vec::new(),
    )
    .expect_err("unsupported");
    assert!(err.to_string().contains("semantic"), "{err}");
}

#[test]
fn a_tool_ranked_twice_is_found_once() {
    let rel = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut s = Scorer::new();
    s.add(&rel(&["g/a", "g/b"]), &["g/a", "g/a", "g/x"], 1.0);
    let r = s.finish("test", 3, 1.0);
    assert!((r.recall_at(2) - 0.5).abs() < 1e-9, "{:?}", r.recall);
    let l = |i: f64| 1.0 / (i + 1.0).log2();
    assert!((r.ndcg10 - l(1.0) / (l(1.0) + l(2.0))).abs() < 1e-9);
}

#[test]
fn a_field_weighted_zero_ranks_each_tool_once() {
    let dir = directory(FILES);
    for weights in [
        [1.0, 1.0, 1.0, 0.0],
        [1.0, 0.0, 0.0, 1.0],
        [0.0, 1.0, 1.0, 1.0],
    ] {
        let index = Bm25Index::build(
            &dir,
            Bm25Params {
                weights,
                ..Bm25Params::default()
            },
        );
        for query in [
            "local files directory",
            "read a local file",
            "forecasts severe weather",
        ] {
            let (hits, total) = index.search(query, 0..dir.tools().len() as u32, 50);
            let mut ids: Vec<u32> = hits.iter().map(|h| h.tool).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), hits.len(), "{weights:?} {query}: {hits:?}");
            assert_eq!(total, hits.len(), "{weights:?} {query}");
        }
    }
}

#[test]
fn the_scorer_computes_the_design_metrics() {
    let rel = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut s = Scorer::new();
    // Query 1: the one relevant tool at rank 2.
    s.add(&rel(&["g/a"]), &["g/x", "g/a", "g/y"], 10.0);
    // Query 2: two relevant, found at ranks 1 and 7.
    s.add(
        &rel(&["g/b", "g/c"]),
        &["g/b", "g/1", "g/2", "g/3", "g/4", "g/5", "g/c"],
        30.0,
    );
    let r = s.finish("test", 10, 1.0);
    assert_eq!(r.queries, 2);
    assert!((r.recall_at(1) - (0.0 + 0.5) / 2.0).abs() < 1e-9);
    assert!((r.recall_at(5) - (1.0 + 0.5) / 2.0).abs() < 1e-9);
    assert!((r.recall_at(10) - (1.0 + 1.0) / 2.0).abs() < 1e-9);
    assert!((r.recall_at(DEPTH) - 1.0).abs() < 1e-9);
    let l = |i: f64| 1.0 / (i + 1.0).log2();
    let q1 = l(2.0) / l(1.0);
    let q2 = (l(1.0) + l(7.0)) / (l(1.0) + l(2.0));
    assert!((r.ndcg10 - (q1 + q2) / 2.0).abs() < 1e-9, "{}", r.ndcg10);
    assert!((r.mrr - (0.5 + 1.0) / 2.0).abs() < 1e-9);
    assert_eq!((r.p50_us, r.p99_us), (10.0, 30.0));
    let j = r.to_json();
    let keys: Vec<&str> = j
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "method",
            "tools",
            "queries",
            "build_ms",
            "recall@1",
            "recall@5",
            "recall@10",
            "ndcg@10",
            "mrr",
            "p50_us",
            "p99_us"
        ]
    );
}

#[test]
fn compound_names_are_split_into_the_catalogs_own_words() {
    let dir = directory(
        r#"{"groups":[{"name":"api","description":"Public data","tools":[
            {"name":"/v1/airquality","description":"Current readings by city."},
            {"name":"/v1/weather","description":"Weather, sea level and air pressure by city."},
            {"name":"/v1/nutrition","description":"Quality ratings of food for a son or daughter."},
            {"name":"/v1/season","description":"The season of a date."}]}]}"#,
    );
    let index = Bm25Index::build(&dir, Bm25Params::default());
    let all = 0..dir.tools().len() as u32;
    let (hits, _) = index.search("air quality in Paris", all.clone(), 4);
    assert_eq!(dir.tool(hits[0].tool).name, "/v1/airquality", "{hits:?}");
    let e = index.explain("air quality in Paris", hits[0].tool, &dir);
    assert!((e.score - hits[0].score).abs() < 1e-4, "{e:?}");
    let air = e.terms.iter().find(|t| t.term == "air").expect("air");
    assert_eq!(air.tf, [1, 0, 0, 0], "a part of the name");
    // The compound itself is still a term, and a word of the catalog ("season" in a
    // description) is never split, though "sea" and "son" are words of it too.
    let (hits, _) = index.search("airquality", all.clone(), 1);
    assert_eq!(dir.tool(hits[0].tool).name, "/v1/airquality");
    let (hits, _) = index.search("sea", all, 4);
    let names: Vec<&str> = hits
        .iter()
        .map(|h| dir.tool(h.tool).name.as_str())
        .collect();
    assert_eq!(names, ["/v1/weather"]);
}
