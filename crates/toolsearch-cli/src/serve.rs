//! `toolsearch serve`: the MCP gateway over stdio.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use rmcp::ServiceExt;
use toolsearch::config::load_config;
use toolsearch_mcp::http::{HttpOptions, serve_http};
use toolsearch_mcp::{Gateway, GatewayServer};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Gateway config (TOML); default `toolsearch.toml` in the working directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve streamable HTTP instead of stdio, on ADDR (default 127.0.0.1:8848, loopback).
    /// Set TOOLSEARCH_HTTP_TOKEN to require `Authorization: Bearer <token>`.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_HTTP_ADDR)]
    http: Option<String>,
}

/// Where `--http` listens without an address.
const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8848";
/// The environment variable holding the HTTP bearer token.
const TOKEN_VAR: &str = "TOOLSEARCH_HTTP_TOKEN";

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    let config = load_config(&crate::config_path(a.config))?;
    let http = match &a.http {
        Some(addr) => match addr.parse::<std::net::SocketAddr>() {
            Ok(addr) => Some(addr),
            Err(_) => bail!("--http {addr:?} is not an address such as 127.0.0.1:8848"),
        },
        None => None,
    };
    // Over stdio there is one client: a single-threaded runtime avoids a cross-core hand-off
    // per message (measured in BENCHMARKS.md). HTTP serves many sessions on all cores.
    let mut builder = if http.is_some() {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = builder
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
        if let Some(addr) = http {
            let options = HttpOptions::new(addr).with_bearer_token(std::env::var(TOKEN_VAR).ok());
            if options.bearer_token.is_none() && !addr.ip().is_loopback() {
                tracing::warn!(%addr, "serving beyond loopback without {TOKEN_VAR}: anyone who can reach it can call every tool");
            }
            let server = serve_http(gateway.clone(), options).await.with_context(|| format!("listening on {addr}"))?;
            eprintln!("toolsearch: serving MCP on http://{}/ (streamable HTTP)", server.local_addr);
            tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
            server.shutdown().await;
            gateway.shutdown().await;
            return Ok(ExitCode::SUCCESS);
        }
        let server = GatewayServer::new(gateway.clone())
            .serve(rmcp::transport::stdio_pipes())
            .await
            .context("MCP session over stdio")?;
        let quit = server.waiting().await;
        gateway.shutdown().await;
        tracing::info!(?quit, "downstream session ended");
        Ok(ExitCode::SUCCESS)
    })
}
