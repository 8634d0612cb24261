//! BM25F over a directory snapshot: name words, description, parameter text and the group,
//! each with its own weight and length normalisation `b`, one shared k1.
//!
//! Text goes through [`analyze`]: the reference's words (camelCase split, case folding), English
//! stop words dropped, then the Snowball English stemmer (`rust-stemmers`), so "files" finds
//! `read_file` and "the weather in Paris" does not rank on "the".
//!
//! Scoring (BM25F, Robertson & Zaragoza 2009): for a term `t` and tool `d`,
//!
//! ```text
//! tf~(t,d)  = Σ_f  w_f · tf_f(t,d) / (1 − b_f + b_f · len_f(d) / avglen_f)
//! score     = Σ_t∈query  idf(t) · tf~ · (k1 + 1) / (k1 + tf~)
//! idf(t)    = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! Everything but the query is fixed per snapshot, so the index stores one precomputed impact
//! per (term, tool) posting and a query is a sum over its terms' posting lists. A query term
//! that repeats counts once (measured: repeats in long natural-language queries hurt recall).
//! [`Bm25Index::explain`] recomputes one tool's score term by term from the raw statistics, the
//! way tantivy's `Explanation` does, and tests check that it adds up to the ranked score.

use crate::search::pool::Pool;
use std::ops::Range;

use rustc_hash::FxHashMap;
use serde::Serialize;

mod build;
mod compound;

use super::Scored;
use super::analysis::analyze;
use super::corpus::{Corpus, Doc};
use crate::catalog::{ToolId, Visibility};
use crate::config::{BM25_FIELDS, Bm25Params};
use crate::text::for_each_word;
use compound::Compounds;

const F: usize = BM25_FIELDS.len();

/// The BM25 index of one directory snapshot.
#[derive(Debug)]
pub struct Bm25Index {
    params: Bm25Params,
    tool_count: usize,
    terms: FxHashMap<Box<str>, u32>,
    idf: Vec<f32>,
    /// Tools containing each term, in any field.
    df: Vec<u32>,
    /// CSR postings: term `t` owns `docs[offsets[t]..offsets[t+1]]`, ascending tool ids. A
    /// tool whose group text holds the term carries only what its own fields add to the group
    /// text's impact (BM25F saturates a term over all fields together); the group text's
    /// impact itself is in `spans`.
    offsets: Vec<u32>,
    docs: Vec<ToolId>,
    impacts: Vec<f32>,
    /// The group field's postings, once per run of tools sharing a group.
    spans: SpanPostings,
    /// Per tool, the analyzed length of each field.
    lengths: Vec<[u32; F]>,
    avg_lengths: [f32; F],
    /// The catalog's words, which compound names are split into.
    compounds: Compounds,
    /// Per-query score accumulators, reused (a fresh one per query cost page faults over the
    /// whole catalog): all zero between queries.
    scratch: Pool<Accumulator>,
}

/// One query's scores per tool, and the tools it touched.
#[derive(Debug, Default)]
struct Accumulator {
    scores: Vec<f32>,
    touched: Vec<ToolId>,
}

/// The group field's postings, one per run of consecutive tools of the same group rather than
/// one per tool: every tool of a group has the same group text, so the same group-only impact
/// (at 100k MCP-sized tools in 14k groups, a quarter of all postings repeated a group's terms).
#[derive(Debug, Default)]
struct SpanPostings {
    /// Each run's tools.
    runs: Vec<Range<ToolId>>,
    /// CSR by term: term `t` owns `run[offsets[t]..offsets[t+1]]` and the same `impacts`.
    offsets: Vec<u32>,
    run: Vec<u32>,
    impacts: Vec<f32>,
}

impl SpanPostings {
    /// Every `(tools, impact)` of term `t`.
    fn of(&self, t: u32) -> impl Iterator<Item = (Range<ToolId>, f32)> + '_ {
        let r = self.offsets[t as usize] as usize..self.offsets[t as usize + 1] as usize;
        self.run[r.clone()]
            .iter()
            .zip(&self.impacts[r])
            .map(|(&k, &impact)| (self.runs[k as usize].clone(), impact))
    }
}

