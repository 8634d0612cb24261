//! Calls on an upstream, as the engine's [`Executor`]: each session's own connection when the
//! upstream has context headers, a stdio upstream's calls on its call lane, rmcp's errors
//! mapped to what the model is told, and a call
//! abandoned before its answer (a timeout, a cancel) marks the upstream for a health ping.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, RequestParamsMeta};
use serde_json::{Map, Value};
use toolsearch::{BoxFuture, CallResult, ExecError, Executor, Session};
use tracing::Instrument;

use super::Upstream;
use super::cause::{describe, is_unreachable, root_cause};
use crate::convert;

/// Marks its upstream [suspect](Upstream::suspect) when dropped before it is forgotten.
struct AbandonGuard<'a>(Option<&'a Arc<Upstream>>);

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if let Some(u) = self.0.take() {
            tracing::debug!(upstream = %u.name, "call abandoned before its answer");
            u.suspect();
        }
    }
}

/// The answer to a call of an OAuth source that needs a login.
fn needs_login(upstream: &Upstream, why: &str) -> ExecError {
    ExecError::NeedsLogin {
        upstream: upstream.name.clone(),
        message: why.to_owned(),
        hint: super::oauth::login_hint(&upstream.name),
    }
}

/// Whether the server refused the call for want of scope (HTTP 403 `insufficient_scope`).
fn is_insufficient_scope(e: &rmcp::ServiceError) -> bool {
    // The base only resolves a relative `resource_metadata`, which is not looked at here.
    let (Some(challenge), Ok(base)) = (e.auth_challenge(), url::Url::parse("http://localhost/"))
    else {
        return false;
    };
    rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &base).is_insufficient_scope()
}

/// Runs calls on an upstream.
#[derive(Debug, Clone)]
pub struct UpstreamExecutor(pub Arc<Upstream>);

impl UpstreamExecutor {
    /// One call of `tool` on `upstream`'s live connection.
    async fn call_on(
        upstream: Arc<Upstream>,
        tool: String,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, ExecError> {
        if upstream.needs_login() {
            return Err(needs_login(&upstream, "it has no token it accepts"));
        }
        let Some(caller) = upstream.caller().await else {
            return Err(ExecError::Unavailable(format!(
                "upstream {} is not connected (it is still connecting, or restarting)",
                upstream.name
            )));
        };
        let span = tracing::info_span!(
            "upstream tools/call",
            otel.kind = "client",
            upstream = %upstream.name,
            tool = %tool
        );
        let answer = async {
            // The trace goes on to the upstream, under this span.
            let mut params = CallToolRequestParams::new(tool).with_arguments(arguments);
            if let Some(tp) = crate::trace_context::outgoing() {
                params.set_traceparent(&tp);
            }
            // While it runs, the upstream's requests go to the client request it serves, and
            // so does its progress when that request asked for progress.
            let inflight = crate::downstream::current().map(|d| {
                let wants_progress = d.wants_progress();
                (upstream.inflight.enter(d), wants_progress)
            });
            // Dropped unanswered (the call timed out or was cancelled): the supervisor pings.
            let mut guard = AbandonGuard(Some(&upstream));
            let answer = caller.call_tool(params, inflight.as_ref()).await;
            guard.0 = None;
            answer
        }
        .instrument(span)
        .await;
        match answer {
            Ok(result) => Ok(convert::call_result(result)),
            Err(e) if upstream.takes_login() && is_insufficient_scope(&e) => {
                // The token works, but not for this: the server names the scope it wants.
                // The next login asks for it; the source stays up for what the token allows.
                let challenge = e.auth_challenge().unwrap_or_default().to_owned();
                if let Some(file) = upstream.token_file()
                    && let Ok(mut saved) = file.read()
                {
                    saved.step_up = Some(challenge.clone());
                    if let Err(e) = file.write(&saved) {
                        tracing::warn!(upstream = %upstream.name, error = %e, "could not keep the scope the server asked for");
                    }
                }
                Err(needs_login(
                    &upstream,
                    &format!("the server wants more scope for this call ({challenge})"),
                ))
            }
            Err(e)
                if upstream.takes_login()
                    && (e.is_authorization_required() || e.auth_challenge().is_some()) =>
            {
                // The token was refused and refreshing it did not help: the connection is
                // let go, and the source stays down as needing a login until it has one.
                upstream
                    .needs_login
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                let gone = upstream.clone();
                tokio::spawn(async move { gone.disconnect().await });
                Err(needs_login(&upstream, &describe(&e)))
            }
            Err(e) if e.is_authorization_required() || e.auth_challenge().is_some() => {
                Err(ExecError::Unauthorized {
                    upstream: upstream.name.clone(),
                    message: describe(&e),
                })
            }
            Err(e) if is_unreachable(&e) => Err(ExecError::Unavailable(format!(
                "upstream {} cannot be reached: {}",
                upstream.name,
                root_cause(&e)
            ))),
            Err(e) => Err(ExecError::Failed(format!(
                "upstream {} failed: {}",
                upstream.name,
                describe(&e)
            ))),
        }
    }
}

impl Executor for UpstreamExecutor {
    fn call_in(
        &self,
        session: &Arc<Session>,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>> {
        let upstream = self.0.clone();
        let tool = tool.to_owned();
        if !upstream.per_session() {
            // One connection for every session: called directly, one future on the heap.
            return Box::pin(Self::call_on(upstream, tool, arguments));
        }
        let session = session.clone();
        Box::pin(async move {
            let upstream = upstream.for_session(&session).await?;
            Self::call_on(upstream, tool, arguments).await
        })
    }

    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>> {
        Box::pin(Self::call_on(self.0.clone(), tool.to_owned(), arguments))
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        self.0.options.call_timeout
    }
}
