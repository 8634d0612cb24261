//! Calls in a vendor's format: the search tool answers from the same index, method and caller
//! policy as the discovery controls; a deferred tool called by its exported name, or a direct
//! tool, runs on the one call path (validation, hooks, approval, limits).

use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::Engine;
use super::answer::Answer;
use super::deferred::Via;
use super::resolve::{Caller, Names, Reached};
use super::route::Called;
use crate::catalog::View;
use crate::controls::{ControlOutput, Searched};
use crate::error::ToolError;
use crate::exec::Session;
use crate::outcome::Outcome;
use crate::search::{Query, Searcher};
use crate::vendor::{self, ExportError, Format, SEARCH_TOOL, SearchRequest};

/// A vendor-format answer: the JSON the model receives, and whether it reports an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct VendorReply {
    /// Anthropic: the `content` of a `tool_result`. OpenAI: a `tool_search_output` or
    /// `function_call_output` item (a malformed search request: the error object).
    pub value: Value,
    /// The call failed or the tool reported an error.
    pub is_error: bool,
    /// The model-facing error object (`{"isError", "error", "message", ...}`) when the call
    /// did not run or did not finish; `None` when it answered (a tool's own error result
    /// included).
    pub error: Option<Value>,
    /// How the call ended.
    pub outcome: Outcome,
}

impl VendorReply {
    pub(super) fn answered(value: Value, outcome: Outcome) -> Self {
        Self {
            value,
            is_error: outcome.is_error(),
            error: None,
            outcome,
        }
    }

    pub(super) fn failed(value: Value, error: &ToolError) -> Self {
        Self {
            value,
            is_error: true,
            error: Some(error.to_value()),
            outcome: Outcome::Error(error.code),
        }
    }
}

impl Engine {
    /// The tools array for `format`, as the engine's own session sees the catalog.
    pub fn export(&self, format: Format) -> Result<Vec<Value>, ExportError> {
        self.export_for(&self.session, format)
    }

    /// The tools array for `format`, as the caller of `session` sees the catalog: its hidden
    /// tools are left out.
    pub fn export_for(&self, session: &Session, format: Format) -> Result<Vec<Value>, ExportError> {
        let snap = self.snapshot();
        let visible = self.visibility(&snap, session);
        vendor::export(
            format,
            View::new(snap.directory(), visible.as_deref()),
            &self.settings,
        )
    }

    /// A call the model made in `format`, counted in the engine's own session.
    pub async fn handle_vendor(&self, format: Format, name: &str, arguments: Value) -> VendorReply {
        self.handle_vendor_in(&self.session, format, name, arguments)
            .await
    }

    /// A call the model made in `format`, counted in `session`: the search tool
    /// ([`SEARCH_TOOL`]) or a tool by its exported name. Anthropic arguments are the
    /// `tool_use` input; OpenAI's are `{"call_id", "arguments"}` (arguments an object or its
    /// JSON text).
    pub async fn handle_vendor_in(
        &self,
        session: &Arc<Session>,
        format: Format,
        name: &str,
        arguments: Value,
    ) -> VendorReply {
        self.vendor_traced(session, format, name, arguments, Caller::Model)
            .await
    }

    /// A call the vendor's code execution made for the model's program (Anthropic: a
    /// `tool_use` whose `caller` is a code-execution tool; OpenAI: a `function_call` whose
    /// `caller` is `{"type": "program"}`), counted in `session`. As for a CodeAct program's
    /// calls, only a tool whose source lets programs call it runs; any other answers
    /// `codeact_denied` and nothing runs.
    pub async fn handle_vendor_program_in(
        &self,
        session: &Arc<Session>,
        format: Format,
        name: &str,
        arguments: Value,
    ) -> VendorReply {
        self.vendor_traced(session, format, name, arguments, Caller::Code)
            .await
    }

