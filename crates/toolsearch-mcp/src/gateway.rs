//! The gateway: every configured source turned into catalog sources (static catalogs loaded,
//! upstream servers connected), one engine over them, a task that re-lists an upstream's tools
//! when they change, and a supervisor per upstream that connects it, notices a crash, marks the
//! source unavailable (its tools stay discoverable, its calls fail fast, its group says so),
//! restarts it with exponential backoff, and pings it after a call that was abandoned (a
//! timeout): an upstream that does not answer the ping is restarted.
//!
//! Upstreams connect concurrently and in the background ([`Gateway::launch`]): the gateway
//! answers its clients at once, a source still connecting is listed as connecting and its calls
//! answer `unavailable` until it is ready. [`Gateway::start`] also waits for every source to
//! settle (connected or failed), as `toolsearch check` and library users want.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use toolsearch::catalog::{GroupSpec, SourceTools, load_catalog_file};
use toolsearch::config::{Config, SourceConfig, SourceKind};
use toolsearch::{Engine, EngineError, ToolDef};

use crate::upstream::{PING_TIMEOUT, Upstream, UpstreamEvent, UpstreamExecutor, UpstreamSpec};

/// First wait before restarting a failed upstream; doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Longest wait between restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a supervisor looks at its connection.
const HEALTH_POLL: Duration = Duration::from_millis(100);
/// The context paths every downstream session has (see [`Gateway::context_problems`]).
pub const SESSION_CONTEXT: &[&str] = &["run.id"];
/// What a source still connecting says in `list_tool_groups` and in its calls' errors.
pub const CONNECTING: &str = "still connecting";

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
    /// `ok`, or what went wrong ([`CONNECTING`] while it is still connecting).
    pub status: Result<(), String>,
    /// It has not finished connecting yet.
    pub connecting: bool,
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
    connecting: bool,
}

