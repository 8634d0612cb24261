//! Chooses `[search.hybrid]` defaults on the train half of `../shared/data`: embeds each
//! query once, scores every fusion rule and setting of a small grid by the mean nDCG@10 of
//! metatool and toolbench-stable on the train half, then reports the best and the baselines
//! on the test half, and leave-one-dataset-out: the best on each set's train half, measured
//! on the other set's test half.
//!
//! `cargo run --release -p toolsearch-embed --example tune_hybrid [MAX_QUERIES_PER_SET]`
//! (model from `target/models/all-MiniLM-L6-v2` or `$TOOLSEARCH_MODEL`; cache from
//! `$TOOLSEARCH_CACHE_DIR` or the default folder, built by `toolsearch index`).

mod common;

use toolsearch::SearchIndex;
use toolsearch::eval::{DEPTH, Scorer, Split, load_queries, tool_key};
use toolsearch::search::Embeddings;
use toolsearch::search::{FUSION_DEPTH, fuse};
use toolsearch::{Directory, Fusion, HybridParams, load_catalog_file};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let max: usize = std::env::args()
        .nth(1)
        .map_or(Ok(usize::MAX), |s| s.parse())?;
    let root = common::root();
    let settings = common::settings();
    let embedder = toolsearch_embed::load(&settings.semantic)?;
    let sem = Embeddings::open(embedder, &settings.semantic, false)?;
    let mut grid = vec![];
    for w in [0.5f32, 0.6, 0.67, 0.75] {
        for confidence_scale in [0.7f32, 1.0, 1.4, 2.0, 2.8] {
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
    // The rule of before, for comparison: BM25's confidence read in raw points (scale 10).
    let raw = grid.len();
    grid.push(HybridParams {
        fusion: Fusion::Adaptive,
        semantic_weight: 0.67,
        confidence_scale: 10.0,
        confidence_slope: 7.0,
        ..HybridParams::default()
    });
    // nDCG@10 per grid entry, set and half ([train, test]).
    const SETS: [&str; 2] = ["metatool", "toolbench-stable"];
    let mut ndcg = vec![[[0.0f64; 2]; 2]; grid.len()];
    for (si, set) in SETS.into_iter().enumerate() {
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
                    vectors.search_query(&v, scope.clone(), FUSION_DEPTH, f32::MIN, None);
                let (sparse, _) = bm25.search(&q.query, scope.clone(), FUSION_DEPTH);
                prepared.push((dense, sparse));
            }
            for (i, p) in grid.iter().enumerate() {
                let mut scorer = Scorer::new();
                for (q, (dense, sparse)) in queries.iter().zip(&prepared) {
                    let (hits, _) = fuse(
                        sparse,
                        dense,
                        sem.min_similarity(),
                        p,
                        DEPTH,
                        if i == raw { 1.0 } else { bm25.rare_idf() },
                    );
                    let ids: Vec<String> = hits.iter().map(|h| tool_key(&dir, h.tool)).collect();
                    scorer.add(&q.relevant, &ids, 0.0);
                }
                let r = scorer.finish("hybrid", dir.tools().len(), 0.0);
                ndcg[i][si][half] = r.ndcg10;
                if half == 0 {
                    println!("{set:17} train {} nDCG@10 {:.4}", label(p), r.ndcg10);
                }
            }
        }
    }
    let mean = |i: usize, half: usize| (ndcg[i][0][half] + ndcg[i][1][half]) / 2.0;
    let best_by = |key: &dyn Fn(usize) -> f64| {
        (0..raw)
            .max_by(|&a, &b| key(a).total_cmp(&key(b)))
            .unwrap_or(0)
    };
    let best = best_by(&|i| mean(i, 0));
    let show = |what: &str, p: &HybridParams| match grid.iter().position(|g| g == p) {
        Some(i) => println!(
            "{what}: {} nDCG@10 train {:.4} / {:.4}, test {:.4} / {:.4} (metatool / toolbench-stable), mean test {:.4}",
            label(p),
            ndcg[i][0][0],
            ndcg[i][1][0],
            ndcg[i][0][1],
            ndcg[i][1][1],
            mean(i, 1)
        ),
        None => println!("{what}: {} (not in the grid)", label(p)),
    };
    show("best on both train halves", &grid[best]);
    show("default", &HybridParams::default());
    show("before (BM25 in raw points)", &grid[raw]);
    // Leave one dataset out: fitted on one set's train half, reported on the other's test half.
    for (fit, other) in [(0, 1), (1, 0)] {
        let b = best_by(&|i| ndcg[i][fit][0]);
        println!(
            "best on {} train: {} -> {} test nDCG@10 {:.4} (its own test {:.4})",
            SETS[fit],
            label(&grid[b]),
            SETS[other],
            ndcg[b][other][1],
            ndcg[b][fit][1]
        );
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
