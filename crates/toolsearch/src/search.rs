//! Search: indexes built over a [`Corpus`] snapshot, and the one entry point that ranks a
//! [`Query`] with its method ([`Searcher::rank`]) and says why a document matched
//! ([`Searcher::explain`]). Every caller — `discover_tools`, `search_capabilities`, the
//! per-turn tools, `toolsearch search` and `eval` — goes through it, so a new method is added
//! here and in its own module, nowhere else.

mod analysis;
mod bm25;
mod cache;
mod corpus;
mod exact;
mod hybrid;
mod index;
mod int8;
pub(crate) mod keyword;
mod learned;
mod learned_vectors;
mod pool;
mod ranking;
// The exhaustive ranking the tests and benchmarks compare the indexes against: not part of the
// API, built only with the `oracle` feature (which the crate's own tests and benchmarks turn on).
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub mod reference;
pub(crate) mod semantic;
mod sentences;

pub use analysis::{analyze, terms};
pub use bm25::{Bm25Index, Explanation, TermExplanation};
pub use cache::{CacheError, EmbeddingCache};
pub use corpus::{Corpus, Doc};
pub use exact::ExactNames;
pub use hybrid::{FUSION_DEPTH, adaptive_weight, fuse};
pub use index::SearchIndex;
pub use keyword::{KeywordIndex, Match, Rank, Ranked};
pub use learned::{LEARNED_WEIGHT, LearnedIndex};
pub use learned_vectors::{LEARNED_DENSE_WEIGHT, LearnedVectors, raised};
pub use ranking::{Hit, Query, Ranking, Scored};
pub use semantic::{
    EmbedError, Embedder, Embeddings, QueryVectors, VectorIndex, dot, normalize, tool_text,
};

use std::ops::Range;

use crate::catalog::{ToolId, Visibility};
use crate::config::{SearchMethod, Settings};

/// Searchable fields of the keyword ranking, in priority order (docs/reference.md,
/// `discover_tools` rule 4).
pub const FIELDS: [&str; 5] = [
    "name",
    "description",
    "group",
    "parameter name",
    "parameter description",
];

/// Number of relevance buckets: a whole-word and a substring tier per field.
pub const BUCKETS: usize = 2 * FIELDS.len();

/// Human-readable name of a relevance bucket, e.g. "whole word in description".
pub fn bucket_name(bucket: usize) -> String {
    let field = FIELDS[bucket % FIELDS.len()];
    if bucket < FIELDS.len() {
        format!("whole word in {field}")
    } else {
        format!("substring of {field}")
    }
}

/// Why a method cannot search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The method needs something this build or catalog lacks, or its model failed.
    #[error("{0}")]
    Unavailable(String),
}

/// A method that needs vectors (`semantic`, `hybrid`) without an embedding model.
fn needs_embedder(method: SearchMethod) -> SearchError {
    SearchError::Unavailable(format!(
        "search method {:?} needs an embedding model and its cache: configure [search.semantic] \
         and build the cache with `toolsearch index`",
        method.as_str()
    ))
}

/// A corpus with its indexes, the settings (BM25 and hybrid parameters) and the embedder of
/// `semantic` and `hybrid` when there is one: everything a query is ranked with.
#[derive(Debug, Clone, Copy)]
pub struct Searcher<'a, C: Corpus + ?Sized> {
    corpus: &'a C,
    index: &'a SearchIndex,
    settings: &'a Settings,
    semantic: Option<&'a Embeddings>,
    learned: Option<&'a LearnedIndex>,
}

impl<'a, C: Corpus + ?Sized> Searcher<'a, C> {
    /// A searcher over `corpus`, whose indexes are `index` (built over that same corpus).
    pub fn new(
        corpus: &'a C,
        index: &'a SearchIndex,
        settings: &'a Settings,
        semantic: Option<&'a Embeddings>,
    ) -> Self {
        Self {
            corpus,
            index,
            settings,
            semantic,
            learned: None,
        }
    }

    /// Ranks with the learned field too (`bm25`, `semantic` and both sides of `hybrid`): what
    /// the caller's class taught, indexed over this same corpus. `keyword` keeps its exact rules and
    /// ignores it.
    pub fn with_learned(mut self, learned: Option<&'a LearnedIndex>) -> Self {
        self.learned = learned.filter(|l| !l.is_empty());
        self
    }

    /// The learned field's scores for `query` (none without learned text).
    fn learned_scores(&self, query: &str) -> Vec<(ToolId, f32)> {
        match self.learned {
            Some(l) => l.scores(query, &self.bm25()),
            None => Vec::new(),
        }
    }