    async fn vendor_traced(
        &self,
        session: &Arc<Session>,
        format: Format,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> VendorReply {
        let span = tracing::info_span!("tool_call", tool = name, format = format.as_str());
        async {
            let reply = self
                .vendor_call(session, format, name, arguments, caller)
                .await;
            tracing::info!(is_error = reply.is_error, "answered");
            reply
        }
        .instrument(span)
        .await
    }

    async fn vendor_call(
        &self,
        session: &Arc<Session>,
        format: Format,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> VendorReply {
        // A tool's arguments arrive in the format's own wrapping: unwrapped first (a malformed
        // wrapping is answered before anything is charged or recorded).
        let (call_id, arguments) = if name == SEARCH_TOOL {
            (None, arguments)
        } else {
            match format {
                // The `tool_use` input: an object (or none).
                Format::Anthropic if arguments.is_object() || arguments.is_null() => {
                    (None, arguments)
                }
                Format::Anthropic => {
                    let e = ToolError::invalid_request(
                        "",
                        format!("{name} takes a JSON object of arguments"),
                    );
                    return VendorReply::failed(vendor::error_reply(format, &e, None), &e);
                }
                Format::Openai => match vendor::openai_call(&arguments) {
                    Ok((call_id, args)) => (call_id, Value::Object(args)),
                    Err(e) => {
                        return VendorReply::failed(vendor::error_reply(format, &e, None), &e);
                    }
                },
            }
        };
        let answer = if name == SEARCH_TOOL {
            let reached = self.records().then(|| Reached::control(name));
            let req = SearchRequest::parse(format, &arguments, self.settings.max_results);
            let answer = self.vendor_search(session, format, req);
            self.recorded(session, name, reached, answer, Via::Vendor(format, None))
                .await
        } else {
            let snap = self.snapshot();
            let visible = self.visibility(&snap, session);
            let view = View::new(snap.directory(), visible.as_deref());
            let route = self.resolve(&snap, view, Names::Vendor, caller, name, arguments);
            let reached = self.tracks().then(|| Reached::of(&snap, &route, name));
            let called = Called {
                names: Names::Vendor,
                caller,
                name,
            };
            let answer = self.answer(session, &snap, visible, called, route);
            let via = Via::Vendor(format, call_id.clone());
            self.recorded(session, name, reached, answer, via).await
        };
        let call_id = call_id.as_deref();
        match answer {
            Answer::Error(e) => match (name == SEARCH_TOOL, format) {
                (true, Format::Openai) => VendorReply::failed(e.to_value(), &e),
                _ => VendorReply::failed(vendor::error_reply(format, &e, call_id), &e),
            },
            Answer::Control(out) => VendorReply::answered(out.value(), out.outcome),
            // An external tool: nothing for the model yet; the host reads the outcome.
            answer @ (Answer::Opened(_) | Answer::Deferred(_)) => {
                VendorReply::answered(answer.deferred_json(), answer.outcome())
            }
            answer => {
                let outcome = answer.outcome();
                let result = answer.into_call_result();
                VendorReply::answered(vendor::call_reply(format, &result, call_id), outcome)
            }
        }
    }

    /// The search tool: one call charged, the configured method over what the caller sees.
    async fn vendor_search(
        &self,
        session: &Arc<Session>,
        format: Format,
        req: Result<SearchRequest, ToolError>,
    ) -> Answer {
        if let Err(e) = self.charge(session, 1) {
            return Answer::Error(e);
        }
        let req = match req {
            Ok(r) => r,
            Err(e) => return Answer::Error(e),
        };
        let snap = self.snapshot();
        let visible = self.visibility(&snap, session);
        let learned = self.learned_field(&snap, session);
        let settings = self.settings.clone();
        let semantic = self.semantic.clone();
        let run = move || -> Result<ControlOutput, ToolError> {
            let dir = snap.directory();
            let view = View::new(dir, visible.as_deref());
            let ranking = Searcher::new(dir, snap.index(), &settings, semantic.as_deref())
                .with_learned(learned.as_deref())
                .rank(
                    &Query::new(&req.query, settings.method, req.limit)
                        .visible_to(visible.as_deref()),
                )
                .map_err(|e| ToolError::search_unavailable(e.to_string()))?;
            let hits: Vec<u32> = ranking
                .hits
                .iter()
                .map(|h| h.tool)
                .take(req.limit)
                .collect();
            let value = vendor::search_reply(format, view, &req, &hits);
            let mut out = ControlOutput::ok(value.to_string());
            out.searched = Some(Searched {
                method: settings.method,
                found: !hits.is_empty(),
                query: req.query.clone(),
                listed: hits
                    .iter()
                    .map(|&id| dir.tool(id).canonical.clone())
                    .collect(),
            });
            Ok(out)
        };
        let out = if self.semantic.is_some() {
            // Embedding the query is CPU work (or a blocking request): off the executor.
            match tokio::task::spawn_blocking(run).await {
                Ok(out) => out,
                Err(e) => Err(ToolError::search_unavailable(format!(
                    "the search stopped: {e}"
                ))),
            }
        } else {
            run()
        };
        match out {
            Ok(out) => Answer::Control(out),
            Err(e) => Answer::Error(e),
        }
    }
}
