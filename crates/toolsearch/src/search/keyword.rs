//! The deterministic `keyword` ranking of docs/reference.md, on an index built once per snapshot.
//!
//! All text work happens at build time. Per query, each keyword is resolved to the tools it
//! hits and the strongest hit per tool:
//! - whole-word hits come from a word → postings map;
//! - substring hits of a keyword of two or more characters come from a suffix array over the
//!   distinct folded letter-and-digit runs ("tokens") of every field: the keyword's suffix-array
//!   range names every token containing it, and their postings name the tools;
//! - substring hits of a one-character keyword (which would touch most tokens) come from a
//!   per-character postings list built at load.
//!
//! A posting is a tool and a bit mask of the fields (bit 0 = name … bit 4 = parameter
//! descriptions) where the word or token occurs, so the best field is its lowest set bit.
//!
//! A keyword's postings are merged once into its `KeywordHits` (each hit tool with its best
//! bucket), kept as a sorted list or, when it hits many tools, half a byte per tool. Merged hits are
//! cached per snapshot, bounded in size: the expensive keywords are the frequent ones ("the",
//! "a", "to"), which recur across queries, while rare ones are cheap to merge. Per query, the
//! counts are accumulated column-wise (one `u16` array per bucket), so a dense keyword is a few
//! vectorized passes, and ranks are packed into a `u128` for the final selection.

mod accumulate;
mod build;
mod chars;
mod hits;
mod nibbles;
mod premerged;

use crate::search::pool::Pool;
use std::ops::Range;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::BUCKETS;
use super::corpus::Corpus;
use super::exact::ExactNames;
use crate::catalog::{ToolId, Visibility};
use crate::text::distinct_words;
use accumulate::{Scratch, apply, collect, unpack};
use build::Postings;
#[cfg(feature = "oracle")]
pub(crate) use build::for_each_field;
use chars::CharPostings;
use hits::HitCache;
use premerged::Premerged;

/// How well one tool matches a query; greater is better. The derived order is exactly the
/// reference's order: exact match, then keywords covered, then the bucket counts in priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub struct Rank {
    /// The trimmed query equals the tool's local or canonical name, ignoring case.
    pub exact: bool,
    /// Distinct keywords that hit the tool.
    pub coverage: u16,
    /// Keywords whose strongest hit is in each bucket: whole word in name, description, group,
    /// parameter name, parameter description; then substring in the same five fields.
    pub buckets: [u16; BUCKETS],
}

/// One matching tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Match {
    /// The tool.
    pub tool: ToolId,
    /// Its rank.
    pub rank: Rank,
}

/// The outcome of one search.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ranked {
    /// The best matches, best first; at least the requested number when that many match.
    pub matches: Vec<Match>,
    /// Every match in scope, before paging.
    pub total: usize,
    /// The trimmed query had no words (browse when empty, exact matches only otherwise).
    pub no_keywords: bool,
}

#[cfg(feature = "oracle")]
/// Orders matches best first, ties by canonical name (= tool id).
pub fn best_first(a: &Match, b: &Match) -> std::cmp::Ordering {
    b.rank.cmp(&a.rank).then(a.tool.cmp(&b.tool))
}

/// The keyword index of one directory snapshot.
#[derive(Debug)]
pub struct KeywordIndex {
    tool_count: usize,
    exact: Arc<ExactNames>,
    words: FxHashMap<Box<str>, u32>,
    word_postings: Postings,
    token_postings: Postings,
    /// Distinct tokens, each followed by a 0 byte.
    token_text: Vec<u8>,
    /// Suffix array over `token_text`: (start of a suffix at a char boundary, its token).
    suffixes: Vec<(u32, u32)>,
    chars: FxHashMap<char, u32>,
    char_postings: CharPostings,
    cache: HitCache,
    premerged: Premerged,
    scratch: Pool<Scratch>,
}

/// Every searchable field.
pub const ALL_FIELDS: u8 = 0b1_1111;
/// At most this many distinct keywords count (each rank count is packed in 11 bits). A
/// 2,048-character query cannot reach it in practice: it would need that many distinct
/// one-letter words written without separators.
const MAX_KEYWORDS: usize = 2047;

impl KeywordIndex {
    /// Ranks the tools in `scope` for `query` (trimmed here). `matches` holds at least the best
    /// `need` matches (fewer only when fewer match), sorted best first; `total` counts all.
    /// `corpus` is the one the index was built over (exact names are confirmed against it).
    pub fn search(
        &self,
        corpus: &(impl Corpus + ?Sized),
        query: &str,
        scope: Range<ToolId>,
        need: usize,
    ) -> Ranked {
        self.search_fields(corpus, query, scope, need, ALL_FIELDS, None)
    }

    /// [`search`](Self::search) with only the fields whose bit is set in `fields` searchable
    /// (bit 0 name, 1 description, 2 group, 3 parameter names, 4 parameter descriptions), and
    /// only the tools `visible` shows (`None`: every tool) matching and counted.
    pub fn search_fields(
        &self,
        corpus: &(impl Corpus + ?Sized),
        query: &str,
        scope: Range<ToolId>,
        need: usize,
        fields: u8,
        visible: Option<&Visibility>,
    ) -> Ranked {
        let trimmed = query.trim();
        let keywords = distinct_words(trimmed);
        let sees = |t: ToolId| visible.is_none_or(|v| v.tool(t));
        if keywords.is_empty() && trimmed.is_empty() {
            let matches = scope
                .clone()
                .filter(|t| sees(*t))
                .take(need)
                .map(|tool| Match {
                    tool,
                    rank: Rank::default(),
                })
                .collect();
            let total = match visible {
                None => scope.len(),
                Some(v) => v.count_in(scope),
            };
            return Ranked {
                matches,
                total,
                no_keywords: true,
            };
        }
        let mut s = self.take_scratch();
        s.exact.extend(
            self.exact
                .matches(corpus, trimmed, scope.clone())
                .into_iter()
                .filter(|t| sees(*t)),
        );
        let mut dense_seen = false;
        for kw in keywords.iter().take(MAX_KEYWORDS) {
            let hits = self.hits(kw, fields & ALL_FIELDS, &mut s);
            dense_seen |= apply(&hits, &scope, &mut s);
        }
        let (mut keyed, total) = collect(&mut s, &scope, dense_seen, need, visible);
        self.give_back(s);

        let by_key = |a: &(u128, ToolId), b: &(u128, ToolId)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        if need == 0 {
            keyed.clear();
        } else if need < keyed.len() {
            keyed.select_nth_unstable_by(need - 1, by_key);
            keyed.truncate(need);
        }
        keyed.sort_unstable_by(by_key);
        let matches = keyed
            .into_iter()
            .map(|(key, tool)| Match {
                tool,
                rank: unpack(key),
            })
            .collect();
        Ranked {
            matches,
            total,
            no_keywords: keywords.is_empty(),
        }
    }

    /// Empties the merged-hits cache (benchmarks measure cold queries with it). The keywords
    /// merged ahead when the index was built stay.
    pub fn clear_cache(&self) {
        let mut guard = self.cache.map.write();
        guard.0.clear();
        guard.1 = 0;
    }

    /// Distinct words and tokens indexed (for reports).
    pub fn vocabulary(&self) -> (usize, usize) {
        (
            self.words.len(),
            self.token_postings.offsets.len().saturating_sub(1),
        )
    }
}
