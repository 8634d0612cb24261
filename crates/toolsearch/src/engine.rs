//! The engine: a live catalog behind one surface's controls, answering every tool call the
//! model makes — controls, proxied calls and direct tools — on one execution path.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tracing::Instrument;

use crate::catalog::{Catalog, Directory, DirectoryError, SourceTools};
use crate::config::{SearchMethod, Settings, Surface};
use crate::controls::Control;
use crate::controls::{self, ControlOutput, ToolDefinition, ToolError, args};
use crate::dispatch::call::Target;
use crate::dispatch::{Approval, CallInfo, CallPath, CallResult, Session};
use crate::search::semantic::SemanticSearch;
use crate::skills::Skills;

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Invalid settings.
    #[error("{}", .0.join("; "))]
    Settings(Vec<String>),
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
    semantic: Option<Arc<SemanticSearch>>,
    skills: Option<Arc<Skills>>,
}

impl EngineBuilder {
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
    pub fn semantic(mut self, semantic: Arc<SemanticSearch>) -> Self {
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
        let dir = Directory::build(self.sources)?;
        check_clashes(&settings, &dir)?;
        // Indexes are built now rather than on the first query.
        if matches!(settings.method, SearchMethod::Bm25 | SearchMethod::Hybrid) {
            dir.bm25_index(&settings.bm25);
        }
        if let Some(sem) = &self.semantic {
            // With an embedder, vectors are ready before the first query (a per-call method
            // of the capabilities surface may use them even when the default is bm25).
            dir.vectors(sem)
                .map_err(|e| EngineError::Unsupported(e.to_string()))?;
            if let Some(skills) = &self.skills {
                skills
                    .directory()
                    .vectors(sem)
                    .map_err(|e| EngineError::Unsupported(e.to_string()))?;
            }
        }
        let (tools_changed, _) = tokio::sync::watch::channel(0);
        Ok(Engine {
            catalog: Catalog::new(dir),
            settings,
            path: self.path,
            session: Arc::new(Session::new()),
            tools_changed,
            semantic: self.semantic,
            skills: self.skills,
        })
    }
}

/// A catalog behind the controls of one surface.
#[derive(Debug)]
pub struct Engine {
    catalog: Catalog,
    settings: Settings,
    path: CallPath,
    session: Arc<Session>,
    /// Bumped whenever a reload changes the model-facing tool list.
    tools_changed: tokio::sync::watch::Sender<u64>,
    semantic: Option<Arc<SemanticSearch>>,
    skills: Option<Arc<Skills>>,
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
    pub fn semantic_search(&self) -> Option<&Arc<SemanticSearch>> {
        self.semantic.as_ref()
    }

    /// The skills catalog, when set.
    pub fn skills(&self) -> Option<&Arc<Skills>> {
        self.skills.as_ref()
    }

    /// For one turn of an agent loop on the `capabilities` surface: the capability controls
    /// plus the `k` tools that best match the user's `message` (by the configured method),
    /// each under its canonical name (its toolId), callable directly through
    /// [`handle`](Self::handle) in this turn.
    pub fn turn_tools(
        &self,
        message: &str,
        k: usize,
    ) -> Result<Vec<ToolDefinition>, crate::search::SearchError> {
        let dir = self.catalog.snapshot();
        let mut out = controls::control_definitions(&self.settings, &dir);
        if message.trim().is_empty() || k == 0 || dir.tools().is_empty() {
            return Ok(out);
        }
        let hits = crate::search::rank(
            &dir,
            &self.settings,
            self.semantic.as_deref(),
            self.settings.method,
            message,
            k,
        )?;
        out.extend(hits.into_iter().map(|h| {
            let t = dir.tool(h.tool);
            ToolDefinition {
                name: t.canonical.clone(),
                description: t.description.clone(),
                input_schema: Value::Object((*t.input_schema).clone()),
                output_schema: t.output_schema.as_deref().cloned().map(Value::Object),
            }
        }));
        Ok(out)
    }

    /// The live catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The engine's own session (used by [`handle`](Self::handle)).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Replaces the snapshot with one built from `sources` (the next call sees it).
    /// Whether the model-facing tool list changed, it is announced to
    /// [`subscribe_tool_changes`](Self::subscribe_tool_changes).
    pub fn reload(&self, sources: Vec<SourceTools>) -> Result<(), EngineError> {
        let dir = Directory::build(sources)?;
        check_clashes(&self.settings, &dir)?;
        if let Some(sem) = &self.semantic {
            // New and changed tools are embedded now; on failure the first search retries
            // and reports it.
            if let Err(e) = dir.vectors(sem) {
                tracing::warn!(error = %e, "embedding the reloaded catalog");
            }
        }
        let before = self.tools();
        self.catalog.replace(dir);
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
        controls::control_definitions(&self.settings, &self.catalog.snapshot())
    }

