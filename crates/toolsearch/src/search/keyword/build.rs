//! Building the keyword index: each run of tools tokenized on its own thread with its own
//! vocabularies, the vocabularies merged, posting lists laid out by a counting sort, and the
//! suffix array over the distinct tokens.

use parking_lot::RwLock;

use crate::search::pool::Pool;
use std::collections::HashMap;
use std::ops::Range;

use rustc_hash::FxHashMap;

use std::sync::Arc;

use super::KeywordIndex;
use super::chars::CharPostings;
use super::hits::HitCache;
use super::premerged::Premerged;
use crate::catalog::ToolId;
use crate::search::corpus::{Corpus, Doc};
use crate::search::exact::ExactNames;
use crate::text::{for_each_folded_run, for_each_word};

/// Posting lists of many ids in one flat layout (compressed sparse rows): id `i` owns
/// `tools[offsets[i]..offsets[i + 1]]` (ascending) and, at the same positions, `fields`, the bit
/// mask of the fields where the word or token occurs in that tool. Two arrays rather than one of
/// `(tool, fields)` structs, which padding makes 8 bytes: 5 bytes a posting (at 100k ToolBench
/// tools, 7.1 million postings: 35 MB instead of 57 MB).
#[derive(Debug, Default)]
pub(super) struct Postings {
    pub(super) offsets: Vec<u32>,
    tools: Vec<ToolId>,
    fields: Vec<u8>,
}

impl Postings {
    /// The postings of `id`: its tools and, position by position, their field masks.
    pub(super) fn get(&self, id: u32) -> (&[ToolId], &[u8]) {
        let id = id as usize;
        let range = self.offsets[id] as usize..self.offsets[id + 1] as usize;
        (&self.tools[range.clone()], &self.fields[range])
    }

    /// Postings stored so far (the next list starts here).
    pub(super) fn len(&self) -> usize {
        self.tools.len()
    }

    /// Appends postings to the list being written (its end offset is the caller's).
    pub(super) fn extend(&mut self, tools: &[ToolId], fields: &[u8]) {
        self.tools.extend_from_slice(tools);
        self.fields.extend_from_slice(fields);
    }
}

/// The `(id, fields)` pairs of a run of tools, in tool order: the tool is not stored per pair
/// but once per tool (`starts`), so a pair takes 5 bytes instead of 12 (at 100k ToolBench tools
/// the three kinds' pairs were 160 MB, the peak of the whole load).
#[derive(Default)]
struct Pairs {
    /// The run's first tool.
    first: ToolId,
    /// Where each tool's pairs begin.
    starts: Vec<u32>,
    ids: Vec<u32>,
    fields: Vec<u8>,
}

impl Pairs {
    /// Starts the pairs of the next tool.
    fn next_tool(&mut self) {
        self.starts.push(self.ids.len() as u32);
    }

    /// Every pair as `(id, tool, fields)`, in order.
    fn each(&self, mut f: impl FnMut(u32, ToolId, u8)) {
        for (k, items) in crate::parallel::per_tool(&self.starts, self.ids.len()) {
            let tool = self.first + k as ToolId;
            for j in items {
                f(self.ids[j], tool, self.fields[j]);
            }
        }
    }
}

/// One part's pairs, with the map renumbering its ids (`None`: already global).
type PartPairs<'a> = (&'a Pairs, Option<&'a [u32]>);

/// Cache budget, in multiples of the tool count (bytes): room for twice this many dense
/// keywords (half a byte per tool each).
const CACHE_DENSE_KEYWORDS: usize = 256;

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
    word_pairs: Pairs,
    tokens: FxHashMap<Box<str>, u32>,
    token_pairs: Pairs,
    /// Distinct characters of each token (char ids).
    token_chars: Vec<Vec<u32>>,
    chars: FxHashMap<char, u32>,
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
fn occur(slots: &mut Vec<(u32, u32)>, pairs: &mut Pairs, id: u32, tool: ToolId, bit: u8) {
    let i = id as usize;
    if i >= slots.len() {
        slots.resize(i + 1, (0, 0));
    }
    let slot = &mut slots[i];
    if slot.0 == tool + 1 {
        pairs.fields[slot.1 as usize] |= bit;
    } else {
        *slot = (tool + 1, pairs.ids.len() as u32);
        pairs.ids.push(id);
        pairs.fields.push(bit);
    }
}