/// How one query term contributed to one tool's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TermExplanation {
    /// The index term (stemmed).
    pub term: String,
    /// Its inverse document frequency.
    pub idf: f32,
    /// Tools containing it.
    pub df: u32,
    /// Its frequency in each field, in [`BM25_FIELDS`] order.
    pub tf: [u32; F],
    /// The weighted, length-normalised frequency `tf~`.
    pub weighted_tf: f32,
    /// `idf · tf~ · (k1 + 1) / (k1 + tf~)`.
    pub score: f32,
}

/// Why a tool got its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// The total (the sum of the terms' scores).
    pub score: f32,
    /// Query terms that occur in the tool, in query order.
    pub terms: Vec<TermExplanation>,
    /// The parameters used.
    pub params: Bm25Params,
}

impl Explanation {
    /// A one-line account, e.g. `weather (description ×2, name ×1) 3.10 + paris … 1.20`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let fields: Vec<String> =
                    t.tf.iter()
                        .zip(BM25_FIELDS)
                        .filter(|(n, _)| **n > 0)
                        .map(|(n, f)| format!("{f} ×{n}"))
                        .collect();
                format!("{} ({}) {:.2}", t.term, fields.join(", "), t.score)
            })
            .collect();
        parts.join(" + ")
    }
}

/// The text of each field of a document.
fn field_texts<'a>(doc: &Doc<'a>, corpus: &'a (impl Corpus + ?Sized)) -> [Vec<&'a str>; F] {
    let mut params: Vec<&str> = doc.param_names().collect();
    params.extend(doc.param_descriptions());
    [
        vec![doc.name],
        vec![doc.description],
        params,
        vec![
            corpus.group_name(doc.group),
            corpus.group_description(doc.group),
        ],
    ]
}

/// Calls `f(field, term)` for every index term of a tool's fields: each text analyzed, then
/// the terms of the parts of the name's compound words (see [`compound`]). The parts count
/// towards the name's length like any term (measured: not counting them ranks worse).
fn for_each_term(texts: &[Vec<&str>; F], compounds: &Compounds, mut f: impl FnMut(usize, &str)) {
    for (field, parts) in texts.iter().enumerate() {
        for text in parts {
            analyze(text, |t| f(field, t));
            if field == 0 {
                for_each_word(text, |w| {
                    for part in compounds.split(w).into_iter().flatten() {
                        analyze(part, |t| f(field, t));
                    }
                });
            }
        }
    }
}

/// Term frequencies of each field of a tool.
fn field_tfs(
    texts: &[Vec<&str>; F],
    compounds: &Compounds,
) -> (FxHashMap<String, [u32; F]>, [u32; F]) {
    let mut tfs: FxHashMap<String, [u32; F]> = FxHashMap::default();
    let mut lengths = [0u32; F];
    for_each_term(texts, compounds, |f, t| {
        lengths[f] += 1;
        if let Some(e) = tfs.get_mut(t) {
            // As the index counts them: at most u16::MAX per field.
            e[f] = (e[f] + 1).min(u32::from(u16::MAX));
        } else {
            let mut e = [0; F];
            e[f] = 1;
            tfs.insert(t.to_owned(), e);
        }
    });
    (tfs, lengths)
}

impl Bm25Index {
    /// The parameters it was built with.
    pub fn params(&self) -> &Bm25Params {
        &self.params
    }

    /// The IDF of a word exactly one tool has: what one rare word's match weighs in this
    /// index. It grows with the log of the catalog's size, so scores divided by it compare
    /// across catalogs (hybrid's adaptive fusion reads BM25's confidence in these units).
    pub fn rare_idf(&self) -> f32 {
        idf(self.tool_count, 1)
    }

    /// Distinct index terms.
    pub fn vocabulary(&self) -> usize {
        self.terms.len()
    }

