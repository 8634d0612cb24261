//! The MCP server face: one downstream session sees the configured surface's controls and the
//! direct tools, with the generated instructions, and every call goes through the engine.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::Value;
use toolsearch::dispatch::Session;

use crate::Gateway;
use crate::convert;

/// One downstream session's server.
#[derive(Debug, Clone)]
pub struct GatewayServer {
    gateway: Arc<Gateway>,
    session: Arc<Session>,
}

impl GatewayServer {
    /// A server for a new downstream session.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        Self {
            gateway,
            session: Arc::new(Session::new()),
        }
    }
}

impl ServerHandler for GatewayServer {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = InitializeResult::new(capabilities);
        let mut implementation = Implementation::from_build_env();
        implementation.name = "toolsearch".into();
        implementation.version = env!("CARGO_PKG_VERSION").into();
        info.server_info = implementation;
        match self.gateway.engine().instructions() {
            Some(text) => info.with_instructions(text),
            None => info,
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Tell this client whenever the tools it sees change (direct tools, controls appearing).
        let mut changes = self.gateway.engine().subscribe_tool_changes();
        let peer = context.peer;
        tokio::spawn(async move {
            changes.mark_unchanged();
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Clients on protocol 2026-07-28 (stateless HTTP among them) hear about tool-list
        // changes only through `subscriptions/listen`; the SDK intersects this with the request.
        let _ = requested;
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.gateway.engine().subscribe_tool_changes();
        changes.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The engine is gone: end the subscription gracefully.
                        return Ok(());
                    }
                    if context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult {
            tools: self
                .gateway
                .engine()
                .tools()
                .into_iter()
                .map(convert::mcp_tool)
                .collect(),
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let result = self
            .gateway
            .engine()
            .handle_in(&self.session, &request.name, arguments)
            .await;
        Ok(CallToolResponse::Complete(convert::mcp_result(&result)))
    }
}
