//! `toolsearch catalog`: connect the config's sources and write their tools as a catalog file,
//! so `control`, `search` and `eval` run on a user's own tools. Exit 0 when every source
//! answered, 1 when some did not (the file then holds the others' tools), 2 for a bad config.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolsearch_mcp::config::load_config;

use crate::EXIT_TOOL_ERROR;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 every source answered; 1 some source did not (the file holds the others' tools, and stderr says which); 2 bad config."
)]
pub struct CatalogArgs {
    /// Gateway config (TOML); default `toolsearch.toml` in the working directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where to write the catalog (JSON); default stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// How long to wait for the sources to connect.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    wait: u64,
}

pub fn run(a: CatalogArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init_reporting();
    let config = load_config(&crate::config_path(a.config))?;
    if config.sources.is_empty() {
        anyhow::bail!("the config has no [[source]], so there are no tools to write");
    }
    let wait = std::time::Duration::from_secs(a.wait);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let (catalog, failed) = runtime.block_on(async {
        let options =
            toolsearch_mcp::GatewayOptions::default().with_skills(crate::wiring::skills(&config)?);
        let (gateway, statuses) = crate::wiring::connect_once(config, options, wait).await?;
        let snapshot = gateway.engine().snapshot();
        let catalog = toolsearch::catalog_json(snapshot.directory());
        gateway.shutdown().await;
        let failed: Vec<(String, String)> = statuses
            .into_iter()
            .filter_map(|s| s.status.err().map(|e| (s.name, e)))
            .collect();
        anyhow::Ok((catalog, failed))
    })?;
    let text = serde_json::to_string_pretty(&catalog).context("writing the catalog")? + "\n";
    match &a.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("writing to stdout")?,
    }
    for (source, why) in &failed {
        eprintln!("toolsearch: source {source:?} left out: {why}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TOOL_ERROR)
    })
}
