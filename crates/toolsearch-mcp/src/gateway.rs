//! The gateway: every configured source turned into catalog sources (static catalogs loaded,
//! upstream servers connected), one engine over them, a task that re-lists an upstream's tools
//! when they change, and a supervisor per upstream that connects it, notices a crash, marks the
//! source unavailable (its tools stay discoverable, its calls fail fast, its group says so),
//! restarts it with exponential backoff, and pings it after a call that was abandoned (a
//! timeout): an upstream that does not answer the ping is restarted.
//!
//! Upstreams connect concurrently and in the background ([`Gateway::launch`]): the gateway
//! answers its clients at once, a call whose scope holds a source still connecting waits for it
//! (bounded: [`Gateway::await_startup`]), and a source still connecting is listed as such. [`Gateway::start`] also waits for every source to
//! settle (connected or failed), as `toolsearch check` and library users want.

mod clients;
pub(crate) use clients::Follower;
mod options;
mod reload;
mod source;
mod startup;
mod state;
mod supervise;

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{AccessConfig, Config, DEFAULT_STARTUP_WAIT, SourceKind};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use toolsearch::{
    AuditSink, CLIENT_PATH, Engine, EngineError, Learning, Policy, Problem, Problems, SourceTools,
    ToolGlobs,
};

use crate::approval::Waiting;
use crate::awaiting_input::AwaitingInput;
use crate::metrics::Metrics;
use crate::recent_calls::RecentCalls;
use crate::upstream::{Upstream, UpstreamEvent};
pub use options::GatewayOptions;
pub use reload::{ReloadError, Reloaded};
use source::{Origin, SourceState};
use supervise::{follow, supervise};

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
    /// The config names skills folders, but the caller passed no skills catalog
    /// ([`GatewayOptions::skills`]).
    #[error("the config names skills folders, but no skills catalog was loaded for the gateway")]
    SkillsNotLoaded,
    /// The audit log cannot be opened.
    #[error("audit.file {file}: {message}")]
    Audit {
        /// The file.
        file: String,
        /// The cause.
        message: String,
    },
    /// The learned uses' file (`[learning] file`) cannot be opened.
    #[error("learning.file {file}: {message}")]
    Learning {
        /// The file.
        file: String,
        /// The cause.
        message: String,
    },
    /// A `[[policy]]` does not compile.
    #[error("{0}")]
    Policy(String),
}

/// How one source stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceStatus {
    /// Source name.
    pub name: String,
    /// Its group, or `direct`.
    pub group: String,
    /// `catalog`, `stdio` or `http`.
    pub transport: &'static str,
    /// Tools it currently yields.
    pub tools: usize,
    /// `ok`, or what went wrong ([`CONNECTING`] while it is still connecting).
    pub status: Result<(), String>,
    /// It has not finished connecting yet.
    pub connecting: bool,
}
/// Every source behind one engine.
pub struct Gateway {
    engine: Arc<Engine>,
    /// Callers and what they may do.
    access: AccessConfig,
    states: Mutex<Vec<SourceState>>,
    stop: CancellationToken,
    /// How many sources are still connecting.
    settling: watch::Sender<usize>,
    /// Bumped when some upstream's resources (or resource templates) may have changed.
    resources_changed: watch::Sender<u64>,
    /// Bumped when some upstream's prompts may have changed.
    prompts_changed: watch::Sender<u64>,
    /// Approval questions sent in `input_required` results, until answered.
    waiting: Waiting,
    awaiting_input: Arc<AwaitingInput>,
    /// What `/metrics` shows.
    metrics: Arc<Metrics>,
    /// Where new upstreams send their change events (sources added by a reload).
    events: mpsc::UnboundedSender<UpstreamEvent>,
    /// The running config's sections other than `[[source]]` (its `sources` empty): a reload
    /// that changes them is refused (see `reload`).
    running: Mutex<Config>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
    /// `[limits] startup_wait_ms`: how long a call waits for the sources in its scope that are
    /// still connecting.
    startup_wait: Duration,
    /// Upstreams are connected once, never restarted ([`GatewayOptions::connect_once`]).
    connect_once: bool,
    /// The client sessions: where upstream log messages and resource updates go.
    clients: clients::Clients,
    /// The most recent tool calls, for the console.
    recent_calls: Arc<RecentCalls>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}
