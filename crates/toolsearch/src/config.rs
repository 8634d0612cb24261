//! Settings of the engine and the gateway config file (TOML), parsed raw then validated.

mod file;

pub use file::{Config, ConfigError, SourceConfig, SourceKind, load_config, parse_config};

use std::fmt;
use std::path::PathBuf;

use crate::search::bm25::Bm25Params;

use crate::catalog::name::is_valid_control_name;

/// Which model-facing surface is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Surface {
    /// `discover_tools`, `describe_tool`, `call_tool`, `list_tools`, `list_tool_groups`.
    #[default]
    Toolsearch,
    /// `search_proxy_tools`, `call_proxy_tool`.
    Toolproxy,
    /// `search_capabilities`, `invoke_tool`, `get_skill_content`.
    Capabilities,
}

impl Surface {
    /// Parses a config value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "toolsearch" => Some(Self::Toolsearch),
            "toolproxy" => Some(Self::Toolproxy),
            "capabilities" => Some(Self::Capabilities),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Toolsearch => "toolsearch",
            Self::Toolproxy => "toolproxy",
            Self::Capabilities => "capabilities",
        }
    }
}

/// A retrieval method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// Range of `max_results`.
pub const MAX_RESULTS_RANGE: std::ops::RangeInclusive<usize> = 1..=100;
/// Range of `max_search_bytes`.
pub const MAX_SEARCH_BYTES_RANGE: std::ops::RangeInclusive<usize> = 1024..=32768;

/// The names of every control (configurable under `[names]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlNames {
    /// `discover_tools`.
    pub discover: String,
    /// `describe_tool`.
    pub describe: String,
    /// `call_tool`.
    pub call: String,
    /// `list_tools`.
    pub list: String,
    /// `list_tool_groups`.
    pub list_groups: String,
    /// `search_proxy_tools`.
    pub search_proxy: String,
    /// `call_proxy_tool`.
    pub call_proxy: String,
    /// `search_capabilities`.
    pub search_capabilities: String,
    /// `invoke_tool`.
    pub invoke: String,
    /// `get_skill_content`.
    pub get_skill: String,
}

impl Default for ControlNames {
    fn default() -> Self {
        Self {
            discover: "discover_tools".into(),
            describe: "describe_tool".into(),
            call: "call_tool".into(),
            list: "list_tools".into(),
            list_groups: "list_tool_groups".into(),
            search_proxy: "search_proxy_tools".into(),
            call_proxy: "call_proxy_tool".into(),
            search_capabilities: "search_capabilities".into(),
            invoke: "invoke_tool".into(),
            get_skill: "get_skill_content".into(),
        }
    }
}

impl ControlNames {
    /// `(config key, name)` of the controls a surface shows.
    pub fn for_surface(&self, surface: Surface) -> Vec<(&'static str, &str)> {
        match surface {
            Surface::Toolsearch => vec![
                ("discover", &self.discover),
                ("describe", &self.describe),
                ("call", &self.call),
                ("list", &self.list),
                ("list_groups", &self.list_groups),
            ],
            Surface::Toolproxy => vec![
                ("search_proxy", &self.search_proxy),
                ("call_proxy", &self.call_proxy),
            ],
            Surface::Capabilities => vec![
                ("search_capabilities", &self.search_capabilities),
                ("invoke", &self.invoke),
                ("get_skill", &self.get_skill),
            ],
        }
    }

    /// Problems with the names a surface shows: pattern, and distinctness.
    pub fn problems(&self, surface: Surface) -> Vec<String> {
        let mut out = Vec::new();
        let names = self.for_surface(surface);
        for (i, (key, name)) in names.iter().enumerate() {
            if !is_valid_control_name(name) {
                out.push(format!(
                    "names.{key}: {name:?} is not a valid control name ([A-Za-z_][A-Za-z0-9_-]{{0,63}})"
                ));
            }
            if let Some((other, _)) = names[..i].iter().find(|(_, n)| n == name) {
                out.push(format!(
                    "names.{key}: {name:?} is also the name of names.{other}"
                ));
            }
        }
        out
    }
}

/// Engine settings: surface, search method, limits and control names.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// The surface served.
    pub surface: Surface,
    /// The method `discover_tools` ranks with.
    pub method: SearchMethod,
    /// Largest page (1..=100, default 10).
    pub max_results: usize,
    /// Largest response in bytes of compact UTF-8 JSON (1024..=32768, default 32768).
    pub max_search_bytes: usize,
    /// Control names.
    pub names: ControlNames,
    /// BM25 parameters (`[search.bm25]`).
    pub bm25: Bm25Params,
    /// The embedding model and cache of `semantic` and `hybrid` (`[search.semantic]`).
    pub semantic: EmbeddingSettings,
    /// How `hybrid` fuses BM25 and semantic (`[search.hybrid]`).
    pub hybrid: HybridParams,
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
    /// The least cosine similarity a tool needs to be a `semantic` match (default 0.2):
    /// below it a tool is not counted in `total` nor paged to.
    pub min_similarity: Option<f32>,
}

impl EmbeddingSettings {
    /// The default least similarity of a `semantic` match.
    pub const MIN_SIMILARITY: f32 = 0.2;

