//! The learned field: each tool's learned queries (what use taught, see [`crate::learn`]) as
//! one more field of its BM25F document, under `bm25` and the BM25 side of `hybrid`. BM25F
//! adds a field's length-normalised frequency to the others' before one saturation, so a
//! learned match raises a tool's score by what the term's saturation gains — never more than
//! the term is worth. Its IDF is the learned documents' own: a word most questions share is
//! cheap however rare it is in the catalog's text. It is an index of its own, built per
//! caller class, so that what one class taught never ranks tools for another; the main index
//! is untouched. Under `semantic` and `hybrid`'s dense side the same queries make a second
//! vector per tool ([`LearnedVectors`]), embedded on the first dense search and kept here.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::SearchError;
use super::analysis::analyze;
use super::bm25::Bm25Index;
use super::corpus::Corpus;
use super::learned_vectors::LearnedVectors;
use super::semantic::Embeddings;
use crate::catalog::ToolId;
use crate::learn::Learned;

/// The learned field's weight in BM25F (its frequencies' multiplier). Chosen by the worst of
/// the six shared sets (BENCHMARKS.md, "Learning from use"): with more, the sets whose test
/// questions mostly ask for tools nobody used yet lose to the tools that were.
pub const LEARNED_WEIGHT: f32 = 0.25;

/// The learned field's length normalisation (textbook).
const B: f32 = 0.75;

/// A term's tools (ascending), and for each its document and weighted frequency.
type Postings = (Vec<ToolId>, Vec<(u32, f32)>);

/// The learned queries of a catalog's tools, indexed.
#[derive(Debug, Default, Clone)]
pub struct LearnedIndex {
    terms: FxHashMap<Box<str>, u32>,
    /// Per term, the tools whose learned text has it (ascending), and for each its document
    /// (a place in `doc_tools`) and weighted length-normalised frequency.
    postings: Vec<Postings>,
    /// The tool of each learned document, ascending.
    doc_tools: Vec<ToolId>,
    tools: usize,
    /// Each tool's learned queries (non-blank), by tool id ascending.
    queries: Vec<(ToolId, Vec<Box<str>>)>,
    /// Their vectors, made on the first dense search.
    vectors: OnceLock<LearnedVectors>,
    /// What each posting adds to its tool's score in the main index it was first scored
    /// against (that index's address, and per term the gains in posting order): a query then
    /// only sums them.
    gains: OnceLock<(usize, Vec<Vec<f32>>)>,
}

