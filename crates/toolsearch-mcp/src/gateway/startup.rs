//! Waiting for sources still connecting: a request the instant `initialize` returns waits, for
//! at most `[limits] startup_wait_ms`, for the sources it may reach, so it finds their tools,
//! resources and prompts rather than an answer made before they arrived.

use serde_json::Value;

use super::Gateway;

impl Gateway {
    /// Waits until no source is still connecting (each has connected or failed once).
    pub async fn settled(&self) {
        let mut rx = self.settling.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Waits until no source that a call of `tool` with `arguments` may reach is still
    /// connecting, for at most `[limits] startup_wait_ms`; returns at once when none is. The
    /// scope is the group the arguments name (`group` of a discovery, `describe_tool` or
    /// `call_tool`), else every source — except a direct tool that is already listed, which
    /// needs no other source. A source that fails to connect ends the wait as well: the answer
    /// then says it is unavailable and why.
    pub async fn await_startup(&self, tool: &str, arguments: &Value) {
        if *self.settling.borrow() == 0 {
            return;
        }
        let group = arguments.get("group").and_then(Value::as_str);
        let listed_direct = || {
            self.engine
                .snapshot()
                .directory()
                .direct()
                .iter()
                .any(|d| d.def.name == tool)
        };
        if group.is_none() && listed_direct() {
            return;
        }
        self.await_connecting(group, tool).await;
    }

    /// Waits until no source is still connecting, for at most `[limits] startup_wait_ms`: what
    /// a request for upstreams' resources, prompts or completions does first, as a tool call
    /// does, so that a client asking the instant `initialize` returns finds them.
    pub async fn await_sources(&self) {
        if *self.settling.borrow() == 0 {
            return;
        }
        self.await_connecting(None, "").await;
    }

    /// Waits until no source of `group` (every source: `None`) is still connecting, for at most
    /// the startup wait; `what` names the request in the log.
    async fn await_connecting(&self, group: Option<&str>, what: &str) {
        let mut settled = self.settling.subscribe();
        let all_in = async {
            while self.connecting_in(group) {
                if settled.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(self.startup_wait, all_in)
            .await
            .is_err()
        {
            tracing::debug!(
                what,
                waited_ms = self.startup_wait.as_millis() as u64,
                "answering while sources are still connecting"
            );
        }
    }

    /// Whether a source of `group` (any source, without one) is still connecting.
    fn connecting_in(&self, group: Option<&str>) -> bool {
        self.states.lock().iter().any(|s| {
            s.connecting
                && group.is_none_or(|g| s.config.group.as_ref().is_some_and(|(name, _)| name == g))
        })
    }
}
