//! Applying a new config to a running gateway, sources by name: a source whose config is
//! unchanged keeps its state (an upstream its connection and supervisor); a new one is loaded
//! or connected; a removed one is stopped; a changed one is stopped and started anew. Open
//! sessions go on: they see the new catalog on their next call, and `tools/list_changed` when
//! their tool list changed.
//!
//! Everything else in the config (surface, `[search]`, `[names]`, `[codeact]`, `[limits]`,
//! callers and policies, `[audit]`, `[telemetry]`, `skills`) is read at start: a reload that
//! changes any of it is refused as a whole, saying which, and the running config keeps
//! serving. So is one whose sources cannot be used (a catalog that does not load, tools whose
//! names clash): nothing of it is applied.

use std::sync::Arc;

use crate::config::Config;
use toolsearch::{EngineError, SourceTools};

use super::source::{Origin, SourceState};
use super::supervise::supervise;
use super::{Gateway, GatewayError};

/// What a reload changed, by source name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// New sources.
    pub added: Vec<String>,
    /// Sources no longer configured, stopped.
    pub removed: Vec<String>,
    /// Sources whose config changed: stopped and started anew.
    pub restarted: Vec<String>,
    /// Sources left as they were (an upstream keeps its connection).
    pub unchanged: Vec<String>,
}

/// Why a reload was refused (the running config keeps serving).
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// Sections that are read only at start changed.
    #[error("{} changed, which a reload cannot apply (restart the gateway for it)", .0.join(", "))]
    NeedsRestart(Vec<&'static str>),
    /// A source cannot be used.
    #[error(transparent)]
    Source(#[from] GatewayError),
    /// The sources together are not a valid catalog.
    #[error("the new sources are not a valid catalog: {0}")]
    Catalog(#[from] EngineError),
}

/// The sections of `new` that differ from `running` (both without their sources).
fn changed_sections(running: &Config, new: &Config) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if running.settings != new.settings {
        changed.push("surface, [search], [names] or [codeact]");
    }
    if running.call_timeout != new.call_timeout
        || running.max_tool_calls != new.max_tool_calls
        || running.max_http_sessions != new.max_http_sessions
        || running.http_session_idle != new.http_session_idle
    {
        changed.push("[limits]");
    }
    if running.skills != new.skills {
        changed.push("skills");
    }
    if running.access != new.access {
        changed.push("[[client]], [auth], [[policy]], [approval], [limits] rate or [audit]");
    }
    if running.telemetry != new.telemetry {
        changed.push("[telemetry]");
    }
    changed
}

impl Gateway {
    /// Applies `config`: reconciles the sources (see the module's documentation) or refuses it
    /// as a whole.
    pub async fn reload(self: &Arc<Self>, config: Config) -> Result<Reloaded, ReloadError> {
        let _one_at_a_time = self.reloading.lock().await;
        let mut rest = config;
        let wanted = std::mem::take(&mut rest.sources);
        let changed = changed_sections(&self.running.lock(), &rest);
        if !changed.is_empty() {
            return Err(ReloadError::NeedsRestart(changed));
        }

        // A new state for every new or changed source (loaded or created, not started yet).
        let current: Vec<_> = self
            .states
            .lock()
            .iter()
            .map(|s| s.config.clone())
            .collect();
        let mut report = Reloaded::default();
        let mut fresh: Vec<Option<SourceState>> = Vec::with_capacity(wanted.len());
        for sc in &wanted {
            let list = match current.iter().find(|c| c.name == sc.name) {
                Some(c) if c == sc => {
                    report.unchanged.push(sc.name.clone());
                    fresh.push(None);
                    continue;
                }
                Some(_) => &mut report.restarted,
                None => &mut report.added,
            };
            list.push(sc.name.clone());
            fresh.push(Some(SourceState::new(
                sc.clone(),
                &self.events,
                &self.stop,
            )?));
        }
        report.removed = current
            .iter()
            .filter(|c| !wanted.iter().any(|w| w.name == c.name))
            .map(|c| c.name.clone())
            .collect();

        // Swap in the new list (config order; each source its kept or fresh state) once the
        // catalog it makes is known to be valid: nothing is started or stopped before.
        let (stopped, started) = {
            let mut states = self.states.lock();
            let mut old: Vec<SourceState> = std::mem::take(&mut *states);
            let mut next = Vec::with_capacity(wanted.len());
            let mut kept = Vec::new();
            for state in fresh {
                match state {
                    Some(s) => next.push(s),
                    None => {
                        // Reloads are serialized, so the unchanged source is still there.
                        let name = &report.unchanged[kept.len()];
                        if let Some(i) = old.iter().position(|s| &s.config.name == name) {
                            kept.push(next.len());
                            next.push(old.remove(i));
                        }
                    }
                }
            }
            let sources: Vec<SourceTools> = next.iter().flat_map(SourceState::sources).collect();
            if let Err(e) = self.engine.check(sources) {
                // Put the kept states back where they were; the fresh ones were never started.
                for i in kept.into_iter().rev() {
                    old.push(next.swap_remove(i));
                }
                old.sort_by_key(|s| current.iter().position(|c| c.name == s.config.name));
                *states = old;
                return Err(ReloadError::Catalog(e));
            }
            let started: Vec<_> = next
                .iter()
                .enumerate()
                .filter(|(i, _)| !kept.contains(i))
                .filter_map(|(_, s)| s.supervised())
                .collect();
            *states = next;
            (old, started)
        };
        let connecting = started.len();
        if connecting > 0 {
            self.settling.send_modify(|n| *n += connecting);
        }
        for (name, upstream, stop) in started {
            self.metrics.track_source(&name);
            tokio::spawn(supervise(Arc::downgrade(self), name, upstream, stop));
        }
        if let Err(e) = self.rebuild() {
            // Checked above; a source's own change since then (a re-listing) could still clash.
            tracing::error!(error = %e, "the reloaded catalog was rejected; keeping the previous snapshot");
        }
        for s in stopped {
            s.stop.cancel();
            if s.connecting {
                self.settling.send_modify(|n| *n = n.saturating_sub(1));
            }
            if let Origin::Upstream { upstream, .. } = s.origin {
                tokio::spawn(async move { upstream.disconnect().await });
            }
        }
        // Resources and prompts of upstreams that came or went.
        self.resources_changed.send_modify(|v| *v += 1);
        self.prompts_changed.send_modify(|v| *v += 1);
        Ok(report)
    }
}
