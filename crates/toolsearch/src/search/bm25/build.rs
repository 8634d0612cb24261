//! Building the BM25 index: runs of tools analyzed on their own threads, each with its own
//! term ids; the vocabularies merged in first-seen order; the postings laid out by a counting
//! sort by term (tool order kept within a term), each with its impact computed on the way.
//!
//! A group's text is analyzed once for the run of its tools, and its terms are posted once for
//! the run (see `SpanPostings`); a tool's own posting of a term its group text also holds
//! carries the group text's frequency too, for the joint impact, less the run's impact.

use std::ops::Range;

use rustc_hash::FxHashMap;

use super::compound::Compounds;
use super::{Bm25Index, F, SpanPostings, field_texts, for_each_term, idf};
use crate::catalog::ToolId;
use crate::config::Bm25Params;
use crate::search::analysis::analyze;
use crate::search::corpus::Corpus;

/// A `(term, tf per field)` posting before its impact is known; its tool is known from where
/// it lies (12 bytes instead of 24: at 100k ToolBench tools the postings were the build's peak).
type RawPosting = (u32, [u16; F]);

/// The group's field, in [`crate::config::BM25_FIELDS`] order.
const GROUP: usize = 3;

/// A run of consecutive tools of one group, with its group text's distinct terms and their
/// frequencies (the run's own term ids).
struct Run {
    tools: Range<ToolId>,
    terms: Vec<(u32, u16)>,
}

/// The postings of one run of tools, with its own term ids.
#[derive(Default)]
struct Part {
    terms: FxHashMap<Box<str>, u32>,
    /// The run's first tool.
    first: ToolId,
    /// Where each tool's postings begin.
    starts: Vec<u32>,
    /// `(term, tf per field)`, in tool order: the tool's own fields, and the group's only for a
    /// term the tool's own fields also hold.
    postings: Vec<RawPosting>,
    /// Each tool's field lengths, in tool order.
    lengths: Vec<[u32; F]>,
    /// The group runs, in tool order.
    runs: Vec<Run>,
}

fn intern(terms: &mut FxHashMap<Box<str>, u32>, term: &str) -> u32 {
    if let Some(&id) = terms.get(term) {
        return id;
    }
    let id = terms.len() as u32;
    terms.insert(term.into(), id);
    id
}

impl Part {
    /// Analyzes the documents `ids` of `corpus`.
    fn analyze(corpus: &(impl Corpus + ?Sized), compounds: &Compounds, ids: Range<usize>) -> Self {
        let mut part = Self {
            first: ids.start as ToolId,
            ..Self::default()
        };
        // Per term: (tool + 1, its posting's index) of the last tool that used it.
        let mut slots: Vec<(u32, u32)> = Vec::new();
        // The group of the current run and its text's length.
        let mut current: Option<(u32, u32)> = None;
        for id in ids {
            let id = id as ToolId;
            part.starts.push(part.postings.len() as u32);
            let doc = corpus.doc(id);
            let mut texts = field_texts(&doc, corpus);
            let group_texts = std::mem::take(&mut texts[GROUP]);
            let mut lengths = [0u32; F];
            for_each_term(&texts, compounds, |f, t| {
                let term = intern(&mut part.terms, t);
                part.count(&mut slots, id, term, f, &mut lengths);
            });
            let group_len = match current {
                Some((g, len)) if g == doc.group => len,
                _ => {
                    let mut all: Vec<u32> = Vec::new();
                    for text in group_texts {
                        analyze(text, |t| all.push(intern(&mut part.terms, t)));
                    }
                    let len = all.len() as u32;
                    all.sort_unstable();
                    let mut counts: Vec<(u32, u16)> = Vec::new();
                    for term in all {
                        match counts.last_mut() {
                            Some((last, n)) if *last == term => *n = n.saturating_add(1),
                            _ => counts.push((term, 1)),
                        }
                    }
                    part.runs.push(Run {
                        tools: id..id,
                        terms: counts,
                    });
                    current = Some((doc.group, len));
                    len
                }
            };
            lengths[GROUP] = group_len;
            let run = part.runs.last_mut().expect("a run was started");
            run.tools.end = id + 1;
            // The tool's own postings of its group's terms carry the group's frequency too.
            for &(term, tf) in &run.terms {
                if let Some(&(owner, at)) = slots.get(term as usize)
                    && owner == id + 1
                {
                    part.postings[at as usize].1[GROUP] = tf;
                }
            }
            part.lengths.push(lengths);
        }
        part
    }

    /// Counts one occurrence of `term` in field `f` of tool `id` (the run's latest tool).
    fn count(
        &mut self,
        slots: &mut Vec<(u32, u32)>,
        id: ToolId,
        term: u32,
        f: usize,
        lengths: &mut [u32; F],
    ) {
        lengths[f] += 1;
        let i = term as usize;
        if i >= slots.len() {
            slots.resize(i + 1, (0, 0));
        }
        if slots[i].0 == id + 1 {
            let tf = &mut self.postings[slots[i].1 as usize].1[f];
            *tf = tf.saturating_add(1);
        } else {
            slots[i] = (id + 1, self.postings.len() as u32);
            let mut tf = [0; F];
            tf[f] = 1;
            self.postings.push((term, tf));
        }
    }
}

/// Keys of `terms` in id order.
fn by_id(terms: &FxHashMap<Box<str>, u32>) -> Vec<&str> {
    let mut v: Vec<(&str, u32)> = terms.iter().map(|(t, &id)| (&**t, id)).collect();
    v.sort_unstable_by_key(|&(_, id)| id);
    v.into_iter().map(|(t, _)| t).collect()
}

