//! The keywords whose merge costs most, merged once when the index is built.
//!
//! A keyword's substring hits are the postings of every token containing it, so a short,
//! frequent substring ("in", "on", "to") visits millions of postings at 100k tools: the first
//! question that holds it paid milliseconds before its merge was cached. The index knows each
//! such cost from its suffix array (the tokens under a prefix and their postings), so it merges
//! the costliest two- and three-character keywords ahead, within a small budget, and keeps
//! them apart from the bounded cache (which empties when full).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::ALL_FIELDS;
use super::KeywordIndex;
use super::build::suffix;
use super::hits::KeywordHits;

/// At most this many keywords are merged ahead.
const MOST: usize = 24;

/// Merged hits of the costliest short keywords (all fields).
#[derive(Debug, Default)]
pub(super) struct Premerged(FxHashMap<Box<str>, Arc<KeywordHits>>);

impl Premerged {
    /// The merged hits of `kw`, when it was merged ahead.
    pub(super) fn get(&self, kw: &str) -> Option<&Arc<KeywordHits>> {
        self.0.get(kw)
    }

    /// Merges the keywords of two and three characters whose merge would visit more postings
    /// than the index has tools, costliest first, at most [`MOST`].
    pub(super) fn build(index: &KeywordIndex) -> Self {
        let mut costs: Vec<(u64, &str)> = Vec::new();
        for len in [2usize, 3] {
            let mut i = 0;
            while i < index.suffixes.len() {
                let head = |k: usize| {
                    let s = suffix(&index.token_text, index.suffixes[k].0);
                    s.get(..len).and_then(|p| std::str::from_utf8(p).ok())
                };
                let Some(prefix) = head(i) else {
                    i += 1;
                    continue;
                };
                let mut cost = 0u64;
                let mut j = i;
                while j < index.suffixes.len() && head(j) == Some(prefix) {
                    cost += index.token_postings.get(index.suffixes[j].1).0.len() as u64;
                    j += 1;
                }
                if cost > index.tool_count as u64 {
                    costs.push((cost, prefix));
                }
                i = j;
            }
        }
        costs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let mut scratch = index.take_scratch();
        let map = costs
            .into_iter()
            .take(MOST)
            .map(|(_, kw)| {
                let hits = index.merge_hits(kw, ALL_FIELDS, &mut scratch);
                (Box::from(kw), Arc::new(hits))
            })
            .collect();
        index.give_back(scratch);
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
        assert!(index.premerged.get("in").is_some(), "{:?}", index.premerged);
        assert!(index.premerged.get("zz").is_none());
        let all = 0..dir.tools().len() as u32;
        let queries = ["in", "in pin", "information in", "inv"];
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
