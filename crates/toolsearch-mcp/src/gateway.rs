//! The gateway: every configured source turned into catalog sources (static catalogs loaded,
//! upstream servers connected), one engine over them, a task that re-lists an upstream's tools
//! when they change, and a supervisor per upstream that notices a crash, marks the source
//! unavailable (its tools stay discoverable, its calls fail fast, its group says so) and
//! restarts it with exponential backoff.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolsearch::catalog::{GroupSpec, SourceTools, load_catalog_file};
use toolsearch::config::{Config, SourceConfig, SourceKind};
use toolsearch::{Engine, EngineError, ToolDef};

use crate::upstream::{Upstream, UpstreamEvent, UpstreamExecutor, UpstreamSpec};

/// First wait before restarting a failed upstream; doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Longest wait between restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a supervisor looks at its connection.
const HEALTH_POLL: Duration = Duration::from_millis(100);

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
    /// The embedding model or cache of `semantic` / `hybrid` search is not usable.
    #[error("{0}")]
    Semantic(String),
    /// The skills catalog could not be loaded.
    #[error("{0}")]
    Skills(String),
    /// A source kind this build does not know.
    #[error("source {0:?}: this kind of source is not supported")]
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

enum Origin {
    /// A static catalog: its sources never change.
    Catalog(Vec<SourceTools>),
    /// An upstream: its last listed tools.
    Upstream {
        upstream: Arc<Upstream>,
        tools: Vec<ToolDef>,
    },
}

struct SourceState {
    config: SourceConfig,
    origin: Origin,
    status: Result<(), String>,
}

impl SourceState {
    /// The source as the engine sees it now.
    fn sources(&self) -> Vec<SourceTools> {
        match &self.origin {
            Origin::Catalog(sources) => sources.clone(),
            Origin::Upstream { upstream, tools } => {
                let source = grouped_or_direct(&self.config, tools.clone())
                    .with_executor(Arc::new(UpstreamExecutor(upstream.clone())))
                    .with_unavailable(self.status.clone().err());
                vec![source]
            }
        }
    }

    fn tool_count(&self) -> usize {
        match &self.origin {
            Origin::Catalog(sources) => sources.iter().map(|s| s.tools.len()).sum(),
            Origin::Upstream { tools, .. } => tools.len(),
        }
    }
}

/// Every source behind one engine.
pub struct Gateway {
    engine: Arc<Engine>,
    states: Mutex<Vec<SourceState>>,
    stop: CancellationToken,
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn load_catalog_source(
    sc: &SourceConfig,
    path: &std::path::Path,
) -> Result<Vec<SourceTools>, GatewayError> {
    let file = load_catalog_file(path).map_err(|e| GatewayError::Source {
        source_name: sc.name.clone(),
        message: e.to_string(),
    })?;
    Ok(match &sc.group {
        // A group in the config gathers every tool of the file into it.
        Some(_) if !sc.direct => {
            let tools: Vec<ToolDef> = file
                .groups
                .into_iter()
                .flat_map(|(_, _, tools)| tools)
                .chain(file.direct)
                .collect();
            vec![grouped_or_direct(sc, tools)]
        }
        _ => file.into_sources(&sc.name, sc.direct),
    })
}

impl Gateway {
    /// Loads and connects every source, builds the engine, and starts following upstream
    /// changes and supervising upstreams. An upstream that fails to connect is reported in
    /// [`statuses`](Self::statuses), its group listed as unavailable, and restarted with
    /// backoff; the gateway still starts.
    pub async fn start(config: Config) -> Result<Arc<Self>, GatewayError> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let mut states = Vec::new();
        for sc in config.sources {
            let spec = match &sc.kind {
                SourceKind::Catalog { path } => {
                    let sources = load_catalog_source(&sc, path)?;
                    states.push(SourceState {
                        config: sc,
                        origin: Origin::Catalog(sources),
                        status: Ok(()),
                    });
                    continue;
                }
                SourceKind::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => UpstreamSpec::Stdio {
                    command: command.clone(),
                    args: args.clone(),
                    env: env.clone(),
                    cwd: cwd.clone(),
                },
                SourceKind::Http {
                    url,
                    headers,
                    context_headers,
                } => UpstreamSpec::Http {
                    url: url.clone(),
                    headers: headers.clone(),
                    context_headers: context_headers.clone(),
                },
                _ => return Err(GatewayError::Unsupported(sc.name.clone())),
            };
            let upstream = Arc::new(Upstream::new(&sc.name, spec, events_tx.clone()));
            let (tools, status) = match upstream.connect().await {
                Ok(tools) => (tools, Ok(())),
                Err(e) => {
                    tracing::error!(source = %sc.name, error = %e, "upstream unavailable");
                    (Vec::new(), Err(e.to_string()))
                }
            };
            states.push(SourceState {
                config: sc,
                origin: Origin::Upstream { upstream, tools },
                status,
            });
        }
        let all: Vec<SourceTools> = states.iter().flat_map(SourceState::sources).collect();
        let settings = config.settings.clone();
        let method = settings.method;
        let semantic = tokio::task::spawn_blocking(move || {
            toolsearch_embed::semantic_search(&settings, method)
        })
        .await
        .map_err(|e| GatewayError::Semantic(e.to_string()))?
        .map_err(|e| GatewayError::Semantic(e.to_string()))?;
        let mut builder = Engine::builder().settings(config.settings).sources(all);
        if let Some(sem) = semantic {
            builder = builder.semantic(sem);
        }
        if !config.skills.is_empty() {
            let skills = toolsearch::skills::Skills::load(&config.skills)
                .map_err(|e| GatewayError::Skills(e.to_string()))?;
            builder = builder.skills(Arc::new(skills));
        }
        if let Some(t) = config.call_timeout {
            builder = builder.call_timeout(t);
        }
        if let Some(n) = config.max_tool_calls {
            builder = builder.max_tool_calls(n);
        }
        let engine = builder.build()?;
        let gateway = Arc::new(Self {
            engine: Arc::new(engine),
            states: Mutex::new(states),
            stop: CancellationToken::new(),
        });
        tokio::spawn(follow(Arc::downgrade(&gateway), events_rx));
        for (name, upstream) in gateway.upstreams() {
            tokio::spawn(supervise(
                Arc::downgrade(&gateway),
                name,
                upstream,
                gateway.stop.clone(),
            ));
        }
        Ok(gateway)
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    fn upstreams(&self) -> Vec<(String, Arc<Upstream>)> {
        lock(&self.states)
            .iter()
            .filter_map(|s| match &s.origin {
                Origin::Upstream { upstream, .. } => {
                    Some((s.config.name.clone(), upstream.clone()))
                }
                Origin::Catalog(_) => None,
            })
            .collect()
    }

