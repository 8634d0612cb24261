//! `toolsearch check`: validate the config, connect every source, print a table.
//! Exit 0 when every source is ready, 1 when some source is unavailable, 2 for a bad config.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolsearch_mcp::config::load_config;

use crate::EXIT_TOOL_ERROR;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 every source is ready; 1 some source is unavailable; 2 bad config (one line on stderr)."
)]
pub struct CheckArgs {
    /// Gateway config (TOML); default `toolsearch.toml` in the working directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// How long to wait for the sources to connect; one still starting then is reported as not
    /// answering.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    wait: u64,
}

pub fn run(a: CheckArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init_reporting();
    let config = load_config(&crate::config_path(a.config))?;
    if config.sources.is_empty() {
        anyhow::bail!(
            "the config has no [[source]], so there is nothing to serve (`toolsearch init` writes one per server of your MCP client)"
        );
    }
    let wait = std::time::Duration::from_secs(a.wait);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        // Each source is tried once: what it says the first time is the answer.
        // A dense method needs no embedding cache yet: `serve` builds a missing one at start.
        let (options, unbuilt) = crate::wiring::serve_options(&config).await?;
        let method = config.settings.method;
        let (gateway, mut statuses) = crate::wiring::connect_once(config, options, wait).await?;
        // Static catalogs are embedded as the engine starts; upstreams' tools are not.
        if unbuilt.is_some_and(|s| !s.cache_path().exists()) {
            eprintln!(
                "toolsearch: the embedding cache for {} search is not built yet: `toolsearch serve` builds it when it starts (or build it now with `toolsearch index`)",
                method.as_str()
            );
        }
        // A source that connects but whose calls could never carry their context headers is
        // not ok: say so here rather than at the first call.
        for problem in gateway.context_problems() {
            if let Some(s) = statuses.iter_mut().find(|s| s.name == problem.at) {
                s.status = Err(problem.message);
            }
        }
        gateway.shutdown().await;
        let rows: Vec<[String; 4]> = statuses
            .iter()
            .map(|s| {
                [
                    s.name.clone(),
                    s.group.clone(),
                    s.tools.to_string(),
                    match &s.status {
                        Ok(()) => "ok".into(),
                        Err(e) => format!("error: {e}"),
                    },
                ]
            })
            .collect();
        let mut out = std::io::stdout().lock();
        crate::table::write(&mut out, ["source", "group", "tools", "status"], &rows, &[])
            .context("writing to stdout")?;
        // What each configured client sees (its policies applied).
        let clients: Vec<[String; 2]> = gateway
            .access()
            .clients
            .iter()
            .map(|c| {
                let mut context: std::collections::BTreeMap<String, String> = c
                    .claims
                    .iter()
                    .map(|(k, v)| (format!("identity.{k}"), v.clone()))
                    .collect();
                context.insert(toolsearch::CLIENT_PATH.to_owned(), c.name.clone());
                let session = toolsearch::Session::with_context(context);
                [
                    c.name.clone(),
                    gateway.engine().visible_tools(&session).to_string(),
                ]
            })
            .collect();
        if !clients.is_empty() {
            writeln!(out).context("writing to stdout")?;
            crate::table::write(&mut out, ["client", "tools it sees"], &clients, &[])
                .context("writing to stdout")?;
        }
        for [client, seen] in &clients {
            if seen == "0" {
                eprintln!(
                    "toolsearch: warning: client {client:?} sees no tool: no [[policy]] that applies to it allows one (a rule without `allow` allows every tool its `deny` does not name)"
                );
            }
        }
        let ok = statuses.iter().all(|s| s.status.is_ok());
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_TOOL_ERROR)
        })
    })
}
