//! The engine: a live catalog behind one surface's controls, answering every tool call the
//! model makes — controls, proxied calls and direct tools — on one execution path.
//!
//! `builder` validates and builds it, `snapshot` is the state it swaps as a whole on
//! reload, `route` sends each call to its control, its grouped tool or its direct tool, and
//! `deferred` keeps external tools' calls open until the host completes them.

mod answer;
mod approval;
mod builder;
mod codeact;
mod deferred;
mod learning;
mod resolve;
mod route;
mod snapshot;
mod vendor;

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;

pub use answer::Reply;
pub use builder::{EngineBuilder, EngineError};
pub use deferred::DeferredError;
pub use learning::Learning;
pub use snapshot::Snapshot;
pub use vendor::VendorReply;

use builder::check_clashes;
use deferred::DeferredCalls;
use snapshot::Live;

use crate::catalog::{Directory, Schema, SourceTools, View, Visibility};
use crate::codeact::CodeRunner;
use crate::config::Settings;
use crate::controls::{self, ControlOutput, ToolDefinition};
use crate::dispatch::{AuditSink, CallPath, Observer, RateLimiter};
use crate::exec::{CallResult, Session};
use crate::policy::Policy;
use crate::search::semantic::Embeddings;
use crate::search::{LearnedIndex, Query, SearchError, SearchIndex, Searcher};
use crate::skills::Skills;

/// A catalog behind the controls of one surface.
#[derive(Debug)]
pub struct Engine {
    live: Live,
    settings: Settings,
    path: CallPath,
    session: Arc<Session>,
    /// Bumped whenever a reload changes the model-facing tool list.
    tools_changed: tokio::sync::watch::Sender<u64>,
    semantic: Option<Arc<Embeddings>>,
    skills: Option<Arc<SkillSet>>,
    runner: Option<Arc<dyn CodeRunner>>,
    policy: Policy,
    rate: Option<RateLimiter>,
    audit: Option<AuditSink>,
    observer: Option<Arc<dyn Observer>>,
    /// External tools' calls the host has not completed yet.
    deferred: Arc<DeferredCalls>,
    /// What use taught, when the engine learns.
    learning: Option<Arc<Learning>>,
}

/// The skills catalog with its indexes.
#[derive(Debug)]
struct SkillSet {
    skills: Arc<Skills>,
    index: SearchIndex,
}

/// What a discovery control ranks for one caller: what it sees and what its class learned.
#[derive(Debug, Clone, Copy)]
struct CallerView<'a> {
    visible: Option<&'a Visibility>,
    learned: Option<&'a LearnedIndex>,
}

/// Answers discovery control `control` over `snap`, as `caller`.
fn run_discovery(
    snap: &Snapshot,
    settings: &Settings,
    semantic: Option<&Embeddings>,
    skills: Option<&SkillSet>,
    caller: CallerView<'_>,
    control: controls::Control,
    arguments: &Value,
) -> ControlOutput {
    let ctx = controls::Context::new(snap.directory(), snap.index(), settings)
        .with_semantic(semantic)
        .with_skills(skills.map(|s| (&*s.skills, &s.index)))
        .with_visible(caller.visible)
        .with_learned(caller.learned);
    controls::run_discovery(&ctx, control, arguments)
}

