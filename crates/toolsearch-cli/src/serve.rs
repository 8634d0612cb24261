//! `toolsearch serve`: the MCP gateway over stdio.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use rmcp::ServiceExt;
use toolsearch::config::load_config;
use toolsearch_mcp::{Gateway, GatewayServer};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Gateway config (TOML); default `toolsearch.toml` in the working directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve streamable HTTP on ADDR instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
}

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    let config = load_config(&crate::config_path(a.config))?;
    if a.http.is_some() {
        bail!("--http is not available in this build yet; serve over stdio");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let gateway = Gateway::start(config).await?;
        for s in gateway.statuses() {
            if let Err(e) = &s.status {
                tracing::warn!(source = %s.name, error = %e, "source unavailable");
            }
        }
        let server = GatewayServer::new(gateway.clone())
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP session over stdio")?;
        let quit = server.waiting().await;
        gateway.shutdown().await;
        tracing::info!(?quit, "downstream session ended");
        Ok(ExitCode::SUCCESS)
    })
}
