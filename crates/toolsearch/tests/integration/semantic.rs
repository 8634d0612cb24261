//! Semantic and hybrid search with a deterministic stand-in embedder (the real model is
//! tested in `toolsearch-embed`): the cache, the engine's refusal without one, ranking inside
//! `discover_tools`, and errors that reach the model as results.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolsearch::SearchIndex;
use toolsearch::search::{Corpus, SearchError};
use toolsearch::search::{
    EmbedError, Embedder, Embeddings, LearnedIndex, Query, Searcher, tool_text,
};
use toolsearch::{Directory, EmbeddingSettings, Engine, SearchMethod, Settings, parse_catalog};

use crate::common::{FILES, rank};

/// Bag of concepts: each dimension is a set of synonyms, so "fetch" and "read" agree
/// although BM25 sees different words.
const CONCEPTS: [&[&str]; 6] = [
    &["read", "fetch", "open", "contents", "load"],
    &["file", "files", "disk", "document"],
    &["write", "save", "store", "replacing"],
    &["weather", "forecast", "rain", "sunny"],
    &["alert", "alerts", "warning", "severe"],
    &["directory", "folder", "entries", "list"],
];

#[derive(Debug, Default)]
struct Concepts {
    calls: AtomicUsize,
    texts: AtomicUsize,
    fail: bool,
}

impl Embedder for Concepts {
    fn model_id(&self) -> &str {
        "test:concepts"
    }
    fn dim(&self) -> usize {
        CONCEPTS.len() + 1
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.fail {
            return Err(EmbedError("the model is unplugged".into()));
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; CONCEPTS.len() + 1];
                v[CONCEPTS.len()] = 0.05; // every text shares a little, like real models
                for w in toolsearch::words(t) {
                    for (i, c) in CONCEPTS.iter().enumerate() {
                        if c.contains(&w.as_str()) {
                            v[i] += 1.0;
                        }
                    }
                }
                v
            })
            .collect())
    }
}

fn sources(json: &str) -> Vec<toolsearch::SourceTools> {
    parse_catalog("t.json", json)
        .expect("catalog")
        .into_sources("t", false)
}

fn cache_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolsearch-sem-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn embedding_settings(dir: &std::path::Path) -> EmbeddingSettings {
    let mut e = EmbeddingSettings::default();
    e.cache_dir = Some(dir.to_owned());
    e.min_similarity = Some(0.3);
    e
}

#[test]
fn tool_text_holds_name_words_group_description_and_parameters() {
    let dir = Directory::build(sources(FILES)).expect("directory");
    let id = dir.tool_id("fs", "read_file").expect("read_file");
    let t = tool_text(&dir.doc(id), &dir.group_of(id).name, true);
    assert_eq!(
        t,
        "read file (fs): Read the contents of a file from disk. Parameters: path. Where the file lives"
    );
    assert_eq!(
        tool_text(&dir.doc(id), &dir.group_of(id).name, false),
        "read file: Read the contents of a file from disk. Parameters: path. Where the file lives"
    );
}