impl Engine {
    /// A builder.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// An engine with settings and sources, no hooks.
    pub fn new(settings: Settings, sources: Vec<SourceTools>) -> Result<Self, EngineError> {
        Self::builder().settings(settings).sources(sources).build()
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The embedder and cache of `semantic` and `hybrid`, when set.
    pub fn semantic_search(&self) -> Option<&Arc<Embeddings>> {
        self.semantic.as_ref()
    }

    /// The skills catalog, when set.
    pub fn skills(&self) -> Option<&Arc<Skills>> {
        self.skills.as_ref().map(|s| &s.skills)
    }

    /// For one turn of an agent loop on the `capabilities` surface: the capability controls
    /// plus the `k` tools that best match the user's `message` (by the configured method),
    /// each under its canonical name (its toolId), callable directly through
    /// [`handle`](Self::handle) in this turn.
    pub fn turn_tools(&self, message: &str, k: usize) -> Result<Vec<ToolDefinition>, SearchError> {
        let snap = self.snapshot();
        let dir = snap.directory();
        let mut out = controls::control_definitions(&self.settings, dir);
        if message.trim().is_empty() || k == 0 || dir.tools().is_empty() {
            return Ok(out);
        }
        let visible = self.visibility(&snap, &self.session);
        let learned = self.learned_field(&snap, &self.session);
        let hits = Searcher::new(dir, snap.index(), &self.settings, self.semantic.as_deref())
            .with_learned(learned.as_deref())
            .rank(&Query::new(message, self.settings.method, k).visible_to(visible.as_deref()))?
            .hits;
        out.extend(hits.into_iter().map(|h| {
            let t = dir.tool(h.tool);
            ToolDefinition {
                name: t.canonical.clone(),
                description: t.description.clone(),
                input_schema: Value::Object(t.input_schema()),
                output_schema: t.output_schema().map(Value::Object),
                listed: t.listed(),
            }
        }));
        Ok(out)
    }

    /// The current snapshot: the directory with its indexes. A caller keeps the snapshot it
    /// took while a reload swaps in the next.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.live.get()
    }

    /// The engine's own session (used by [`handle`](Self::handle)).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Whether `sources` would be accepted by [`reload`](Self::reload) (a valid catalog, no
    /// name clash with the controls), without swapping anything in.
    pub fn check(&self, sources: Vec<SourceTools>) -> Result<(), EngineError> {
        let dir = Directory::build(sources)?;
        check_clashes(&self.settings, &dir)
    }

    /// Replaces the snapshot with one built from `sources` (the next call sees it).
    /// Whether the model-facing tool list changed, it is announced to
    /// [`subscribe_tool_changes`](Self::subscribe_tool_changes).
    pub fn reload(&self, sources: Vec<SourceTools>) -> Result<(), EngineError> {
        let dir = Directory::build(sources)?;
        check_clashes(&self.settings, &dir)?;
        let snapshot = Snapshot::new(dir);
        snapshot.index().prepare(
            snapshot.directory(),
            self.settings.method,
            &self.settings.bm25,
        );
        if let Some(sem) = &self.semantic {
            // New and changed tools are embedded now; on failure the first search retries
            // and reports it.
            if let Err(e) = snapshot.index().vectors(snapshot.directory(), sem) {
                tracing::warn!(error = %e, "embedding the reloaded catalog");
            }
        }
        let before = self.tools();
        self.live.replace(snapshot);
        if self.tools() != before {
            self.tools_changed.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// A receiver that sees a new value each time the model-facing tool list (controls and
    /// direct tools, with their schemas) changes; an MCP server sends `tools/list_changed`.
    pub fn subscribe_tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tools_changed.subscribe()
    }

    /// The control definitions the model sees (none when nothing is grouped).
    pub fn control_definitions(&self) -> Vec<ToolDefinition> {
        controls::control_definitions(&self.settings, self.snapshot().directory())
    }

    /// Every tool the model sees: the controls, then the direct tools.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        self.tools_for(&self.session)
    }

