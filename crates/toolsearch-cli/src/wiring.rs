//! What the binary wires into the gateway beside its config: the embedder and cache of
//! `semantic` and `hybrid` search (`toolsearch-embed`), and the skills catalog of the
//! `capabilities` surface.

use std::sync::Arc;

use anyhow::Context;
use toolsearch::config::Config;
use toolsearch::skills::Skills;
use toolsearch_mcp::gateway::GatewayOptions;

/// Everything `config` needs loaded for the gateway; the embedding model loads off the async
/// executor.
pub async fn gateway_options(config: &Config) -> anyhow::Result<GatewayOptions> {
    let settings = config.settings.clone();
    let semantic = tokio::task::spawn_blocking(move || {
        toolsearch_embed::semantic_search(&settings, settings.method)
    })
    .await
    .context("loading the embedding model")??;
    Ok(GatewayOptions::default()
        .with_semantic(semantic)
        .with_skills(skills(config)?))
}

/// The skills catalog of the config's `skills` folders, when it names any.
pub fn skills(config: &Config) -> anyhow::Result<Option<Arc<Skills>>> {
    if config.skills.is_empty() {
        return Ok(None);
    }
    Ok(Some(Arc::new(Skills::load(&config.skills)?)))
}
