//! The deterministic `keyword` ranking of DESIGN.md, on an index built once per snapshot.
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

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use crate::catalog::directory::{GroupEntry, ToolEntry, ToolId};
use crate::search::{BUCKETS, FIELDS};
use crate::text::{distinct_words, fold, for_each_folded_run, for_each_word};

#[derive(Debug, Clone, Copy)]
struct Posting {
    tool: ToolId,
    fields: u8,
}

/// How well one tool matches a query; greater is better. The derived order is exactly the
/// DESIGN.md order: exact match, then keywords covered, then the bucket counts in priority order.
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
    exact: HashMap<String, Vec<ToolId>>,
    words: HashMap<Box<str>, u32>,
    word_postings: Vec<Vec<Posting>>,
    token_postings: Vec<Vec<Posting>>,
    /// Distinct tokens, each followed by a 0 byte.
    token_text: Vec<u8>,
    /// Suffix array over `token_text`: (start of a suffix at a char boundary, its token).
    suffixes: Vec<(u32, u32)>,
    char_postings: HashMap<char, Vec<Posting>>,
    scratch: Mutex<Vec<Scratch>>,
}

#[derive(Debug, Default)]
struct Scratch {
    best: Vec<u8>,
    touched: Vec<ToolId>,
    ranks: Vec<Rank>,
    matched: Vec<ToolId>,
}

const NONE: u8 = u8::MAX;

/// Calls `f(field, text)` for every searchable text of a tool.
pub(crate) fn for_each_field<'a>(
    tool: &'a ToolEntry,
    group: &'a str,
    mut f: impl FnMut(usize, &'a str),
) {
    f(0, &tool.name);
    f(1, &tool.description);
    f(2, group);
    for p in &tool.schema_text.property_names {
        f(3, p);
    }
    for d in &tool.schema_text.descriptions {
        f(4, d);
    }
}

struct Builder {
    words: HashMap<Box<str>, u32>,
    word_postings: Vec<Vec<Posting>>,
    tokens: HashMap<Box<str>, u32>,
    token_postings: Vec<Vec<Posting>>,
    token_chars: Vec<Vec<char>>,
    char_postings: HashMap<char, Vec<Posting>>,
}

fn intern(map: &mut HashMap<Box<str>, u32>, postings: &mut Vec<Vec<Posting>>, s: &str) -> u32 {
    if let Some(&id) = map.get(s) {
        return id;
    }
    let id = postings.len() as u32;
    map.insert(s.into(), id);
    postings.push(Vec::new());
    id
}

/// Sorts `(id, field bit)` pairs and appends one merged posting per id for `tool`.
fn flush_postings(pairs: &mut Vec<(u32, u8)>, tool: ToolId, postings: &mut [Vec<Posting>]) {
    pairs.sort_unstable();
    let mut i = 0;
    while i < pairs.len() {
        let id = pairs[i].0;
        let mut fields = 0;
        while i < pairs.len() && pairs[i].0 == id {
            fields |= pairs[i].1;
            i += 1;
        }
        postings[id as usize].push(Posting { tool, fields });
    }
    pairs.clear();
}

