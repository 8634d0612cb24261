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
//! bucket), kept as a sorted list or, when it hits many tools, a byte per tool. Merged hits are
//! cached per snapshot, bounded in size: the expensive keywords are the frequent ones ("the",
//! "a", "to"), which recur across queries, while rare ones are cheap to merge. Per query, the
//! counts are accumulated column-wise (one `u16` array per bucket), so a dense keyword is a few
//! vectorized passes, and ranks are packed into a `u128` for the final selection.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, RwLock};

use rustc_hash::FxHashMap;

use super::corpus::{Corpus, Doc};
use super::{BUCKETS, FIELDS};
use crate::catalog::ToolId;
use crate::text::{distinct_words, fold, for_each_folded_run, for_each_word};

#[derive(Debug, Clone, Copy)]
struct Posting {
    tool: ToolId,
    fields: u8,
}

/// Posting lists of many ids in one flat array (compressed sparse rows).
#[derive(Debug, Default)]
struct Postings {
    offsets: Vec<u32>,
    items: Vec<Posting>,
}

impl Postings {
    fn get(&self, id: u32) -> &[Posting] {
        let id = id as usize;
        &self.items[self.offsets[id] as usize..self.offsets[id + 1] as usize]
    }
}

/// How well one tool matches a query; greater is better. The derived order is exactly the
/// The reference's order: exact match, then keywords covered, then the bucket counts in priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
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
pub struct Match {
    /// The tool.
    pub tool: ToolId,
    /// Its rank.
    pub rank: Rank,
}

/// The outcome of one search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    /// The best matches, best first; at least the requested number when that many match.
    pub matches: Vec<Match>,
    /// Every match in scope, before paging.
    pub total: usize,
    /// The trimmed query had no words (browse when empty, exact matches only otherwise).
    pub no_keywords: bool,
}

/// Orders matches best first, ties by canonical name (= tool id).
pub fn best_first(a: &Match, b: &Match) -> std::cmp::Ordering {
    b.rank.cmp(&a.rank).then(a.tool.cmp(&b.tool))
}

/// The keyword index of one directory snapshot.
#[derive(Debug)]
pub struct KeywordIndex {
    tool_count: usize,
    exact: FxHashMap<String, Vec<ToolId>>,
    words: FxHashMap<Box<str>, u32>,
    word_postings: Postings,
    token_postings: Postings,
    /// Distinct tokens, each followed by a 0 byte.
    token_text: Vec<u8>,
    /// Suffix array over `token_text`: (start of a suffix at a char boundary, its token).
    suffixes: Vec<(u32, u32)>,
    chars: FxHashMap<char, u32>,
    char_postings: Postings,
    cache: HitCache,
    scratch: Mutex<Vec<Scratch>>,
}

/// Every tool one keyword hits, with its best bucket.
#[derive(Debug)]
enum KeywordHits {
    /// Hit tools in ascending order, with their buckets.
    Sparse(Vec<ToolId>, Vec<u8>),
    /// One byte per tool: its bucket, or [`NONE`].
    Dense(Vec<u8>),
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

/// One part's `(id, posting)` pairs, with the map renumbering its ids (`None`: already global).
type PartPairs<'a> = (&'a [(u32, Posting)], Option<&'a [u32]>);

/// Merged hits of recent keywords, bounded in bytes; emptied when full. Keyed by query text,
/// so it uses the standard (DoS-resistant) hasher.
#[derive(Debug)]
struct HitCache {
    /// Keyword → hits, and the bytes they hold.
    map: RwLock<(CacheMap, usize)>,
    budget: usize,
}

/// Per-query accumulators, reused across queries (all zero between queries).
#[derive(Debug, Default)]
struct Scratch {
    coverage: Vec<u16>,
    counts: Vec<Vec<u16>>,
    touched: Vec<ToolId>,
    exact: Vec<ToolId>,
    best: Vec<u8>,
    best_touched: Vec<ToolId>,
}

const NONE: u8 = u8::MAX;
/// Every searchable field.
pub const ALL_FIELDS: u8 = 0b1_1111;
/// A keyword hitting more than 1/DENSE_DIVISOR of the tools is kept as a byte per tool.
const DENSE_DIVISOR: usize = 16;
/// Cache budget, in multiples of the tool count (bytes): room for this many dense keywords.
const CACHE_DENSE_KEYWORDS: usize = 256;
/// At most this many distinct keywords count (each rank count is packed in 11 bits). A
/// 2,048-character query cannot reach it in practice: it would need that many distinct
/// one-letter words written without separators.
const MAX_KEYWORDS: usize = 2047;

/// Calls `f(field, text)` for every searchable text of a document.
pub(crate) fn for_each_field<'a>(doc: &Doc<'a>, group: &'a str, mut f: impl FnMut(usize, &'a str)) {
    f(0, doc.name);
    f(1, doc.description);
    f(2, group);
    for p in doc.param_names() {
        f(3, p);
    }
    for d in doc.param_descriptions() {
        f(4, d);
    }
}

