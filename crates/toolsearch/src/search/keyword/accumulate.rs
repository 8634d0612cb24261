//! Per-query accumulation: each keyword's hits added to the coverage counters (and a sparse
//! keyword's to per-bucket counters), the candidates cut by a coverage threshold, and only
//! then their bucket counts gathered from the dense keywords' nibbles and packed into a `u128`
//! for selection.
//!
//! A dense keyword (one hitting a sixteenth of the tools or more: "the", "a", a frequent
//! substring) is one pass over the scope for coverage; its buckets are read back only for the
//! candidates, which are few next to a 100k-tool scope. (Adding every dense keyword's buckets
//! to ten per-bucket columns cost ten more passes each: the p99 of long questions at 100k.)

use std::ops::Range;
use std::sync::Arc;

use super::KeywordIndex;
use super::hits::KeywordHits;
use super::nibbles::Nibbles;
use crate::catalog::{ToolId, Visibility};
use crate::search::BUCKETS;
use crate::search::keyword::Rank;

/// Per-query accumulators, reused across queries (all zero between queries).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    pub(super) coverage: Vec<u16>,
    pub(super) counts: Vec<Vec<u16>>,
    pub(super) touched: Vec<ToolId>,
    pub(super) exact: Vec<ToolId>,
    pub(super) best: Vec<u8>,
    pub(super) best_touched: Vec<ToolId>,
    /// This query's keywords' hits, in the order applied (dense ones are read back for the
    /// candidates' buckets; sparse ones say which counters to zero).
    pub(super) applied: Vec<Arc<KeywordHits>>,
}

/// No bucket: the keyword does not hit the tool.
pub(super) const NONE: u8 = u8::MAX;

impl KeywordIndex {
    pub(super) fn take_scratch(&self) -> Scratch {
        self.scratch.take(|| Scratch {
            coverage: vec![0; self.tool_count],
            counts: vec![vec![0; self.tool_count]; BUCKETS],
            best: vec![NONE; self.tool_count],
            ..Scratch::default()
        })
    }

    pub(super) fn give_back(&self, s: Scratch) {
        self.scratch.give(s);
    }
}

/// Adds one keyword's hits in `scope` to the accumulators; returns whether it was dense.
pub(super) fn apply(hits: &Arc<KeywordHits>, scope: &Range<ToolId>, s: &mut Scratch) -> bool {
    let (lo, hi) = (scope.start as usize, scope.end as usize);
    s.applied.push(hits.clone());
    match &**hits {
        KeywordHits::Sparse(tools, buckets) => {
            let from = tools.partition_point(|&t| t < scope.start);
            let to = tools.partition_point(|&t| t < scope.end);
            for (&t, &b) in tools[from..to].iter().zip(&buckets[from..to]) {
                let c = &mut s.coverage[t as usize];
                if *c == 0 {
                    s.touched.push(t);
                }
                *c += 1;
                s.counts[b as usize][t as usize] += 1;
            }
            false
        }
        KeywordHits::Dense(best) => {
            best.count_into(&mut s.coverage, lo..hi);
            true
        }
    }
}

/// The packed rank of tool `t`: its sparse keywords' bucket counts, plus one for each of the
/// `dense` keywords that name a bucket for `t`.
fn packed_key(s: &Scratch, dense: &[&Nibbles], t: usize, exact: bool) -> u128 {
    let mut counts = [0u16; BUCKETS];
    for (c, column) in counts.iter_mut().zip(&s.counts) {
        *c = column[t];
    }
    for best in dense {
        let b = best.get(t);
        if b != NONE {
            counts[b as usize] += 1;
        }
    }
    let mut key = (u128::from(exact) << 121) | (u128::from(s.coverage[t]) << 110);
    for (b, &c) in counts.iter().enumerate() {
        key |= u128::from(c) << (11 * (9 - b));
    }
    key
}

