//! The client side of one upstream connection, as the upstream sees the gateway: it offers the
//! client capabilities the gateway's own clients may have (elicitation, sampling unless the
//! source refuses it, roots), relays the upstream's requests to the client session whose call
//! caused them (never answering for the person), sends its progress on to the request that
//! asked, and reports its list changes, log messages and resource updates to the gateway.

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by SEP-2577 in rmcp,
// and still part of the protocol versions the gateway speaks.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientInfo, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode,
    Implementation, InputRequest, ListRootsRequest, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    ResourceUpdatedNotificationParam, ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, ServiceError};
use rmcp::{ClientHandler, ErrorData};
use serde_json::Value;
use tokio::sync::mpsc;

use super::UpstreamEvent;
use super::inflight::NoticeHandled;
use super::inflight::{Inflight, Unroutable};
use crate::downstream::Downstream;

/// The client side of one upstream connection.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    pub(super) name: String,
    pub(super) events: mpsc::UnboundedSender<UpstreamEvent>,
    pub(super) inflight: Arc<Inflight>,
    /// The source lets its upstream ask the client's model (`sampling`, default true).
    pub(super) sampling: bool,
    /// The version an `initialize` handshake offers.
    pub(super) initialize_version: ProtocolVersion,
}

/// What a client request of the upstream needs of the client.
#[derive(Debug, Clone, Copy)]
enum Need {
    Elicitation,
    Sampling,
    Roots,
}

impl Need {
    fn method(self) -> &'static str {
        match self {
            Need::Elicitation => "elicitation/create",
            Need::Sampling => "sampling/createMessage",
            Need::Roots => "roots/list",
        }
    }

    fn has(self, c: Option<&ClientCapabilities>) -> bool {
        c.is_some_and(|c| match self {
            Need::Elicitation => c.elicitation.is_some(),
            Need::Sampling => c.sampling.is_some(),
            Need::Roots => c.roots.is_some(),
        })
    }
}

impl UpstreamClient {
    /// The client request this upstream request goes to, or the error the upstream gets: the
    /// gateway answers no such request itself.
    fn target(&self, need: Need) -> Result<Arc<Downstream>, ErrorData> {
        if matches!(need, Need::Sampling) && !self.sampling {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "sampling is turned off for source {:?} in the gateway's config (sampling = false)",
                    self.name
                ),
                None,
            ));
        }
        let downstream = self.inflight.target().map_err(|why| {
            let message = match why {
                Unroutable::NoCall => format!(
                    "{} reached the toolsearch gateway while no client call was in progress on source {:?}, so there is no person to ask",
                    need.method(),
                    self.name
                ),
                Unroutable::Several(n) => format!(
                    "{} reached the toolsearch gateway while calls of {n} client sessions were in flight on the shared connection of source {:?}; which one it is for cannot be told (per_session = true on the source gives each session its own connection)",
                    need.method(),
                    self.name
                ),
            };
            ErrorData::new(ErrorCode::INVALID_REQUEST, message, None)
        })?;
        if !need.has(downstream.capabilities().as_ref()) {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "the client whose call caused this {} did not declare that it supports it",
                    need.method()
                ),
                None,
            ));
        }
        Ok(downstream)
    }

    /// Relays `request` to the client of `need`'s target and gives back its answer.
    async fn relay(&self, need: Need, request: ServerRequest) -> Result<ClientResult, ErrorData> {
        let downstream = self.target(need)?;
        downstream.relay(request).await.map_err(|e| match e {
            // The client's own error goes back as it is.
            ServiceError::McpError(e) => e,
            other => ErrorData::internal_error(
                format!("the client did not answer {}: {other}", need.method()),
                None,
            ),
        })
    }
}

impl UpstreamClient {
    /// The client's answer to one question of the upstream's `input_required` result (an
    /// upstream on protocol 2026-07-28 asks between requests), asked of the client whose call
    /// it is as a request sent mid-call would be.
    pub(super) async fn answer_input(&self, question: InputRequest) -> Result<Value, ErrorData> {
        let (need, request) = match question {
            InputRequest::Elicitation(r) => (Need::Elicitation, ServerRequest::ElicitRequest(r)),
            InputRequest::CreateMessage(r) => {
                (Need::Sampling, ServerRequest::CreateMessageRequest(r))
            }
            InputRequest::ListRoots(r) => (Need::Roots, ServerRequest::ListRootsRequest(r)),
            _ => {
                return Err(ErrorData::invalid_params(
                    "the gateway cannot ask a client this kind of input",
                    None,
                ));
            }
        };
        let answer = match (need, self.relay(need, request).await?) {
            (Need::Elicitation, ClientResult::ElicitResult(r)) => serde_json::to_value(r),
            (Need::Sampling, ClientResult::CreateMessageResult(r)) => serde_json::to_value(r),
            (Need::Roots, ClientResult::ListRootsResult(r)) => serde_json::to_value(r),
            _ => return Err(unexpected(need.method())),
        };
        answer.map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// An answer of the wrong kind from the client.
fn unexpected(method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the client answered {method} with a result of another kind"),
        None,
    )
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientInfo {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            serde_json::from_value(serde_json::json!({"form": {}, "url": {}})).ok();
        capabilities.sampling = self.sampling.then(Default::default);
        capabilities.roots = Some(Default::default());
        let mut info = ClientInfo::default();
        info.protocol_version = self.initialize_version.clone();
        info.capabilities = capabilities;
        let mut implementation = Implementation::from_build_env();
        implementation.name = "toolsearch".into();
        implementation.version = env!("CARGO_PKG_VERSION").into();
        info.client_info = implementation;
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(request));
        match self.relay(Need::Elicitation, request).await? {
            ClientResult::ElicitResult(r) => Ok(r),
            _ => Err(unexpected(Need::Elicitation.method())),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.relay(Need::Sampling, request).await? {
            ClientResult::CreateMessageResult(r) => Ok(*r),
            _ => Err(unexpected(Need::Sampling.method())),
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        match self.relay(Need::Roots, request).await? {
            ClientResult::ListRootsResult(r) => Ok(r),
            _ => Err(unexpected(Need::Roots.method())),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(downstream) = self.inflight.by_token(&params.progress_token) {
            downstream.progress(params).await;
        }
        self.inflight.notice_handled();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(UpstreamEvent::Log {
            source: self.name.clone(),
            sessions: self.inflight.sessions(),
            message: params,
            handled: NoticeHandled(self.inflight.clone()),
        });
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(UpstreamEvent::ResourceUpdated {
            source: self.name.clone(),
            uri: params.uri,
        });
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .events
            .send(UpstreamEvent::ToolsChanged(self.name.clone()));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .events
            .send(UpstreamEvent::ResourcesChanged(self.name.clone()));
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .events
            .send(UpstreamEvent::PromptsChanged(self.name.clone()));
    }
}
