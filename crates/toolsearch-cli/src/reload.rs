//! Re-reading the config of a running `serve`: on SIGHUP, and with `[reload] watch = true`
//! when the file's content changes (looked at every [`WATCH_EVERY`]). A valid config is applied
//! by the gateway (sources reconciled, sessions kept: `Gateway::reload`) and announced on
//! stderr; an invalid one, or one changing what only a restart applies, is refused with an
//! error line and the running config keeps serving.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::load_config;

/// How often a watched config file is looked at.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Reloads one gateway's config file.
#[derive(Debug, Clone)]
pub struct Reloader {
    gateway: Arc<Gateway>,
    path: PathBuf,
    /// `[reload] watch` of the config now serving.
    watching: Arc<AtomicBool>,
}

impl Reloader {
    /// A reloader of `path` for `gateway`, watching the file when `watch`.
    pub fn new(gateway: Arc<Gateway>, path: PathBuf, watch: bool) -> Self {
        Self {
            gateway,
            path,
            watching: Arc::new(AtomicBool::new(watch)),
        }
    }

    /// Re-reads the file and applies it, or refuses it; `why` says what asked (logs).
    pub async fn reload(&self, why: &str) {
        let file = self.path.display();
        let config = match load_config(&self.path) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(
                    trigger = why,
                    "config reload refused, the running config keeps serving: {e}"
                );
                return;
            }
        };
        let watch = config.watch;
        match self.gateway.reload(config).await {
            Ok(r) => {
                self.watching.store(watch, Ordering::Relaxed);
                let list = |names: &[String]| {
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                };
                eprintln!(
                    "toolsearch: config reloaded from {file} ({why}): added {}; removed {}; restarted {}; unchanged {}",
                    list(&r.added),
                    list(&r.removed),
                    list(&r.restarted),
                    list(&r.unchanged)
                );
                for problem in self.gateway.context_problems() {
                    tracing::warn!(source = %problem.at, "{}", problem.message);
                }
            }
            Err(e) => tracing::error!(
                trigger = why,
                "config reload of {file} refused, the running config keeps serving: {e}"
            ),
        }
    }

    /// Watches the file: a change of its content, while `[reload] watch` is on, reloads it.
    pub fn spawn_watch(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut seen = std::fs::read(&this.path).ok();
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                if !this.watching.load(Ordering::Relaxed) {
                    continue;
                }
                let now = std::fs::read(&this.path).ok();
                // A file being replaced may be missing for a moment: wait for it.
                if now.is_some() && now != seen {
                    seen = now;
                    this.reload("the file changed").await;
                }
            }
        })
    }
}
