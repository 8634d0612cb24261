//! Per-session connections: a source with `per_session = true`, and an HTTP upstream with
//! `context_headers`, get one connection per downstream session (the latter carrying that
//! session's values; the shared connection, used for listing, sends none of them). What such a
//! connection's upstream asks of a client goes to its own session.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::SourceKind;
use toolsearch::{ExecError, Session};

use super::Upstream;

/// The first wait before a session's own connection that failed (or closed) is tried again;
/// it doubles up to [`SESSION_RETRY_MAX`] while the upstream stays unreachable.
const SESSION_RETRY: Duration = Duration::from_millis(250);
/// The longest wait between two tries of a session's own connection.
const SESSION_RETRY_MAX: Duration = Duration::from_secs(2);

/// One session's own connection to an upstream, made on first use and made again when it
/// failed or closed: an upstream that was down when a session first called it, or that
/// restarted, is reached again by the session's next call after a short wait.
#[derive(Debug, Default)]
struct SessionUpstream(tokio::sync::Mutex<SessionSlot>);

#[derive(Debug, Default)]
struct SessionSlot {
    /// The connection, once made (it may have closed since).
    upstream: Option<Arc<Upstream>>,
    /// The last failure: when, why, and how long to wait from it before trying again.
    failed: Option<(Instant, String, Duration)>,
}

impl Upstream {
    /// The context headers of an HTTP upstream (header name → context path), when it has any.
    pub(super) fn context_headers(&self) -> Option<&BTreeMap<String, String>> {
        match &self.kind {
            SourceKind::Http {
                context_headers, ..
            } if !context_headers.is_empty() => Some(context_headers),
            _ => None,
        }
    }

    /// Whether each session gets its own connection: the source says `per_session = true`,
    /// or its context headers carry values of the session.
    pub(super) fn per_session(&self) -> bool {
        self.options.per_session || self.context_headers().is_some()
    }

    /// This session's own connection (its context headers resolved), made on first use; the
    /// shared connection itself when sessions share one (see [`Self::per_session`]).
    pub(crate) async fn for_session(
        self: &Arc<Self>,
        session: &Arc<Session>,
    ) -> Result<Arc<Upstream>, ExecError> {
        if !self.per_session() {
            return Ok(self.clone());
        }
        let context_headers = self.context_headers();
        let key = format!("toolsearch-mcp/upstream/{}", self.name);
        let Some(slot) = session.state_or_insert_with(&key, SessionUpstream::default) else {
            return Err(ExecError::Unavailable("session state is corrupt".into()));
        };
        let mut slot = slot.0.lock().await;
        if let Some(own) = &slot.upstream
            && own.is_connected().await
        {
            return Ok(own.clone());
        }
        let wait = match &slot.failed {
            Some((at, why, wait)) if at.elapsed() < *wait => {
                return Err(ExecError::Unavailable(why.clone()));
            }
            Some((_, _, wait)) => (*wait * 2).min(SESSION_RETRY_MAX),
            None => SESSION_RETRY,
        };
        let mut values = BTreeMap::new();
        for (header, path) in context_headers.into_iter().flatten() {
            let Some(value) = session.context(path) else {
                return Err(ExecError::Unavailable(format!(
                    "this session has no {path:?}, which source {} needs for its {header} header; its upstream connection was not opened",
                    self.name
                )));
            };
            values.insert(header.clone(), value.to_owned());
        }
        let own = slot.upstream.clone().unwrap_or_else(|| {
            Arc::new(
                Upstream::new(&self.name, self.kind.clone(), self.events.clone())
                    .with_options(self.options)
                    .with_session_headers(values),
            )
        });
        match own.connect().await {
            Ok(_) => {
                // The log level this session asked for before its connection opened.
                let level = crate::downstream::current().and_then(|d| d.session().level());
                if let Some(level) = level {
                    own.set_log_level(level).await;
                }
                slot.upstream = Some(own.clone());
                slot.failed = None;
                Ok(own)
            }
            Err(e) => {
                let why = format!("this session's connection to {} failed: {e}", self.name);
                tracing::debug!(source = %self.name, retry_in = ?wait, "a session's own upstream connection failed");
                slot.upstream = Some(own);
                slot.failed = Some((Instant::now(), why.clone(), wait));
                Err(ExecError::Unavailable(why))
            }
        }
    }
}
