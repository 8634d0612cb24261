//! What the binary wires into the gateway beside its config: the embedder and cache of
//! `semantic` and `hybrid` search (`toolsearch-embed`), and the skills catalog of the
//! `capabilities` surface, and the runner of CodeAct programs (`toolsearch-codeact`); and a
//! short-lived gateway for the commands that only read a config's catalog.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use toolsearch::{CodeRunner, Settings, Skills};
use toolsearch_mcp::config::Config;
use toolsearch_mcp::gateway::{CONNECTING, Gateway, GatewayOptions, SourceStatus};

/// Starts a gateway on `config` (its sources connected, no embedder), runs `f` on it, and
/// shuts it down: the one-shot commands that read a config's catalog (`search`, `index`,
/// `export`).
pub fn with_gateway<T>(
    config: Config,
    f: impl FnOnce(&toolsearch_mcp::Gateway) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let options = GatewayOptions::default().with_skills(skills(&config)?);
        let (gateway, _) = connect_once(config, options, ONE_SHOT_WAIT).await?;
        let out = f(&gateway);
        gateway.shutdown().await;
        out
    })
}

/// How long a one-shot command waits for its sources by default.
pub const ONE_SHOT_WAIT: Duration = Duration::from_secs(30);

/// A gateway for a one-shot command: each source connected once (none restarted), at most
/// `wait` waited for; with every source's status, one still starting then said to be not
/// answering (its process is ended with the gateway).
pub async fn connect_once(
    config: Config,
    options: GatewayOptions,
    wait: Duration,
) -> anyhow::Result<(Arc<Gateway>, Vec<SourceStatus>)> {
    let gateway = Gateway::launch(config, options.connecting_once()).await?;
    let _ = tokio::time::timeout(wait, gateway.settled()).await;
    let mut statuses = gateway.statuses();
    for s in &mut statuses {
        if s.status.as_ref().is_err_and(|e| e == CONNECTING) {
            s.status = Err(format!(
                "no answer within {} s (still starting, or hung); `--wait` waits longer",
                wait.as_secs()
            ));
        }
    }
    Ok((gateway, statuses))
}

/// Everything `config` needs loaded for the gateway (`serve`, `check`), the embedding model
/// loaded off the async executor. With a dense method and no embedding cache yet: an empty one
/// instead of a refusal, and the search to build it with ([`build_cache`]) once the sources
/// are in.
pub async fn serve_options(
    config: &Config,
) -> anyhow::Result<(GatewayOptions, Option<Arc<toolsearch::search::Embeddings>>)> {
    let settings = config.settings.clone();
    let semantic = tokio::task::spawn_blocking(move || {
        toolsearch_embed::semantic_search_building(&settings, settings.method)
    })
    .await
    .context("loading the embedding model")??;
    let to_build = semantic
        .as_ref()
        .filter(|(_, missing)| *missing)
        .map(|(s, _)| s.clone());
    let options = GatewayOptions::default()
        .with_semantic(semantic.map(|(s, _)| s))
        .with_skills(skills(config)?)
        .with_code_runner(code_runner(&config.settings)?);
    Ok((options, to_build))
}

/// Builds the embedding cache of `gateway`'s tools once its sources are in (each connected or
/// failed once), with progress on stderr; searches before it is done embed what they need.
pub async fn build_cache(gateway: Arc<Gateway>, semantic: Arc<toolsearch::search::Embeddings>) {
    gateway.settled().await;
    let snapshot = gateway.engine().snapshot();
    let built = tokio::task::spawn_blocking(move || {
        let dir = snapshot.directory();
        eprintln!(
            "toolsearch: no embedding cache yet; embedding {} tools into {}",
            dir.tools().len(),
            semantic.cache_path().display()
        );
        let bar = crate::progress::tools_bar("embedding");
        let started = std::time::Instant::now();
        let result = semantic.index(dir, &mut |done, todo| {
            bar.set_length(todo as u64);
            bar.set_position(done as u64);
        });
        bar.finish_and_clear();
        result.map(|(vectors, _)| (vectors.len(), started.elapsed()))
    })
    .await;
    match built {
        Ok(Ok((tools, took))) => eprintln!(
            "toolsearch: embedding cache built: {tools} tools in {:.1} s",
            took.as_secs_f64()
        ),
        Ok(Err(e)) => eprintln!("toolsearch: building the embedding cache failed: {e}"),
        Err(e) => eprintln!("toolsearch: building the embedding cache failed: {e}"),
    }
}

/// What runs CodeAct programs: monty, in this process (its memory is counted by the
/// binary's global allocator, `SandboxAllocator`).
#[cfg(feature = "codeact")]
pub fn code_runner(_: &Settings) -> anyhow::Result<Option<Arc<dyn CodeRunner>>> {
    Ok(Some(Arc::new(toolsearch_codeact::MontyRunner::new())))
}

/// This build runs no programs: a config that enables CodeAct is refused, by name.
#[cfg(not(feature = "codeact"))]
pub fn code_runner(settings: &Settings) -> anyhow::Result<Option<Arc<dyn CodeRunner>>> {
    if settings.codeact.enabled {
        anyhow::bail!(
            "[codeact] is enabled, but this toolsearch was built without CodeAct (cargo feature \
             codeact): set codeact.enabled = false, or rebuild with the feature"
        );
    }
    Ok(None)
}

/// The skills catalog of the config's `skills` folders, when it names any.
pub fn skills(config: &Config) -> anyhow::Result<Option<Arc<Skills>>> {
    if config.skills.is_empty() {
        return Ok(None);
    }
    Ok(Some(Arc::new(Skills::load(&config.skills)?)))
}