    /// The weighted, length-normalised frequency `tf~` that index term `term` has in `tool`'s
    /// own text (all its fields), recovered from the stored impact; 0 when it has none. With
    /// it, another field's frequency joins the same saturation, as BM25F adds fields.
    pub fn weighted_tf(&self, term: &str, tool: ToolId) -> f32 {
        let Some(&t) = self.terms.get(term) else {
            return 0.0;
        };
        let r = self.offsets[t as usize] as usize..self.offsets[t as usize + 1] as usize;
        let docs = &self.docs[r.clone()];
        let mut impact = match docs.binary_search(&tool) {
            Ok(i) => self.impacts[r.start + i],
            Err(_) => 0.0,
        };
        for (tools, group_impact) in self.spans.of(t) {
            if tools.contains(&tool) {
                impact += group_impact;
                break;
            }
        }
        let idf = self.idf[t as usize];
        if impact <= 0.0 || idf <= 0.0 {
            return 0.0;
        }
        // impact = idf · x · (k1 + 1) / (k1 + x)  ⇒  x = k1 · s / (k1 + 1 − s), s = impact / idf.
        let k1 = self.params.k1;
        let s = (impact / idf).min(k1 + 1.0 - 1e-6);
        k1 * s / (k1 + 1.0 - s)
    }

    /// [`weighted_tf`](Self::weighted_tf) of `term` in each of `tools` (ascending), in order:
    /// one walk of the term's postings and runs for all of them.
    pub fn weighted_tfs(&self, term: &str, tools: &[ToolId]) -> Vec<f32> {
        let mut out = vec![0.0f32; tools.len()];
        let Some(&t) = self.terms.get(term) else {
            return out;
        };
        let idf = self.idf[t as usize];
        if idf <= 0.0 {
            return out;
        }
        let r = self.offsets[t as usize] as usize..self.offsets[t as usize + 1] as usize;
        let (docs, impacts) = (&self.docs[r.clone()], &self.impacts[r]);
        let mut d = 0;
        for (i, tool) in tools.iter().enumerate() {
            d += docs[d..].partition_point(|x| x < tool);
            if docs.get(d) == Some(tool) {
                out[i] = impacts[d];
            }
        }
        let mut in_run = vec![false; tools.len()];
        for (run, group_impact) in self.spans.of(t) {
            let from = tools.partition_point(|x| *x < run.start);
            let to = tools.partition_point(|x| *x < run.end);
            for i in from..to {
                // A tool's first run counts, as in `weighted_tf`.
                if !std::mem::replace(&mut in_run[i], true) {
                    out[i] += group_impact;
                }
            }
        }
        let k1 = self.params.k1;
        for impact in &mut out {
            *impact = if *impact <= 0.0 {
                0.0
            } else {
                let s = (*impact / idf).min(k1 + 1.0 - 1e-6);
                k1 * s / (k1 + 1.0 - s)
            };
        }
        out
    }

    /// The BM25 saturation of a weighted frequency `x`, times `idf`.
    pub fn saturated(&self, idf: f32, x: f32) -> f32 {
        let k1 = self.params.k1;
        idf * x * (k1 + 1.0) / (k1 + x)
    }

    fn term_score(&self, term: u32, tool: ToolId, tf: &[u32; F]) -> (f32, f32) {
        let p = &self.params;
        let lens = &self.lengths[tool as usize];
        let mut weighted = 0.0f32;
        for f in 0..F {
            if tf[f] == 0 {
                continue;
            }
            let norm = 1.0 - p.b[f] + p.b[f] * lens[f] as f32 / self.avg_lengths[f];
            weighted += p.weights[f] * tf[f] as f32 / norm;
        }
        let score = self.idf[term as usize] * weighted * (p.k1 + 1.0) / (p.k1 + weighted);
        (weighted, score)
    }

    /// Distinct known terms of a query, in first-seen order.
    fn query_terms(&self, query: &str) -> Vec<(String, u32)> {
        let mut seen: Vec<(String, u32)> = Vec::new();
        analyze(query, |t| {
            if seen.iter().any(|(s, _)| s == t) {
                return;
            }
            if let Some(&id) = self.terms.get(t) {
                seen.push((t.to_owned(), id));
            }
        });
        seen
    }

