//! The keywords whose merge costs most, merged once when the index is built.
//!
//! A keyword's substring hits are the postings of every token containing it, so a short,
//! frequent substring ("in", "on", "to") visits millions of postings at 100k tools: the first
//! question that holds it paid up to a millisecond before its merge was cached, and a long
//! question holds several. The index knows each such cost from its suffix array (the tokens
//! under a prefix and their postings), so it merges the costliest likely keywords ahead — the
//! characters and the catalog's frequent words, not every substring: "me", "if" and "am" are
//! words a question holds, "ti" and "nc" are not —, within a fixed count, and keeps them apart
//! from the bounded cache (which empties when full).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::ALL_FIELDS;
use super::KeywordIndex;
use super::accumulate::{NONE, Scratch};
use super::chars::CharHits;
use super::hits::KeywordHits;

/// At most this many keywords are merged ahead.
const MOST: usize = 512;
/// A word of four or more characters is a candidate when it is in more than 1/DENSE_SHARE of
/// the tools.
const DENSE_SHARE: u64 = 16;

/// Merged hits of the costliest likely keywords (all fields).
#[derive(Debug, Default)]
pub(super) struct Premerged(FxHashMap<Box<str>, Arc<KeywordHits>>);

impl Premerged {
    /// The merged hits of `kw`, when it was merged ahead.
    pub(super) fn get(&self, kw: &str) -> Option<&Arc<KeywordHits>> {
        self.0.get(kw)
    }

    /// Merges the costliest keywords, at most [`MOST`], among those a question is likely to
    /// hold: every character, the catalog's words of two and three characters, and its words
    /// of four or more that a sixteenth of the tools hold. A keyword's cost is the postings its
    /// merge visits (its whole-word postings and those of every token containing it); only
    /// those visiting more than a sixteenth of the tool count qualify, as their hits are
    /// likely kept dense. The merges are spread over the cores.
    pub(super) fn build(index: &KeywordIndex) -> Self {
        let tools = index.tool_count as u64;
        let word_cost = |kw: &str| {
            index
                .words
                .get(kw)
                .map_or(0, |&w| index.word_postings.get(w).0.len() as u64)
        };
        let mut costs: Vec<(u64, Box<str>)> = Vec::new();
        for (c, &id) in &index.chars {
            let substrings = match index.char_postings.get(id) {
                CharHits::Sparse(ids, _) => ids.len() as u64,
                CharHits::Dense(_) => tools,
            };
            let kw = c.to_string();
            costs.push((substrings + word_cost(&kw), kw.into()));
        }
        for (word, &w) in &index.words {
            let postings = index.word_postings.get(w).0.len() as u64;
            let length = word.chars().take(4).count();
            if length < 2 || (length > 3 && postings * DENSE_SHARE <= tools) {
                continue;
            }
            let substrings: u64 = index
                .suffix_range(word.as_bytes())
                .iter()
                .map(|&(_, t)| index.token_postings.get(t).0.len() as u64)
                .sum();
            costs.push((postings + substrings, word.clone()));
        }
        costs.retain(|(cost, _)| *cost * DENSE_SHARE > tools);
        costs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        costs.truncate(MOST);
        // Dealt round-robin, so each core gets costly and cheap keywords alike.
        let workers = crate::parallel::workers(index.tool_count).min(costs.len().max(1));
        let merge = |k: usize| {
            let mut scratch = Scratch {
                best: vec![NONE; index.tool_count],
                ..Scratch::default()
            };
            costs
                .iter()
                .skip(k)
                .step_by(workers)
                .map(|(_, kw)| {
                    let hits = index.merge_hits(kw, ALL_FIELDS, &mut scratch);
                    (kw.clone(), Arc::new(hits))
                })
                .collect::<Vec<_>>()
        };
        let map = crate::parallel::on_workers(workers, merge)
            .into_iter()
            .flatten()
            .collect();
        Self(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Directory, GroupSpec, SourceTools, ToolDef};

    #[test]
    fn the_costliest_short_keywords_are_merged_ahead_and_rank_as_merged_on_demand() {
        let names = [
            "find_info",
            "print_invoice",
            "join_line",
            "pin_item",
            "ping_inbox",
            "spin",
            "tint",
        ];
        let dir = Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("misc", "Things"),
            names
                .iter()
                .map(|n| ToolDef::new(*n, "Works in a pinch"))
                .collect(),
        )])
        .expect("valid");
        let mut index = KeywordIndex::build(&dir);
        // Characters, short words and frequent long words are merged ahead; a substring that is
        // no word ("nt") and a keyword in no tool ("zz") are not.
        for kw in ["in", "i", "a", "works", "pinch"] {
            assert!(
                index.premerged.get(kw).is_some(),
                "{kw}: {:?}",
                index.premerged
            );
        }
        for kw in ["nt", "zz"] {
            assert!(index.premerged.get(kw).is_none(), "{kw}");
        }
        let all = 0..dir.tools().len() as u32;
        let queries = [
            "in",
            "in pin",
            "information in",
            "inv",
            "a pinch of i",
            "works nt",
        ];
        let ahead: Vec<_> = queries
            .iter()
            .map(|q| index.search(&dir, q, all.clone(), 10))
            .collect();
        index.premerged = Premerged::default();
        index.clear_cache();
        for (q, want) in queries.iter().zip(ahead) {
            assert_eq!(index.search(&dir, q, all.clone(), 10), want, "{q}");
        }
    }
}
