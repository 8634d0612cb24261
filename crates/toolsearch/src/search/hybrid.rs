//! Fusion of the BM25 and semantic rankings for `hybrid`.
//!
//! Two rules, chosen by `[search.hybrid] fusion` (BENCHMARKS.md has what each measured):
//!
//! - `rrf`: reciprocal-rank fusion, `(1 − w) / (k + rank_bm25) + w / (k + rank_semantic)`,
//!   ranks from 1, a side that did not return the tool adds nothing.
//! - `scores`: `(1 − w) · bm25 / best_bm25 + w · (cos − floor) / (best_cos − floor)`, each side
//!   scaled to 0..1 over the query's candidates (`floor` the lowest candidate cosine), so
//!   that how far apart the scores are counts, not only their order.

use rustc_hash::FxHashMap;

use crate::catalog::ToolId;
use crate::config::{Fusion, HybridParams};
use crate::search::bm25::Scored;
use crate::search::semantic::top_k;

/// How many candidates each side contributes before fusion (at least the page asked for).
pub const DEPTH: usize = 100;

/// The best `need` tools of two rankings fused by `params`, best first, and the number of
/// distinct candidates.
pub fn fuse(
    bm25: &[Scored],
    semantic: &[Scored],
    params: &HybridParams,
    need: usize,
) -> (Vec<Scored>, usize) {
    let w = params.semantic_weight;
    let mut fused: FxHashMap<ToolId, f32> = FxHashMap::default();
    match params.fusion {
        Fusion::Rrf => {
            let k = params.rrf_k;
            for (side, weight) in [(bm25, 1.0 - w), (semantic, w)] {
                for (rank, h) in side.iter().enumerate() {
                    *fused.entry(h.tool).or_default() += weight / (k + rank as f32 + 1.0);
                }
            }
        }
        Fusion::Scores => {
            let best = bm25.iter().map(|h| h.score).fold(0.0f32, f32::max);
            if best > 0.0 {
                for h in bm25 {
                    *fused.entry(h.tool).or_default() += (1.0 - w) * h.score / best;
                }
            }
            let hi = semantic.iter().map(|h| h.score).fold(f32::MIN, f32::max);
            let lo = semantic.iter().map(|h| h.score).fold(f32::MAX, f32::min);
            let span = hi - lo;
            for h in semantic {
                let scaled = if span > 0.0 {
                    (h.score - lo) / span
                } else {
                    1.0
                };
                *fused.entry(h.tool).or_default() += w * scaled;
            }
        }
    }
    let total = fused.len();
    let mut hits: Vec<Scored> = fused
        .into_iter()
        .map(|(tool, score)| Scored { tool, score })
        .collect();
    top_k(&mut hits, need);
    (hits, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(tool: ToolId, score: f32) -> Scored {
        Scored { tool, score }
    }

    #[test]
    fn rrf_rewards_agreement_and_weights_sides() {
        let bm25 = [s(1, 9.0), s(2, 5.0), s(3, 1.0)];
        let sem = [s(2, 0.9), s(3, 0.8), s(4, 0.7)];
        let p = HybridParams {
            fusion: Fusion::Rrf,
            semantic_weight: 0.5,
            rrf_k: 60.0,
        };
        let (hits, total) = fuse(&bm25, &sem, &p, 10);
        assert_eq!(total, 4);
        // Found by both sides beats first on one side only: 2 (1/62 + 1/61), 3 (1/63 + 1/62),
        // then 1 (1/61) and 4 (1/63).
        assert_eq!(hits[0].tool, 2);
        assert_eq!(
            hits.iter().map(|h| h.tool).collect::<Vec<_>>(),
            [2, 3, 1, 4]
        );
        let only_bm25 = HybridParams {
            semantic_weight: 0.0,
            ..p
        };
        let (hits, _) = fuse(&bm25, &sem, &only_bm25, 2);
        assert_eq!(hits.iter().map(|h| h.tool).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn scores_uses_the_gaps_not_only_the_order() {
        // BM25 is sure of 1 (far ahead); semantic barely prefers 2 over 1.
        let bm25 = [s(1, 10.0), s(2, 1.0)];
        let sem = [s(2, 0.61), s(1, 0.60), s(5, 0.10)];
        let p = HybridParams {
            fusion: Fusion::Scores,
            semantic_weight: 0.5,
            rrf_k: 60.0,
        };
        let (hits, total) = fuse(&bm25, &sem, &p, 3);
        assert_eq!(total, 3);
        assert_eq!(hits.iter().map(|h| h.tool).collect::<Vec<_>>(), [1, 2, 5]);
        // 1: 0.5·1 + 0.5·(0.50/0.51); 2: 0.5·0.1 + 0.5·1.
        assert!((hits[0].score - (0.5 + 0.5 * 0.50 / 0.51)).abs() < 1e-5);
        assert!((hits[1].score - 0.55).abs() < 1e-5);
        assert_eq!(hits[2].score, 0.0);
    }
}
