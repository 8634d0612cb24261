//! Search methods over a [`Directory`] snapshot.

pub mod bm25;
pub mod cache;
pub mod hybrid;
pub mod keyword;
pub mod reference;
pub mod semantic;

pub use keyword::{KeywordIndex, Match, Rank, Ranked};

/// Searchable fields, in priority order (docs/reference.md, `discover_tools` rule 4).
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

use crate::catalog::{Directory, ToolId};
use crate::config::{SearchMethod, Settings};
use bm25::Scored;
use semantic::{SemanticSearch, dot};

/// One ranked tool, whatever the method.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The tool.
    pub tool: ToolId,
    /// Its score: BM25 score for `bm25`; cosine similarity for `semantic`; the fused score
    /// for `hybrid`; for `keyword`, the number of query keywords it covers (ties are broken by
    /// the docs/reference.md buckets, then by canonical name).
    pub score: f64,
}

/// Why a method cannot search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The method needs something this build or catalog lacks.
    #[error("{0}")]
    Unavailable(String),
}

/// A method that needs vectors (`semantic`, `hybrid`) without an embedder.
fn needs_embedder(method: SearchMethod) -> SearchError {
    SearchError::Unavailable(format!(
        "search method {:?} needs an embedding model and its cache: configure [search.semantic] \
         and build the cache with `toolsearch index`",
        method.as_str()
    ))
}

/// The `need` best tools of `scope` by `semantic` or `hybrid`, best first, and how many
/// tools are candidates (semantic: similarity ≥ the minimum; hybrid: either side's).
pub fn dense_ranked(
    dir: &Directory,
    settings: &Settings,
    semantic: &SemanticSearch,
    method: SearchMethod,
    query: &str,
    scope: std::ops::Range<ToolId>,
    need: usize,
) -> Result<(Vec<Scored>, usize), SearchError> {
    let vectors = dir.vectors(semantic)?;
    let q = semantic.embed_query(query)?;
    let min = semantic.min_similarity();
    match method {
        SearchMethod::Semantic => Ok(vectors.search(&q, scope, need, min)),
        SearchMethod::Hybrid => {
            let depth = need.max(hybrid::DEPTH);
            // Unfloored: `fuse` applies the floor to candidates, not to the scale.
            let (dense, _) = vectors.search(&q, scope.clone(), depth, f32::MIN);
            let bm25 = dir.bm25_index(&settings.bm25).search(query, scope, depth);
            Ok(hybrid::fuse(
                &bm25.hits,
                &dense,
                min,
                &settings.hybrid,
                need,
            ))
        }
        _ => Err(SearchError::Unavailable(format!(
            "{:?} is not a dense method",
            method.as_str()
        ))),
    }
}

/// The best `k` tools of the whole catalog for `query` by `method`, best first. `semantic` is
/// needed by the `semantic` and `hybrid` methods.
pub fn rank(
    dir: &Directory,
    settings: &Settings,
    semantic: Option<&SemanticSearch>,
    method: SearchMethod,
    query: &str,
    k: usize,
) -> Result<Vec<Hit>, SearchError> {
    let scope = 0..dir.tools().len() as ToolId;
    let scored = |hits: Vec<Scored>| {
        hits.into_iter()
            .map(|h| Hit {
                tool: h.tool,
                score: f64::from(h.score),
            })
            .collect()
    };
    match method {
        SearchMethod::Keyword => Ok(dir
            .keyword_index()
            .search(query, scope, k)
            .matches
            .into_iter()
            .map(|m| Hit {
                tool: m.tool,
                score: f64::from(m.rank.coverage) + if m.rank.exact { 1000.0 } else { 0.0 },
            })
            .collect()),
        SearchMethod::Bm25 => Ok(scored(
            dir.bm25_index(&settings.bm25).search(query, scope, k).hits,
        )),
        SearchMethod::Semantic | SearchMethod::Hybrid => {
            let semantic = semantic.ok_or_else(|| needs_embedder(method))?;
            let (hits, _) = dense_ranked(dir, settings, semantic, method, query, scope, k)?;
            Ok(scored(hits))
        }
    }
}

/// Why `tool` matched `query` under `method`, in one line.
pub fn explain(
    dir: &Directory,
    settings: &Settings,
    semantic: Option<&SemanticSearch>,
    method: SearchMethod,
    query: &str,
    tool: ToolId,
) -> String {
    match method {
        SearchMethod::Semantic | SearchMethod::Hybrid => {
            let Some(sem) = semantic else {
                return String::new();
            };
            let cos = dir
                .vectors(sem)
                .and_then(|v| Ok(dot(v.vector(tool), &sem.embed_query(query)?)))
                .map_or_else(|e| e.to_string(), |c| format!("cosine {c:.3}"));
            if method == SearchMethod::Semantic {
                return cos;
            }
            let bm25 = dir
                .bm25_index(&settings.bm25)
                .explain(query, tool, dir.tools(), dir.groups())
                .summary();
            if bm25.is_empty() {
                cos
            } else {
                format!("{cos}; bm25: {bm25}")
            }
        }
        SearchMethod::Bm25 => dir
            .bm25_index(&settings.bm25)
            .explain(query, tool, dir.tools(), dir.groups())
            .summary(),
        _ => {
            let r = dir
                .keyword_index()
                .search(query, tool..tool + 1, 1)
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
