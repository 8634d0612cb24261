//! A direct, index-free transcription of the `keyword` ranking rules.
//!
//! It scans every tool for every query, so it is slow; it exists as the oracle the indexed
//! [`KeywordIndex`](super::KeywordIndex) is tested against, and as the baseline peer in the
//! benchmarks.

use std::ops::Range;

use super::corpus::Corpus;
use crate::catalog::{Directory, ToolId};
use crate::search::keyword::{Match, Rank, best_first, for_each_field};
use crate::search::{BUCKETS, FIELDS};
use crate::text::{distinct_words, fold, words};

/// Every match of `query` in `scope`, best first, exactly per docs/reference.md.
pub fn rank_all(dir: &Directory, query: &str, scope: Range<ToolId>) -> Vec<Match> {
    rank_all_fields(dir, query, scope, crate::search::keyword::ALL_FIELDS)
}

/// [`rank_all`] searching only the fields whose bit is set in `fields`.
pub fn rank_all_fields(
    dir: &Directory,
    query: &str,
    scope: Range<ToolId>,
    fields: u8,
) -> Vec<Match> {
    let trimmed = query.trim();
    let keywords = distinct_words(trimmed);
    let folded_query = fold(trimmed);
    let mut out = Vec::new();
    for id in scope {
        let tool = dir.doc(id);
        let group = dir.group_name(tool.group);
        let exact = folded_query == fold(tool.name) || folded_query == fold(tool.canonical);
        if trimmed.is_empty() {
            out.push(Match {
                tool: id,
                rank: Rank::default(),
            });
            continue;
        }
        // Per field: the words of each text, and each text folded.
        let mut word_sets: Vec<Vec<String>> = vec![Vec::new(); FIELDS.len()];
        let mut folded: Vec<Vec<String>> = vec![Vec::new(); FIELDS.len()];
        for_each_field(&tool, group, |f, t| {
            if fields & (1 << f) != 0 {
                word_sets[f].extend(words(t));
                folded[f].push(fold(t));
            }
        });
        let mut rank = Rank {
            exact,
            ..Rank::default()
        };
        for kw in &keywords {
            let mut best: Option<usize> = None;
            for bucket in 0..BUCKETS {
                let field = bucket % FIELDS.len();
                let whole = bucket < FIELDS.len();
                let hit = if whole {
                    word_sets[field].iter().any(|w| w == kw)
                } else {
                    folded[field].iter().any(|t| t.contains(kw.as_str()))
                };
                if hit {
                    best = Some(bucket);
                    break;
                }
            }
            if let Some(b) = best {
                rank.coverage += 1;
                rank.buckets[b] += 1;
            }
        }
        if rank.exact || rank.coverage > 0 {
            out.push(Match { tool: id, rank });
        }
    }
    out.sort_by(best_first);
    out
}
