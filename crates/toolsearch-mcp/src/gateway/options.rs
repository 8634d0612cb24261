//! What the gateway takes from its caller beside the config.

use std::sync::Arc;

use toolsearch::search::Embeddings;
use toolsearch::{CodeRunner, Skills};

/// What the gateway takes from its caller beside the config: the embedder and cache of
/// `semantic` and `hybrid` search, and the skills catalog of the `capabilities` surface (the
/// binary loads both from the config).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// The embedder and cache; needed when the config's method is `semantic` or `hybrid`.
    pub semantic: Option<Arc<Embeddings>>,
    /// The skills catalog; needed when the config names `skills` folders.
    pub skills: Option<Arc<Skills>>,
    /// What runs CodeAct programs; needed when the config enables `[codeact]`.
    pub code_runner: Option<Arc<dyn CodeRunner>>,
    /// Connect each upstream once and never restart it (a one-shot command that reports each
    /// source as it stands, such as `check`); by default a failed or lost upstream is
    /// restarted with backoff.
    pub connect_once: bool,
}

impl GatewayOptions {
    /// Sets the embedder and cache.
    pub fn with_semantic(mut self, semantic: Option<Arc<Embeddings>>) -> Self {
        self.semantic = semantic;
        self
    }

    /// Sets what runs CodeAct programs.
    pub fn with_code_runner(mut self, runner: Option<Arc<dyn CodeRunner>>) -> Self {
        self.code_runner = runner;
        self
    }

    /// Sets the skills catalog.
    pub fn with_skills(mut self, skills: Option<Arc<Skills>>) -> Self {
        self.skills = skills;
        self
    }

    /// Connects each upstream once, never restarting it (see [`Self::connect_once`]).
    pub fn connecting_once(mut self) -> Self {
        self.connect_once = true;
        self
    }
}