/// Zeroes the per-bucket counters the sparse keywords set, and forgets the query's hits.
fn reset_counts(s: &mut Scratch, scope: &Range<ToolId>) {
    for hits in s.applied.drain(..) {
        if let KeywordHits::Sparse(tools, buckets) = &*hits {
            let from = tools.partition_point(|&t| t < scope.start);
            let to = tools.partition_point(|&t| t < scope.end);
            for (&t, &b) in tools[from..to].iter().zip(&buckets[from..to]) {
                s.counts[b as usize][t as usize] = 0;
            }
        }
    }
}

/// Counts every match and returns at least the best `need` as (packed rank, tool), leaving the
/// accumulators zeroed. Only tools whose coverage can place them among the best `need` have
/// their full rank gathered: coverage is the first criterion after exactness, so the cut is a
/// coverage threshold found from a histogram.
pub(super) fn collect(
    s: &mut Scratch,
    scope: &Range<ToolId>,
    dense_seen: bool,
    need: usize,
    visible: Option<&Visibility>,
) -> (Vec<(u128, ToolId)>, usize) {
    let (lo, hi) = (scope.start as usize, scope.end as usize);
    let sees = |t: usize| visible.is_none_or(|v| v.tool(t as ToolId));
    s.exact.sort_unstable();
    let exact = std::mem::take(&mut s.exact);
    let mut out = Vec::new();
    let total;
    if dense_seen {
        let mut hist: Vec<usize> = Vec::new();
        for (i, &c) in s.coverage[lo..hi].iter().enumerate() {
            if visible.is_some() && !sees(lo + i) {
                continue;
            }
            let c = c as usize;
            if c >= hist.len() {
                hist.resize(c + 1, 0);
            }
            hist[c] += 1;
        }
        // Exact tools are candidates anyway: count them apart from the histogram.
        if hist.is_empty() {
            hist.push(0);
        }
        for &t in &exact {
            hist[s.coverage[t as usize] as usize] -= 1;
        }
        let in_scope = match visible {
            None => hi - lo,
            Some(v) => v.count_in(scope.clone()),
        };
        total = in_scope - hist[0];
        // Lowest coverage that still yields `need` candidates (exact tools always qualify).
        let mut threshold = hist.len();
        let mut have = exact.len();
        while threshold > 1 && have < need {
            threshold -= 1;
            have += hist[threshold];
        }
        let threshold = threshold.max(1) as u16;
        // The dense keywords' buckets, gathered once for the candidates.
        let dense: Vec<&Nibbles> = s
            .applied
            .iter()
            .filter_map(|h| match &**h {
                KeywordHits::Dense(best) => Some(best),
                KeywordHits::Sparse(..) => None,
            })
            .collect();
        for t in lo..hi {
            if s.coverage[t] >= threshold && sees(t) && exact.binary_search(&(t as ToolId)).is_err()
            {
                out.push((packed_key(s, &dense, t, false), t as ToolId));
            }
        }
        for &t in &exact {
            out.push((packed_key(s, &dense, t as usize, true), t));
        }
        s.coverage[lo..hi].fill(0);
        reset_counts(s, scope);
        s.touched.clear();
    } else {
        for &t in &s.touched {
            if !sees(t as usize) {
                continue;
            }
            let is_exact = exact.binary_search(&t).is_ok();
            out.push((packed_key(s, &[], t as usize, is_exact), t));
        }
        for &t in &exact {
            if s.coverage[t as usize] == 0 {
                out.push((packed_key(s, &[], t as usize, true), t));
            }
        }
        for &t in &s.touched {
            s.coverage[t as usize] = 0;
        }
        reset_counts(s, scope);
        s.touched.clear();
        total = out.len();
    }
    s.exact = exact;
    s.exact.clear();
    (out, total)
}

pub(super) fn unpack(key: u128) -> Rank {
    let field = |shift: u32| ((key >> shift) & 0x7ff) as u16;
    let mut buckets = [0; BUCKETS];
    for (b, v) in buckets.iter_mut().enumerate() {
        *v = field(11 * (9 - b as u32));
    }
    Rank {
        exact: (key >> 121) & 1 == 1,
        coverage: field(110),
        buckets,
    }
}
