//! Semantic retrieval: an [`Embedder`] turns text into vectors, a [`VectorIndex`] holds one
//! unit vector per tool of a snapshot, and a query ranks tools by cosine similarity.
//!
//! The engine knows no model: implementations live elsewhere (`toolsearch-embed` has a local
//! BERT-family model and an OpenAI-compatible endpoint). Vectors of tools come from an
//! [`EmbeddingCache`] keyed by the model and a hash of each
//! tool's [`tool_text`], so an unchanged tool is never embedded twice.

use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;

use super::SearchError;
use super::cache::EmbeddingCache;
use super::corpus::{Corpus, Doc};
use super::sentences::sentences;
use crate::catalog::ToolId;
use crate::config::EmbeddingSettings;
use crate::text::for_each_word;

/// Why text could not be embedded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
#[expect(
    clippy::exhaustive_structs,
    reason = "made by every Embedder implementation, in other crates too"
)]
pub struct EmbedError(pub String);

/// Turns texts into vectors of one fixed dimension.
///
/// `embed` is synchronous: a local model computes on the calling thread, a remote endpoint
/// blocks the caller until it answers (the engine calls it off the async executor).
pub trait Embedder: Send + Sync + fmt::Debug {
    /// The model's identity for the cache: two embedders with the same id give the same
    /// vectors for the same text (a model name plus a digest of its weights or endpoint).
    fn model_id(&self) -> &str;

    /// Length of every vector.
    fn dim(&self) -> usize;

    /// One vector per text, in order (not necessarily normalised).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// How many texts one [`embed`](Self::embed) call should carry when indexing.
    fn batch_size(&self) -> usize {
        32
    }
}

/// The text embedded for a tool: its name as words, its group (when `with_group`), its
/// description and its parameters (names as words, and their descriptions).
///
/// [`Embeddings::index`] names the group only when the catalog has more than one: a group
/// every tool shares tells them apart by nothing and only blurs their vectors (measured: the
/// one-group metatool catalog loses 3 points nDCG@10 with it, the 811-group ToolBench gains 6).
pub fn tool_text(doc: &Doc<'_>, group: &str, with_group: bool) -> String {
    let mut out = String::with_capacity(doc.description.len() + 64);
    push_words(&mut out, doc.name);
    if with_group && !group.is_empty() {
        out.push_str(" (");
        push_words(&mut out, group);
        out.push(')');
    }
    out.push_str(": ");
    out.push_str(doc.description.trim());
    if doc.param_names().next().is_some() {
        out.push_str(" Parameters: ");
        for (i, p) in doc.param_names().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            push_words(&mut out, p);
        }
        out.push('.');
    }
    for d in doc.param_descriptions().map(str::trim) {
        if !d.is_empty() {
            out.push(' ');
            out.push_str(d);
        }
    }
    out
}

fn push_words(out: &mut String, text: &str) {
    let mut first = true;
    for_each_word(text, |w| {
        if !first {
            out.push(' ');
        }
        first = false;
        out.push_str(w);
    });
}

