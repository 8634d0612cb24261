//! What learned text costs a query over 10k tools: `bm25`, `semantic` and `hybrid` through
//! the [`Searcher`], without and with a learned field of two sizes: the **replay** of
//! ToolBench's train questions (each a use of its relevant tools, as `eval --learn` measures
//! them), and **every** tool with four learned queries (ToolBench's questions dealt
//! round-robin) — far more than use teaches a real catalog, an upper bound. The catalog is ToolBench replicated to 10,000 tools
//! (as in the `discover` bench). The embedder is a stand-in that hashes words into 384
//! dimensions (the search cost does not depend on the vectors' values; the real model's query
//! embedding, a fixed cost beside both, is left out, so the ratio is the search's own).
//!
//! `cargo bench -p toolsearch --bench learned` prints p50/p99 per query and the ratio first,
//! then divan runs.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use toolsearch::search::{
    EmbedError, Embedder, Embeddings, LEARNED_WEIGHT, LearnedIndex, Query, Searcher,
};
use toolsearch::{Directory, EmbeddingSettings, SearchIndex, SearchMethod, Settings};

#[path = "support/percentiles.rs"]
mod percentiles;
#[path = "toolbench.rs"]
mod toolbench;
use toolbench::{queries, sources};

const DIM: usize = 384;
const TOOLS: usize = 10_000;
const LEARNED_PER_TOOL: usize = 4;

/// Each word adds a pseudo-random direction (from its hash).
#[derive(Debug)]
struct HashedWords;

impl Embedder for HashedWords {
    fn model_id(&self) -> &str {
        "bench:hashed-words"
    }
    fn dim(&self) -> usize {
        DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; DIM];
                for w in toolsearch::words(t) {
                    // FNV-1a of the word, as a seed.
                    let mut s = w.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    }) | 1;
                    for x in v.iter_mut() {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        *x += (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                    }
                }
                v
            })
            .collect())
    }
}

struct Setup {
    dir: Directory,
    index: SearchIndex,
    settings: Settings,
    semantic: Embeddings,
    /// The replay of the train questions, and every tool's four.
    learned: [LearnedIndex; 2],
}

/// ToolBench's train questions (the `eval --split` rule: the FNV-1a hash of the id is even)
/// as uses: each question with each of its relevant tools in `dir`.
fn replay(dir: &Directory) -> Vec<(u32, Vec<String>)> {
    let text =
        std::fs::read_to_string(format!("{}/queries.jsonl", toolbench::DATA)).expect("queries");
    let mut by_tool: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
    for line in text.lines() {
        let q: serde_json::Value = serde_json::from_str(line).expect("jsonl");
        let id = match &q["id"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        if hash % 2 != 0 {
            continue;
        }
        for r in q["relevant"].as_array().into_iter().flatten() {
            let Some((group, tool)) = r.as_str().and_then(|r| r.split_once('/')) else {
                continue;
            };
            if let Some(t) = dir.tool_id(group, tool) {
                by_tool
                    .entry(t)
                    .or_default()
                    .push(q["query"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    by_tool.into_iter().collect()
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let dir = Directory::build(sources(TOOLS)).expect("valid");
        let settings = Settings::default();
        let index = SearchIndex::build(&dir);
        let cache =
            std::env::temp_dir().join(format!("toolsearch-bench-learned-{}", std::process::id()));
        let mut embedding = EmbeddingSettings::default();
        embedding.cache_dir = Some(cache.clone());
        let semantic = Embeddings::open(Arc::new(HashedWords), &embedding, false).expect("open");
        index.bm25(&dir, &settings.bm25);
        index.vectors(&dir, &semantic).expect("vectors");
        let q = queries();
        let every = (0..dir.tools().len() as u32).map(|t| {
            let first = t as usize * LEARNED_PER_TOOL;
            let texts = (first..first + LEARNED_PER_TOOL)
                .map(|i| q[i % q.len()].as_str())
                .collect();
            (t, texts)
        });
        let uses = replay(&dir);
        let replayed = uses
            .iter()
            .map(|(t, qs)| (*t, qs.iter().map(String::as_str).collect()));
        let learned = [
            LearnedIndex::build(replayed, LEARNED_WEIGHT),
            LearnedIndex::build(every, LEARNED_WEIGHT),
        ];
        for l in &learned {
            l.vectors(&semantic).expect("learned vectors");
        }
        let _ = std::fs::remove_dir_all(&cache);
        Setup {
            dir,
            index,
            settings,
            semantic,
            learned,
        }
    })
}

/// `learned`: 0 none, 1 the replay, 2 every tool.
fn rank(s: &Setup, method: SearchMethod, learned: usize, i: usize) -> usize {
    Searcher::new(&s.dir, &s.index, &s.settings, Some(&s.semantic))
        .with_learned(learned.checked_sub(1).map(|l| &s.learned[l]))
        .rank(&Query::new(&queries()[i], method, 10))
        .expect("rank")
        .hits
        .len()
}

fn percentiles(method: SearchMethod, learned: usize) -> (Duration, Duration) {
    let s = setup();
    percentiles::percentiles(queries().len(), |i| rank(s, method, learned, i))
}

fn main() {
    let s = setup();
    println!(
        "{} tools; learned: the replay {} tools, every tool {} ({LEARNED_PER_TOOL} queries each); {} queries, 3 timed passes",
        s.dir.tools().len(),
        s.learned[0].tools(),
        s.learned[1].tools(),
        queries().len()
    );
    for method in [
        SearchMethod::Bm25,
        SearchMethod::Semantic,
        SearchMethod::Hybrid,
    ] {
        let (p50, p99) = percentiles(method, 0);
        let (rp50, rp99) = percentiles(method, 1);
        let (ep50, ep99) = percentiles(method, 2);
        let ratio = |d: Duration| d.as_secs_f64() / p50.as_secs_f64();
        println!(
            "{:9} none p50 {p50:>8.1?} p99 {p99:>8.1?} | replay p50 {rp50:>8.1?} p99 {rp99:>8.1?} ×{:.2} | every tool p50 {ep50:>8.1?} p99 {ep99:>8.1?} ×{:.2}",
            method.as_str(),
            ratio(rp50),
            ratio(ep50),
        );
    }
    divan::main();
}

#[divan::bench(args = ["bm25", "semantic", "hybrid"], consts = [0, 1, 2])]
fn search<const LEARNED: usize>(bencher: divan::Bencher, method: &str) {
    let s = setup();
    let method = SearchMethod::parse(method).expect("method");
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % queries().len();
        black_box(rank(s, method, LEARNED, i))
    });
}