    /// [`min_similarity`](Self::min_similarity) or its default.
    pub fn min_similarity(&self) -> f32 {
        self.min_similarity.unwrap_or(Self::MIN_SIMILARITY)
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
pub struct HybridParams {
    /// The fusion rule.
    pub fusion: Fusion,
    /// Weight of the semantic side, 0..=1 (BM25 gets the rest). [`Fusion::Adaptive`] uses it
    /// for a query whose best BM25 score equals `confidence_scale` and moves away from it as
    /// BM25 is more or less sure.
    pub semantic_weight: f32,
    /// The reciprocal-rank constant of [`Fusion::Rrf`].
    pub rrf_k: f32,
    /// [`Fusion::Adaptive`]: the best BM25 score at which BM25 counts as half sure
    /// (its confidence is `best / (best + confidence_scale)`).
    pub confidence_scale: f32,
    /// [`Fusion::Adaptive`]: how fast the semantic weight falls as BM25's confidence rises
    /// (the slope of the weight's logit over the confidence, 0 = a fixed weight).
    pub confidence_slope: f32,
}

/// A fusion rule of `hybrid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

impl Default for HybridParams {
    fn default() -> Self {
        Self {
            fusion: Fusion::Adaptive,
            semantic_weight: 0.67,
            rrf_k: 60.0,
            confidence_scale: 10.0,
            confidence_slope: 7.0,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            surface: Surface::Toolsearch,
            method: SearchMethod::Keyword,
            max_results: 10,
            max_search_bytes: 32768,
            names: ControlNames::default(),
            bm25: Bm25Params::default(),
            semantic: EmbeddingSettings::default(),
            hybrid: HybridParams::default(),
        }
    }
}

impl Settings {
    /// Sets `max_results`.
    pub fn with_max_results(mut self, n: usize) -> Self {
        self.max_results = n;
        self
    }

    /// Sets `max_search_bytes`.
    pub fn with_max_search_bytes(mut self, n: usize) -> Self {
        self.max_search_bytes = n;
        self
    }

    /// Sets the search method of `discover_tools` (and the other search controls).
    pub fn with_method(mut self, method: SearchMethod) -> Self {
        self.method = method;
        self
    }

    /// Sets the BM25 parameters.
    pub fn with_bm25(mut self, params: Bm25Params) -> Self {
        self.bm25 = params;
        self
    }

    /// Sets the surface.
    pub fn with_surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// Sets the control names.
    pub fn with_names(mut self, names: ControlNames) -> Self {
        self.names = names;
        self
    }

    /// Every problem with these settings.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !MAX_RESULTS_RANGE.contains(&self.max_results) {
            out.push(format!(
                "search.max_results: {} is outside {}..={}",
                self.max_results,
                MAX_RESULTS_RANGE.start(),
                MAX_RESULTS_RANGE.end()
            ));
        }
        if !MAX_SEARCH_BYTES_RANGE.contains(&self.max_search_bytes) {
            out.push(format!(
                "search.max_search_bytes: {} is outside {}..={}",
                self.max_search_bytes,
                MAX_SEARCH_BYTES_RANGE.start(),
                MAX_SEARCH_BYTES_RANGE.end()
            ));
        }
        let p = &self.bm25;
        if !(p.k1.is_finite() && (0.0..=10.0).contains(&p.k1)) {
            out.push(format!("search.bm25.k1: {} is outside 0..=10", p.k1));
        }
        for ((w, b), f) in p
            .weights
            .iter()
            .zip(&p.b)
            .zip(crate::search::bm25::BM25_FIELDS)
        {
            if !(w.is_finite() && (0.0..=100.0).contains(w)) {
                out.push(format!("search.bm25.{f}: {w} is outside 0..=100"));
            }
            if !(b.is_finite() && (0.0..=1.0).contains(b)) {
                out.push(format!("search.bm25.b_{f}: {b} is outside 0..=1"));
            }
        }
        if let Some(n) = self.semantic.max_tokens
            && !(8..=8192).contains(&n)
        {
            out.push(format!(
                "search.semantic.max_tokens: {n} is outside 8..=8192"
            ));
        }
        if let Some(m) = self.semantic.min_similarity
            && !(m.is_finite() && (-1.0..=1.0).contains(&m))
        {
            out.push(format!(
                "search.semantic.min_similarity: {m} is outside -1..=1"
            ));
        }
        let h = &self.hybrid;
        if !(h.semantic_weight.is_finite() && (0.0..=1.0).contains(&h.semantic_weight)) {
            out.push(format!(
                "search.hybrid.semantic_weight: {} is outside 0..=1",
                h.semantic_weight
            ));
        }
        if !(h.rrf_k.is_finite() && (0.0..=1000.0).contains(&h.rrf_k)) {
            out.push(format!(
                "search.hybrid.rrf_k: {} is outside 0..=1000",
                h.rrf_k
            ));
        }
        if !(h.confidence_scale.is_finite() && h.confidence_scale > 0.0) {
            out.push(format!(
                "search.hybrid.confidence_scale: {} is not a positive number",
                h.confidence_scale
            ));
        }
        if !(h.confidence_slope.is_finite() && (0.0..=100.0).contains(&h.confidence_slope)) {
            out.push(format!(
                "search.hybrid.confidence_slope: {} is outside 0..=100",
                h.confidence_slope
            ));
        }
        out.extend(self.names.problems(self.surface));
        out
    }
}