impl Gateway {
    /// [`launch`](Self::launch), then waits until every upstream has connected or failed. An
    /// upstream that fails to connect is reported in [`statuses`](Self::statuses), its group
    /// listed as unavailable, and restarted with backoff; the gateway still starts.
    pub async fn start(config: Config, options: GatewayOptions) -> Result<Arc<Self>, GatewayError> {
        let gateway = Self::launch(config, options).await?;
        gateway.settled().await;
        Ok(gateway)
    }

    /// Loads the static catalogs, builds the engine, and starts one supervisor per upstream,
    /// which connects it (all concurrently) and keeps it connected; returns at once. Until an
    /// upstream is ready its group is listed as [`CONNECTING`] and its calls answer
    /// `unavailable`.
    pub async fn launch(
        config: Config,
        options: GatewayOptions,
    ) -> Result<Arc<Self>, GatewayError> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let mut running = config.clone();
        running.sources = Vec::new();
        let mut states = Vec::new();
        for sc in config.sources {
            states.push(SourceState::new(sc, &events_tx, &stop)?);
        }
        let all: Vec<SourceTools> = states.iter().flat_map(SourceState::sources).collect();
        let metrics = Arc::new(Metrics::default());
        for s in &states {
            if s.connecting {
                metrics.track_source(&s.config.name);
            } else {
                metrics.source_calls().track(&s.config.name);
            }
        }
        let mut builder = Engine::builder()
            .settings(config.settings)
            .sources(all)
            .observer(metrics.clone());
        if let Some(sem) = options.semantic {
            builder = builder.semantic(sem);
        }
        match options.skills {
            Some(skills) => builder = builder.skills(skills),
            None if !config.skills.is_empty() => return Err(GatewayError::SkillsNotLoaded),
            None => {}
        }
        if let Some(runner) = options.code_runner {
            builder = builder.code_runner(runner);
        }
        if let Some(t) = config.call_timeout {
            builder = builder.call_timeout(t);
        }
        if let Some(n) = config.max_tool_calls {
            builder = builder.max_tool_calls(n);
        }
        let policy = Policy::new(&config.access.policies).map_err(GatewayError::Policy)?;
        builder = builder.policy(policy);
        if !config.access.approval.is_empty() {
            let tools = ToolGlobs::new(&config.access.approval).map_err(GatewayError::Policy)?;
            builder = builder.ask_before(tools);
        }
        if let Some(rate) = config.access.rate {
            builder = builder.rate_limit(rate);
        }
        let recent_calls = Arc::new(RecentCalls::default());
        let file = match &config.access.audit_file {
            Some(path) => Some(
                crate::audit::file_sink(path).map_err(|e| GatewayError::Audit {
                    file: path.display().to_string(),
                    message: e.to_string(),
                })?,
            ),
            None => None,
        };
        let ring = recent_calls.clone();
        builder = builder.audit(AuditSink::new(move |r| {
            ring.record(r);
            if let Some(file) = &file {
                file.record(r);
            }
        }));
        if let Some(file) = &config.learning {
            let path = match file {
                Some(p) => p.clone(),
                None => crate::upstream::oauth::state_dir()
                    .ok_or_else(|| GatewayError::Learning {
                        file: "learned.jsonl".into(),
                        message: "no state folder: set XDG_STATE_HOME or HOME, or [learning] file"
                            .into(),
                    })?
                    .join("learned.jsonl"),
            };
            let learning = Learning::open(&path).map_err(|e| GatewayError::Learning {
                file: path.display().to_string(),
                message: e.to_string(),
            })?;
            builder = builder.learning(Arc::new(learning));
        }
        let engine = builder.build()?;
        let connecting = states.iter().filter(|s| s.connecting).count();
        let gateway = Arc::new(Self {
            engine: Arc::new(engine),
            access: config.access,
            states: Mutex::new(states),
            stop,
            settling: watch::Sender::new(connecting),
            resources_changed: watch::Sender::new(0),
            prompts_changed: watch::Sender::new(0),
            waiting: Waiting::default(),
            awaiting_input: Arc::default(),
            metrics,
            events: events_tx,
            running: Mutex::new(running),
            reloading: tokio::sync::Mutex::new(()),
            startup_wait: config.startup_wait.unwrap_or(DEFAULT_STARTUP_WAIT),
            clients: clients::Clients::default(),
            connect_once: options.connect_once,
            recent_calls,
        });
        tokio::spawn(follow(Arc::downgrade(&gateway), events_rx));
        let supervised: Vec<_> = gateway
            .states
            .lock()
            .iter()
            .filter_map(SourceState::supervised)
            .collect();
        for (name, upstream, stop) in supervised {
            tokio::spawn(supervise(Arc::downgrade(&gateway), name, upstream, stop));
        }
        Ok(gateway)
    }

    /// The members each direct tool was listed with upstream that rmcp's `Tool` has no field
    /// for (`execution`, ...), by tool name (tools without any left out): what a `tools/list`
    /// answer gives back.
    pub(crate) fn unmodelled_members(
        &self,
    ) -> std::collections::HashMap<String, serde_json::Map<String, Value>> {
        let snapshot = self.engine.snapshot();
        snapshot
            .directory()
            .direct()
            .iter()
            .filter_map(|d| {
                let members = crate::wire_fields::unmodelled(&d.def.listed.as_ref()?.to_map());
                (!members.is_empty()).then(|| (d.def.name.clone(), members))
            })
            .collect()
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Its metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The metrics as text with every source's readiness as of now (see [`Metrics::render`]).
    pub fn render_metrics(&self, openmetrics: bool) -> String {
        let statuses = self.statuses();
        self.metrics.render(
            statuses.iter().map(|s| (s.name.as_str(), s.status.is_ok())),
            openmetrics,
        )
    }

    /// Whether every source is ready (connected, or a static catalog).
    pub fn is_ready(&self) -> bool {
        self.states.lock().iter().all(|s| s.status.is_ok())
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
        self.states
            .lock()
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

    /// Approval questions waiting for their answer.
    pub(crate) fn waiting(&self) -> &Waiting {
        &self.waiting
    }

    /// Calls waiting for their client's answers to what their upstreams asked (2026-07-28).
    pub(crate) fn awaiting_input(&self) -> &Arc<AwaitingInput> {
        &self.awaiting_input
    }

    /// The access configuration (callers, policies).
    pub fn access(&self) -> &AccessConfig {
        &self.access
    }

    /// Whether every session of an authenticated caller has context `path`: [`SESSION_CONTEXT`]
    /// always; with JWTs, any `identity.*` claim may be there; with clients only,
    /// `identity.client` and the claims every client has.
    fn context_available(&self, path: &str) -> bool {
        if SESSION_CONTEXT.contains(&path) {
            return true;
        }
        let Some(claim) = path.strip_prefix("identity.") else {
            return false;
        };
        if self.access.jwt.is_some() {
            return true;
        }
        !self.access.clients.is_empty()
            && (path == CLIENT_PATH
                || self
                    .access
                    .clients
                    .iter()
                    .all(|c| c.claims.contains_key(claim)))
    }

    /// Sources whose context headers need a value no session of this gateway has: each such
    /// source (the problem's place is its name) with what it lacks. Every session carries
    /// [`SESSION_CONTEXT`]; an authenticated caller's (over HTTP) adds its identity (see
    /// `context_available`).
    pub fn context_problems(&self) -> Problems {
        self.states.lock()
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
                    .filter(|(_, path)| !self.context_available(path))
                    .map(|(header, path)| format!("{path} (for {header})"))
                    .collect();
                (!missing.is_empty()).then(|| {
                    Problem::new(
                        s.config.name.clone(),
                        format!(
                            "its context_headers need {}, which no session of this gateway has (every session carries {}; authenticated callers add identity.client and their claims); every call to it would fail",
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
        self.states
            .lock()
            .iter()
            .any(|s| matches!(s.origin, Origin::Upstream { .. }))
    }

    fn upstreams(&self) -> Vec<(String, Arc<Upstream>)> {
        self.states
            .lock()
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

    /// The most recent tool calls (the console's Calls view).
    pub fn recent_calls(&self) -> &RecentCalls {
        &self.recent_calls
    }

    /// Every source's status, in config order.
    pub fn statuses(&self) -> Vec<SourceStatus> {
        self.states
            .lock()
            .iter()
            .map(|s| SourceStatus {
                name: s.config.name.clone(),
                group: match (&s.config.group, s.config.direct) {
                    (Some((g, _)), false) => g.clone(),
                    (_, true) => "direct".into(),
                    (None, false) => "(catalog groups)".into(),
                },
                transport: match s.config.kind {
                    SourceKind::Catalog { .. } => "catalog",
                    SourceKind::Stdio { .. } => "stdio",
                    SourceKind::Http { .. } => "http",
                },
                tools: s.tool_count(),
                status: s.status.clone(),
                connecting: s.connecting,
            })
            .collect()
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
