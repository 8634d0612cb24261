//! The gateway: every configured source turned into catalog sources (static catalogs loaded,
//! upstream servers connected), one engine over them, and a task that rebuilds the engine's
//! snapshot when an upstream's tools change.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;
use toolsearch::catalog::{GroupSpec, SourceTools, load_catalog_file};
use toolsearch::config::{Config, SourceConfig, SourceKind};
use toolsearch::{Engine, EngineError, ToolDef};

use crate::upstream::{Upstream, UpstreamEvent, UpstreamExecutor, UpstreamSpec};

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A catalog source could not be loaded.
    #[error("source {source_name:?}: {message}")]
    Source {
        /// The source.
        source_name: String,
        /// What went wrong.
        message: String,
    },
    /// The engine refused the sources or settings.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A source feature this build does not serve yet.
    #[error("source {0:?}: context_headers are not available in this build yet")]
    Unsupported(String),
}

/// How one source stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceStatus {
    /// Source name.
    pub name: String,
    /// Its group, or `direct`.
    pub group: String,
    /// Tools it currently yields.
    pub tools: usize,
    /// `ok`, or what went wrong.
    pub status: Result<(), String>,
}

struct SourceState {
    config: SourceConfig,
    upstream: Option<Arc<Upstream>>,
    /// The source's tools as the engine sees them.
    sources: Vec<SourceTools>,
    status: Result<(), String>,
}

