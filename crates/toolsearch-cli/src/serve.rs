//! `toolsearch serve`: the MCP gateway over stdio or streamable HTTP.
//!
//! Signals, on both transports: SIGTERM and SIGINT close every session and every upstream
//! (stdio children and what they started are ended) and exit 0; SIGHUP re-reads the config
//! (see [`crate::reload`]).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::reload::Reloader;
use anyhow::{Context, bail};
use clap::Args;
use rmcp::ServiceExt;
use toolsearch_mcp::config::load_config;
use toolsearch_mcp::http::{ConnectionLimits, HttpOptions, serve_http};
use toolsearch_mcp::replica::replica_name_problem;
use toolsearch_mcp::telemetry::Telemetry;
use toolsearch_mcp::{Authenticator, Gateway, GatewayServer, serve_metrics_listener};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Gateway config (TOML); default `toolsearch.toml` in the working directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve streamable HTTP instead of stdio, on ADDR (default 127.0.0.1:8848, loopback).
    /// Callers authenticate with the config's [[client]] tokens or [auth.jwt] JWTs; set
    /// TOOLSEARCH_HTTP_TOKEN to add one client, `default`, with that bearer token.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_HTTP_ADDR)]
    http: Option<String>,
    /// Also serve /metrics, /healthz and /readyz on ADDR, without a token (bind it where only
    /// the scraper and the probes reach it). Over stdio this is the only way to reach them;
    /// over HTTP it keeps the metrics off the MCP listener.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// With --http: this replica's name (lowercase letters, digits, '-'), the prefix of its
    /// session ids, by which a load balancer keeps a session on its replica (docs/operations.md).
    #[arg(long, value_name = "NAME")]
    replica: Option<String>,
}

/// Where `--http` listens without an address.
const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8848";
/// The environment variable holding the HTTP bearer token.
const TOKEN_VAR: &str = "TOOLSEARCH_HTTP_TOKEN";

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let path = crate::config_path(a.config);
    let config = load_config(&path)?;
    // Traces are exported from the SDK's own thread, by a blocking client: started before the
    // runtime, shut down (the last spans flushed) after it.
    let telemetry = match &config.telemetry {
        Some(t) => Some(Telemetry::start(t)?),
        None => None,
    };
    crate::init_logging_with(telemetry.as_ref());
    let address = |flag: &str, addr: &Option<String>, example: &str| match addr {
        Some(a) => match a.parse::<std::net::SocketAddr>() {
            Ok(a) => Ok(Some(a)),
            Err(_) => bail!("--{flag} {a:?} is not an address such as {example}"),
        },
        None => Ok(None),
    };
    let http = address("http", &a.http, DEFAULT_HTTP_ADDR)?;
    let metrics = address("metrics", &a.metrics, "127.0.0.1:9464")?;
    if let Some(problem) = a.replica.as_deref().and_then(replica_name_problem) {
        bail!("--replica: {problem}");
    }
    if a.replica.is_some() && http.is_none() {
        bail!("--replica names an HTTP replica; it needs --http");
    }
    // Over stdio there is one client: a single-threaded runtime avoids a cross-core hand-off
    // per message (measured in BENCHMARKS.md). HTTP serves many sessions on all cores.
    let mut builder = if http.is_some() {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = builder
        .enable_all()
        .on_thread_unpark(crate::allocator::working)
        .on_thread_park(crate::allocator::idle)
        .build()
        .context("starting the async runtime")?;
    let session_limits = (config.max_http_sessions, config.http_session_idle);
    let connection_limits =
        ConnectionLimits::new(config.http_header_timeout, config.http_idle_timeout);
    let served = runtime.block_on(async {
        let mut signals = Signals::new().context("installing signal handlers")?;
        // Upstreams connect in the background: the client's `initialize` is answered at once.
        let (options, to_build) = crate::wiring::serve_options(&config).await?;
        let watch = config.watch;
        let gateway = Gateway::launch(config, options).await?;
        if let Some(semantic) = to_build {
            tokio::spawn(crate::wiring::build_cache(gateway.clone(), semantic));
        }
        for problem in gateway.context_problems() {
            tracing::warn!(source = %problem.at, "{}", problem.message);
        }
        let reloader = Reloader::new(gateway.clone(), path, watch);
        let watcher = reloader.spawn_watch();
        let ops = match metrics {
            Some(addr) => {
                let ops = serve_metrics_listener(gateway.clone(), addr)
                    .await
                    .with_context(|| format!("--metrics: listening on {addr}"))?;
                eprintln!("toolsearch: serving /metrics, /healthz and /readyz on http://{}/", ops.local_addr);
                Some(ops)
            }
            None => None,
        };
        if let Some(addr) = http {
            let auth = Authenticator::new(gateway.access(), std::env::var(TOKEN_VAR).ok())
                .await
                .context("setting up authentication")?;
            let options = HttpOptions::new(addr)
                .with_auth(auth.map(Arc::new))
                .with_session_limits(session_limits.0, session_limits.1)
                .with_connection_limits(connection_limits)
                .with_replica(a.replica.clone());
            if options.auth.is_none() && !addr.ip().is_loopback() {
                tracing::warn!(%addr, "serving beyond loopback without [[client]], [auth.jwt] or {TOKEN_VAR}: anyone who can reach it can call every tool");
            }
            let server = serve_http(gateway.clone(), options).await.with_context(|| format!("listening on {addr}"))?;
            eprintln!("toolsearch: serving MCP on http://{}/ (streamable HTTP)", server.local_addr);
            let signal = signals.next_stop(&reloader).await;
            tracing::info!(signal, "shutting down");
            watcher.abort();
            server.shutdown().await;
            if let Some(ops) = ops {
                ops.shutdown().await;
            }
            gateway.shutdown().await;
            return Ok(ExitCode::SUCCESS);
        }
        let transport = toolsearch_mcp::stdio::JsonRpcStdio::new();
        let server = GatewayServer::new(gateway.clone())
            .serve(transport)
            .await
            .context("MCP session over stdio")?;
        let cancel = server.cancellation_token();
        tokio::select! {
            quit = server.waiting() => tracing::info!(?quit, "downstream session ended"),
            signal = signals.next_stop(&reloader) => {
                tracing::info!(signal, "shutting down");
                cancel.cancel();
            }
        }
        watcher.abort();
        if let Some(ops) = ops {
            ops.shutdown().await;
        }
        gateway.shutdown().await;
        Ok(ExitCode::SUCCESS)
    });
    drop(runtime);
    if let Some(t) = telemetry {
        t.shutdown();
    }
    served
}

/// SIGTERM, SIGINT and SIGHUP, installed before anything is started.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for SIGTERM or SIGINT and names it; each SIGHUP meanwhile reloads the config.
    async fn next_stop(&mut self, reloader: &Reloader) -> &'static str {
        loop {
            tokio::select! {
                _ = self.term.recv() => return "SIGTERM",
                _ = self.int.recv() => return "SIGINT",
                _ = self.hup.recv() => reloader.reload("SIGHUP").await,
            }
        }
    }
}