#[test]
fn the_cache_embeds_each_text_once_and_survives_a_restart() {
    let cache = cache_dir("once");
    let settings = embedding_settings(&cache);
    let model = Arc::new(Concepts::default());
    let missing = Embeddings::open(model.clone(), &settings, true).expect_err("an error");
    assert!(
        missing.to_string().contains("toolsearch index"),
        "{missing}"
    );
    let sem = Embeddings::open(model.clone(), &settings, false).expect("open");
    let dir = Directory::build(sources(FILES)).expect("directory");
    let mut seen = Vec::new();
    let (v, embedded) = sem
        .index(&dir, &mut |done, todo| seen.push((done, todo)))
        .expect("index");
    assert_eq!((v.len(), embedded), (5, 5));
    assert_eq!(seen.first(), Some(&(0, 5)));
    assert_eq!(seen.last(), Some(&(5, 5)));
    assert_eq!(model.texts.load(Ordering::SeqCst), 5);

    // A new process: the cache file answers; one changed tool is the only one embedded.
    let model2 = Arc::new(Concepts::default());
    let sem2 = Embeddings::open(model2.clone(), &settings, true).expect("cache exists");
    let changed = FILES.replace("Severe weather alerts", "Severe storm alerts");
    let dir2 = Directory::build(sources(&changed)).expect("directory");
    let (v2, embedded2) = sem2.index(&dir2, &mut |_, _| {}).expect("index");
    assert_eq!(embedded2, 1);
    assert_eq!(model2.texts.load(Ordering::SeqCst), 1);
    assert_eq!(
        v2.vector(0),
        v.vector(0),
        "unchanged tools keep their vectors"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

fn built(name: &str) -> (PathBuf, Arc<Embeddings>) {
    let cache = cache_dir(name);
    let settings = embedding_settings(&cache);
    let sem = Embeddings::open(Arc::new(Concepts::default()), &settings, false).expect("open");
    let dir = Directory::build(sources(FILES)).expect("directory");
    sem.index(&dir, &mut |_, _| {}).expect("index");
    (cache, Arc::new(sem))
}

#[test]
fn semantic_finds_synonyms_that_bm25_misses_and_hybrid_keeps_both() {
    let (cache, sem) = built("rank");
    let dir = Directory::build(sources(FILES)).expect("directory");
    let s = Settings::default();
    let names = |hits: &[toolsearch::search::Hit]| -> Vec<String> {
        hits.iter().map(|h| dir.tool(h.tool).name.clone()).collect()
    };
    let q = "fetch a document";
    assert!(
        rank(&dir, &s, None, SearchMethod::Bm25, q, 5)
            .expect("bm25")
            .is_empty()
    );
    let semantic = rank(&dir, &s, Some(&sem), SearchMethod::Semantic, q, 5).expect("semantic");
    assert_eq!(names(&semantic)[0], "read_file");
    assert!(semantic[0].score > 0.9 && semantic[0].score <= 1.0 + 1e-6);
    // Below min_similarity (0.3) nothing is returned: the weather tools share only the bias.
    assert!(!names(&semantic).contains(&"get_forecast".to_owned()));
    let hybrid =
        rank(&dir, &s, Some(&sem), SearchMethod::Hybrid, "severe rain", 5).expect("hybrid");
    assert_eq!(names(&hybrid)[..2], ["get_alerts", "get_forecast"]);
    let err = rank(&dir, &s, None, SearchMethod::Semantic, q, 5).expect_err("an error");
    assert!(
        matches!(err, SearchError::Unavailable(ref m) if m.contains("toolsearch index")),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

/// What use taught raises a tool under `semantic` and `hybrid`: its learned queries make a
/// second vector, and its similarity moves halfway towards that vector's when higher. The
/// learned text is embedded once, into the cache; a class with nothing learned ranks as before.
#[test]
fn learned_queries_raise_their_tool_under_the_dense_methods() {
    let (cache, sem) = built("learned");
    let dir = Directory::build(sources(FILES)).expect("directory");
    let index = SearchIndex::build(&dir);
    let s = Settings::default();
    let listing = dir.tool_id("fs", "list_directory").expect("list_directory");
    // Someone asked about the weather and then called list_directory (a use, right or not).
    let learned = LearnedIndex::build([(listing, vec!["sunny forecast with rain"])], 1.0);
    let ranked = |method, learned: Option<&LearnedIndex>| -> Vec<(String, f64)> {
        Searcher::new(&dir, &index, &s, Some(&sem))
            .with_learned(learned)
            .rank(&Query::new("forecast", method, 6))
            .expect("rank")
            .hits
            .iter()
            .map(|h| (dir.tool(h.tool).name.clone(), h.score))
            .collect()
    };
    let before = ranked(SearchMethod::Semantic, None);
    assert!(
        !before.iter().any(|(n, _)| n == "list_directory"),
        "under the floor without learning: {before:?}"
    );
    let after = ranked(SearchMethod::Semantic, Some(&learned));
    let (_, score) = after
        .iter()
        .find(|(n, _)| n == "list_directory")
        .expect("raised over the floor");
    // Its own cosine is the shared bias only; the learned vector is the query's concept.
    let own = sem
        .embed_query("forecast")
        .map(|q| {
            index
                .vectors(&dir, &sem)
                .expect("vectors")
                .query_similarities(&q, listing..listing + 1)[0]
        })
        .expect("query");
    assert!(
        (*score as f32 - toolsearch::search::raised(own, 1.0)).abs() < 0.02,
        "{own} {score}"
    );
    // Every other tool keeps its score.
    for (name, score) in &before {
        assert!(
            after.contains(&(name.clone(), *score)),
            "{name} changed: {after:?}"
        );
    }
    // Hybrid's dense side has it too (BM25 knows no "forecast" in list_directory's text).
    let hybrid = ranked(SearchMethod::Hybrid, Some(&learned));
    assert!(
        hybrid.iter().any(|(n, _)| n == "list_directory"),
        "{hybrid:?}"
    );
    assert!(
        !ranked(SearchMethod::Hybrid, None)
            .iter()
            .any(|(n, _)| n == "list_directory")
    );
    // Explain says why.
    let why = Searcher::new(&dir, &index, &s, Some(&sem))
        .with_learned(Some(&learned))
        .explain(SearchMethod::Semantic, "forecast", listing);
    assert!(
        why.contains("raised to") && why.contains("learned"),
        "{why}"
    );
    // Nothing learned for this class: the same ranking as without learning.
    let none = LearnedIndex::default();
    assert_eq!(ranked(SearchMethod::Semantic, Some(&none)), before);
    // The learned text went into the cache file: a new process embeds nothing for it.
    let model = Arc::new(Concepts::default());
    let again = Embeddings::open(model.clone(), &embedding_settings(&cache), true).expect("cache");
    again
        .text_vectors(&["sunny forecast with rain"])
        .expect("vectors");
    assert_eq!(model.texts.load(Ordering::SeqCst), 0);
    let _ = std::fs::remove_dir_all(&cache);
}

/// A question of two tasks embedded whole is mostly its first ("read" four times over): the
/// second one's tool stays under the floor. Each sentence embedded too finds both.
#[test]
fn each_sentence_of_a_question_counts_in_one_call_of_the_model() {
    let dir = Directory::build(sources(FILES)).expect("directory");
    let s = Settings::default();
    let q = "Read the file, load its contents and open the document. Will there be rain today?";
    for sentences in [true, false] {
        let cache = cache_dir(&format!("sentences-{sentences}"));
        let mut settings = embedding_settings(&cache);
        settings.sentences = Some(sentences);
        let model = Arc::new(Concepts::default());
        let sem = Embeddings::open(model.clone(), &settings, false).expect("open");
        sem.index(&dir, &mut |_, _| {}).expect("index");
        let (calls, texts) = (
            model.calls.load(Ordering::SeqCst),
            model.texts.load(Ordering::SeqCst),
        );
        for method in [SearchMethod::Semantic, SearchMethod::Hybrid] {
            let hits = rank(&dir, &s, Some(&sem), method, q, 5).expect("ranked");
            let names: Vec<&str> = hits
                .iter()
                .map(|h| dir.tool(h.tool).name.as_str())
                .collect();
            assert!(
                names.contains(&"read_file"),
                "{method:?} {sentences}: {names:?}"
            );
            assert_eq!(
                names.contains(&"get_forecast"),
                sentences,
                "{method:?}, sentences {sentences}: {names:?}"
            );
        }
        // The query and its two sentences in one call, remembered for the second method.
        assert_eq!(
            (
                model.calls.load(Ordering::SeqCst) - calls,
                model.texts.load(Ordering::SeqCst) - texts
            ),
            (1, if sentences { 3 } else { 1 })
        );
        let _ = std::fs::remove_dir_all(&cache);
    }
}

fn discover(engine: &Engine, args: Value) -> Value {
    let out = engine
        .handle_control("discover_tools", &args)
        .expect("a control");
    serde_json::from_str(&out.json).expect("json")
}

#[test]
fn discover_tools_ranks_by_the_configured_dense_method() {
    let (cache, sem) = built("engine");
    let refused = Engine::new(
        Settings::default().with_method(SearchMethod::Semantic),
        sources(FILES),
    )
    .expect_err("an error");
    assert!(
        refused.to_string().contains("toolsearch index"),
        "{refused}"
    );
    for method in [SearchMethod::Semantic, SearchMethod::Hybrid] {
        let engine = Engine::builder()
            .settings(Settings::default().with_method(method))
            .sources(sources(FILES))
            .semantic(sem.clone())
            .build()
            .expect("engine");
        let r = discover(&engine, json!({"query": "open a file from the folder"}));
        assert_eq!(r["tools"][0]["tool"], "read_file", "{method}: {r}");
        assert_eq!(r["detail"], "summary");
        assert!(r["total"].as_u64().expect("present") >= 2, "{r}");
        // The exact-name rule still puts the named tool first.
        let r = discover(&engine, json!({"query": "get_alerts"}));
        assert_eq!(r["tools"][0]["tool"], "get_alerts", "{method}: {r}");
        // Scoped to a group, only its tools come back.
        let r = discover(
            &engine,
            json!({"query": "read the forecast", "group": "weather"}),
        );
        assert!(
            r["tools"]
                .as_array()
                .expect("present")
                .iter()
                .all(|t| t["group"] == "weather"),
            "{r}"
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_embedder_is_a_tool_error_not_a_crash() {
    let (cache, _) = built("fail");
    let settings = embedding_settings(&cache);
    // The cache holds every tool, so building needs no embedding; the query then fails.
    let broken = Concepts {
        fail: true,
        ..Concepts::default()
    };
    let sem = Embeddings::open(Arc::new(broken), &settings, true).expect("cache exists");
    let engine = Engine::builder()
        .settings(Settings::default().with_method(SearchMethod::Semantic))
        .sources(sources(FILES))
        .semantic(Arc::new(sem))
        .build()
        .expect("engine");
    let r = engine
        .handle("discover_tools", json!({"query": "read a file"}))
        .await;
    assert!(r.is_error);
    let v: Value =
        serde_json::from_str(r.content[0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(v["error"], "search_unavailable", "{v}");
    assert!(
        v["message"]
            .as_str()
            .expect("present")
            .contains("unplugged"),
        "{v}"
    );
    // Browsing needs no embedding and still works.
    let r = engine.handle("list_tools", json!({})).await;
    assert!(!r.is_error);
    let _ = std::fs::remove_dir_all(&cache);
}
