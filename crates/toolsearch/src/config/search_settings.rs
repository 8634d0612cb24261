//! Search parameters as plain data: the method, BM25's and hybrid's parameters, and where the
//! embedding model and its cache live. The search layer reads them; nothing here searches.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// A retrieval method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum SearchMethod {
    /// The deterministic keyword ranking.
    #[default]
    Keyword,
    /// BM25.
    Bm25,
    /// Embedding cosine similarity.
    Semantic,
    /// Fusion of BM25 and semantic.
    Hybrid,
}

impl SearchMethod {
    /// Parses a method name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "keyword" => Some(Self::Keyword),
            "bm25" => Some(Self::Bm25),
            "semantic" => Some(Self::Semantic),
            "hybrid" => Some(Self::Hybrid),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Keyword => "keyword",
            Self::Bm25 => "bm25",
            Self::Semantic => "semantic",
            Self::Hybrid => "hybrid",
        }
    }
}

impl fmt::Display for SearchMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields BM25 scores, in the order of [`Bm25Params::weights`].
pub const BM25_FIELDS: [&str; 4] = ["name", "description", "parameters", "group"];
const F: usize = BM25_FIELDS.len();

/// BM25 parameters. The defaults are textbook BM25 (k1 1.2, b 0.75, every weight 1) except
/// where a value won on most of the six shared data sets and lost under a point of nDCG@10 on
/// each other, chosen on their train halves by the worst set's gain (`scripts/sets.py choose`;
/// BENCHMARKS.md): k1 2.0 and a name weight of 1.5.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[expect(
    clippy::exhaustive_structs,
    reason = "a parameter record, built with `..Default::default()`"
)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation of each field in [`BM25_FIELDS`] order (0 = none, 1 = full).
    pub b: [f32; F],
    /// Weight of each field in [`BM25_FIELDS`] order.
    pub weights: [f32; F],
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self {
            k1: 2.0,
            b: [0.75; F],
            weights: [1.5, 1.0, 1.0, 1.0],
        }
    }
}

/// Where `semantic` and `hybrid` get vectors (`[search.semantic]`).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct EmbeddingSettings {
    /// A local sentence-transformers model directory (else `$TOOLSEARCH_MODEL`).
    pub model: Option<PathBuf>,
    /// An OpenAI-compatible `/v1/embeddings` endpoint, used instead of a local model.
    pub url: Option<String>,
    /// The endpoint's model name.
    pub endpoint_model: Option<String>,
    /// The environment variable holding the endpoint's API key.
    pub api_key_env: Option<String>,
    /// The cache folder (else [`default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Longest input of a local model, in tokens (else 128, or the model's `max_seq_length` when
    /// smaller); longer texts are cut. Fewer tokens embed faster.
    pub max_tokens: Option<usize>,
    /// The least cosine similarity a tool needs to be a `semantic` match (default none, −1:
    /// every tool is one): below it a tool is not counted in `total` nor paged to.
    pub min_similarity: Option<f32>,
    /// Whether a query of two or more sentences embeds each sentence too, a tool then scoring
    /// its best cosine with the whole query or any sentence (default true; the search layer
    /// splits the sentences).
    pub sentences: Option<bool>,
}

impl EmbeddingSettings {
    /// The default least similarity of a `semantic` match: none (a floor of 0.2 cost up to
    /// 2.5 points nDCG@10 on the shared sets and won on none; BENCHMARKS.md).
    pub const MIN_SIMILARITY: f32 = -1.0;

    /// [`min_similarity`](Self::min_similarity) or its default.
    pub fn min_similarity(&self) -> f32 {
        self.min_similarity.unwrap_or(Self::MIN_SIMILARITY)
    }

    /// [`sentences`](Self::sentences) or its default (on).
    pub fn sentences(&self) -> bool {
        self.sentences.unwrap_or(true)
    }

    /// [`cache_dir`](Self::cache_dir) or [`default_cache_dir`].
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(default_cache_dir)
    }
}

/// `$TOOLSEARCH_CACHE_DIR`, else `$XDG_CACHE_HOME/toolsearch`, else `~/.cache/toolsearch`,
/// else `.toolsearch-cache` in the working directory.
pub fn default_cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("TOOLSEARCH_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("toolsearch")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("toolsearch")))
        .unwrap_or_else(|| PathBuf::from(".toolsearch-cache"))
}

/// How `hybrid` combines the BM25 and semantic rankings (`[search.hybrid]`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[expect(
    clippy::exhaustive_structs,
    reason = "a parameter record, built with `..Default::default()`"
)]
pub struct HybridParams {
    /// The fusion rule.
    pub fusion: Fusion,
    /// Weight of the semantic side, 0..=1 (BM25 gets the rest). [`Fusion::Adaptive`] uses it
    /// for a query whose best BM25 score equals `confidence_scale` and moves away from it as
    /// BM25 is more or less sure.
    pub semantic_weight: f32,
    /// The reciprocal-rank constant of [`Fusion::Rrf`].
    pub rrf_k: f32,
    /// [`Fusion::Adaptive`]: the best BM25 score, in rare-word IDFs (the IDF of a word one
    /// tool has, which grows with the catalog's size), at which BM25 counts as half sure (its
    /// confidence is `b / (b + confidence_scale)`, `b` the best score in those units).
    pub confidence_scale: f32,
    /// [`Fusion::Adaptive`]: how fast the semantic weight falls as BM25's confidence rises
    /// (the slope of the weight's logit over the confidence, 0 = a fixed weight).
    pub confidence_slope: f32,
}

/// A fusion rule of `hybrid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Fusion {
    /// Reciprocal-rank fusion: Σ weight / (rrf_k + rank).
    Rrf,
    /// Weighted sum of scores scaled per query (BM25 by its best score, cosine by the
    /// candidates' range).
    Scores,
    /// [`Fusion::Scores`] with a weight chosen per query from how sure BM25 is (its best
    /// score): a strong word match leans on BM25, a weak one on the embedding.
    Adaptive,
}

impl Fusion {
    /// Parses a config value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "rrf" => Some(Self::Rrf),
            "scores" => Some(Self::Scores),
            "adaptive" => Some(Self::Adaptive),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rrf => "rrf",
            Self::Scores => "scores",
            Self::Adaptive => "adaptive",
        }
    }
}

/// Textbook reciprocal-rank fusion (k 60, both sides weighted alike): the fitted `adaptive`
/// rule won on the two sets it was fitted on and lost on two of the four others
/// (BENCHMARKS.md, "Hybrid fusion and the semantic floor"). `adaptive`'s fitted values are
/// `semantic_weight` 0.6, `confidence_scale` 2, `confidence_slope` 7.
impl Default for HybridParams {
    fn default() -> Self {
        Self {
            fusion: Fusion::Rrf,
            semantic_weight: 0.5,
            rrf_k: 60.0,
            confidence_scale: 2.0,
            confidence_slope: 7.0,
        }
    }
}