    /// The upstream behind a source, if it is one.
    pub fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, u)| u)
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
                tools: s.tool_count(),
                status: s.status.clone(),
            })
            .collect()
    }

    /// Applies `change` to one source's state, then swaps in a new snapshot.
    fn update(&self, name: &str, change: impl FnOnce(&mut SourceState)) {
        let all = {
            let mut states = lock(&self.states);
            let Some(state) = states.iter_mut().find(|s| s.config.name == name) else {
                return;
            };
            change(state);
            states
                .iter()
                .flat_map(SourceState::sources)
                .collect::<Vec<_>>()
        };
        if let Err(e) = self.engine.reload(all) {
            tracing::error!(source = %name, error = %e, "new tool list rejected; keeping the previous snapshot");
        }
    }

    fn set_tools(&self, name: &str, new_tools: Vec<ToolDef>) {
        self.update(name, |s| {
            if let Origin::Upstream { tools, .. } = &mut s.origin {
                *tools = new_tools;
            }
            s.status = Ok(());
        });
    }

    fn set_down(&self, name: &str, reason: String) {
        let already = lock(&self.states)
            .iter()
            .any(|s| s.config.name == name && s.status.as_ref().err() == Some(&reason));
        if !already {
            self.update(name, |s| s.status = Err(reason));
        }
    }

    /// Re-lists one upstream's tools and swaps in a new snapshot.
    pub async fn refresh(&self, name: &str) {
        let Some(upstream) = self.upstream(name) else {
            return;
        };
        if !upstream.is_connected().await {
            tracing::debug!(source = %name, "tool list change from a closed connection; ignored");
            return;
        }
        match upstream.list_tools().await {
            Ok(tools) => self.set_tools(name, tools),
            Err(e) => {
                tracing::warn!(source = %name, error = %e, "tools/list after a change failed")
            }
        }
    }

    /// Stops supervising and closes every upstream connection (child processes are killed).
    pub async fn shutdown(&self) {
        self.stop.cancel();
        for (_, u) in self.upstreams() {
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

/// Watches one upstream: when its connection is gone, marks it unavailable and reconnects
/// with exponential backoff until it is back (or the gateway stops).
async fn supervise(
    gateway: Weak<Gateway>,
    name: String,
    upstream: Arc<Upstream>,
    stop: CancellationToken,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if upstream.is_connected().await {
            backoff = FIRST_BACKOFF;
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(HEALTH_POLL) => continue,
            }
        }
        {
            let Some(g) = gateway.upgrade() else { return };
            let reason = g
                .statuses()
                .into_iter()
                .find(|s| s.name == name)
                .and_then(|s| s.status.err())
                .unwrap_or_else(|| "the upstream stopped".to_owned());
            g.set_down(&name, reason);
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            r = upstream.connect() => r,
        };
        let Some(g) = gateway.upgrade() else { return };
        match result {
            Ok(tools) => {
                tracing::info!(source = %name, tools = tools.len(), "upstream back");
                g.set_tools(&name, tools);
            }
            Err(e) => {
                tracing::warn!(source = %name, error = %e, retry_in = ?backoff, "upstream still unavailable");
                g.set_down(&name, e.to_string());
            }
        }
    }
}