    /// The corpus searched.
    pub fn corpus(&self) -> &'a C {
        self.corpus
    }

    /// Its indexes.
    pub fn index(&self) -> &'a SearchIndex {
        self.index
    }

    /// The best [`Query::need`] documents of the query's scope by its method, best first, and
    /// how many match in all.
    pub fn rank(&self, q: &Query<'_>) -> Result<Ranking, SearchError> {
        let scope = q.scope.clone().unwrap_or(0..self.corpus.len() as ToolId);
        if q.method == SearchMethod::Keyword {
            let r = self.index.keyword(self.corpus).search_fields(
                self.corpus,
                q.text,
                scope,
                q.need,
                q.fields,
                q.visible,
            );
            let hits = r
                .matches
                .into_iter()
                .map(|m| Hit {
                    tool: m.tool,
                    score: f64::from(m.rank.coverage) + if m.rank.exact { 1000.0 } else { 0.0 },
                    exact: m.rank.exact,
                })
                .collect();
            return Ok(Ranking {
                hits,
                total: r.total,
                no_keywords: r.no_keywords,
            });
        }
        let exact = if q.exact_first {
            let mut exact = self
                .index
                .exact()
                .matches(self.corpus, q.text, scope.clone());
            exact.retain(|t| q.visible.is_none_or(|v| v.tool(*t)));
            exact
        } else {
            Vec::new()
        };
        let need = q.need.saturating_add(exact.len());
        let (scored, total) = match q.method {
            SearchMethod::Bm25 => self.bm25().search_boosted(
                q.text,
                scope,
                need,
                q.visible,
                &self.learned_scores(q.text),
            ),
            method => self.dense(method, q.text, scope, need, q.visible)?,
        };
        Ok(Ranking::exact_first(exact, scored, total, q.need))
    }

    /// Why document `tool` matched `query` under `method`, in one line.
    pub fn explain(&self, method: SearchMethod, query: &str, tool: ToolId) -> String {
        match method {
            SearchMethod::Semantic | SearchMethod::Hybrid => {
                let Some(sem) = self.semantic else {
                    return String::new();
                };
                let cos = self
                    .index
                    .vectors(self.corpus, sem)
                    .and_then(|v| {
                        let q = sem.embed_query(query)?;
                        let c = v
                            .query_similarities(&q, tool..tool + 1)
                            .first()
                            .copied()
                            .unwrap_or_default();
                        let learned = match self.learned {
                            Some(l) => l.vectors(sem)?.similarities(&q),
                            None => Vec::new(),
                        };
                        Ok(match learned.iter().find(|(t, _)| *t == tool) {
                            Some(&(_, m)) if m > c => {
                                format!(
                                    "cosine {c:.3}, raised to {:.3} by learned queries ({m:.3})",
                                    raised(c, m)
                                )
                            }
                            _ => format!("cosine {c:.3}"),
                        })
                    })
                    .unwrap_or_else(|e| e.to_string());
                if method == SearchMethod::Semantic {
                    return cos;
                }
                let bm25 = self.bm25().explain(query, tool, self.corpus).summary();
                if bm25.is_empty() {
                    cos
                } else {
                    format!("{cos}; bm25: {bm25}")
                }
            }
            SearchMethod::Bm25 => self.bm25().explain(query, tool, self.corpus).summary(),
            SearchMethod::Keyword => {
                let r = self
                    .index
                    .keyword(self.corpus)
                    .search(self.corpus, query, tool..tool + 1, 1)
                    .matches
                    .first()
                    .map(|m| m.rank);
                let Some(r) = r else {
                    return String::new();
                };
                let mut parts = Vec::new();
                if r.exact {
                    parts.push("exact name".to_owned());
                }
                for (b, n) in r.buckets.iter().enumerate() {
                    if *n > 0 {
                        parts.push(format!("{n} × {}", bucket_name(b)));
                    }
                }
                parts.join(", ")
            }
        }
    }

    fn bm25(&self) -> std::sync::Arc<bm25::Bm25Index> {
        self.index.bm25(self.corpus, &self.settings.bm25)
    }

    /// The `need` best documents of `scope` by `semantic` or `hybrid`, and how many are
    /// candidates (semantic: similarity ≥ the minimum; hybrid: either side's).
    fn dense(
        &self,
        method: SearchMethod,
        query: &str,
        scope: Range<ToolId>,
        need: usize,
        visible: Option<&Visibility>,
    ) -> Result<(Vec<Scored>, usize), SearchError> {
        let semantic = self.semantic.ok_or_else(|| needs_embedder(method))?;
        let vectors = self.index.vectors(self.corpus, semantic)?;
        let q = semantic.embed_query(query)?;
        let min = semantic.min_similarity();
        let learned = match self.learned {
            Some(l) => l.vectors(semantic)?.similarities(&q),
            None => Vec::new(),
        };
        let start = scope.start;
        let raise = |sims: &mut [f32]| LearnedVectors::raise(sims, start, &learned);
        if method == SearchMethod::Semantic {
            return Ok(vectors.search_query_with(&q, scope, need, min, visible, raise));
        }
        let depth = need.max(hybrid::FUSION_DEPTH);
        // Unfloored: `fuse` applies the floor to candidates, not to the scale.
        let (dense, _) =
            vectors.search_query_with(&q, scope.clone(), depth, f32::MIN, visible, raise);
        let index = self.bm25();
        let (bm25, _) =
            index.search_boosted(query, scope, depth, visible, &self.learned_scores(query));
        Ok(hybrid::fuse(
            &bm25,
            &dense,
            min,
            &self.settings.hybrid,
            need,
            index.rare_idf(),
        ))
    }
}
