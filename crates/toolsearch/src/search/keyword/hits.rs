//! One keyword's hits: its whole-word and substring postings merged into the best bucket per
//! tool, kept sparse or as half a byte per tool, and cached per snapshot within a byte budget.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

use super::accumulate::{NONE, Scratch};
use super::build::suffix;
use super::chars::CharHits;
use super::nibbles::Nibbles;
use super::{ALL_FIELDS, KeywordIndex};
use crate::catalog::ToolId;
use crate::search::FIELDS;

/// Every tool one keyword hits, with its best bucket.
#[derive(Debug)]
pub(super) enum KeywordHits {
    /// Hit tools in ascending order, with their buckets.
    Sparse(Vec<ToolId>, Vec<u8>),
    /// Every tool's bucket, or none, half a byte each.
    Dense(Nibbles),
}

impl KeywordHits {
    fn bytes(&self) -> usize {
        match self {
            Self::Sparse(t, _) => t.len() * 5,
            Self::Dense(d) => d.len(),
        }
    }
}

type CacheMap = HashMap<Box<str>, Arc<KeywordHits>>;

/// Merged hits of recent keywords, bounded in bytes; emptied when full. Keyed by query text,
/// so it uses the standard (DoS-resistant) hasher.
#[derive(Debug)]
pub(super) struct HitCache {
    /// Keyword → hits, and the bytes they hold.
    pub(super) map: RwLock<(CacheMap, usize)>,
    pub(super) budget: usize,
}

/// A keyword hitting more than 1/DENSE_DIVISOR of the tools is kept as half a byte per tool.
const DENSE_DIVISOR: usize = 16;

impl KeywordIndex {
    /// The merged hits of one keyword, from the cache or merged now (and cached).
    pub(super) fn hits(&self, kw: &str, fields: u8, s: &mut Scratch) -> Arc<KeywordHits> {
        // Keywords are letters and digits only, so a control-character prefix cannot clash.
        let restricted;
        let key = if fields == ALL_FIELDS {
            kw
        } else {
            restricted = format!("\u{0}{}{kw}", char::from(b'a' + fields));
            &restricted
        };
        if fields == ALL_FIELDS
            && let Some(h) = self.premerged.get(kw)
        {
            return h.clone();
        }
        if let Some(h) = self.cache.map.read().0.get(key) {
            return h.clone();
        }
        let hits = Arc::new(self.merge_hits(kw, fields, s));
        let mut guard = self.cache.map.write();
        let (map, used) = &mut *guard;
        if *used + hits.bytes() > self.cache.budget {
            map.clear();
            *used = 0;
        }
        *used += hits.bytes();
        map.insert(key.into(), hits.clone());
        hits
    }

    /// Merges a keyword's whole-word and substring postings into its best bucket per tool.
    pub(super) fn merge_hits(&self, kw: &str, fields: u8, s: &mut Scratch) -> KeywordHits {
        let Scratch {
            best,
            best_touched: touched,
            ..
        } = s;
        let mut hit_one = |tool: ToolId, mask: u8, tier: u8| {
            let in_fields = mask & fields;
            if in_fields == 0 {
                return;
            }
            let bucket = tier + in_fields.trailing_zeros() as u8;
            let slot = &mut best[tool as usize];
            if *slot == NONE {
                touched.push(tool);
                *slot = bucket;
            } else if bucket < *slot {
                *slot = bucket;
            }
        };
        let mut hit = |(tools, masks): (&[ToolId], &[u8]), tier: u8| {
            for (&tool, &mask) in tools.iter().zip(masks) {
                hit_one(tool, mask, tier);
            }
        };
        if let Some(&w) = self.words.get(kw) {
            hit(self.word_postings.get(w), 0);
        }
        let substring_tier = FIELDS.len() as u8;
        let mut chars = kw.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            if let Some(&c) = self.chars.get(&c) {
                match self.char_postings.get(c) {
                    CharHits::Sparse(tools, masks) => hit((tools, masks), substring_tier),
                    CharHits::Dense(masks) => {
                        for (tool, &mask) in masks.iter().enumerate() {
                            if mask != 0 {
                                hit_one(tool as ToolId, mask, substring_tier);
                            }
                        }
                    }
                }
            }
        } else {
            for &(_, token) in self.suffix_range(kw.as_bytes()) {
                hit(self.token_postings.get(token), substring_tier);
            }
        }
        let out = if touched.len() * DENSE_DIVISOR > self.tool_count {
            let dense = Nibbles::pack(best);
            for &t in touched.iter() {
                best[t as usize] = NONE;
            }
            KeywordHits::Dense(dense)
        } else {
            touched.sort_unstable();
            let buckets = touched
                .iter()
                .map(|&t| std::mem::replace(&mut best[t as usize], NONE))
                .collect();
            KeywordHits::Sparse(touched.clone(), buckets)
        };
        touched.clear();
        out
    }

    /// The suffix-array entries whose suffix starts with `needle`.
    pub(super) fn suffix_range(&self, needle: &[u8]) -> &[(u32, u32)] {
        let text = &self.token_text;
        let prefix = |pos: u32| {
            let s = suffix(text, pos);
            &s[..s.len().min(needle.len())]
        };
        let lo = self.suffixes.partition_point(|&(p, _)| prefix(p) < needle);
        let hi = lo + self.suffixes[lo..].partition_point(|&(p, _)| prefix(p) == needle);
        &self.suffixes[lo..hi]
    }
}
