//! Vectors and their ranking: a query's unit vectors, and one unit vector per tool of a
//! snapshot kept as signed bytes ([`int8`]), ranked by cosine similarity.

use std::fmt;
use std::ops::Range;

use super::normalize;
use crate::catalog::{ToolId, Visibility};
use crate::search::{Scored, int8};

/// A query's unit vectors: the whole query's, then (when it has two or more sentences and
/// [`EmbeddingSettings::sentences`](crate::config::EmbeddingSettings::sentences) is on) each
/// sentence's. A tool's similarity to the query is its best cosine with any of them.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryVectors(Vec<Vec<f32>>);

impl QueryVectors {
    /// From vectors already normalised, the whole query's first.
    ///
    /// # Panics
    /// When `vectors` is empty.
    pub fn new(vectors: Vec<Vec<f32>>) -> Self {
        assert!(!vectors.is_empty(), "a query has at least its own vector");
        Self(vectors)
    }

    /// The whole query's vector.
    pub fn whole(&self) -> &[f32] {
        &self.0[0]
    }

    /// Every vector, the whole query's first.
    pub fn all(&self) -> &[Vec<f32>] {
        &self.0
    }
}

/// One unit vector per tool of a snapshot, in [`ToolId`] order, kept as signed bytes with a
/// scale per vector (int8 quantization).
#[derive(Clone, PartialEq)]
pub struct VectorIndex {
    model_id: String,
    dim: usize,
    rows: Vec<i8>,
    scales: Vec<f32>,
}

impl fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorIndex")
            .field("model_id", &self.model_id)
            .field("dim", &self.dim)
            .field("tools", &self.len())
            .finish()
    }
}

impl VectorIndex {
    /// An index from row-major vectors; rows are normalised, then quantized.
    ///
    /// # Panics
    /// When `dim` is 0 or `data.len()` is not a multiple of it.
    pub fn new(model_id: impl Into<String>, dim: usize, mut data: Vec<f32>) -> Self {
        assert!(
            dim > 0 && data.len().is_multiple_of(dim),
            "rows of {dim} floats"
        );
        let mut rows = Vec::with_capacity(data.len());
        let scales = data
            .chunks_exact_mut(dim)
            .map(|v| {
                normalize(v);
                int8::quantize(v, &mut rows)
            })
            .collect();
        Self {
            model_id: model_id.into(),
            dim,
            rows,
            scales,
        }
    }

    /// An index from rows already quantized (int8, of unit vectors).
    ///
    /// # Panics
    /// When `dim` is 0 or `rows` does not hold one row of `dim` per scale.
    pub fn from_quantized(
        model_id: impl Into<String>,
        dim: usize,
        rows: Vec<i8>,
        scales: Vec<f32>,
    ) -> Self {
        assert!(
            dim > 0 && rows.len() == scales.len() * dim,
            "rows of {dim} bytes"
        );
        Self {
            model_id: model_id.into(),
            dim,
            rows,
            scales,
        }
    }

    /// The model the vectors came from.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Bytes the vectors take.
    pub fn bytes(&self) -> usize {
        self.rows.len() + 4 * self.scales.len()
    }

    /// The vector of `tool`, as stored (a unit vector up to the quantization step).
    pub fn vector(&self, tool: ToolId) -> Vec<f32> {
        let at = tool as usize * self.dim;
        int8::dequantize(&self.rows[at..at + self.dim], self.scales[tool as usize])
    }

    /// The cosine similarity of `tool` with `query` (a unit vector), as ranking computes it.
    pub fn similarity(&self, tool: ToolId, query: &[f32]) -> f32 {
        self.similarities(query, tool..tool + 1)
            .pop()
            .unwrap_or_default()
    }

    /// Cosine similarity of every tool in `scope` with `query` (a unit vector), in scope order.
    pub fn similarities(&self, query: &[f32], scope: Range<ToolId>) -> Vec<f32> {
        debug_assert_eq!(query.len(), self.dim);
        let mut q = Vec::with_capacity(self.dim);
        let qs = int8::quantize(query, &mut q);
        let rows = &self.rows[scope.start as usize * self.dim..scope.end as usize * self.dim];
        let scales = &self.scales[scope.start as usize..scope.end as usize];
        let mut out = Vec::with_capacity(scales.len());
        int8::cosines(rows, scales, &q, qs, &mut out);
        out
    }