    /// Scores every tool of `scope` against `query`; returns the best `need`, best first (ties
    /// by id, that is by canonical name), and how many tools in scope score above zero.
    pub fn search(&self, query: &str, scope: Range<ToolId>, need: usize) -> (Vec<Scored>, usize) {
        self.search_visible(query, scope, need, None)
    }

    /// [`search`](Self::search) over the tools `visible` shows only.
    pub fn search_visible(
        &self,
        query: &str,
        scope: Range<ToolId>,
        need: usize,
        visible: Option<&Visibility>,
    ) -> (Vec<Scored>, usize) {
        self.search_boosted(query, scope, need, visible, &[])
    }

    /// [`search_visible`](Self::search_visible) with `extra` added to the scores of its tools
    /// (the learned field's scores, see [`LearnedIndex`](super::LearnedIndex)): a tool the
    /// query's terms miss in its own text can still rank on what it learned.
    pub fn search_boosted(
        &self,
        query: &str,
        scope: Range<ToolId>,
        need: usize,
        visible: Option<&Visibility>,
        extra: &[(ToolId, f32)],
    ) -> (Vec<Scored>, usize) {
        let terms = self.query_terms(query);
        let mut scratch = self.scratch.take(Accumulator::default);
        scratch.scores.resize(self.tool_count, 0.0);
        let Accumulator {
            scores: acc,
            touched,
        } = &mut scratch;
        for &(d, score) in extra {
            if score <= 0.0 || d as usize >= acc.len() {
                continue;
            }
            let slot = &mut acc[d as usize];
            if *slot == 0.0 {
                touched.push(d);
            }
            *slot += score;
        }
        for (_, t) in &terms {
            for (tools, impact) in self.spans.of(*t) {
                if impact <= 0.0 {
                    continue;
                }
                for d in tools {
                    let slot = &mut acc[d as usize];
                    if *slot == 0.0 {
                        touched.push(d);
                    }
                    *slot += impact;
                }
            }
            let r = self.offsets[*t as usize] as usize..self.offsets[*t as usize + 1] as usize;
            for (&d, &impact) in self.docs[r.clone()].iter().zip(&self.impacts[r]) {
                // A field weighted 0 leaves impacts of 0 (as does a tool's own text adding
                // nothing to its group's): they must not touch a tool twice.
                if impact <= 0.0 {
                    continue;
                }
                let slot = &mut acc[d as usize];
                if *slot == 0.0 {
                    touched.push(d);
                }
                *slot += impact;
            }
        }
        let mut hits: Vec<Scored> = touched
            .iter()
            .filter(|d| scope.contains(d) && visible.is_none_or(|v| v.tool(**d)))
            .map(|&d| Scored {
                tool: d,
                score: acc[d as usize],
            })
            .filter(|s| s.score > 0.0)
            .collect();
        for &d in touched.iter() {
            acc[d as usize] = 0.0;
        }
        touched.clear();
        self.scratch.give(scratch);
        let total = hits.len();
        let order = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool));
        if need < hits.len() {
            if need == 0 {
                hits.clear();
            } else {
                hits.select_nth_unstable_by(need - 1, order);
                hits.truncate(need);
            }
        }
        hits.sort_unstable_by(order);
        (hits, total)
    }

    /// Why `tool` scores what it does for `query`, term by term.
    pub fn explain(
        &self,
        query: &str,
        tool: ToolId,
        corpus: &(impl Corpus + ?Sized),
    ) -> Explanation {
        let (tfs, _) = field_tfs(&field_texts(&corpus.doc(tool), corpus), &self.compounds);
        let terms = self.query_terms(query);
        let mut out = Vec::new();
        for (term, t) in terms {
            let Some(tf) = tfs.get(&term) else { continue };
            let (weighted, score) = self.term_score(t, tool, tf);
            out.push(TermExplanation {
                term,
                idf: self.idf[t as usize],
                df: self.df[t as usize],
                tf: *tf,
                weighted_tf: weighted,
                score,
            });
        }
        Explanation {
            score: out.iter().map(|t| t.score).sum(),
            terms: out,
            params: self.params,
        }
    }
}

fn idf(n: usize, df: u32) -> f32 {
    let (n, df) = (n as f64, f64::from(df));
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
}
