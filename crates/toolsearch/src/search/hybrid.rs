//! Fusion of the BM25 and semantic rankings for `hybrid`.
//!
//! Three rules, chosen by `[search.hybrid] fusion` (BENCHMARKS.md has what each measured):
//!
//! - `rrf` (the default): reciprocal-rank fusion, `(1 − w) / (k + rank_bm25) + w / (k +
//!   rank_semantic)`, ranks from 1, a side that did not return the tool adds nothing.
//! - `scores`: `(1 − w) · bm25 / best_bm25 + w · (cos − floor) / (best_cos − floor)`, each side
//!   scaled to 0..1 over the query's candidates (`floor` the lowest candidate cosine), so
//!   that how far apart the scores are counts, not only their order.
//! - `adaptive`: `scores` with `w` chosen per query from how sure BM25 is.
//!   Scaling by the best score hides that: a query whose best BM25 hit matched two rare words
//!   and one that matched a single common word both get 1.0 on the BM25 side. The absolute best
//!   score tells them apart. It is read in units of the index's [rare-word
//!   IDF](super::bm25::Bm25Index::rare_idf) (`ln(1 + (N − ½) / 1.5)` for N tools), because
//!   IDF grows with the log of the catalog's size: in raw points the same match looks surer in
//!   a larger catalog, and the fusion leaned on BM25 more the more tools there were. So
//!   `confidence = b / (b + confidence_scale)` with `b = best / rare_idf`, and
//!   `w = σ(logit(semantic_weight) − confidence_slope · (confidence − ½))`: no word match gives
//!   the embedding nearly all the say, a strong one gives BM25 most of it. Its values
//!   (`semantic_weight` 0.6, `confidence_scale` 2, `confidence_slope` 7) were fitted on the
//!   train halves of metatool and ToolBench (`tune_hybrid`); over all six shared sets it won on
//!   those two and lost on two others, so the default is textbook `rrf`.

use rustc_hash::FxHashMap;

use super::Scored;
use crate::catalog::ToolId;
use crate::config::{Fusion, HybridParams};
use crate::search::semantic::top_k;

/// How many candidates each side contributes before fusion (at least the page asked for).
pub const FUSION_DEPTH: usize = 100;