    /// Every tool the caller of `session` sees: the controls (naming only its groups), then
    /// the direct tools it may see.
    pub fn tools_for(&self, session: &Session) -> Vec<ToolDefinition> {
        let snap = self.snapshot();
        let visible = self.visibility(&snap, session);
        let view = View::new(snap.directory(), visible.as_deref());
        let mut out = controls::control_definitions_for(&self.settings, view);
        out.extend(view.direct().map(|(_, d)| {
            ToolDefinition {
                name: d.def.name.clone(),
                description: d.def.description.clone(),
                input_schema: Value::Object(d.def.input_schema.to_map()),
                output_schema: d
                    .def
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object(s.to_map())),
                listed: d.def.listed.as_ref().map(Schema::to_map),
            }
        }));
        out
    }

    /// How many tools (grouped and direct) the caller of `session` sees now.
    pub fn visible_tools(&self, session: &Session) -> usize {
        let snap = self.snapshot();
        let visible = self.visibility(&snap, session);
        let view = View::new(snap.directory(), visible.as_deref());
        view.tool_total() + view.direct().count()
    }

    /// The generated instructions (none when nothing is grouped).
    pub fn instructions(&self) -> Option<String> {
        controls::instructions(&self.settings, self.snapshot().directory())
    }

    /// Answers a discovery control synchronously; `None` when `name` is not a discovery
    /// control of this surface (or nothing is grouped). Does not count usage.
    pub fn handle_control(&self, name: &str, arguments: &Value) -> Option<ControlOutput> {
        let snap = self.snapshot();
        if !snap.directory().offers_controls() {
            return None;
        }
        let control = controls::control_for(&self.settings, name).filter(|c| c.is_discovery())?;
        let visible = self.visibility(&snap, &self.session);
        let learned = self.learned_field(&snap, &self.session);
        let caller = CallerView {
            visible: visible.as_deref(),
            learned: learned.as_deref(),
        };
        Some(run_discovery(
            &snap,
            &self.settings,
            self.semantic.as_deref(),
            self.skills.as_deref(),
            caller,
            control,
            arguments,
        ))
    }

    /// What the caller of `session` may see in `snap` (`None`: no policy, everything).
    pub(crate) fn visibility(&self, snap: &Snapshot, session: &Session) -> Option<Arc<Visibility>> {
        if self.policy.is_open() {
            return None;
        }
        Some(snap.visibility(&self.policy, self.policy.class_of(session)))
    }

    /// Answers any tool call the model makes, counted in the engine's own session.
    pub async fn handle(&self, name: &str, arguments: Value) -> CallResult {
        self.handle_in(&self.session, name, arguments).await
    }

    /// Answers any tool call the model makes, counted in `session`. Needs a Tokio runtime
    /// with timers (calls run under a timeout). A call of an external tool answers its
    /// deferred request as JSON text (`{"deferred": {...}}`): a host with external tools
    /// uses [`reply_in`](Self::reply_in), which tells it apart.
    pub async fn handle_in(
        &self,
        session: &Arc<Session>,
        name: &str,
        arguments: Value,
    ) -> CallResult {
        self.reply_in(session, name, arguments).await.result
    }

    /// Answers any tool call the model makes, counted in the engine's own session, with how
    /// it ended (see [`reply_in`](Self::reply_in)).
    pub async fn reply(&self, name: &str, arguments: Value) -> Reply {
        self.reply_in(&self.session, name, arguments).await
    }

    /// Answers any tool call the model makes, counted in `session`, with how it ended. When
    /// the outcome is [`Outcome::Deferred`](crate::Outcome::Deferred) the call reached an
    /// external tool: send the model nothing yet, run the tool, then send it what
    /// [`complete`](Self::complete) (or [`fail`](Self::fail)) returns, under the original
    /// call's id.
    pub async fn reply_in(&self, session: &Arc<Session>, name: &str, arguments: Value) -> Reply {
        let span = tracing::info_span!("tool_call", tool = name);
        async {
            let started = Instant::now();
            let answer = self
                .call(session, resolve::Caller::Model, name, arguments)
                .await;
            let outcome = answer.outcome();
            let result = answer.into_call_result();
            tracing::info!(
                is_error = result.is_error,
                duration_us = started.elapsed().as_micros() as u64,
                "answered"
            );
            Reply { result, outcome }
        }
        .instrument(span)
        .await
    }
}
