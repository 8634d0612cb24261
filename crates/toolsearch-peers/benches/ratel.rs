//! toolsearch against Ratel (`ratel-ai-core` 0.11, its BM25) on `../shared/data`, in one run:
//! the same catalog, the same queries, the same metric code (`toolsearch::eval::Scorer`), the
//! same machine.
//!
//! `cargo bench -p toolsearch-peers --bench ratel` prints a table per data set. Ratel's tools are
//! registered as `group/tool` ids with the tool's name, description and input schema (what its
//! `ToolRegistry` indexes); its search is `ToolRegistry::search(query, 20)`, timed per query
//! like ours (`toolsearch::search::rank`, BM25, default parameters). Set `PEER_QUERIES=N` to
//! use only the first N queries of each file, `PEER_DATA=DIR` to read the sets from `DIR`
//! instead of `../shared/data` (e.g. the derived sets of `research/compound_names.py`).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::time::Instant;

use toolsearch::eval::{DEPTH, Report, Scorer, Split, load_queries, tool_key};
use toolsearch::{Directory, Query, SearchIndex, Searcher, load_catalog_file};
use toolsearch::{SearchMethod, Settings};

#[path = "support/ratel_registry.rs"]
mod ratel_registry;
use ratel_registry::register_all;

fn data(set: &str) -> PathBuf {
    if let Some(root) = std::env::var_os("PEER_DATA") {
        return PathBuf::from(root).join(set);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(set)
}

fn row(name: &str, r: &Report) {
    println!(
        "| {name} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.1} | {:.1} | {:.1} |",
        r.recall_at(1),
        r.recall_at(5),
        r.recall_at(10),
        r.ndcg10,
        r.mrr,
        r.p50_us,
        r.p99_us,
        r.build_ms
    );
}

fn main() {
    let limit: usize = std::env::var("PEER_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    for set in ["metatool", "toolbench-stable"] {
        let dir_path = data(set);
        let mut queries =
            load_queries(&dir_path.join("queries.jsonl"), Split::All).expect("queries");
        queries.truncate(limit);

        // toolsearch: load → directory → BM25 index.
        let settings = Settings::default();
        let sources = load_catalog_file(&dir_path.join("catalog.json"))
            .expect("catalog")
            .into_sources(set, false);
        let started = Instant::now();
        let dir = Directory::build(sources).expect("directory");
        let index = SearchIndex::build(&dir);
        index.bm25(&dir, &settings.bm25);
        let build_ms = started.elapsed().as_secs_f64() * 1e3;
        let search = Searcher::new(&dir, &index, &settings, None);
        let mut ours = Scorer::new();
        for q in &queries {
            let t = Instant::now();
            let hits = search
                .rank(&Query::new(&q.query, SearchMethod::Bm25, DEPTH))
                .expect("rank")
                .hits;
            let micros = t.elapsed().as_secs_f64() * 1e6;
            let ids: Vec<String> = hits.iter().map(|h| tool_key(&dir, h.tool)).collect();
            ours.add(&q.relevant, &ids, micros);
        }
        let ours = ours.finish("bm25", dir.tools().len(), build_ms);

        // Ratel: register the same tools; its index is built on the first search, so that
        // search is timed as the build (with one query's cost in it).
        let mut registry = ratel_ai_core::ToolRegistry::new();
        register_all(&mut registry, &dir);
        let started = Instant::now();
        let _ = registry.search("warm up", 1);
        let ratel_build_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut peer = Scorer::new();
        for q in &queries {
            let t = Instant::now();
            let hits = registry.search(&q.query, DEPTH);
            let micros = t.elapsed().as_secs_f64() * 1e6;
            let ids: Vec<&str> = hits.iter().map(|h| h.tool_id.as_str()).collect();
            peer.add(&q.relevant, &ids, micros);
        }
        let peer = peer.finish("ratel bm25", dir.tools().len(), ratel_build_ms);

        println!(
            "\n{set}: {} tools, {} queries\n",
            dir.tools().len(),
            queries.len()
        );
        println!(
            "| system | recall@1 | recall@5 | recall@10 | nDCG@10 | MRR | p50 µs | p99 µs | build ms |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        row("toolsearch bm25", &ours);
        row("Ratel bm25 (peer)", &peer);
        println!(
            "\nratio (Ratel / toolsearch): p50 {:.1}x, p99 {:.1}x; nDCG@10 {:+.4}, recall@5 {:+.4}",
            peer.p50_us / ours.p50_us,
            peer.p99_us / ours.p99_us,
            ours.ndcg10 - peer.ndcg10,
            ours.recall_at(5) - peer.recall_at(5)
        );
    }
}