/// The best `need` tools of two rankings fused by `params`, best first, and the number of
/// distinct candidates.
///
/// `semantic` is the query's top tools by cosine *without* the similarity floor: the candidates
/// are BM25's hits and the tools whose cosine reaches `min_similarity`, but the semantic side
/// is scaled over the whole list, so that how far the best tools stand above the rest does not
/// depend on where the floor cuts (measured: scaling over the floored list costs metatool 1.2
/// points nDCG@10 with the adaptive rule).
///
/// `rare_idf` is the BM25 index's [`rare_idf`](super::bm25::Bm25Index::rare_idf), the unit
/// [`Fusion::Adaptive`] reads BM25's best score in.
pub fn fuse(
    bm25: &[Scored],
    semantic: &[Scored],
    min_similarity: f32,
    params: &HybridParams,
    need: usize,
    rare_idf: f32,
) -> (Vec<Scored>, usize) {
    let mut fused: FxHashMap<ToolId, f32> = FxHashMap::default();
    match params.fusion {
        Fusion::Rrf => {
            let w = params.semantic_weight;
            let k = params.rrf_k;
            let passing = semantic.partition_point(|h| h.score >= min_similarity);
            for (side, weight) in [(bm25, 1.0 - w), (&semantic[..passing], w)] {
                for (rank, h) in side.iter().enumerate() {
                    *fused.entry(h.tool).or_default() += weight / (k + rank as f32 + 1.0);
                }
            }
        }
        Fusion::Scores | Fusion::Adaptive => {
            let best = bm25.iter().map(|h| h.score).fold(0.0f32, f32::max);
            let w = match params.fusion {
                Fusion::Adaptive => adaptive_weight(params, best / rare_idf.max(f32::EPSILON)),
                _ => params.semantic_weight,
            };
            if best > 0.0 {
                for h in bm25 {
                    *fused.entry(h.tool).or_default() += (1.0 - w) * h.score / best;
                }
            }
            let hi = semantic.iter().map(|h| h.score).fold(f32::MIN, f32::max);
            let lo = semantic.iter().map(|h| h.score).fold(f32::MAX, f32::min);
            let span = hi - lo;
            for h in semantic {
                if h.score < min_similarity && !fused.contains_key(&h.tool) {
                    continue;
                }
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

/// The semantic weight [`Fusion::Adaptive`] gives a query whose best BM25 score is `best`
/// rare-word IDFs (0 when BM25 found nothing).
pub fn adaptive_weight(params: &HybridParams, best: f32) -> f32 {
    let w = params.semantic_weight.clamp(1e-6, 1.0 - 1e-6);
    let confidence = best.max(0.0) / (best.max(0.0) + params.confidence_scale);
    let logit = (w / (1.0 - w)).ln() - params.confidence_slope * (confidence - 0.5);
    1.0 / (1.0 + (-logit).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(tool: ToolId, score: f32) -> Scored {
        Scored { tool, score }
    }

    /// The `adaptive` rule with its fitted values.
    fn adaptive() -> HybridParams {
        HybridParams {
            fusion: Fusion::Adaptive,
            semantic_weight: 0.6,
            ..HybridParams::default()
        }
    }

    #[test]
    fn the_default_is_textbook_reciprocal_rank_fusion() {
        let p = HybridParams::default();
        assert_eq!(p.fusion, Fusion::Rrf);
        assert_eq!((p.rrf_k, p.semantic_weight), (60.0, 0.5));
        assert_eq!((p.confidence_scale, p.confidence_slope), (2.0, 7.0));
        // And no similarity floor: every tool is a semantic candidate.
        let e = crate::config::EmbeddingSettings::default();
        assert_eq!(e.min_similarity(), -1.0);
    }

    #[test]
    fn rrf_rewards_agreement_and_weights_sides() {
        let bm25 = [s(1, 9.0), s(2, 5.0), s(3, 1.0)];
        let sem = [s(2, 0.9), s(3, 0.8), s(4, 0.7)];
        let p = HybridParams {
            fusion: Fusion::Rrf,
            semantic_weight: 0.5,
            rrf_k: 60.0,
            ..HybridParams::default()
        };
        let (hits, total) = fuse(&bm25, &sem, -1.0, &p, 10, 1.0);
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
        let (hits, _) = fuse(&bm25, &sem, -1.0, &only_bm25, 2, 1.0);
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
            ..HybridParams::default()
        };
        let (hits, total) = fuse(&bm25, &sem, -1.0, &p, 3, 1.0);
        assert_eq!(total, 3);
        assert_eq!(hits.iter().map(|h| h.tool).collect::<Vec<_>>(), [1, 2, 5]);
        // 1: 0.5·1 + 0.5·(0.50/0.51); 2: 0.5·0.1 + 0.5·1.
        assert!((hits[0].score - (0.5 + 0.5 * 0.50 / 0.51)).abs() < 1e-5);
        assert!((hits[1].score - 0.55).abs() < 1e-5);
        assert_eq!(hits[2].score, 0.0);
    }

    #[test]
    fn adaptive_weight_follows_how_sure_bm25_is() {
        let p = adaptive();
        // At best == confidence_scale the configured weight holds.
        assert!((adaptive_weight(&p, p.confidence_scale) - p.semantic_weight).abs() < 1e-5);
        // No word match: the embedding has nearly all the say; a strong match: BM25 has most.
        let none = adaptive_weight(&p, 0.0);
        let weak = adaptive_weight(&p, 0.2 * p.confidence_scale);
        let strong = adaptive_weight(&p, 4.0 * p.confidence_scale);
        assert!(none > 0.95 && none > weak, "{none} {weak}");
        assert!(weak > p.semantic_weight && strong < 0.4, "{weak} {strong}");
        // Slope 0 is a fixed weight.
        let flat = HybridParams {
            confidence_slope: 0.0,
            ..p
        };
        for best in [0.0, 3.0, 100.0] {
            assert!((adaptive_weight(&flat, best) - flat.semantic_weight).abs() < 1e-5);
        }
    }

    #[test]
    fn adaptive_fusion_ranks_by_the_absolute_bm25_score() {
        // Both queries: BM25 prefers 1 over 2 by the same ratio, semantic prefers 2.
        let sem = [s(2, 0.70), s(1, 0.55), s(3, 0.20)];
        let p = adaptive();
        // A catalog of about 2,500 tools: one rare word weighs 7.4.
        let unit = 7.4;
        let weak = [s(1, 1.0), s(2, 0.5)];
        let strong = [s(1, 40.0), s(2, 20.0)];
        let order = |bm25: &[Scored]| {
            let (hits, _) = fuse(bm25, &sem, -1.0, &p, 3, unit);
            hits.iter().map(|h| h.tool).collect::<Vec<_>>()
        };
        assert_eq!(order(&weak), [2, 1, 3]);
        assert_eq!(order(&strong), [1, 2, 3]);
        // `scores` with a fixed weight cannot tell the two apart.
        let fixed = HybridParams {
            fusion: Fusion::Scores,
            ..p
        };
        let a = fuse(&weak, &sem, -1.0, &fixed, 3, unit).0;
        let b = fuse(&strong, &sem, -1.0, &fixed, 3, unit).0;
        assert_eq!(
            a.iter().map(|h| h.tool).collect::<Vec<_>>(),
            b.iter().map(|h| h.tool).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_same_match_weighs_the_same_in_a_larger_catalog() {
        // In a catalog four times larger every IDF, and so every BM25 score, is larger; read in
        // rare-word IDFs the query is as sure as before and is fused the same.
        let sem = [s(2, 0.70), s(1, 0.55), s(3, 0.20)];
        let p = adaptive();
        let (small, large) = (7.4f32, 8.8f32);
        let bm25 = [s(1, 9.0), s(2, 4.0)];
        let grown: Vec<Scored> = bm25
            .iter()
            .map(|h| s(h.tool, h.score * large / small))
            .collect();
        let a = fuse(&bm25, &sem, -1.0, &p, 3, small).0;
        let b = fuse(&grown, &sem, -1.0, &p, 3, large).0;
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.tool, y.tool);
            assert!(
                (x.score - y.score).abs() < 1e-5,
                "{} vs {}",
                x.score,
                y.score
            );
        }
        // Read in raw points, the grown scores would have leaned on BM25 more.
        let raw = fuse(&grown, &sem, -1.0, &p, 3, small).0;
        assert!(
            raw.iter()
                .zip(&a)
                .any(|(x, y)| (x.score - y.score).abs() > 1e-3)
        );
    }

    #[test]
    fn the_floor_limits_candidates_but_not_the_scale() {
        // 7 and 8 are under the floor: 8 is no candidate, 7 is (BM25 found it); the lowest
        // cosine (0.0) still sets the scale of the semantic side.
        let sem = [s(1, 0.8), s(2, 0.4), s(7, 0.1), s(8, 0.0)];
        let bm25 = [s(7, 2.0)];
        let p = HybridParams {
            fusion: Fusion::Scores,
            semantic_weight: 0.5,
            ..HybridParams::default()
        };
        let (hits, total) = fuse(&bm25, &sem, 0.2, &p, 10, 1.0);
        assert_eq!(total, 3);
        let got: Vec<(ToolId, f32)> = hits.iter().map(|h| (h.tool, h.score)).collect();
        // 7: 0.5·1 + 0.5·0.1/0.8; 1: 0.5·1; 2: 0.5·0.5.
        let want = [(7, 0.5 + 0.5 * 0.125), (1, 0.5), (2, 0.25)];
        for ((t, s), (wt, ws)) in got.iter().zip(want) {
            assert_eq!(*t, wt);
            assert!((s - ws).abs() < 1e-5, "{t}: {s} vs {ws}");
        }
        // RRF ranks only the tools that pass the floor on the semantic side.
        let rrf = HybridParams {
            fusion: Fusion::Rrf,
            ..p
        };
        let (_, total) = fuse(&bm25, &sem, 0.2, &rrf, 10, 1.0);
        assert_eq!(total, 3);
    }
}
