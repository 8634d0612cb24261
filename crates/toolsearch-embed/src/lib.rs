#![warn(missing_docs)]
#![doc = include_str!("../README.md")]

#[cfg(feature = "local-model")]
mod bert;
#[cfg(feature = "local-model")]
mod cpu;
mod endpoint;
#[cfg(feature = "local-model")]
mod local;
#[cfg(feature = "local-model")]
mod matmul;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use endpoint::EndpointEmbedder;
#[cfg(feature = "local-model")]
pub use local::{DEFAULT_MAX_TOKENS, LocalModel, Pooling};
use toolsearch::Settings;
use toolsearch::search::{Embedder, Embeddings};
use toolsearch::{EmbeddingSettings, SearchMethod, Surface};

/// Why an embedder could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(String);

impl LoadError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// The environment variable naming a local model directory when the config names none.
pub const MODEL_ENV: &str = "TOOLSEARCH_MODEL";

/// The local model directory `settings` choose: `model`, else `$TOOLSEARCH_MODEL`, else the
/// one `toolsearch model install` fills ([`installed_model_dir`]) when it holds a model.
pub fn model_dir(settings: &EmbeddingSettings) -> Option<PathBuf> {
    settings
        .model
        .clone()
        .or_else(|| {
            std::env::var_os(MODEL_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| installed_model_dir().filter(|d| d.join("model.safetensors").is_file()))
}

/// Where `toolsearch model install` puts the default model: the user's cache directory
/// (`$XDG_CACHE_HOME`, else `~/.cache`; `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on
/// Windows), `toolsearch/models/all-MiniLM-L6-v2`.
pub fn installed_model_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let cache = if cfg!(windows) {
        var("LOCALAPPDATA")?
    } else if cfg!(target_os = "macos") {
        var("HOME")?.join("Library/Caches")
    } else {
        var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?
    };
    Some(cache.join("toolsearch/models/all-MiniLM-L6-v2"))
}

/// The embedder `settings` name: an endpoint when `url` is set, else the local model
/// directory of [`model_dir`].
pub fn load(settings: &EmbeddingSettings) -> Result<Arc<dyn Embedder>, LoadError> {
    if let Some(url) = &settings.url {
        let model = settings.endpoint_model.clone().unwrap_or_default();
        let key = match &settings.api_key_env {
            None => None,
            Some(var) => Some(std::env::var(var).map_err(|_| {
                LoadError::new(format!(
                    "search.semantic.api_key_env: the environment variable {var} is not set"
                ))
            })?),
        };
        return Ok(Arc::new(EndpointEmbedder::connect(
            url.clone(),
            model,
            key,
            Duration::from_secs(60),
        )?));
    }
    let Some(dir) = model_dir(settings) else {
        return Err(LoadError::new(format!(
            "no embedding model: run `toolsearch model install`, or set [search.semantic] model = \
             \"DIR\" (a sentence-transformers model directory such as all-MiniLM-L6-v2) or the \
             {MODEL_ENV} environment variable, or url = an OpenAI-compatible /v1/embeddings \
             endpoint"
        )));
    };
    local_model(&dir, settings)
}

#[cfg(feature = "local-model")]
fn local_model(dir: &Path, settings: &EmbeddingSettings) -> Result<Arc<dyn Embedder>, LoadError> {
    Ok(Arc::new(LocalModel::load_with(dir, settings.max_tokens)?))
}

#[cfg(not(feature = "local-model"))]
fn local_model(dir: &Path, _: &EmbeddingSettings) -> Result<Arc<dyn Embedder>, LoadError> {
    Err(LoadError::new(format!(
        "this toolsearch was built without a local encoder (cargo feature local-model), so the \
         model in {} cannot run: set [search.semantic] url to an OpenAI-compatible \
         /v1/embeddings endpoint, or rebuild with the feature",
        dir.display()
    )))
}

/// The embedder and cache for searching with `method`, when it needs them (`semantic`,
/// `hybrid`, or on the `capabilities` surface — whose calls may choose a method — whenever
/// `[search.semantic]` names a model or endpoint); the cache must have been built
/// (`toolsearch index`).
pub fn semantic_search(
    settings: &Settings,
    method: SearchMethod,
) -> Result<Option<Arc<Embeddings>>, LoadError> {
    semantic_search_with(settings, method, true).map(|s| s.map(|(s, _)| s))
}

/// [`semantic_search`], with no cache needed: an empty one is made when there is none, and
/// `true` beside it says so (the tools are embedded at their first dense search, unless the
/// caller builds it first with [`Embeddings::index`]).
pub fn semantic_search_building(
    settings: &Settings,
    method: SearchMethod,
) -> Result<Option<(Arc<Embeddings>, bool)>, LoadError> {
    semantic_search_with(settings, method, false)
}

fn semantic_search_with(
    settings: &Settings,
    method: SearchMethod,
    require_cache: bool,
) -> Result<Option<(Arc<Embeddings>, bool)>, LoadError> {
    let dense = matches!(method, SearchMethod::Semantic | SearchMethod::Hybrid);
    let per_call = settings.surface == Surface::Capabilities
        && (settings.semantic.model.is_some() || settings.semantic.url.is_some());
    if !dense && !per_call {
        return Ok(None);
    }
    let embedder = load(&settings.semantic)?;
    let search = Embeddings::open(embedder, &settings.semantic, require_cache)
        .map_err(|e| LoadError::new(e.to_string()))?;
    // A cache made now has no file yet.
    let missing = !search.cache_path().exists();
    Ok(Some((Arc::new(search), missing)))
}

/// Installs rustls' ring provider once (reqwest is built without a default provider).
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