    /// Each tool's best cosine similarity with any of `query`'s vectors, in scope order.
    pub fn query_similarities(&self, query: &QueryVectors, scope: Range<ToolId>) -> Vec<f32> {
        let (whole, parts) = query
            .all()
            .split_first()
            .expect("QueryVectors is never empty");
        let mut best = self.similarities(whole, scope.clone());
        for part in parts {
            let sims = self.similarities(part, scope.clone());
            for (b, s) in best.iter_mut().zip(sims) {
                *b = b.max(s);
            }
        }
        best
    }

    /// [`search_visible`](Self::search_visible) by each tool's best similarity with any of
    /// `query`'s vectors ([`query_similarities`](Self::query_similarities)).
    pub fn search_query(
        &self,
        query: &QueryVectors,
        scope: Range<ToolId>,
        need: usize,
        min: f32,
        visible: Option<&Visibility>,
    ) -> (Vec<Scored>, usize) {
        self.search_query_with(query, scope, need, min, visible, |_| {})
    }

    /// [`search_query`](Self::search_query) with the similarities changed by `adjust` first
    /// (it gets those of `scope`, in order): what use taught raises some tools.
    pub fn search_query_with(
        &self,
        query: &QueryVectors,
        scope: Range<ToolId>,
        need: usize,
        min: f32,
        visible: Option<&Visibility>,
        adjust: impl FnOnce(&mut [f32]),
    ) -> (Vec<Scored>, usize) {
        let start = scope.start;
        let mut sims = self.query_similarities(query, scope);
        adjust(&mut sims);
        best_of(&sims, start, need, min, visible)
    }

    /// The `need` tools of `scope` most similar to `query` whose similarity is at least
    /// `min`, best first (ties by tool id), and how many tools reach `min`.
    pub fn search(
        &self,
        query: &[f32],
        scope: Range<ToolId>,
        need: usize,
        min: f32,
    ) -> (Vec<Scored>, usize) {
        self.search_visible(query, scope, need, min, None)
    }

    /// [`search`](Self::search) over the tools `visible` shows only.
    pub fn search_visible(
        &self,
        query: &[f32],
        scope: Range<ToolId>,
        need: usize,
        min: f32,
        visible: Option<&Visibility>,
    ) -> (Vec<Scored>, usize) {
        let start = scope.start;
        best_of(&self.similarities(query, scope), start, need, min, visible)
    }
}

/// The `need` best of `sims` (the similarities of the tools from `start` on) that reach `min`
/// and `visible` shows, best first (ties by tool id), and how many reach `min`.
fn best_of(
    sims: &[f32],
    start: ToolId,
    need: usize,
    min: f32,
    visible: Option<&Visibility>,
) -> (Vec<Scored>, usize) {
    // The best `need` kept as the scan goes: a buffer of twice that is cut back to `need`
    // whenever it fills, and what cannot beat the cut's last score is not kept at all
    // (tools come in id order, so an equal score loses its tie too).
    let keep = need.max(8) * 2;
    let mut hits: Vec<Scored> = Vec::with_capacity(keep);
    let mut floor: Option<f32> = None;
    let mut total = 0;
    for (i, &score) in sims.iter().enumerate() {
        let tool = start + i as ToolId;
        if score < min || !visible.is_none_or(|v| v.tool(tool)) {
            continue;
        }
        total += 1;
        if floor.is_some_and(|f| score <= f) || need == 0 {
            continue;
        }
        hits.push(Scored { tool, score });
        if hits.len() == keep {
            top_k(&mut hits, need);
            floor = hits.last().map(|h| h.score);
        }
    }
    top_k(&mut hits, need);
    (hits, total)
}

/// Keeps the best `k` of `hits` (highest score, then lowest tool id), sorted.
pub(crate) fn top_k(hits: &mut Vec<Scored>, k: usize) {
    let order = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool));
    if hits.len() > k && k > 0 {
        hits.select_nth_unstable_by(k - 1, order);
        hits.truncate(k);
    } else if k == 0 {
        hits.clear();
    }
    hits.sort_unstable_by(order);
}

/// Dot product, written in 8 independent lanes so the compiler vectorises it.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    for (x, y) in ca.iter().zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}