/// The index material of a contiguous run of tools, with its own vocabularies (local ids).
#[derive(Default)]
struct Partial {
    words: FxHashMap<Box<str>, u32>,
    word_pairs: Vec<(u32, Posting)>,
    tokens: FxHashMap<Box<str>, u32>,
    token_pairs: Vec<(u32, Posting)>,
    /// Distinct characters of each token (char ids).
    token_chars: Vec<Vec<u32>>,
    chars: FxHashMap<char, u32>,
    char_pairs: Vec<(u32, Posting)>,
    exact: Vec<(String, ToolId)>,
}

fn intern(map: &mut FxHashMap<Box<str>, u32>, s: &str) -> (u32, bool) {
    if let Some(&id) = map.get(s) {
        return (id, false);
    }
    let id = map.len() as u32;
    map.insert(s.into(), id);
    (id, true)
}

fn intern_char(map: &mut FxHashMap<char, u32>, c: char) -> u32 {
    let next = map.len() as u32;
    *map.entry(c).or_insert(next)
}

/// Ids of a map's keys, as a vector indexed by id.
fn by_id<K: Clone>(map: &FxHashMap<K, u32>) -> Vec<K> {
    let mut v: Vec<(&K, u32)> = map.iter().map(|(k, &id)| (k, id)).collect();
    v.sort_unstable_by_key(|&(_, id)| id);
    v.into_iter().map(|(k, _)| k.clone()).collect()
}

/// Adds one occurrence of `id` in field `bit` of tool `tool`: a new pair the first time the
/// tool meets `id`, else the bit joins that pair. `slots[id]` remembers (tool + 1, pair index).
fn occur(
    slots: &mut Vec<(u32, u32)>,
    pairs: &mut Vec<(u32, Posting)>,
    id: u32,
    tool: ToolId,
    bit: u8,
) {
    let i = id as usize;
    if i >= slots.len() {
        slots.resize(i + 1, (0, 0));
    }
    let slot = &mut slots[i];
    if slot.0 == tool + 1 {
        pairs[slot.1 as usize].1.fields |= bit;
    } else {
        *slot = (tool + 1, pairs.len() as u32);
        pairs.push((id, Posting { tool, fields: bit }));
    }
}

impl Partial {
    /// Tokenizes the documents `ids` of `corpus`.
    fn build(corpus: &(impl Corpus + ?Sized), ids: Range<usize>) -> Self {
        let mut b = Self::default();
        let (mut word_slots, mut token_slots, mut char_slots) =
            (Vec::new(), Vec::new(), Vec::new());
        for id in ids {
            let id = id as ToolId;
            let tool = corpus.doc(id);
            let group = corpus.group_name(tool.group);
            let lname = fold(tool.name);
            let lcanon = fold(tool.canonical);
            if lcanon != lname {
                b.exact.push((lcanon, id));
            }
            b.exact.push((lname, id));
            let tokens_from = b.token_pairs.len();
            for_each_field(&tool, group, |field, text| {
                let bit = 1u8 << field;
                for_each_word(text, |w| {
                    let w = intern(&mut b.words, w).0;
                    occur(&mut word_slots, &mut b.word_pairs, w, id, bit);
                });
                for_each_folded_run(text, |run| {
                    let (t, new) = intern(&mut b.tokens, run);
                    if new {
                        let mut cs: Vec<u32> =
                            run.chars().map(|c| intern_char(&mut b.chars, c)).collect();
                        cs.sort_unstable();
                        cs.dedup();
                        b.token_chars.push(cs);
                    }
                    occur(&mut token_slots, &mut b.token_pairs, t, id, bit);
                });
            });
            // A tool's characters are those of its distinct tokens, with the tokens' fields.
            for k in tokens_from..b.token_pairs.len() {
                let (t, p) = b.token_pairs[k];
                for &c in &b.token_chars[t as usize] {
                    occur(&mut char_slots, &mut b.char_pairs, c, id, p.fields);
                }
            }
        }
        b
    }

