//! The learned field under `semantic` and the dense side of `hybrid`: a second vector per
//! tool with learned queries — the unit centroid of their vectors — and a tool's similarity
//! raised towards that vector's when the learned queries resemble the query more than the
//! tool's own text does. A tool nothing was learned for keeps its cosine.

use super::SearchError;
use super::semantic::{Embeddings, QueryVectors, VectorIndex, normalize};
use crate::catalog::ToolId;

/// How far a tool's similarity moves towards its learned vector's, when that is higher:
/// `c + LEARNED_DENSE_WEIGHT × max(0, m − c)`. Chosen by the worst of the six shared sets
/// (BENCHMARKS.md, "Learning from use"): at 1 (the higher of the two) a set whose test
/// questions mostly ask for tools nobody used loses to the tools that were.
pub const LEARNED_DENSE_WEIGHT: f32 = 0.5;

/// The learned vectors of a class's tools.
#[derive(Debug, Clone, Default)]
pub struct LearnedVectors {
    /// The tools with learned queries, ascending.
    tools: Vec<ToolId>,
    /// One vector per tool of `tools`, in that order, kept as the tools' own are (int8).
    vectors: Option<VectorIndex>,
}

impl LearnedVectors {
    /// The learned vector of each tool of `queries` (a tool and its learned queries), the
    /// queries' vectors read from `semantic`'s cache or embedded into it.
    pub fn build(
        queries: &[(ToolId, Vec<Box<str>>)],
        semantic: &Embeddings,
    ) -> Result<Self, SearchError> {
        let texts: Vec<&str> = queries
            .iter()
            .flat_map(|(_, qs)| qs.iter().map(|q| &**q))
            .collect();
        let vectors = semantic.text_vectors(&texts)?;
        let dim = semantic.embedder().dim();
        let mut tools = Vec::with_capacity(queries.len());
        let mut rows = Vec::with_capacity(queries.len() * dim);
        let mut vectors = vectors.into_iter();
        for (tool, qs) in queries {
            let mut centroid = vec![0.0f32; dim];
            for v in vectors.by_ref().take(qs.len()) {
                centroid.iter_mut().zip(&v).for_each(|(c, x)| *c += x);
            }
            normalize(&mut centroid);
            tools.push(*tool);
            rows.extend_from_slice(&centroid);
        }
        let vectors = (!tools.is_empty())
            .then(|| VectorIndex::new(semantic.embedder().model_id(), dim, rows));
        Ok(Self { tools, vectors })
    }

    /// Whether no tool has a learned vector.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Each tool's learned similarity with `query`: its best cosine with any of the query's
    /// vectors, by tool id ascending.
    pub fn similarities(&self, query: &QueryVectors) -> Vec<(ToolId, f32)> {
        let Some(vectors) = &self.vectors else {
            return Vec::new();
        };
        let sims = vectors.query_similarities(query, 0..self.tools.len() as ToolId);
        self.tools.iter().copied().zip(sims).collect()
    }

    /// Raises `sims` — the similarities of the tools from `start` on — by what each tool's
    /// learned similarity `learned` (from [`Self::similarities`]) adds.
    pub fn raise(sims: &mut [f32], start: ToolId, learned: &[(ToolId, f32)]) {
        for &(tool, m) in learned {
            if let Some(c) = tool
                .checked_sub(start)
                .and_then(|i| sims.get_mut(i as usize))
            {
                *c = raised(*c, m);
            }
        }
    }
}

/// A similarity `c` raised by a learned similarity `m`.
pub fn raised(c: f32, m: f32) -> f32 {
    c + LEARNED_DENSE_WEIGHT * (m - c).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_learned_similarity_raises_a_tool_halfway_and_never_lowers_it() {
        assert!((raised(0.2, 0.8) - 0.5).abs() < 1e-6);
        assert_eq!(raised(0.6, 0.1), 0.6);
        let mut sims = vec![0.1, 0.2, 0.3];
        // Tool 4 is out of the slice (scope 2..5 holds tools 2, 3, 4; tool 1 is before it).
        LearnedVectors::raise(&mut sims, 2, &[(1, 1.0), (3, 0.6), (5, 1.0)]);
        assert_eq!(sims[0], 0.1);
        assert!((sims[1] - 0.4).abs() < 1e-6);
        assert_eq!(sims[2], 0.3);
    }
}