/// Prefix sums of per-term counts (`counts[t + 1]` holds term `t`'s count).
fn prefix_sums(counts: &mut [u32]) {
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
}

/// Only the group field's frequency of a posting.
fn group_only(tf: u16) -> [u32; F] {
    let mut only = [0; F];
    only[GROUP] = u32::from(tf);
    only
}

impl Bm25Index {
    /// Indexes the documents of `corpus` (in [`ToolId`] order).
    pub fn build(corpus: &(impl Corpus + ?Sized), params: Bm25Params) -> Self {
        let compounds = Compounds::build(corpus);
        let mut parts =
            crate::parallel::map_ranges(corpus.len(), |ids| Part::analyze(corpus, &compounds, ids));
        let mut first = if parts.is_empty() {
            Part::default()
        } else {
            parts.remove(0)
        };
        // Later runs' terms renumbered into the first's, in their first-seen order.
        let maps: Vec<Vec<u32>> = parts
            .iter()
            .map(|p| {
                by_id(&p.terms)
                    .into_iter()
                    .map(|t| intern(&mut first.terms, t))
                    .collect()
            })
            .collect();
        let terms = first.terms.len();
        let mut lengths = std::mem::take(&mut first.lengths);
        for p in &mut parts {
            lengths.append(&mut p.lengths);
        }
        let mut totals = [0f64; F];
        for l in &lengths {
            for f in 0..F {
                totals[f] += f64::from(l[f]);
            }
        }
        let own = Part {
            first: first.first,
            starts: std::mem::take(&mut first.starts),
            postings: std::mem::take(&mut first.postings),
            runs: std::mem::take(&mut first.runs),
            ..Part::default()
        };
        let mut runs: Vec<(Part, Option<Vec<u32>>)> = vec![(own, None)];
        runs.extend(parts.into_iter().zip(maps).map(|(p, m)| (p, Some(m))));
        let global = |map: &Option<Vec<u32>>, t: u32| map.as_ref().map_or(t, |m| m[t as usize]);
        // Per term: tool postings, group-run postings, and tools holding it (tools of a run
        // holding it, plus tools holding it in their own fields only).
        let mut offsets = vec![0u32; terms + 1];
        let mut span_offsets = vec![0u32; terms + 1];
        let mut df = vec![0u32; terms];
        let mut group_runs = Vec::new();
        for (part, map) in &runs {
            for &(t, tf) in &part.postings {
                let g = global(map, t) as usize;
                offsets[g + 1] += 1;
                if tf[GROUP] == 0 {
                    df[g] += 1;
                }
            }
            for run in &part.runs {
                for &(t, _) in &run.terms {
                    let g = global(map, t) as usize;
                    span_offsets[g + 1] += 1;
                    df[g] += run.tools.len() as u32;
                }
                group_runs.push(run.tools.clone());
            }
        }
        prefix_sums(&mut offsets);
        prefix_sums(&mut span_offsets);
        let n = corpus.len().max(1) as f64;
        let mut index = Self {
            params,
            tool_count: corpus.len(),
            idf: df.iter().map(|&d| idf(corpus.len(), d)).collect(),
            df,
            terms: first.terms,
            avg_lengths: totals.map(|t| ((t / n) as f32).max(f32::MIN_POSITIVE)),
            lengths,
            docs: Vec::new(),
            impacts: Vec::new(),
            offsets,
            spans: SpanPostings::default(),
            compounds,
            scratch: Default::default(),
        };
        let total = index.offsets[terms] as usize;
        let mut docs = vec![0 as ToolId; total];
        let mut impacts = vec![0f32; total];
        let mut next = index.offsets.clone();
        let span_total = span_offsets[terms] as usize;
        let mut span_run = vec![0u32; span_total];
        let mut span_impacts = vec![0f32; span_total];
        let mut span_next = span_offsets.clone();
        let mut run_id = 0u32;
        // Runs in tool order, each freed once laid out: a term's postings stay in tool order.
        for (part, map) in runs {
            for run in &part.runs {
                for &(t, tf) in &run.terms {
                    let g = global(&map, t);
                    let at = span_next[g as usize] as usize;
                    span_next[g as usize] += 1;
                    span_run[at] = run_id;
                    span_impacts[at] = index.term_score(g, run.tools.start, &group_only(tf)).1;
                }
                run_id += 1;
            }
            for (k, items) in crate::parallel::per_tool(&part.starts, part.postings.len()) {
                let d = part.first + k as ToolId;
                for &(t, tf) in &part.postings[items] {
                    let g = global(&map, t);
                    let at = next[g as usize] as usize;
                    next[g as usize] += 1;
                    docs[at] = d;
                    let joint = index.term_score(g, d, &tf.map(u32::from)).1;
                    impacts[at] = if tf[GROUP] == 0 {
                        joint
                    } else {
                        joint - index.term_score(g, d, &group_only(tf[GROUP])).1
                    };
                }
            }
        }
        index.docs = docs;
        index.impacts = impacts;
        index.spans = SpanPostings {
            runs: group_runs,
            offsets: span_offsets,
            run: span_run,
            impacts: span_impacts,
        };
        index
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_group_field_is_where_the_fields_say() {
        assert_eq!(crate::config::BM25_FIELDS[super::GROUP], "group");
    }
}