    /// Every tool the model sees: the controls, then the direct tools.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        let dir = self.catalog.snapshot();
        let mut out = controls::control_definitions(&self.settings, &dir);
        out.extend(dir.direct().iter().map(|d| ToolDefinition {
            name: d.def.name.clone(),
            description: d.def.description.clone(),
            input_schema: Value::Object(d.def.input_schema.clone()),
            output_schema: d.def.output_schema.clone().map(Value::Object),
        }));
        out
    }

    /// The generated instructions (none when nothing is grouped).
    pub fn instructions(&self) -> Option<String> {
        controls::instructions(&self.settings, &self.catalog.snapshot())
    }

    /// Answers a discovery control synchronously; `None` when `name` is not a discovery
    /// control of this surface (or nothing is grouped). Does not count usage.
    pub fn handle_control(&self, name: &str, arguments: &Value) -> Option<ControlOutput> {
        let dir = self.catalog.snapshot();
        if !dir.offers_controls() {
            return None;
        }
        let control = controls::control_for(&self.settings, name).filter(|c| !c.is_call())?;
        Some(controls::run_discovery(
            &dir,
            &self.settings,
            self.semantic.as_deref(),
            self.skills.as_deref(),
            control,
            arguments,
        ))
    }

    /// Answers any tool call the model makes, counted in the engine's own session.
    pub async fn handle(&self, name: &str, arguments: Value) -> CallResult {
        self.handle_in(&self.session, name, arguments).await
    }

    /// Answers any tool call the model makes, counted in `session`. Needs a Tokio runtime
    /// with timers (calls run under a timeout).
    pub async fn handle_in(
        &self,
        session: &Arc<Session>,
        name: &str,
        arguments: Value,
    ) -> CallResult {
        let span = tracing::info_span!("tool_call", tool = name);
        async {
            let started = Instant::now();
            let result = self.answer(session, name, arguments).await;
            tracing::info!(
                is_error = result.is_error,
                duration_us = started.elapsed().as_micros() as u64,
                "answered"
            );
            result
        }
        .instrument(span)
        .await
    }

    async fn answer(&self, session: &Arc<Session>, name: &str, arguments: Value) -> CallResult {
        let dir = self.catalog.snapshot();
        let control = controls::control_for(&self.settings, name).filter(|_| dir.offers_controls());
        let direct = || dir.direct().iter().find(|d| d.def.name == name);
        // On the capabilities surface a grouped tool is callable by its canonical name (the
        // per-turn tools of `turn_tools`).
        let by_canonical = || {
            (self.settings.surface == Surface::Capabilities && control.is_none())
                .then(|| dir.tool_by_canonical(name))
                .flatten()
        };
        let cost = match control {
            Some(c) if c.is_call() => 2,
            Some(_) => 1,
            None if direct().is_some() || by_canonical().is_some() => 1,
            None => return CallResult::from_error(&self.unknown_name(&dir, name)),
        };
        if let Err(used) = session.charge(cost, self.path.max_tool_calls) {
            let limit = self.path.max_tool_calls.unwrap_or_default();
            return CallResult::from_error(
                &ToolError::new(
                    "usage_limit",
                    format!("This run may make at most {limit} tool calls and has made {used}; this call ({cost} counted) was not run."),
                )
                .with("limit", limit)
                .with("used", used),
            );
        }
        if let Some(id) = by_canonical() {
            return match arguments {
                Value::Object(args) => self.dispatch_grouped(session, &dir, id, args).await,
                Value::Null => self.dispatch_grouped(session, &dir, id, Map::new()).await,
                _ => CallResult::from_error(&ToolError::invalid_request(
                    "",
                    format!("{name} takes a JSON object of arguments"),
                )),
            };
        }
        match control {
            Some(Control::Invoke) => match self.invoke_target(&dir, name, &arguments) {
                Ok((id, args)) => self.dispatch_grouped(session, &dir, id, args).await,
                Err(e) => CallResult::from_error(&e),
            },
            Some(c) if c.is_call() => match self.proxied_target(&dir, name, arguments) {
                Ok((id, _, args)) => self.dispatch_grouped(session, &dir, id, args).await,
                Err(e) => CallResult::from_error(&e),
            },
            Some(c) => {
                let out = match &self.semantic {
                    // Embedding the query is CPU work (or a blocking request): off the executor.
                    Some(sem) => {
                        let (sem, settings) = (sem.clone(), self.settings.clone());
                        let skills = self.skills.clone();
                        let job = tokio::task::spawn_blocking(move || {
                            controls::run_discovery(
                                &dir,
                                &settings,
                                Some(&sem),
                                skills.as_deref(),
                                c,
                                &arguments,
                            )
                        });
                        match job.await {
                            Ok(out) => out,
                            Err(e) => ToolError::new(
                                "search_unavailable",
                                format!("the search stopped: {e}"),
                            )
                            .into(),
                        }
                    }
                    None => controls::run_discovery(
                        &dir,
                        &self.settings,
                        None,
                        self.skills.as_deref(),
                        c,
                        &arguments,
                    ),
                };
                CallResult::text(out.json, out.is_error)
            }
            None => {
                let Some(d) = direct() else {
                    return CallResult::from_error(&self.unknown_name(&dir, name));
                };
                let args = match arguments {
                    Value::Object(m) => m,
                    Value::Null => Map::new(),
                    _ => {
                        return CallResult::from_error(&ToolError::invalid_request(
                            "",
                            format!("{name} takes a JSON object of arguments"),
                        ));
                    }
                };
                let target = Target {
                    group: None,
                    tool: &d.def.name,
                    source: &d.source,
                    schema: &d.def.input_schema,
                    validator: &d.validator,
                    executor: d.executor.as_ref(),
                };
                self.path.dispatch(session, target, args).await
            }
        }
    }

    async fn dispatch_grouped(
        &self,
        session: &Arc<Session>,
        dir: &Directory,
        id: u32,
        args: Map<String, Value>,
    ) -> CallResult {
        let entry = dir.tool(id);
        let group = &dir.group_of(id).name;
        let target = Target {
            group: Some(group),
            tool: &entry.name,
            source: &entry.source,
            schema: &entry.input_schema,
            validator: &entry.validator,
            executor: entry.executor.as_ref(),
        };
        self.path.dispatch(session, target, args).await
    }

    /// Checks an `invoke_tool` call: a known `toolId` (canonical name) and its arguments.
    fn invoke_target(
        &self,
        dir: &Directory,
        control: &str,
        arguments: &Value,
    ) -> Result<(u32, Map<String, Value>), ToolError> {
        let Value::Object(obj) = arguments else {
            return Err(ToolError::invalid_request(
                "",
                format!("{control} takes a JSON object: {{\"toolId\": ..., \"args\": {{...}}}}"),
            ));
        };
        let tool_id = args::req_str(obj, "toolId")?;
        let Some(id) = dir.tool_by_canonical(tool_id) else {
            return Err(ToolError::new(
                "unknown_tool",
                format!(
                    "There is no tool with toolId {tool_id:?}. Call {} to find tools and use a toolId it returns, exactly.",
                    self.settings.names.search_capabilities
                ),
            )
            .with("toolId", tool_id));
        };
        Ok((id, controls::capabilities::invoke_args(control, obj)?))
    }

    /// Checks a `call_tool` envelope: exactly `group`, `tool` and an `arguments` object.
    fn proxied_target(
        &self,
        dir: &Directory,
        control: &str,
        arguments: Value,
    ) -> Result<(u32, String, Map<String, Value>), ToolError> {
        const KEYS: [&str; 3] = ["group", "tool", "arguments"];
        let obj = args::object(control, &arguments, &KEYS)?;
        if let Some(missing) = KEYS.iter().find(|k| !obj.contains_key(**k)) {
            return Err(ToolError::invalid_request(
                &args::pointer(missing),
                format!("{control} takes exactly group, tool and arguments; {missing} is missing"),
            ));
        }
        let group = args::req_str(obj, "group")?.to_owned();
        let tool = args::req_str(obj, "tool")?;
        let id = controls::resolve(dir, &self.settings, &group, tool)?;
        let Value::Object(mut obj) = arguments else {
            unreachable!("checked to be an object above")
        };
        match obj.remove("arguments") {
            Some(Value::Object(m)) => Ok((id, group, m)),
            _ => Err(ToolError::invalid_request(
                "/arguments",
                "arguments must be a JSON object matching the tool's parameter schema (use {} for none)",
            )),
        }
    }

    fn unknown_name(&self, dir: &Directory, name: &str) -> ToolError {
        let mut names: Vec<String> = controls::control_definitions(&self.settings, dir)
            .into_iter()
            .map(|d| d.name)
            .collect();
        names.extend(dir.direct().iter().map(|d| d.def.name.clone()));
        ToolError::new(
            "unknown_tool",
            format!(
                "There is no tool named {name:?}. The tools are: {}.",
                names.join(", ")
            ),
        )
        .with("tool", name)
    }
}

fn check_clashes(settings: &Settings, dir: &Directory) -> Result<(), EngineError> {
    for (_, name) in settings.names.for_surface(settings.surface) {
        if dir.direct().iter().any(|d| d.def.name == name) {
            return Err(EngineError::NameClash(name.to_owned()));
        }
    }
    Ok(())
}
