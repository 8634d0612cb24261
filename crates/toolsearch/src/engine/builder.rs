//! Building an [`Engine`]: settings, sources, hooks and limits, validated all at once.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::snapshot::{Live, Snapshot};
use super::{Engine, Learning, SkillSet};
use crate::catalog::{Directory, DirectoryError, SourceTools};
use crate::codeact::CodeRunner;
use crate::config::RateLimit;
use crate::config::{SearchMethod, Settings};
use crate::dispatch::{Approval, AuditSink, CallInfo, CallPath, Observer, RateLimiter};
use crate::exec::Session;
use crate::policy::{Policy, ToolGlobs};
use crate::problem::Problems;
use crate::search::SearchIndex;
use crate::search::semantic::Embeddings;
use crate::skills::Skills;

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Invalid settings.
    #[error("{0}")]
    Settings(Problems),
    /// Invalid sources.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// A control name equals a direct tool's name.
    #[error("control name {0:?} is also the name of a direct tool; rename one under [names]")]
    NameClash(String),
    /// A setting this build does not serve yet.
    #[error("{0}")]
    Unsupported(String),
}

/// Builds an [`Engine`]: settings, sources (grouped or direct, each with its executor), hooks
/// and limits.
#[derive(Debug, Default)]
pub struct EngineBuilder {
    settings: Settings,
    sources: Vec<SourceTools>,
    path: CallPath,
    semantic: Option<Arc<Embeddings>>,
    skills: Option<Arc<Skills>>,
    runner: Option<Arc<dyn CodeRunner>>,
    policy: Policy,
    rate: Option<RateLimit>,
    audit: Option<AuditSink>,
    observer: Option<Arc<dyn Observer>>,
    learning: Option<Arc<Learning>>,
}

impl EngineBuilder {
    /// Learns from use (see [`Learning`]): a successful call of a tool a discovery answer
    /// listed teaches that query to the tool, for the caller's class; its searches rank with
    /// it from then on.
    pub fn learning(mut self, learning: Arc<Learning>) -> Self {
        self.learning = Some(learning);
        self
    }

    /// Asks the session's person (its [`Approver`](crate::exec::Approver)) before the tools
    /// `tools` matches run; a session nobody can ask gets `denied`.
    pub fn ask_before(mut self, tools: ToolGlobs) -> Self {
        self.path.ask_for = Some(tools);
        self
    }

    /// Limits each caller to `limit` tool calls (a token bucket per caller; see
    /// [`RateLimiter`](crate::dispatch::RateLimiter)).
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate = Some(limit);
        self
    }

    /// Hands an [`AuditRecord`](crate::dispatch::AuditRecord) of every tool call to `sink`.
    pub fn audit(mut self, sink: AuditSink) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Tells `observer` of every tool call and every search (the gateway's metrics).
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Sets the per-caller catalogs: each call sees only the tools the rules that apply to
    /// its session's caller allow (see [`Policy`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets what runs CodeAct programs (`run_code`, `run_program`); needed when the settings
    /// enable CodeAct. The `toolsearch-codeact` crate's runner uses the monty sandbox.
    pub fn code_runner(mut self, runner: Arc<dyn CodeRunner>) -> Self {
        self.runner = Some(runner);
        self
    }

    /// Sets the skills catalog of the `capabilities` surface.
    pub fn skills(mut self, skills: Arc<Skills>) -> Self {
        self.skills = Some(skills);
        self
    }

    /// Sets the settings (surface, limits, control names).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Adds a source.
    pub fn source(mut self, source: SourceTools) -> Self {
        self.sources.push(source);
        self
    }

    /// Adds sources.
    pub fn sources(mut self, sources: impl IntoIterator<Item = SourceTools>) -> Self {
        self.sources.extend(sources);
        self
    }

    /// Sets the embedder and cache that the `semantic` and `hybrid` methods search with.
    pub fn semantic(mut self, semantic: Arc<Embeddings>) -> Self {
        self.semantic = Some(semantic);
        self
    }

    /// Asks `hook` before every validated call; a denial becomes a `denied` result.
    pub fn approval<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(CallInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Approval> + Send + 'static,
    {
        self.path.approval = Some(Arc::new(move |info| Box::pin(hook(info))));
        self
    }

    /// Calls `hook` with the upstream's name whenever an executor answers unauthorized.
    pub fn on_unauthorized(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.path.on_unauthorized = Some(Arc::new(hook));
        self
    }

    /// Sets how long one tool call may run (default 60 s).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.path.timeout = timeout;
        self
    }

    /// Limits the tool calls of one session (a proxied call counts two).
    pub fn max_tool_calls(mut self, limit: u64) -> Self {
        self.path.max_tool_calls = Some(limit);
        self
    }

    /// Validates everything and builds the first snapshot.
    pub fn build(self) -> Result<Engine, EngineError> {
        let settings = self.settings;
        let problems = settings.problems();
        if !problems.is_empty() {
            return Err(EngineError::Settings(problems));
        }
        let dense = matches!(
            settings.method,
            SearchMethod::Semantic | SearchMethod::Hybrid
        );
        if dense && self.semantic.is_none() {
            return Err(EngineError::Unsupported(format!(
                "search method {:?} needs an embedding model and its cache: configure \
                 [search.semantic] and build the cache with `toolsearch index`",
                settings.method.as_str()
            )));
        }
        if settings.codeact.enabled && self.runner.is_none() {
            return Err(EngineError::Unsupported(
                "[codeact] is enabled, but no code runner was given: build the engine with a \
                 runner (EngineBuilder::code_runner, e.g. toolsearch-codeact's)"
                    .to_owned(),
            ));
        }
        let dir = Directory::build(self.sources)?;
        check_clashes(&settings, &dir)?;
        let snapshot = Snapshot::new(dir);
        let skills = self.skills.map(|skills| {
            let index = SearchIndex::build(&*skills);
            Arc::new(SkillSet { skills, index })
        });
        // Indexes are built now rather than on the first query.
        snapshot
            .index()
            .prepare(snapshot.directory(), settings.method, &settings.bm25);
        if let Some(sem) = &self.semantic {
            // With an embedder, vectors are ready before the first query (a per-call method
            // of the capabilities surface may use them even when the default is bm25).
            snapshot
                .index()
                .vectors(snapshot.directory(), sem)
                .map_err(|e| EngineError::Unsupported(e.to_string()))?;
            if let Some(set) = &skills {
                set.index
                    .vectors(&*set.skills, sem)
                    .map_err(|e| EngineError::Unsupported(e.to_string()))?;
            }
        }
        let (tools_changed, _) = tokio::sync::watch::channel(0);
        Ok(Engine {
            live: Live::new(snapshot),
            settings,
            path: self.path,
            session: Arc::new(Session::new()),
            tools_changed,
            semantic: self.semantic,
            skills,
            runner: self.runner,
            policy: self.policy,
            rate: self.rate.map(RateLimiter::new),
            audit: self.audit,
            observer: self.observer,
            deferred: Arc::default(),
            learning: self.learning,
        })
    }
}

pub(super) fn check_clashes(settings: &Settings, dir: &Directory) -> Result<(), EngineError> {
    for (_, name) in settings.names.shown(settings.surface, &settings.codeact) {
        if dir.direct().iter().any(|d| d.def.name == name) {
            return Err(EngineError::NameClash(name.to_owned()));
        }
    }
    Ok(())
}
