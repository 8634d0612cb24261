//! What a search is asked ([`Query`]) and what it answers ([`Ranking`]), whatever the method.

use std::ops::Range;

use super::keyword::ALL_FIELDS;
use crate::catalog::{ToolId, Visibility};
use crate::config::SearchMethod;

/// One query: its text, its method, where to look and how many results are needed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Query<'q> {
    /// The query text.
    pub text: &'q str,
    /// The ranking method.
    pub method: SearchMethod,
    /// The documents searched (`None`: all of them).
    pub scope: Option<Range<ToolId>>,
    /// How many of the best documents are needed.
    pub need: usize,
    /// The keyword method's searchable fields, one bit each (bit 0 name, 1 description,
    /// 2 group, 3 parameter names, 4 parameter descriptions). The other methods use all.
    pub fields: u8,
    /// Scored methods put documents whose name equals the query first (as `keyword` does).
    pub exact_first: bool,
    /// Only these tools exist for the query (a caller's catalog); `None`: every tool.
    pub visible: Option<&'q Visibility>,
}

impl<'q> Query<'q> {
    /// The `need` best documents for `text` by `method`, over everything, every field.
    pub fn new(text: &'q str, method: SearchMethod, need: usize) -> Self {
        Self {
            text,
            method,
            scope: None,
            need,
            fields: ALL_FIELDS,
            exact_first: false,
            visible: None,
        }
    }

    /// Ranks only the tools `visible` shows (filtered before ranking and counting).
    pub fn visible_to(mut self, visible: Option<&'q Visibility>) -> Self {
        self.visible = visible;
        self
    }

    /// Searches only `scope` (one group's tools).
    pub fn within(mut self, scope: Range<ToolId>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Limits the keyword method to the fields whose bit is set.
    pub fn fields(mut self, fields: u8) -> Self {
        self.fields = fields;
        self
    }

    /// Puts exact name matches first whatever the method (`discover_tools` rule).
    pub fn exact_first(mut self) -> Self {
        self.exact_first = true;
        self
    }
}

/// One document a scored method ranks (BM25 score, cosine, fused score), the currency of the
/// method modules.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Scored {
    /// The document.
    pub tool: ToolId,
    /// Its score.
    pub score: f32,
}

/// One ranked document.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Hit {
    /// The document (a tool id, or a skill's place in its catalog).
    pub tool: ToolId,
    /// Its score: BM25 score for `bm25`; cosine similarity for `semantic`; the fused score
    /// for `hybrid`; for `keyword`, the number of query keywords it covers, plus 1000 for an
    /// exact name (ties are broken by the docs/reference.md buckets, then by canonical name).
    pub score: f64,
    /// The query equals its local or canonical name, ignoring case.
    pub exact: bool,
}

/// The answer to a [`Query`].
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Ranking {
    /// The best documents, best first, at most [`Query::need`].
    pub hits: Vec<Hit>,
    /// Every match in scope, before paging.
    pub total: usize,
    /// The trimmed query had no words (`keyword` browses when it is empty, and finds exact
    /// names only otherwise).
    pub no_keywords: bool,
}

impl Ranking {
    /// A scored ranking with the exact name matches `exact` put first: they are counted in
    /// `total` when the method did not find them, and the rest follow by score.
    pub(crate) fn exact_first(
        exact: Vec<ToolId>,
        scored: Vec<Scored>,
        total: usize,
        need: usize,
    ) -> Self {
        let score_of = |tool: ToolId| {
            scored
                .iter()
                .find(|s| s.tool == tool)
                .map_or(0.0, |s| f64::from(s.score))
        };
        let missing = exact
            .iter()
            .filter(|id| !scored.iter().any(|s| s.tool == **id))
            .count();
        let mut hits: Vec<Hit> = exact
            .iter()
            .map(|&tool| Hit {
                tool,
                score: score_of(tool),
                exact: true,
            })
            .collect();
        hits.extend(
            scored
                .iter()
                .filter(|s| !exact.contains(&s.tool))
                .map(|s| Hit {
                    tool: s.tool,
                    score: f64::from(s.score),
                    exact: false,
                }),
        );
        hits.truncate(need);
        Self {
            hits,
            total: total + missing,
            // Only a query without any word is refused; one of stop words alone finds nothing.
            no_keywords: false,
        }
    }
}