/// A stable 64-bit digest of a text (FNV-1a, [`crate::text::fnv1a`]), the cache key of a tool's
/// vector.
pub fn text_hash(text: &str) -> u64 {
    crate::text::fnv1a(text)
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

mod vectors;

pub(crate) use vectors::top_k;
pub use vectors::{QueryVectors, VectorIndex, dot};

/// An embedder with its cache: vectors for a snapshot's tools, and for queries.
#[derive(Debug)]
pub struct Embeddings {
    embedder: Arc<dyn Embedder>,
    cache: Mutex<EmbeddingCache>,
    /// The last query and its vectors: `explain` per hit, hybrid and the next page of the
    /// same query reuse them instead of running the model again.
    last_query: Mutex<Option<(String, Arc<QueryVectors>)>>,
    min_similarity: f32,
    /// Multi-sentence queries embed each sentence too.
    sentences: bool,
}

/// Progress of [`Embeddings::index`]: `(tools embedded so far, tools to embed)`.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

impl Embeddings {
    /// The embedder with its cache file under `settings`' cache folder. Without a cache file,
    /// `require_cache` makes this an error that says how to build one (`toolsearch index`);
    /// otherwise an empty cache is started.
    pub fn open(
        embedder: Arc<dyn Embedder>,
        settings: &EmbeddingSettings,
        require_cache: bool,
    ) -> Result<Self, SearchError> {
        let path = EmbeddingCache::file_in(&settings.cache_dir(), embedder.model_id());
        let cache = EmbeddingCache::open(&path, embedder.model_id(), embedder.dim())
            .map_err(|e| SearchError::Unavailable(e.to_string()))?;
        let cache = match cache {
            Some(c) => c,
            None if require_cache => {
                return Err(SearchError::Unavailable(format!(
                    "semantic and hybrid search need an embedding cache, and there is none for \
                     model {} at {}; build it with `toolsearch index --config FILE` (or \
                     `--catalog FILE`)",
                    embedder.model_id(),
                    path.display()
                )));
            }
            None => EmbeddingCache::new(path, embedder.model_id(), embedder.dim()),
        };
        Ok(Self {
            embedder,
            cache: Mutex::new(cache),
            last_query: Mutex::new(None),
            min_similarity: settings.min_similarity(),
            sentences: settings.sentences(),
        })
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The least similarity of a `semantic` match.
    pub fn min_similarity(&self) -> f32 {
        self.min_similarity
    }

    /// The cache file.
    pub fn cache_path(&self) -> std::path::PathBuf {
        self.lock().path().to_owned()
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, EmbeddingCache> {
        self.cache.lock()
    }

    /// Vectors of `tools`: cached ones are read, the rest embedded in batches (reporting
    /// progress) and saved to the cache. Returns the index and how many tools were embedded.
    pub fn index(
        &self,
        corpus: &(impl Corpus + ?Sized),
        progress: Progress<'_>,
    ) -> Result<(VectorIndex, usize), SearchError> {
        let with_group = corpus.group_count() > 1;
        let texts: Vec<String> = (0..corpus.len() as ToolId)
            .map(|id| {
                let doc = corpus.doc(id);
                tool_text(&doc, corpus.group_name(doc.group), with_group)
            })
            .collect();
        let hashes: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        let mut cache = self.lock();
        let mut missing: Vec<usize> = (0..corpus.len())
            .filter(|&i| cache.get(hashes[i]).is_none())
            .collect();
        missing.sort_by_key(|&i| hashes[i]);
        missing.dedup_by_key(|i| hashes[*i]);
        let todo = missing.len();
        progress(0, todo);
        let fail = |e: EmbedError| SearchError::Unavailable(format!("embedding tools: {e}"));
        let mut done = 0;
        // Short texts with short ones: batches pad to their longest text.
        missing.sort_by_key(|&i| texts[i].len());
        for chunk in missing.chunks(self.embedder.batch_size().max(1)) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.embedder.embed(&batch).map_err(fail)?;
            if vectors.len() != batch.len() || vectors.iter().any(|v| v.len() != cache.dim()) {
                return Err(fail(EmbedError(format!(
                    "the model returned {} vectors for {} texts, or a wrong dimension",
                    vectors.len(),
                    batch.len()
                ))));
            }
            for (&i, v) in chunk.iter().zip(&vectors) {
                cache.insert(hashes[i], v);
            }
            done += chunk.len();
            progress(done, todo);
        }
        if cache.is_dirty() {
            cache
                .save()
                .map_err(|e| SearchError::Unavailable(e.to_string()))?;
        }
        let dim = cache.dim();
        let mut rows = Vec::with_capacity(corpus.len() * dim);
        let mut scales = Vec::with_capacity(corpus.len());
        for h in &hashes {
            // Every hash was embedded above; a zero row is never reached.
            let (row, scale) = cache.get(*h).unwrap_or((&[], 0.0));
            rows.extend_from_slice(row);
            rows.resize(scales.len() * dim + dim, 0);
            scales.push(scale);
        }
        Ok((
            VectorIndex::from_quantized(self.embedder.model_id(), dim, rows, scales),
            todo,
        ))
    }

    /// The unit vectors of `texts` (other than tools': what use taught, say), in order: read
    /// from the cache, the rest embedded in batches (the model runs without the cache locked)
    /// and saved to it, so a text is embedded once.
    pub fn text_vectors(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
        let hashes: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        let mut missing: Vec<usize> = {
            let cache = self.lock();
            (0..texts.len())
                .filter(|&i| cache.get(hashes[i]).is_none())
                .collect()
        };
        missing.sort_by_key(|&i| hashes[i]);
        missing.dedup_by_key(|i| hashes[*i]);
        let fail = |e: EmbedError| SearchError::Unavailable(format!("embedding learned text: {e}"));
        let dim = self.embedder.dim();
        let mut embedded = Vec::with_capacity(missing.len());
        for chunk in missing.chunks(self.embedder.batch_size().max(1)) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self.embedder.embed(&batch).map_err(fail)?;
            if vectors.len() != batch.len() || vectors.iter().any(|v| v.len() != dim) {
                return Err(fail(EmbedError(format!(
                    "the model returned {} vectors for {} texts, or a wrong dimension",
                    vectors.len(),
                    batch.len()
                ))));
            }
            embedded.extend(chunk.iter().map(|&i| hashes[i]).zip(vectors));
        }
        let mut cache = self.lock();
        for (h, v) in &embedded {
            cache.insert(*h, v);
        }
        if !embedded.is_empty() && cache.is_dirty() {
            cache
                .save()
                .map_err(|e| SearchError::Unavailable(e.to_string()))?;
        }
        Ok(hashes
            .iter()
            .map(|h| {
                // Every hash was read or embedded above; a zero vector is never reached.
                cache.get(*h).map_or_else(
                    || vec![0.0; dim],
                    |(row, scale)| super::int8::dequantize(row, scale),
                )
            })
            .collect())
    }

    /// The unit vectors of a query: its own, then (sentences on, two or more of them) each
    /// sentence's, embedded in one call of the model.
    pub fn embed_query(&self, query: &str) -> Result<Arc<QueryVectors>, SearchError> {
        let remembered = |slot: &Option<(String, Arc<QueryVectors>)>| {
            slot.as_ref()
                .filter(|(q, _)| q == query)
                .map(|(_, v)| v.clone())
        };
        if let Some(v) = remembered(&self.last_query.lock()) {
            return Ok(v);
        }
        let mut texts = vec![query];
        if self.sentences {
            texts.extend(sentences(query));
        }
        // The model runs without the lock held, so concurrent queries embed in parallel.
        let mut vectors = self
            .embedder
            .embed(&texts)
            .map_err(|e| SearchError::Unavailable(format!("embedding the query: {e}")))?;
        let dim = self.embedder.dim();
        if vectors.len() != texts.len() {
            return Err(SearchError::Unavailable(format!(
                "embedding the query: {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        if let Some(bad) = vectors.iter().find(|v| v.len() != dim) {
            return Err(SearchError::Unavailable(format!(
                "embedding the query: a {}-dimensional vector where {dim} were expected",
                bad.len(),
            )));
        }
        vectors.iter_mut().for_each(|v| normalize(v));
        let v = Arc::new(QueryVectors::new(vectors));
        *self.last_query.lock() = Some((query.to_owned(), v.clone()));
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Scored;

    #[test]
    fn dot_matches_the_plain_sum_for_any_length() {
        for n in [0usize, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn search_ranks_by_cosine_within_scope_and_threshold() {
        // Four tools in 2-D: angles 0°, 90°, 45°, 180°.
        let idx = VectorIndex::new("m", 2, vec![2.0, 0.0, 0.0, 5.0, 1.0, 1.0, -1.0, 0.0]);
        let (hits, total) = idx.search(&[1.0, 0.0], 0..4, 10, -2.0);
        assert_eq!(total, 4);
        let order: Vec<ToolId> = hits.iter().map(|h| h.tool).collect();
        assert_eq!(order, [0, 2, 1, 3]);
        assert!((hits[1].score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-2);
        let (hits, total) = idx.search(&[1.0, 0.0], 1..4, 1, 0.5);
        assert_eq!(total, 1, "only the 45° tool reaches 0.5 in 1..4");
        assert_eq!(hits[0].tool, 2);
    }

    #[test]
    fn a_query_of_several_vectors_ranks_each_tool_by_its_nearest() {
        // Tools at 0°, 90°, 45°; the query's own vector at 0°, a sentence's at 90°.
        let idx = VectorIndex::new("m", 2, vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let q = QueryVectors::new(vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let sims = idx.query_similarities(&q, 0..3);
        let alone = idx.similarities(q.whole(), 0..3);
        assert!(
            (sims[1] - 1.0).abs() < 1e-2 && alone[1].abs() < 1e-2,
            "{sims:?} {alone:?}"
        );
        assert!((sims[2] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-2);
        let (hits, total) = idx.search_query(&q, 0..3, 2, 0.9, None);
        assert_eq!(total, 2, "the 45° tool stays under 0.9 with either vector");
        assert_eq!(hits.iter().map(|h| h.tool).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn the_kept_best_are_those_of_a_full_sort_ties_by_id() {
        // 500 tools on a circle, many at equal angles, so ties are common.
        let data: Vec<f32> = (0..500)
            .flat_map(|i| {
                let a = (i % 37) as f32 * 0.17;
                [a.cos(), a.sin()]
            })
            .collect();
        let idx = VectorIndex::new("m", 2, data);
        let q = [0.6f32, 0.8];
        let sims = idx.similarities(&q, 0..500);
        for (need, min, scope) in [(1, -2.0, 0..500), (10, 0.0, 0..500), (40, 0.5, 100..400)] {
            let mut all: Vec<Scored> = scope
                .clone()
                .map(|t| Scored {
                    tool: t,
                    score: sims[t as usize],
                })
                .filter(|s| s.score >= min)
                .collect();
            let total = all.len();
            all.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
            all.truncate(need);
            assert_eq!(
                idx.search(&q, scope, need, min),
                (all, total),
                "{need} {min}"
            );
        }
    }

    #[test]
    fn text_hash_is_fnv1a() {
        assert_eq!(text_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(text_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