/// Every source behind one engine.
pub struct Gateway {
    engine: Arc<Engine>,
    states: Mutex<Vec<SourceState>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

fn grouped_or_direct(config: &SourceConfig, tools: Vec<ToolDef>) -> SourceTools {
    let source = match (&config.group, config.direct) {
        (Some((name, description)), false) => {
            SourceTools::grouped(&config.name, GroupSpec::new(name, description), tools)
        }
        _ => SourceTools::direct(&config.name, tools),
    };
    source.with_instructions(config.instructions.clone())
}

async fn connect_upstream(
    state: &mut SourceState,
    sc: &SourceConfig,
    spec: UpstreamSpec,
    events: &mpsc::UnboundedSender<UpstreamEvent>,
) {
    let upstream = Arc::new(Upstream::new(&sc.name, spec, events.clone()));
    match upstream.connect().await {
        Ok(tools) => {
            state.sources = vec![
                grouped_or_direct(sc, tools)
                    .with_executor(Arc::new(UpstreamExecutor(upstream.clone()))),
            ];
        }
        Err(e) => {
            tracing::error!(source = %sc.name, error = %e, "upstream unavailable");
            state.status = Err(e.to_string());
        }
    }
    state.upstream = Some(upstream);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Gateway {
    /// Loads and connects every source, builds the engine, and starts following upstream
    /// changes. An upstream that fails to connect is reported in [`statuses`](Self::statuses)
    /// and contributes no tools; the gateway still starts.
    pub async fn start(config: Config) -> Result<Arc<Self>, GatewayError> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let mut states = Vec::new();
        for sc in config.sources {
            let mut state = SourceState {
                config: sc.clone(),
                upstream: None,
                sources: Vec::new(),
                status: Ok(()),
            };
            match &sc.kind {
                SourceKind::Catalog { path } => {
                    let file = load_catalog_file(path).map_err(|e| GatewayError::Source {
                        source_name: sc.name.clone(),
                        message: e.to_string(),
                    })?;
                    state.sources = match &sc.group {
                        // A group in the config gathers every tool of the file into it.
                        Some(_) if !sc.direct => {
                            let tools: Vec<ToolDef> = file
                                .groups
                                .into_iter()
                                .flat_map(|(_, _, tools)| tools)
                                .chain(file.direct)
                                .collect();
                            vec![grouped_or_direct(&sc, tools)]
                        }
                        _ => file.into_sources(&sc.name, sc.direct),
                    };
                }
                SourceKind::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let spec = UpstreamSpec::Stdio {
                        command: command.clone(),
                        args: args.clone(),
                        env: env.clone(),
                        cwd: cwd.clone(),
                    };
                    let upstream = Arc::new(Upstream::new(&sc.name, spec, events_tx.clone()));
                    match upstream.connect().await {
                        Ok(tools) => {
                            state.sources = vec![
                                grouped_or_direct(&sc, tools)
                                    .with_executor(Arc::new(UpstreamExecutor(upstream.clone()))),
                            ];
                        }
                        Err(e) => {
                            tracing::error!(source = %sc.name, error = %e, "upstream unavailable");
                            state.status = Err(e.to_string());
                        }
                    }
                    state.upstream = Some(upstream);
                }
                SourceKind::Http {
                    url,
                    headers,
                    context_headers,
                } => {
                    if !context_headers.is_empty() {
                        return Err(GatewayError::Unsupported(sc.name.clone()));
                    }
                    let spec = UpstreamSpec::Http {
                        url: url.clone(),
                        headers: headers.clone(),
                    };
                    connect_upstream(&mut state, &sc, spec, &events_tx).await;
                }
                _ => return Err(GatewayError::Unsupported(sc.name.clone())),
            }
            states.push(state);
        }
        let all: Vec<SourceTools> = states
            .iter()
            .flat_map(|s| s.sources.iter().cloned())
            .collect();
        let engine = Engine::builder()
            .settings(config.settings)
            .sources(all)
            .build()?;
        let gateway = Arc::new(Self {
            engine: Arc::new(engine),
            states: Mutex::new(states),
        });
        tokio::spawn(follow(Arc::downgrade(&gateway), events_rx));
        Ok(gateway)
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Every source's status, in config order.
    pub fn statuses(&self) -> Vec<SourceStatus> {
        lock(&self.states)
            .iter()
            .map(|s| SourceStatus {
                name: s.config.name.clone(),
                group: match (&s.config.group, s.config.direct) {
                    (Some((g, _)), false) => g.clone(),
                    (_, true) => "direct".into(),
                    (None, false) => "(catalog groups)".into(),
                },
                tools: s.sources.iter().map(|t| t.tools.len()).sum(),
                status: s.status.clone(),
            })
            .collect()
    }

    /// Re-lists one upstream's tools and swaps in a new snapshot.
    pub async fn refresh(&self, name: &str) {
        let upstream = lock(&self.states)
            .iter()
            .find(|s| s.config.name == name)
            .and_then(|s| s.upstream.clone());
        let Some(upstream) = upstream else { return };
        if !upstream.is_connected().await {
            tracing::debug!(source = %name, "tool list change from a closed connection; ignored");
            return;
        }
        let listed = upstream.list_tools().await;
        let all = {
            let mut states = lock(&self.states);
            let Some(state) = states.iter_mut().find(|s| s.config.name == name) else {
                return;
            };
            match listed {
                Ok(tools) => {
                    state.sources = vec![
                        grouped_or_direct(&state.config, tools)
                            .with_executor(Arc::new(UpstreamExecutor(upstream.clone()))),
                    ];
                    state.status = Ok(());
                }
                Err(e) => {
                    tracing::warn!(source = %name, error = %e, "tools/list after a change failed");
                    state.status = Err(e.to_string());
                    return;
                }
            }
            states
                .iter()
                .flat_map(|s| s.sources.iter().cloned())
                .collect::<Vec<_>>()
        };
        if let Err(e) = self.engine.reload(all) {
            tracing::error!(source = %name, error = %e, "new tool list rejected; keeping the previous snapshot");
        }
    }

    /// Closes every upstream connection (their child processes are killed).
    pub async fn shutdown(&self) {
        let upstreams: Vec<Arc<Upstream>> = lock(&self.states)
            .iter()
            .filter_map(|s| s.upstream.clone())
            .collect();
        for u in upstreams {
            u.disconnect().await;
        }
    }
}

async fn follow(gateway: Weak<Gateway>, mut events: mpsc::UnboundedReceiver<UpstreamEvent>) {
    while let Some(event) = events.recv().await {
        let Some(g) = gateway.upgrade() else { return };
        match event {
            UpstreamEvent::ToolsChanged(name) => g.refresh(&name).await,
        }
    }
}
