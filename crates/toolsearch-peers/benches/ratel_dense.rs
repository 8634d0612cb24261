//! The harness: toolsearch against Ratel (`ratel-ai-core` 0.11) for every method — `bm25`,
//! `semantic` and `hybrid`, the dense ones with the same local model, all-MiniLM-L6-v2
//! (`target/models/all-MiniLM-L6-v2`, from `scripts/fetch-model`, or `$TOOLSEARCH_MODEL`) — on
//! every set, quality and latency side by side, scored by the same code: one table per set.
//!
//! `PEER_QUERIES=N cargo bench -p toolsearch-peers --bench ratel_dense` (every k-th query so
//! that N of them cover the whole file; default 1000). `PEER_SETS=metatool` limits the sets; a
//! set written `NAME=CATALOG` ranks NAME's queries over another catalog (the distractor
//! catalogs of `research/distractors.py`, e.g. `metatool=/tmp/d/metatool-10k.json`). The
//! `multi r@10` column is recall@10 over the queries with two or more relevant tools.
//! Ratel embeds one tool at a time on the first dense search; that search is timed as its
//! build. Ours embeds into an empty cache folder (a fresh temporary one), timed as ours.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use ratel_ai_core::{EmbeddingModel, Origin, ToolRegistry};
use toolsearch::eval::{DEPTH, Report, Scorer, Split, load_queries, tool_key};
use toolsearch::search::Embeddings;
use toolsearch::{Directory, Query, SearchIndex, Searcher, load_catalog_file};
use toolsearch::{SearchMethod, Settings};

#[path = "support/ratel_registry.rs"]
mod ratel_registry;
use ratel_registry::register_all;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn row(name: &str, r: &Report, multi: &Report) {
    println!(
        "| {name} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.0} | {:.0} |",
        r.recall_at(1),
        r.recall_at(5),
        r.recall_at(10),
        r.ndcg10,
        r.mrr,
        multi.recall_at(10),
        r.p50_us,
        r.p99_us,
    );
}

fn main() {
    let n: usize = std::env::var("PEER_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let sets = std::env::var("PEER_SETS").unwrap_or_else(|_| "metatool,toolbench-stable".into());
    let model = std::env::var_os("TOOLSEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/models/all-MiniLM-L6-v2"));
    for spec in sets.split(',') {
        let (set, catalog) = spec.split_once('=').unwrap_or((spec, ""));
        let data = root().join("../shared/data").join(set);
        let catalog = if catalog.is_empty() {
            data.join("catalog.json")
        } else {
            PathBuf::from(catalog)
        };
        let mut queries = load_queries(&data.join("queries.jsonl"), Split::All).expect("queries");
        let step = queries.len().div_ceil(n.min(queries.len()).max(1));
        queries = queries.into_iter().step_by(step).collect();

        let mut settings = Settings::default();
        settings.semantic.model = Some(model.clone());
        let cache = std::env::temp_dir().join(format!("toolsearch-peer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        settings.semantic.cache_dir = Some(cache.clone());
        let embedder = toolsearch_embed::load(&settings.semantic).expect("model");
        let sem = Embeddings::open(embedder, &settings.semantic, false).expect("cache");
        let sources = load_catalog_file(&catalog)
            .expect("catalog")
            .into_sources(set, false);
        let dir = Directory::build(sources).expect("directory");
        let index = SearchIndex::build(&dir);
        let started = Instant::now();
        index.vectors(&dir, &sem).expect("embed the catalog");
        let ours_build = started.elapsed().as_secs_f64() * 1e3;
        index.bm25(&dir, &settings.bm25);
        let tools = dir.tools().len();

        let mut registry = ToolRegistry::with_embedding(EmbeddingModel::Local {
            path: model.clone(),
            query_prefix: None,
            doc_prefix: None,
            pooling: None,
        });
        register_all(&mut registry, &dir);
        let started = Instant::now();
        registry.build_embeddings().expect("Ratel embeddings");
        let ratel_build = started.elapsed().as_secs_f64() * 1e3;

        println!(
            "\n{spec}: {tools} tools, {} queries ({} with several relevant tools); embedding the catalog: toolsearch {:.1} ms/tool, Ratel {:.1} ms/tool ({:.1}x)\n",
            queries.len(),
            queries.iter().filter(|q| q.relevant.len() > 1).count(),
            ours_build / tools as f64,
            ratel_build / tools as f64,
            ratel_build / ours_build
        );
        println!(
            "| system | recall@1 | recall@5 | recall@10 | nDCG@10 | MRR | multi r@10 | p50 µs | p99 µs |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        let sem = Arc::new(sem);
        for (method, ratel_method) in [
            (SearchMethod::Bm25, ratel_ai_core::SearchMethod::Bm25),
            (
                SearchMethod::Semantic,
                ratel_ai_core::SearchMethod::Semantic,
            ),
            (SearchMethod::Hybrid, ratel_ai_core::SearchMethod::Hybrid),
        ] {
            let mut ours = Scorer::new();
            let mut peer = Scorer::new();
            let (mut ours_multi, mut peer_multi) = (Scorer::new(), Scorer::new());
            for q in &queries {
                let multi = q.relevant.len() > 1;
                let t = Instant::now();
                let hits = Searcher::new(&dir, &index, &settings, Some(&sem))
                    .rank(&Query::new(&q.query, method, DEPTH))
                    .expect("rank")
                    .hits;
                let micros = t.elapsed().as_secs_f64() * 1e6;
                let ids: Vec<String> = hits.iter().map(|h| tool_key(&dir, h.tool)).collect();
                ours.add(&q.relevant, &ids, micros);
                if multi {
                    ours_multi.add(&q.relevant, &ids, micros);
                }
                let t = Instant::now();
                let hits = registry
                    .search_with_method(&q.query, DEPTH, Origin::Direct, ratel_method)
                    .expect("Ratel search");
                let micros = t.elapsed().as_secs_f64() * 1e6;
                let ids: Vec<&str> = hits.iter().map(|h| h.tool_id.as_str()).collect();
                peer.add(&q.relevant, &ids, micros);
                if multi {
                    peer_multi.add(&q.relevant, &ids, micros);
                }
            }
            let ours = ours.finish(method.as_str(), tools, ours_build);
            let peer = peer.finish(method.as_str(), tools, ratel_build);
            let ours_multi = ours_multi.finish(method.as_str(), tools, 0.0);
            let peer_multi = peer_multi.finish(method.as_str(), tools, 0.0);
            row(&format!("toolsearch {method}"), &ours, &ours_multi);
            row(&format!("Ratel {method} (peer)"), &peer, &peer_multi);
            println!(
                "| Δ toolsearch − Ratel | | {:+.4} | {:+.4} | {:+.4} | | {:+.4} | p50 {:.2}x | |",
                ours.recall_at(5) - peer.recall_at(5),
                ours.recall_at(10) - peer.recall_at(10),
                ours.ndcg10 - peer.ndcg10,
                ours_multi.recall_at(10) - peer_multi.recall_at(10),
                peer.p50_us / ours.p50_us
            );
        }
        let _ = std::fs::remove_dir_all(&cache);
    }
}