impl SourceState {
    /// The source as the engine sees it now.
    fn sources(&self) -> Vec<SourceTools> {
        match &self.origin {
            Origin::Catalog(sources) => sources.clone(),
            Origin::Upstream { upstream, tools } => {
                let source = grouped_or_direct(&self.config, tools.clone())
                    .with_executor(Arc::new(UpstreamExecutor(upstream.clone())))
                    .with_unavailable(self.status.clone().err())
                    .with_connecting(self.connecting);
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
    /// How many sources are still connecting.
    settling: watch::Sender<usize>,
    /// Bumped when some upstream's resources (or resource templates) may have changed.
    resources_changed: watch::Sender<u64>,
    /// Bumped when some upstream's prompts may have changed.
    prompts_changed: watch::Sender<u64>,
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
    /// [`launch`](Self::launch), then waits until every upstream has connected or failed. An
    /// upstream that fails to connect is reported in [`statuses`](Self::statuses), its group
    /// listed as unavailable, and restarted with backoff; the gateway still starts.
    pub async fn start(config: Config) -> Result<Arc<Self>, GatewayError> {
        let gateway = Self::launch(config).await?;
        gateway.settled().await;
        Ok(gateway)
    }

    /// Loads the static catalogs, builds the engine, and starts one supervisor per upstream,
    /// which connects it (all concurrently) and keeps it connected; returns at once. Until an
    /// upstream is ready its group is listed as [`CONNECTING`] and its calls answer
    /// `unavailable`.
    pub async fn launch(config: Config) -> Result<Arc<Self>, GatewayError> {
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
                        connecting: false,
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
            states.push(SourceState {
                config: sc,
                origin: Origin::Upstream {
                    upstream,
                    tools: Vec::new(),
                },
                status: Err(CONNECTING.to_owned()),
                connecting: true,
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
        let connecting = states.iter().filter(|s| s.connecting).count();
        let gateway = Arc::new(Self {
            engine: Arc::new(engine),
            states: Mutex::new(states),
            stop: CancellationToken::new(),
            settling: watch::Sender::new(connecting),
            resources_changed: watch::Sender::new(0),
            prompts_changed: watch::Sender::new(0),
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

    /// Waits until no source is still connecting (each has connected or failed once).
    pub async fn settled(&self) {
        let mut rx = self.settling.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Whether every source is ready (connected, or a static catalog).
    pub fn is_ready(&self) -> bool {
        lock(&self.states).iter().all(|s| s.status.is_ok())
    }

    /// Changes of the upstreams' resources: the value is bumped on each.
    pub fn subscribe_resource_changes(&self) -> watch::Receiver<u64> {
        self.resources_changed.subscribe()
    }

    /// How many live listeners follow resource-list changes: one per open downstream session
    /// (and per open subscription). It falls back when sessions end.
    pub fn change_listeners(&self) -> usize {
        self.resources_changed.receiver_count()
    }

    /// Changes of the upstreams' prompts: the value is bumped on each.
    pub fn subscribe_prompt_changes(&self) -> watch::Receiver<u64> {
        self.prompts_changed.subscribe()
    }

    /// Every upstream that is connected now, in config order, with its source name.
    pub(crate) fn connected_upstreams(&self) -> Vec<(String, Arc<Upstream>)> {
        lock(&self.states)
            .iter()
            .filter(|s| s.status.is_ok())
            .filter_map(|s| match &s.origin {
                Origin::Upstream { upstream, .. } => {
                    Some((s.config.name.clone(), upstream.clone()))
                }
                Origin::Catalog(_) => None,
            })
            .collect()
    }

    /// Sources whose context headers need a value no session of this gateway has: each such
    /// source with what it lacks. Sessions of [`GatewayServer`](crate::GatewayServer) carry
    /// only [`SESSION_CONTEXT`]; `identity.*` values need authenticated callers, which this
    /// build does not have yet, so every call to such a source would fail.
    pub fn context_problems(&self) -> Vec<(String, String)> {
        lock(&self.states)
            .iter()
            .filter_map(|s| {
                let SourceKind::Http {
                    context_headers, ..
                } = &s.config.kind
                else {
                    return None;
                };
                let missing: Vec<String> = context_headers
                    .iter()
                    .filter(|(_, path)| !SESSION_CONTEXT.contains(&path.as_str()))
                    .map(|(header, path)| format!("{path} (for {header})"))
                    .collect();
                (!missing.is_empty()).then(|| {
                    (
                        s.config.name.clone(),
                        format!(
                            "its context_headers need {}, which no session of this gateway has (sessions carry only {}); every call to it would fail",
                            missing.join(", "),
                            SESSION_CONTEXT.join(", ")
                        ),
                    )
                })
            })
            .collect()
    }

    /// Whether any source is an MCP upstream (which may offer resources and prompts).
    pub fn has_upstreams(&self) -> bool {
        lock(&self.states)
            .iter()
            .any(|s| matches!(s.origin, Origin::Upstream { .. }))
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
                connecting: s.connecting,
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

    /// A re-listing of a connected upstream's tools.
    fn set_tools(&self, name: &str, new_tools: Vec<ToolDef>) {
        self.update(name, |s| {
            if let Origin::Upstream { tools, .. } = &mut s.origin {
                *tools = new_tools;
            }
            s.status = Ok(());
        });
    }

    /// An upstream (re)connected, with its tools.
    fn set_connected(&self, name: &str, new_tools: Vec<ToolDef>) {
        let mut was_connecting = false;
        self.update(name, |s| {
            if let Origin::Upstream { tools, .. } = &mut s.origin {
                *tools = new_tools;
            }
            s.status = Ok(());
            was_connecting = std::mem::take(&mut s.connecting);
        });
        if was_connecting {
            self.settling.send_modify(|n| *n = n.saturating_sub(1));
        }
        // A (re)connected upstream may offer other resources and prompts than before.
        self.resources_changed.send_modify(|v| *v += 1);
        self.prompts_changed.send_modify(|v| *v += 1);
    }

    fn set_down(&self, name: &str, reason: String) {
        let already = lock(&self.states).iter().any(|s| {
            s.config.name == name && !s.connecting && s.status.as_ref().err() == Some(&reason)
        });
        if already {
            return;
        }
        let mut was_connecting = false;
        let mut was_up = false;
        self.update(name, |s| {
            was_up = s.status.is_ok();
            s.status = Err(reason);
            was_connecting = std::mem::take(&mut s.connecting);
        });
        if was_connecting {
            self.settling.send_modify(|n| *n = n.saturating_sub(1));
        }
        if was_up {
            self.resources_changed.send_modify(|v| *v += 1);
            self.prompts_changed.send_modify(|v| *v += 1);
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

    /// Stops supervising and closes every upstream connection, all at once: a stdio child gets
    /// its stdin closed, then SIGTERM, then SIGKILL (its whole process group), a few seconds
    /// apart, and is waited for.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let upstreams = self.upstreams();
        futures_util::future::join_all(upstreams.iter().map(|(_, u)| u.disconnect())).await;
    }
}

async fn follow(gateway: Weak<Gateway>, mut events: mpsc::UnboundedReceiver<UpstreamEvent>) {
    while let Some(event) = events.recv().await {
        let Some(g) = gateway.upgrade() else { return };
        match event {
            UpstreamEvent::ToolsChanged(name) => g.refresh(&name).await,
            UpstreamEvent::ResourcesChanged(_) => g.resources_changed.send_modify(|v| *v += 1),
            UpstreamEvent::PromptsChanged(_) => g.prompts_changed.send_modify(|v| *v += 1),
        }
    }
}

/// Connects one upstream, then watches it: when its connection is gone, marks it unavailable
/// and reconnects with exponential backoff until it is back (or the gateway stops). After a
/// call was abandoned (a timeout) it pings the upstream; one that does not answer within
/// [`PING_TIMEOUT`] is disconnected, and so restarted.
async fn supervise(
    gateway: Weak<Gateway>,
    name: String,
    upstream: Arc<Upstream>,
    stop: CancellationToken,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut first = true;
    loop {
        if !first {
            if upstream.is_connected().await {
                backoff = FIRST_BACKOFF;
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(HEALTH_POLL) => {}
                    () = upstream.suspected() => check_health(&name, &upstream).await,
                }
                continue;
            }
            {
                let Some(g) = gateway.upgrade() else { return };
                let reason = g
                    .statuses()
                    .into_iter()
                    .find(|s| s.name == name)
                    .and_then(|s| s.status.err())
                    .unwrap_or_else(|| "the upstream stopped".to_owned());
                let reason = if reason == CONNECTING {
                    "the upstream stopped".to_owned()
                } else {
                    reason
                };
                g.set_down(&name, reason);
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        first = false;
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            r = upstream.connect() => r,
        };
        let Some(g) = gateway.upgrade() else { return };
        match result {
            Ok(tools) => {
                tracing::info!(source = %name, tools = tools.len(), "upstream ready");
                g.set_connected(&name, tools);
            }
            Err(e) => {
                tracing::warn!(source = %name, error = %e, retry_in = ?backoff, "upstream unavailable");
                upstream.disconnect().await;
                g.set_down(&name, e.to_string());
            }
        }
    }
}

/// Pings an upstream after an abandoned call; disconnects it when it does not answer, so the
/// supervisor restarts it.
async fn check_health(name: &str, upstream: &Upstream) {
    match upstream.ping(PING_TIMEOUT).await {
        Ok(()) => tracing::debug!(source = %name, "upstream answered the health ping"),
        Err(e) => {
            tracing::warn!(source = %name, error = %e, "upstream did not answer the health ping after an abandoned call; restarting it");
            upstream.disconnect().await;
        }
    }
}
