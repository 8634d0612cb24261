//! Chooses `[search.hybrid]` defaults on the train half of `../shared/data`: embeds each
//! train query once, then scores every fusion rule and weight of a small grid by the mean
//! nDCG@10 of metatool and toolbench-stable.
//!
//! `cargo run --release -p toolsearch-embed --example tune_hybrid [MAX_QUERIES_PER_SET]`
//! (model from `target/models/all-MiniLM-L6-v2` or `$TOOLSEARCH_MODEL`; cache from
//! `$TOOLSEARCH_CACHE_DIR` or the default folder, built by `toolsearch index`).

use std::path::PathBuf;

use toolsearch::Settings;
use toolsearch::catalog::{Directory, load_catalog_file};
use toolsearch::config::{Fusion, HybridParams};
use toolsearch::eval::{DEPTH, Scorer, Split, load_queries, tool_key};
use toolsearch::search::hybrid::{self, fuse};
use toolsearch::search::semantic::SemanticSearch;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let max: usize = std::env::args()
        .nth(1)
        .map_or(Ok(usize::MAX), |s| s.parse())?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut settings = Settings::default();
    settings.semantic.model = Some(
        std::env::var_os("TOOLSEARCH_MODEL")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/models/all-MiniLM-L6-v2")),
    );
    let embedder = toolsearch_embed::load(&settings.semantic)?;
    let sem = SemanticSearch::open(embedder, &settings.semantic, false)?;
    let mut grid = vec![];
    for w in [0.3f32, 0.4, 0.5, 0.6, 0.7, 0.8] {
        grid.push(HybridParams {
            fusion: Fusion::Scores,
            semantic_weight: w,
            ..HybridParams::default()
        });
        for k in [10.0f32, 60.0] {
            grid.push(HybridParams {
                fusion: Fusion::Rrf,
                semantic_weight: w,
                rrf_k: k,
            });
        }
    }
    let mut totals = vec![0.0f64; grid.len()];
    for set in ["metatool", "toolbench-stable"] {
        let data = root.join("../shared/data").join(set);
        let sources = load_catalog_file(&data.join("catalog.json"))?.into_sources(set, false);
        let dir = Directory::build(sources)?;
        let vectors = dir.vectors(&sem)?;
        let bm25 = dir.bm25_index(&settings.bm25);
        let mut queries = load_queries(&data.join("queries.jsonl"), Split::Train)?;
        // Every k-th query, so a cap still covers the whole file.
        let step = queries.len().div_ceil(max.min(queries.len()).max(1));
        queries = queries.into_iter().step_by(step).collect();
        let scope = 0..dir.tools().len() as u32;
        let mut prepared = Vec::new();
        for q in &queries {
            let v = sem.embed_query(&q.query)?;
            let (dense, _) = vectors.search(&v, scope.clone(), hybrid::DEPTH, sem.min_similarity());
            let sparse = bm25.search(&q.query, scope.clone(), hybrid::DEPTH).hits;
            prepared.push((dense, sparse));
        }
        for (i, p) in grid.iter().enumerate() {
            let mut scorer = Scorer::new();
            for (q, (dense, sparse)) in queries.iter().zip(&prepared) {
                let (hits, _) = fuse(sparse, dense, p, DEPTH);
                let ids: Vec<String> = hits.iter().map(|h| tool_key(&dir, h.tool)).collect();
                scorer.add(&q.relevant, &ids, 0.0);
            }
            let r = scorer.finish("hybrid", dir.tools().len(), 0.0);
            println!(
                "{set:17} {:6} w={:.1} k={:>3} nDCG@10 {:.4} R@5 {:.4}",
                p.fusion.as_str(),
                p.semantic_weight,
                p.rrf_k,
                r.ndcg10,
                r.recall_at(5)
            );
            totals[i] += r.ndcg10 / 2.0;
        }
    }
    let best = (0..grid.len())
        .max_by(|&a, &b| totals[a].total_cmp(&totals[b]))
        .unwrap_or(0);
    println!("best mean nDCG@10 {:.4}: {:?}", totals[best], grid[best]);
    Ok(())
}