impl KeywordIndex {
    /// Builds the index for a directory's tools (sorted by canonical name) and groups.
    pub fn build(tools: &[ToolEntry], groups: &[GroupEntry]) -> Self {
        let mut b = Builder {
            words: HashMap::new(),
            word_postings: Vec::new(),
            tokens: HashMap::new(),
            token_postings: Vec::new(),
            token_chars: Vec::new(),
            char_postings: HashMap::new(),
        };
        let mut exact: HashMap<String, Vec<ToolId>> = HashMap::new();
        let mut word_pairs: Vec<(u32, u8)> = Vec::new();
        let mut token_pairs: Vec<(u32, u8)> = Vec::new();
        let mut char_pairs: Vec<(char, u8)> = Vec::new();
        for (id, tool) in tools.iter().enumerate() {
            let id = id as ToolId;
            let group = &groups[tool.group as usize].name;
            let lname = fold(&tool.name);
            let lcanon = fold(&tool.canonical);
            if lcanon != lname {
                exact.entry(lcanon).or_default().push(id);
            }
            exact.entry(lname).or_default().push(id);
            for_each_field(tool, group, |field, text| {
                let bit = 1u8 << field;
                for_each_word(text, |w| {
                    word_pairs.push((intern(&mut b.words, &mut b.word_postings, w), bit));
                });
                for_each_folded_run(text, |run| {
                    let before = b.token_postings.len();
                    let t = intern(&mut b.tokens, &mut b.token_postings, run);
                    if b.token_postings.len() > before {
                        let mut cs: Vec<char> = run.chars().collect();
                        cs.sort_unstable();
                        cs.dedup();
                        b.token_chars.push(cs);
                    }
                    token_pairs.push((t, bit));
                });
            });
            flush_postings(&mut word_pairs, id, &mut b.word_postings);
            // Characters come from the tool's distinct tokens, before their pairs are merged.
            for &(t, bit) in &token_pairs {
                for &c in &b.token_chars[t as usize] {
                    char_pairs.push((c, bit));
                }
            }
            flush_postings(&mut token_pairs, id, &mut b.token_postings);
            char_pairs.sort_unstable();
            let mut i = 0;
            while i < char_pairs.len() {
                let c = char_pairs[i].0;
                let mut fields = 0;
                while i < char_pairs.len() && char_pairs[i].0 == c {
                    fields |= char_pairs[i].1;
                    i += 1;
                }
                b.char_postings
                    .entry(c)
                    .or_default()
                    .push(Posting { tool: id, fields });
            }
            char_pairs.clear();
        }

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
            tool_count: tools.len(),
            exact,
            words: b.words,
            word_postings: b.word_postings,
            token_postings: b.token_postings,
            token_text,
            suffixes,
            char_postings: b.char_postings,
            scratch: Mutex::new(Vec::new()),
        }
    }

    /// Ranks the tools in `scope` for `query` (trimmed here). `matches` holds at least the best
    /// `need` matches (fewer only when fewer match), sorted best first; `total` counts all.
    pub fn search(&self, query: &str, scope: Range<ToolId>, need: usize) -> Ranked {
        let trimmed = query.trim();
        let keywords = distinct_words(trimmed);
        let mut s = self.take_scratch();
        let in_scope = |t: ToolId| scope.contains(&t);

        if keywords.is_empty() && trimmed.is_empty() {
            let total = scope.len();
            let matches = scope
                .clone()
                .take(need)
                .map(|tool| Match {
                    tool,
                    rank: Rank::default(),
                })
                .collect();
            self.give_back(s);
            return Ranked {
                matches,
                total,
                no_keywords: true,
            };
        }

        if let Some(ids) = self.exact.get(&fold(trimmed)) {
            for &t in ids.iter().filter(|t| in_scope(**t)) {
                s.ranks[t as usize].exact = true;
                s.matched.push(t);
            }
        }
        for kw in keywords.iter().take(u16::MAX as usize) {
            self.apply_keyword(kw, &scope, &mut s);
        }

        let mut matches: Vec<Match> = s
            .matched
            .iter()
            .map(|&t| Match {
                tool: t,
                rank: s.ranks[t as usize],
            })
            .collect();
        for &t in &s.matched {
            s.ranks[t as usize] = Rank::default();
        }
        s.matched.clear();
        self.give_back(s);

        let total = matches.len();
        if need == 0 {
            matches.clear();
        } else if need < total {
            matches.select_nth_unstable_by(need - 1, best_first);
            matches.truncate(need);
        }
        matches.sort_unstable_by(best_first);
        Ranked {
            matches,
            total,
            no_keywords: keywords.is_empty(),
        }
    }

    fn apply_keyword(&self, kw: &str, scope: &Range<ToolId>, s: &mut Scratch) {
        let Scratch {
            best,
            touched,
            ranks,
            matched,
        } = s;
        let mut hit = |postings: &[Posting], tier: u8| {
            for p in postings {
                if !scope.contains(&p.tool) {
                    continue;
                }
                let bucket = tier + p.fields.trailing_zeros() as u8;
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
            hit(&self.word_postings[w as usize], 0);
        }
        let substring_tier = FIELDS.len() as u8;
        let mut chars = kw.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            if let Some(postings) = self.char_postings.get(&c) {
                hit(postings, substring_tier);
            }
        } else {
            for &(_, token) in self.suffix_range(kw.as_bytes()) {
                hit(&self.token_postings[token as usize], substring_tier);
            }
        }
        for &t in touched.iter() {
            let r = &mut ranks[t as usize];
            if r.coverage == 0 && !r.exact {
                matched.push(t);
            }
            r.coverage += 1;
            r.buckets[best[t as usize] as usize] += 1;
            best[t as usize] = NONE;
        }
        touched.clear();
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
            best: vec![NONE; self.tool_count],
            touched: Vec::new(),
            ranks: vec![Rank::default(); self.tool_count],
            matched: Vec::new(),
        })
    }

    fn give_back(&self, s: Scratch) {
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(s);
        }
    }

    /// Distinct words and tokens indexed (for reports).
    pub fn vocabulary(&self) -> (usize, usize) {
        (self.words.len(), self.token_postings.len())
    }
}

/// The suffix of `text` at `pos`, up to (not including) the token's terminating 0 byte.
fn suffix(text: &[u8], pos: u32) -> &[u8] {
    let rest = &text[pos as usize..];
    let end = memchr::memchr(0, rest).unwrap_or(rest.len());
    &rest[..end]
}