impl LearnedIndex {
    /// Indexes `docs` — each a tool and its learned queries — with the field weight `weight`.
    pub fn build<'a>(docs: impl IntoIterator<Item = (ToolId, Vec<&'a str>)>, weight: f32) -> Self {
        let mut terms: FxHashMap<Box<str>, u32> = FxHashMap::default();
        let mut tfs: Vec<(ToolId, FxHashMap<u32, u32>, u32)> = Vec::new();
        let mut texts: Vec<(ToolId, Vec<Box<str>>)> = Vec::new();
        for (tool, queries) in docs {
            let mut tf: FxHashMap<u32, u32> = FxHashMap::default();
            let mut len = 0u32;
            let kept: Vec<Box<str>> = queries
                .iter()
                .filter(|q| !q.trim().is_empty())
                .map(|q| Box::from(*q))
                .collect();
            if !kept.is_empty() {
                texts.push((tool, kept));
            }
            for q in queries {
                analyze(q, |t| {
                    let next = terms.len() as u32;
                    let id = *terms.entry(t.into()).or_insert(next);
                    *tf.entry(id).or_default() += 1;
                    len += 1;
                });
            }
            if len > 0 {
                tfs.push((tool, tf, len));
            }
        }
        let docs = tfs.len();
        if docs == 0 {
            return Self::default();
        }
        tfs.sort_unstable_by_key(|(tool, _, _)| *tool);
        let avg = tfs.iter().map(|(_, _, l)| *l as f32).sum::<f32>() / docs as f32;
        let mut postings: Vec<Postings> = vec![Default::default(); terms.len()];
        // Documents in tool order: every posting list comes out sorted.
        for (doc, (tool, tf, len)) in tfs.iter().enumerate() {
            let norm = 1.0 - B + B * *len as f32 / avg;
            for (&t, &f) in tf {
                let (tools, entries) = &mut postings[t as usize];
                tools.push(*tool);
                entries.push((doc as u32, weight * f as f32 / norm));
            }
        }
        texts.sort_unstable_by_key(|(tool, _)| *tool);
        Self {
            terms,
            postings,
            doc_tools: tfs.iter().map(|(tool, _, _)| *tool).collect(),
            tools: docs,
            queries: texts,
            vectors: OnceLock::new(),
            gains: OnceLock::new(),
        }
    }

    /// The learned vectors of these tools under `semantic`'s model, embedded on first use
    /// (one query's vector at most per new use: the others are in the embedding cache).
    pub fn vectors(&self, semantic: &Embeddings) -> Result<&LearnedVectors, SearchError> {
        if let Some(v) = self.vectors.get() {
            return Ok(v);
        }
        let built = LearnedVectors::build(&self.queries, semantic)?;
        Ok(self.vectors.get_or_init(|| built))
    }

    /// The learned field of `corpus` for callers of `class`: each document's learned queries
    /// (by its canonical name), weighted by [`LEARNED_WEIGHT`].
    pub fn of(learned: &Learned, class: &str, corpus: &(impl Corpus + ?Sized)) -> Self {
        if learned.tools(class).next().is_none() {
            return Self::default();
        }
        let docs = (0..corpus.len() as ToolId).filter_map(|id| {
            let queries: Vec<&str> = learned.queries(class, corpus.doc(id).canonical).collect();
            (!queries.is_empty()).then_some((id, queries))
        });
        Self::build(docs, LEARNED_WEIGHT)
    }

    /// What each posting adds to its tool's BM25F score in `main`: the tool's own weighted
    /// frequency of the term and the learned one join one saturation, with the IDF among the
    /// learned documents (words most questions share, "can you", "I need", are worth little,
    /// whatever the catalog's own text says of them).
    fn gains_in(&self, main: &Bm25Index) -> Vec<Vec<f32>> {
        let mut names: Vec<&str> = vec![""; self.terms.len()];
        for (term, &t) in &self.terms {
            names[t as usize] = term;
        }
        self.postings
            .iter()
            .zip(names)
            .map(|((tools, entries), term)| {
                let idf = self.idf(tools.len());
                let owns = main.weighted_tfs(term, tools);
                entries
                    .iter()
                    .zip(owns)
                    .map(|(&(_, learned), own)| {
                        (main.saturated(idf, own + learned) - main.saturated(idf, own)).max(0.0)
                    })
                    .collect()
            })
            .collect()
    }

    /// The IDF of a term `df` learned documents hold, among them.
    fn idf(&self, df: usize) -> f32 {
        let (n, df) = (self.tools as f64, df as f64);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    /// How many tools have learned text.
    pub fn tools(&self) -> usize {
        self.tools
    }

    /// Whether nothing is learned.
    pub fn is_empty(&self) -> bool {
        self.tools == 0
    }

    /// What the learned field adds to each tool's BM25F score in `main` for `query` (distinct
    /// terms count once, as in the main index), by tool id; tools it adds nothing to are
    /// absent.
    pub fn scores(&self, query: &str, main: &Bm25Index) -> Vec<(ToolId, f32)> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut seen: Vec<u32> = Vec::new();
        analyze(query, |t| {
            if let Some(&id) = self.terms.get(t)
                && !seen.contains(&id)
            {
                seen.push(id);
            }
        });
        // A learned field is scored against the one main index of its snapshot (which
        // outlives it); another index's gains are computed afresh, not kept.
        let address = std::ptr::from_ref(main) as usize;
        let (kept_for, kept) = self.gains.get_or_init(|| (address, self.gains_in(main)));
        if *kept_for == address {
            return self.sum(&seen, kept);
        }
        self.sum(&seen, &self.gains_in(main))
    }

    /// The learned scores of the query terms `seen`, from each posting's gain.
    fn sum(&self, seen: &[u32], per_term: &[Vec<f32>]) -> Vec<(ToolId, f32)> {
        let mut gains = vec![0.0f32; self.doc_tools.len()];
        for t in seen {
            let (_, entries) = &self.postings[*t as usize];
            for (&(doc, _), g) in entries.iter().zip(&per_term[*t as usize]) {
                gains[doc as usize] += g;
            }
        }
        self.doc_tools
            .iter()
            .zip(gains)
            .filter(|(_, g)| *g > 0.0)
            .map(|(&tool, g)| (tool, g))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Directory, GroupSpec, SourceTools, ToolDef};
    use crate::config::Bm25Params;

    fn directory() -> Directory {
        let tools = (0..10)
            .map(|i| ToolDef::new(format!("tool_{i}"), format!("Get information number {i}.")))
            .collect();
        Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("g", "Things"),
            tools,
        )])
        .expect("directory")
    }

    #[test]
    fn learned_queries_join_their_tools_saturation() {
        let dir = directory();
        let main = Bm25Index::build(&dir, Bm25Params::default());
        let index = LearnedIndex::build(
            [
                (3, vec!["give me my money back", "refund the order"]),
                (7, vec!["get information"]),
                (9, vec!["   "]),
            ],
            1.0,
        );
        assert_eq!(index.tools(), 2, "blank text is no document");
        let s = index.scores("I want my money back", &main);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, 3);
        assert!(s[0].1 > 0.0);
        // Repeated query terms count once; stop words count nothing.
        assert_eq!(index.scores("money money back back the", &main), s);
        assert!(index.scores("weather in Paris", &main).is_empty());
        // A term the tool's own text already has joins its saturation: it gains less than
        // one the tool learned fresh.
        let common = index.scores("information", &main);
        assert_eq!(common.len(), 1);
        assert!(common[0].1 < s[0].1 / 2.0, "{common:?} vs {s:?}");
        // The field weight scales the frequency, not the score: doubling it gains less than
        // twice.
        let single = LearnedIndex::build([(3, vec!["refund the order"])], 1.0);
        let doubled = LearnedIndex::build([(3, vec!["refund the order"])], 2.0);
        let (o, d) = (
            single.scores("refund", &main)[0].1,
            doubled.scores("refund", &main)[0].1,
        );
        assert!(d > o && d < 2.0 * o, "{d} vs {o}");
        assert!(LearnedIndex::default().scores("refund", &main).is_empty());
    }

    #[test]
    fn the_frequencies_of_many_tools_at_once_are_those_of_each() {
        let dir = directory();
        let main = Bm25Index::build(&dir, Bm25Params::default());
        let all: Vec<ToolId> = (0..10).collect();
        for term in [
            "inform",
            "information",
            "number",
            "get",
            "thing",
            "tool",
            "absent",
        ] {
            let each: Vec<f32> = all.iter().map(|&t| main.weighted_tf(term, t)).collect();
            assert_eq!(main.weighted_tfs(term, &all), each, "{term}");
            assert_eq!(
                main.weighted_tfs(term, &[2, 7]),
                [each[2], each[7]],
                "{term}"
            );
        }
    }

    /// What one class taught is another class's nothing: its field is empty, so its ranking is
    /// the ranking without learning.
    #[test]
    fn a_class_learns_apart() {
        let dir = directory();
        let mut learned = Learned::new();
        learned.add(&crate::learn::Use::new("money back", "g__tool_3", "a"));
        assert_eq!(LearnedIndex::of(&learned, "a", &dir).tools(), 1);
        assert!(LearnedIndex::of(&learned, "b", &dir).is_empty());
        assert!(LearnedIndex::of(&learned, "", &dir).is_empty());
    }
}
