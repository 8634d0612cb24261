//! Chooses `[search.hybrid]` defaults on the train half of `../shared/data`: embeds each
//! query once, scores every fusion rule and setting of a small grid by the mean nDCG@10 of
//! metatool and toolbench-stable on the train half, then reports the best and the baselines
//! on the test half.
//!
//! `cargo run --release -p toolsearch-embed --example tune_hybrid [MAX_QUERIES_PER_SET]`
//! (model from `target/models/all-MiniLM-L6-v2` or `$TOOLSEARCH_MODEL`; cache from
//! `$TOOLSEARCH_CACHE_DIR` or the default folder, built by `toolsearch index`).

use std::path::PathBuf;

use toolsearch::catalog::{Directory, load_catalog_file};
use toolsearch::config::{Fusion, HybridParams};
use toolsearch::eval::{DEPTH, Scorer, Split, load_queries, tool_key};
use toolsearch::search::hybrid::{self, fuse};
use toolsearch::search::semantic::SemanticSearch;
use toolsearch::{SearchIndex, Settings};

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
    for w in [0.5f32, 0.6, 0.67, 0.75] {
        for confidence_scale in [5.0f32, 10.0, 20.0] {
            for confidence_slope in [3.0f32, 5.0, 7.0, 9.0] {
                grid.push(HybridParams {
                    fusion: Fusion::Adaptive,
                    semantic_weight: w,
                    confidence_scale,
                    confidence_slope,
                    ..HybridParams::default()
                });
            }
        }
    }
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
                ..HybridParams::default()
            });
        }
    }
    // [train, test] mean nDCG@10 over the two sets, per grid entry.
    let mut totals = vec![[0.0f64; 2]; grid.len()];
    for set in ["metatool", "toolbench-stable"] {
        let data = root.join("../shared/data").join(set);
        let sources = load_catalog_file(&data.join("catalog.json"))?.into_sources(set, false);
        let dir = Directory::build(sources)?;
        let index = SearchIndex::build(&dir);
        let vectors = index.vectors(&dir, &sem)?;
        let bm25 = index.bm25(&dir, &settings.bm25);
        for (half, split) in [Split::Train, Split::Test].into_iter().enumerate() {
            let mut queries = load_queries(&data.join("queries.jsonl"), split)?;
            // Every k-th query, so a cap still covers the whole file.
            let step = queries.len().div_ceil(max.min(queries.len()).max(1));
            queries = queries.into_iter().step_by(step).collect();
            let scope = 0..dir.tools().len() as u32;
            let mut prepared = Vec::new();
            for q in &queries {
                let v = sem.embed_query(&q.query)?;
                let (dense, _) =
                    vectors.search_query(&v, scope.clone(), hybrid::DEPTH, f32::MIN, None);
                let (sparse, _) = bm25.search(&q.query, scope.clone(), hybrid::DEPTH);
                prepared.push((dense, sparse));
            }
            for (i, p) in grid.iter().enumerate() {
                let mut scorer = Scorer::new();
                for (q, (dense, sparse)) in queries.iter().zip(&prepared) {
                    let (hits, _) = fuse(sparse, dense, sem.min_similarity(), p, DEPTH);
                    let ids: Vec<String> = hits.iter().map(|h| tool_key(&dir, h.tool)).collect();
                    scorer.add(&q.relevant, &ids, 0.0);
                }
                let r = scorer.finish("hybrid", dir.tools().len(), 0.0);
                totals[i][half] += r.ndcg10 / 2.0;
                if half == 0 {
                    println!("{set:17} train {} nDCG@10 {:.4}", label(p), r.ndcg10);
                }
            }
        }
    }
    let best = (0..grid.len())
        .max_by(|&a, &b| totals[a][0].total_cmp(&totals[b][0]))
        .unwrap_or(0);
    for (what, p) in [
        ("best on train", grid[best]),
        ("default", HybridParams::default()),
    ] {
        let i = grid.iter().position(|g| *g == p);
        match i {
            Some(i) => println!(
                "{what}: {} mean nDCG@10 train {:.4} test {:.4}",
                label(&p),
                totals[i][0],
                totals[i][1]
            ),
            None => println!("{what}: {} (not in the grid)", label(&p)),
        }
    }
    Ok(())
}

fn label(p: &HybridParams) -> String {
    match p.fusion {
        Fusion::Rrf => format!("rrf w={:.2} k={}", p.semantic_weight, p.rrf_k),
        Fusion::Scores => format!("scores w={:.2}", p.semantic_weight),
        Fusion::Adaptive => format!(
            "adaptive w={:.2} scale={} slope={}",
            p.semantic_weight, p.confidence_scale, p.confidence_slope
        ),
    }
}