impl Partial {
    /// Tokenizes the documents `ids` of `corpus`.
    fn build(corpus: &(impl Corpus + ?Sized), ids: Range<usize>) -> Self {
        let mut b = Self::default();
        for pairs in [&mut b.word_pairs, &mut b.token_pairs] {
            pairs.first = ids.start as ToolId;
        }
        let (mut word_slots, mut token_slots) = (Vec::new(), Vec::new());
        for id in ids {
            let id = id as ToolId;
            b.word_pairs.next_tool();
            b.token_pairs.next_tool();
            let tool = corpus.doc(id);
            let group = corpus.group_name(tool.group);
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
        }
        b
    }

    /// The pairs of words (0) or tokens (1).
    fn pairs_mut(&mut self, kind: usize) -> &mut Pairs {
        if kind == 0 {
            &mut self.word_pairs
        } else {
            &mut self.token_pairs
        }
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
        len += pairs.ids.len();
        for &id in &pairs.ids {
            offsets[global(*map, id) + 1] += 1;
        }
    }
    for i in 0..ids {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets.clone();
    let mut tools = vec![0; len];
    let mut fields = vec![0; len];
    for (pairs, map) in parts {
        pairs.each(|id, tool, mask| {
            let slot = &mut next[global(*map, id)];
            tools[*slot as usize] = tool;
            fields[*slot as usize] = mask;
            *slot += 1;
        });
    }
    Postings {
        offsets,
        tools,
        fields,
    }
}

impl KeywordIndex {
    /// Builds the index over `corpus` (a directory's tools are sorted by canonical name).
    pub fn build(corpus: &(impl Corpus + ?Sized)) -> Self {
        Self::build_with(corpus, Arc::new(ExactNames::build(corpus)))
    }

    /// [`build`](Self::build) with the corpus's exact names already made.
    pub(crate) fn build_with(corpus: &(impl Corpus + ?Sized), exact: Arc<ExactNames>) -> Self {
        let mut parts =
            crate::parallel::map_ranges(corpus.len(), |ids| Partial::build(corpus, ids));
        let mut b = if parts.is_empty() {
            Partial::default()
        } else {
            parts.remove(0)
        };
        let maps: Vec<[Vec<u32>; 3]> = parts.iter().map(|p| b.absorb_vocabulary(p)).collect();
        // One kind at a time, each kind's pairs freed as soon as its posting lists are laid
        // out: the pairs and the lists of every kind at once were the peak of the whole load.
        // Characters are not paired per tool: their postings come from the tokens'.
        let (words, tokens, chars) = (b.words.len(), b.tokens.len(), b.chars.len());
        let mut postings_of = |kind: usize, ids: usize| {
            let own = std::mem::take(b.pairs_mut(kind));
            let others: Vec<Pairs> = parts
                .iter_mut()
                .map(|p| std::mem::take(p.pairs_mut(kind)))
                .collect();
            let mut lists: Vec<PartPairs<'_>> = vec![(&own, None)];
            lists.extend(
                others
                    .iter()
                    .zip(&maps)
                    .map(|(v, m)| (v, Some(m[kind].as_slice()))),
            );
            postings_from_parts(ids, &lists)
        };
        let token_postings = postings_of(1, tokens);
        let word_postings = postings_of(0, words);
        let char_postings =
            CharPostings::from_tokens(&token_postings, &b.token_chars, chars, corpus.len());
        drop(parts);
        drop(b.token_chars);

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

        let mut index = Self {
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
            premerged: Premerged::default(),
            scratch: Pool::default(),
        };
        index.premerged = Premerged::build(&index);
        index
    }
}

/// The suffix of `text` at `pos`, up to (not including) the token's terminating 0 byte.
pub(super) fn suffix(text: &[u8], pos: u32) -> &[u8] {
    let rest = &text[pos as usize..];
    let end = memchr::memchr(0, rest).unwrap_or(rest.len());
    &rest[..end]
}
