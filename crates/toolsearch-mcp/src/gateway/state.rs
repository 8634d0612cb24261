//! How a source's state changes — re-listed, (re)connected, down — and the snapshot swapped in
//! after each change.

use toolsearch::{EngineError, SourceTools, ToolDef};

use super::Gateway;
use super::source::{Origin, SourceState};

impl Gateway {
    /// Applies `change` to one source's state, then swaps in a new snapshot.
    pub(super) fn update(&self, name: &str, change: impl FnOnce(&mut SourceState)) {
        {
            let mut states = self.states.lock();
            let Some(state) = states.iter_mut().find(|s| s.config.name == name) else {
                return;
            };
            change(state);
        }
        if let Err(e) = self.rebuild() {
            tracing::error!(source = %name, error = %e, "new tool list rejected; keeping the previous snapshot");
        }
    }

    /// Swaps in a snapshot of every source as it stands.
    pub(super) fn rebuild(&self) -> Result<(), EngineError> {
        let all: Vec<SourceTools> = self
            .states
            .lock()
            .iter()
            .flat_map(SourceState::sources)
            .collect();
        self.engine.reload(all)
    }

    /// A re-listing of a connected upstream's tools.
    pub(super) fn set_tools(&self, name: &str, new_tools: Vec<ToolDef>) {
        self.update(name, |s| {
            if let Origin::Upstream { tools, .. } = &mut s.origin {
                *tools = new_tools;
            }
            s.status = Ok(());
        });
    }

    /// An upstream (re)connected, with its tools.
    pub(super) fn set_connected(&self, name: &str, new_tools: Vec<ToolDef>) {
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

    pub(super) fn set_down(&self, name: &str, reason: String) {
        let already = self.states.lock().iter().any(|s| {
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
}