    /// Renumbers `next`'s vocabularies (whose tools all come after this one's) into this
    /// one's, returning the maps for words, tokens and characters.
    fn absorb_vocabulary(&mut self, next: &Partial) -> [Vec<u32>; 3] {
        let char_map: Vec<u32> = by_id(&next.chars)
            .into_iter()
            .map(|c| intern_char(&mut self.chars, c))
            .collect();
        let word_map: Vec<u32> = by_id(&next.words)
            .iter()
            .map(|w| intern(&mut self.words, w).0)
            .collect();
        let mut token_map = Vec::with_capacity(next.tokens.len());
        for (local, t) in by_id(&next.tokens).iter().enumerate() {
            let (id, new) = intern(&mut self.tokens, t);
            if new {
                self.token_chars.push(
                    next.token_chars[local]
                        .iter()
                        .map(|&c| char_map[c as usize])
                        .collect(),
                );
            }
            token_map.push(id);
        }
        [word_map, token_map, char_map]
    }
}

/// Posting lists from several parts' pairs (in tool order), each renumbered by its map
/// (`None`: ids are already global). A stable counting sort by id.
fn postings_from_parts(ids: usize, parts: &[PartPairs<'_>]) -> Postings {
    let global = |map: Option<&[u32]>, id: u32| map.map_or(id, |m| m[id as usize]) as usize;
    let mut offsets = vec![0u32; ids + 1];
    let mut len = 0;
    for (pairs, map) in parts {
        len += pairs.len();
        for &(id, _) in *pairs {
            offsets[global(*map, id) + 1] += 1;
        }
    }
    for i in 0..ids {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets.clone();
    let mut items = vec![Posting { tool: 0, fields: 0 }; len];
    for (pairs, map) in parts {
        for &(id, p) in *pairs {
            let slot = &mut next[global(*map, id)];
            items[*slot as usize] = p;
            *slot += 1;
        }
    }
    Postings { offsets, items }
}

impl KeywordIndex {
    /// Builds the index over `corpus` (a directory's tools are sorted by canonical name).
    pub fn build(corpus: &(impl Corpus + ?Sized)) -> Self {
        let mut parts =
            crate::parallel::map_ranges(corpus.len(), |ids| Partial::build(corpus, ids));
        let mut b = if parts.is_empty() {
            Partial::default()
        } else {
            parts.remove(0)
        };
        let maps: Vec<[Vec<u32>; 3]> = parts.iter().map(|p| b.absorb_vocabulary(p)).collect();
        let lists = |pick: fn(&Partial) -> &[(u32, Posting)], kind: usize| {
            let mut v: Vec<PartPairs<'_>> = vec![(pick(&b), None)];
            v.extend(
                parts
                    .iter()
                    .zip(&maps)
                    .map(|(p, m)| (pick(p), Some(m[kind].as_slice()))),
            );
            v
        };
        let (words, tokens, chars) = (b.words.len(), b.tokens.len(), b.chars.len());
        let (word_lists, token_lists, char_lists) = (
            lists(|p| &p.word_pairs, 0),
            lists(|p| &p.token_pairs, 1),
            lists(|p| &p.char_pairs, 2),
        );
        let (word_postings, token_postings, char_postings) = std::thread::scope(|scope| {
            let w = scope.spawn(|| postings_from_parts(words, &word_lists));
            let t = scope.spawn(|| postings_from_parts(tokens, &token_lists));
            let c = postings_from_parts(chars, &char_lists);
            let join = |h: std::thread::ScopedJoinHandle<'_, Postings>| match h.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            (join(w), join(t), c)
        });
        let mut exact: FxHashMap<String, Vec<ToolId>> = FxHashMap::default();
        for (key, id) in std::mem::take(&mut b.exact)
            .into_iter()
            .chain(parts.iter_mut().flat_map(|p| std::mem::take(&mut p.exact)))
        {
            exact.entry(key).or_default().push(id);
        }
        drop(parts);
        drop((b.word_pairs, b.token_pairs, b.char_pairs, b.token_chars));

        // Token text and its suffix array (suffixes start at char boundaries only: a keyword
        // starts with a UTF-8 leading byte, which never matches inside a character).
        let mut by_id: Vec<(&str, u32)> = b.tokens.iter().map(|(s, &id)| (&**s, id)).collect();
        by_id.sort_unstable_by_key(|&(_, id)| id);
        let mut token_text = Vec::new();
        let mut suffixes = Vec::new();
        for (s, id) in by_id {
            let start = token_text.len() as u32;
            for (off, _) in s.char_indices() {
                suffixes.push((start + off as u32, id));
            }
            token_text.extend_from_slice(s.as_bytes());
            token_text.push(0);
        }
        suffixes.sort_unstable_by(|a, b| suffix(&token_text, a.0).cmp(suffix(&token_text, b.0)));

        Self {
            tool_count: corpus.len(),
            exact,
            words: b.words,
            word_postings,
            token_postings,
            token_text,
            suffixes,
            chars: b.chars,
            char_postings,
            cache: HitCache {
                map: RwLock::new((HashMap::new(), 0)),
                budget: CACHE_DENSE_KEYWORDS * corpus.len().max(64),
            },
            scratch: Mutex::new(Vec::new()),
        }
    }

    /// Ranks the tools in `scope` for `query` (trimmed here). `matches` holds at least the best
    /// `need` matches (fewer only when fewer match), sorted best first; `total` counts all.
    pub fn search(&self, query: &str, scope: Range<ToolId>, need: usize) -> Ranked {
        self.search_fields(query, scope, need, ALL_FIELDS)
    }

    /// [`search`](Self::search) with only the fields whose bit is set in `fields` searchable
    /// (bit 0 name, 1 description, 2 group, 3 parameter names, 4 parameter descriptions).
    pub fn search_fields(
        &self,
        query: &str,
        scope: Range<ToolId>,
        need: usize,
        fields: u8,
    ) -> Ranked {
        let trimmed = query.trim();
        let keywords = distinct_words(trimmed);
        if keywords.is_empty() && trimmed.is_empty() {
            let matches = scope
                .clone()
                .take(need)
                .map(|tool| Match {
                    tool,
                    rank: Rank::default(),
                })
                .collect();
            return Ranked {
                matches,
                total: scope.len(),
                no_keywords: true,
            };
        }
        let mut s = self.take_scratch();
        if let Some(ids) = self.exact.get(&fold(trimmed)) {
            s.exact
                .extend(ids.iter().copied().filter(|t| scope.contains(t)));
        }
        let mut dense_seen = false;
        for kw in keywords.iter().take(MAX_KEYWORDS) {
            let hits = self.hits(kw, fields & ALL_FIELDS, &mut s);
            dense_seen |= apply(&hits, &scope, &mut s);
        }
        let (mut keyed, total) = collect(&mut s, &scope, dense_seen, need);
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

    /// Tools in `scope` whose local or canonical name equals the trimmed query, ignoring case.
    pub fn exact_matches(&self, query: &str, scope: Range<ToolId>) -> Vec<ToolId> {
        self.exact
            .get(&fold(query.trim()))
            .map(|ids| ids.iter().copied().filter(|t| scope.contains(t)).collect())
            .unwrap_or_default()
    }

    /// Empties the merged-hits cache (benchmarks measure cold queries with it).
    pub fn clear_cache(&self) {
        if let Ok(mut guard) = self.cache.map.write() {
            guard.0.clear();
            guard.1 = 0;
        }
    }

    /// The merged hits of one keyword, from the cache or merged now (and cached).
    fn hits(&self, kw: &str, fields: u8, s: &mut Scratch) -> Arc<KeywordHits> {
        // Keywords are letters and digits only, so a control-character prefix cannot clash.
        let restricted;
        let key = if fields == ALL_FIELDS {
            kw
        } else {
            restricted = format!("\u{0}{}{kw}", char::from(b'a' + fields));
            &restricted
        };
        if let Ok(guard) = self.cache.map.read()
            && let Some(h) = guard.0.get(key)
        {
            return h.clone();
        }
        let hits = Arc::new(self.merge_hits(kw, fields, s));
        if let Ok(mut guard) = self.cache.map.write() {
            let (map, used) = &mut *guard;
            if *used + hits.bytes() > self.cache.budget {
                map.clear();
                *used = 0;
            }
            *used += hits.bytes();
            map.insert(key.into(), hits.clone());
        }
        hits
    }

    /// Merges a keyword's whole-word and substring postings into its best bucket per tool.
    fn merge_hits(&self, kw: &str, fields: u8, s: &mut Scratch) -> KeywordHits {
        let Scratch {
            best,
            best_touched: touched,
            ..
        } = s;
        let mut hit = |postings: &[Posting], tier: u8| {
            for p in postings {
                let in_fields = p.fields & fields;
                if in_fields == 0 {
                    continue;
                }
                let bucket = tier + in_fields.trailing_zeros() as u8;
                let slot = &mut best[p.tool as usize];
                if *slot == NONE {
                    touched.push(p.tool);
                    *slot = bucket;
                } else if bucket < *slot {
                    *slot = bucket;
                }
            }
        };
        if let Some(&w) = self.words.get(kw) {
            hit(self.word_postings.get(w), 0);
        }
        let substring_tier = FIELDS.len() as u8;
        let mut chars = kw.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            if let Some(&c) = self.chars.get(&c) {
                hit(self.char_postings.get(c), substring_tier);
            }
        } else {
            for &(_, token) in self.suffix_range(kw.as_bytes()) {
                hit(self.token_postings.get(token), substring_tier);
            }
        }
        let out = if touched.len() * DENSE_DIVISOR > self.tool_count {
            let dense = best.clone();
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
    fn suffix_range(&self, needle: &[u8]) -> &[(u32, u32)] {
        let text = &self.token_text;
        let prefix = |pos: u32| {
            let s = suffix(text, pos);
            &s[..s.len().min(needle.len())]
        };
        let lo = self.suffixes.partition_point(|&(p, _)| prefix(p) < needle);
        let hi = lo + self.suffixes[lo..].partition_point(|&(p, _)| prefix(p) == needle);
        &self.suffixes[lo..hi]
    }

    fn take_scratch(&self) -> Scratch {
        let pooled = match self.scratch.lock() {
            Ok(mut pool) => pool.pop(),
            Err(_) => None,
        };
        pooled.unwrap_or_else(|| Scratch {
            coverage: vec![0; self.tool_count],
            counts: vec![vec![0; self.tool_count]; BUCKETS],
            best: vec![NONE; self.tool_count],
            ..Scratch::default()
        })
    }

    fn give_back(&self, s: Scratch) {
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(s);
        }
    }

    /// Distinct words and tokens indexed (for reports).
    pub fn vocabulary(&self) -> (usize, usize) {
        (
            self.words.len(),
            self.token_postings.offsets.len().saturating_sub(1),
        )
    }
}

/// Adds one keyword's hits in `scope` to the accumulators; returns whether it was dense.
fn apply(hits: &KeywordHits, scope: &Range<ToolId>, s: &mut Scratch) -> bool {
    let (lo, hi) = (scope.start as usize, scope.end as usize);
    match hits {
        KeywordHits::Sparse(tools, buckets) => {
            let from = tools.partition_point(|&t| t < scope.start);
            let to = tools.partition_point(|&t| t < scope.end);
            for (&t, &b) in tools[from..to].iter().zip(&buckets[from..to]) {
                let c = &mut s.coverage[t as usize];
                if *c == 0 {
                    s.touched.push(t);
                }
                *c += 1;
                s.counts[b as usize][t as usize] += 1;
            }
            false
        }
        KeywordHits::Dense(best) => {
            let best = &best[lo..hi];
            for (c, &b) in s.coverage[lo..hi].iter_mut().zip(best) {
                *c += u16::from(b != NONE);
            }
            for (bucket, counts) in s.counts.iter_mut().enumerate() {
                let bucket = bucket as u8;
                for (c, &b) in counts[lo..hi].iter_mut().zip(best) {
                    *c += u16::from(b == bucket);
                }
            }
            true
        }
    }
}

fn packed_key(s: &Scratch, t: usize, exact: bool) -> u128 {
    let mut key = (u128::from(exact) << 121) | (u128::from(s.coverage[t]) << 110);
    for (b, counts) in s.counts.iter().enumerate() {
        key |= u128::from(counts[t]) << (11 * (9 - b));
    }
    key
}

/// Counts every match and returns at least the best `need` as (packed rank, tool), leaving the
/// accumulators zeroed. Only tools whose coverage can place them among the best `need` have
/// their full rank gathered: coverage is the first criterion after exactness, so the cut is a
/// coverage threshold found from a histogram.
fn collect(
    s: &mut Scratch,
    scope: &Range<ToolId>,
    dense_seen: bool,
    need: usize,
) -> (Vec<(u128, ToolId)>, usize) {
    let (lo, hi) = (scope.start as usize, scope.end as usize);
    s.exact.sort_unstable();
    let exact = std::mem::take(&mut s.exact);
    let mut out = Vec::new();
    let total;
    if dense_seen {
        let mut hist: Vec<usize> = Vec::new();
        for &c in &s.coverage[lo..hi] {
            let c = c as usize;
            if c >= hist.len() {
                hist.resize(c + 1, 0);
            }
            hist[c] += 1;
        }
        // Exact tools are candidates anyway: count them apart from the histogram.
        if hist.is_empty() {
            hist.push(0);
        }
        for &t in &exact {
            hist[s.coverage[t as usize] as usize] -= 1;
        }
        total = (hi - lo) - hist[0];
        // Lowest coverage that still yields `need` candidates (exact tools always qualify).
        let mut threshold = hist.len();
        let mut have = exact.len();
        while threshold > 1 && have < need {
            threshold -= 1;
            have += hist[threshold];
        }
        let threshold = threshold.max(1) as u16;
        for t in lo..hi {
            if s.coverage[t] >= threshold && exact.binary_search(&(t as ToolId)).is_err() {
                out.push((packed_key(s, t, false), t as ToolId));
            }
        }
        for &t in &exact {
            out.push((packed_key(s, t as usize, true), t));
        }
        s.coverage[lo..hi].fill(0);
        for counts in &mut s.counts {
            counts[lo..hi].fill(0);
        }
        s.touched.clear();
    } else {
        for &t in &s.touched {
            let is_exact = exact.binary_search(&t).is_ok();
            out.push((packed_key(s, t as usize, is_exact), t));
        }
        for &t in &exact {
            if s.coverage[t as usize] == 0 {
                out.push((packed_key(s, t as usize, true), t));
            }
        }
        for &t in &s.touched {
            s.coverage[t as usize] = 0;
            for counts in &mut s.counts {
                counts[t as usize] = 0;
            }
        }
        s.touched.clear();
        total = out.len();
    }
    s.exact = exact;
    s.exact.clear();
    (out, total)
}

fn unpack(key: u128) -> Rank {
    let field = |shift: u32| ((key >> shift) & 0x7ff) as u16;
    let mut buckets = [0; BUCKETS];
    for (b, v) in buckets.iter_mut().enumerate() {
        *v = field(11 * (9 - b as u32));
    }
    Rank {
        exact: (key >> 121) & 1 == 1,
        coverage: field(110),
        buckets,
    }
}

/// The suffix of `text` at `pos`, up to (not including) the token's terminating 0 byte.
fn suffix(text: &[u8], pos: u32) -> &[u8] {
    let rest = &text[pos as usize..];
    let end = memchr::memchr(0, rest).unwrap_or(rest.len());
    &rest[..end]
}
