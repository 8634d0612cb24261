//! Search methods over a [`Directory`] snapshot.

pub mod bm25;
pub mod keyword;
pub mod reference;

pub use keyword::{KeywordIndex, Match, Rank, Ranked};

/// Searchable fields, in priority order (DESIGN.md, `discover_tools` rule 4).
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

/// One ranked tool, whatever the method.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The tool.
    pub tool: ToolId,
    /// Its score: BM25 score for `bm25`; for `keyword`, the number of query keywords it
    /// covers (ties are broken by the DESIGN.md buckets, then by canonical name).
    pub score: f64,
}

/// Why a method cannot search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The method needs something this build or catalog lacks.
    #[error("{0}")]
    Unavailable(String),
}

/// The best `k` tools of the whole catalog for `query` by `method`, best first.
pub fn rank(
    dir: &Directory,
    settings: &Settings,
    method: SearchMethod,
    query: &str,
    k: usize,
) -> Result<Vec<Hit>, SearchError> {
    let scope = 0..dir.tools().len() as ToolId;
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
        SearchMethod::Bm25 => Ok(dir
            .bm25_index(&settings.bm25)
            .search(query, scope, k)
            .hits
            .into_iter()
            .map(|h| Hit {
                tool: h.tool,
                score: f64::from(h.score),
            })
            .collect()),
        SearchMethod::Semantic | SearchMethod::Hybrid => Err(SearchError::Unavailable(format!(
            "search method {:?} is not available in this build yet; use \"keyword\" or \"bm25\"",
            method.as_str()
        ))),
    }
}

/// Why `tool` matched `query` under `method`, in one line.
pub fn explain(
    dir: &Directory,
    settings: &Settings,
    method: SearchMethod,
    query: &str,
    tool: ToolId,
) -> String {
    match method {
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
