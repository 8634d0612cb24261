//! The MCP server face: one downstream session sees the configured surface's controls and the
//! direct tools, with the generated instructions, and every call goes through the engine. The
//! upstreams' resources, resource templates and prompts pass through ([`crate::passthrough`]).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, in the protocols we speak
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, RequestParamsMeta,
    ServerCapabilities, SubscriptionFilter,
};
use rmcp::model::{
    ClientNotification, ClientRequest, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParam, ServerNotification, ServerResult,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, Service, SubscriptionContext,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use toolsearch::Session;
use tracing::Instrument;

use crate::auth::CallerIdentity;
use crate::convert;
use crate::downstream::SessionLink;
use crate::gateway::Follower;
use crate::metrics::SessionGuard;
use crate::passthrough::Following;
use crate::{Gateway, passthrough, trace_context, wire_fields};

mod call;

/// The MCP methods rmcp parses into typed requests: one that arrives as a custom request failed
/// to parse, so its params are invalid (JSON-RPC -32602), not its method unknown (-32601).
const KNOWN_METHODS: [&str; 21] = [
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// The session of one downstream session, made on its first request: with the caller's
/// identity as its trusted context when the HTTP front authenticated one.
#[derive(Debug)]
struct Bound {
    caller: Option<String>,
    session: Arc<Session>,
}

/// One downstream session's server: its MCP handler, whose `tools/list` answers get back
/// the members of upstream tools that rmcp's `Tool` has no field for (`execution`, ...).
#[derive(Debug, Clone)]
pub struct GatewayServer(Handler);

impl GatewayServer {
    /// A server for a new downstream session.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        Self(Handler::new(gateway))
    }

    /// A `tools/list` answer with its tools' unmodelled members put back (rmcp's answer, as it
    /// shaped it for the client's protocol, when no tool has any).
    fn faithful_listing(&self, answer: ServerResult) -> ServerResult {
        let ServerResult::ListToolsResult(list) = &answer else {
            return answer;
        };
        let members = self.0.gateway.unmodelled_members();
        if members.is_empty() {
            return answer;
        }
        let Ok(mut listing) = serde_json::to_value(list) else {
            return answer;
        };
        if !wire_fields::restore(&mut listing, |name| members.get(name).cloned()) {
            return answer;
        }
        ServerResult::CustomResult(CustomResult(listing))
    }
}

impl Service<RoleServer> for GatewayServer {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        if !matches!(request, ClientRequest::ListToolsRequest(_)) {
            return self.0.handle_request(request, context).await;
        }
        let answer = self.0.handle_request(request, context).await?;
        Ok(self.faithful_listing(answer))
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.0.handle_notification(notification, context).await
    }

    fn get_info(&self) -> InitializeResult {
        Service::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::supported_protocol_versions(&self.0)
    }
}

/// One downstream session's MCP handler (see [`GatewayServer`]).
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    gateway: Arc<Gateway>,
    bound: Arc<OnceLock<Bound>>,
    /// Cancelled when the last clone of this server is dropped (its session has ended), which
    /// ends the session's notification task: without it every closed session left one behind.
    ended: CancellationToken,
    _alive: Arc<DropGuard>,
    /// Counts the session in `toolsearch_sessions` from its `initialized` notification (or its
    /// first request, without one) until its last clone is dropped.
    counted: Arc<OnceLock<SessionGuard>>,
    /// The session as upstream notices reach it (its peer, its log level), made on its first
    /// request.
    link: Arc<OnceLock<Arc<SessionLink>>>,
}

impl Handler {
    /// A handler for a new downstream session.
    pub(crate) fn new(gateway: Arc<Gateway>) -> Self {
        let ended = CancellationToken::new();
        Self {
            gateway,
            bound: Arc::new(OnceLock::new()),
            _alive: Arc::new(ended.clone().drop_guard()),
            ended,
            counted: Arc::new(OnceLock::new()),
            link: Arc::new(OnceLock::new()),
        }
    }

    /// This session's link, made (and made known to the gateway) on first use.
    fn link(&self, peer: &Peer<RoleServer>) -> Arc<SessionLink> {
        self.link
            .get_or_init(|| {
                let link = Arc::new(SessionLink::new(peer.clone()));
                self.gateway.add_client(&link);
                link
            })
            .clone()
    }

    /// Counts this session as open (once).
    fn count(&self) {
        self.counted
            .get_or_init(|| self.gateway.metrics().session());
    }
}

/// The authenticated caller of a request (its identity's key), when the HTTP front named one.
fn caller_key(context: &RequestContext<RoleServer>) -> Option<&str> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<CallerIdentity>())
        .map(|i| i.key.as_str())
}

impl Handler {
    /// This session's [`Session`]: made on the first request with the caller's identity (an
    /// HTTP request authenticated by the front carries one in its extensions); a later request
    /// by another caller is refused, so one caller's session never serves another.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Session>, McpError> {
        let identity = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<CallerIdentity>());
        let bound = self.bound.get_or_init(|| Bound {
            caller: identity.map(|i| i.key.clone()),
            session: Arc::new(match identity {
                Some(i) => Session::with_context(i.context.clone()),
                None => Session::new(),
            }),
        });
        self.count();
        if bound.caller.as_deref() != identity.map(|i| i.key.as_str()) {
            return Err(McpError::invalid_request(
                "this session belongs to another caller; open your own",
                None,
            ));
        }
        Ok(bound.session.clone())
    }

    /// Runs one `subscriptions/listen` stream: the list changes it asked for, and the updates
    /// of the resources it named, until the client ends it or the gateway stops.
    async fn stream_changes(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut tools = self.gateway.engine().subscribe_tool_changes();
        let mut resources = self.gateway.subscribe_resource_changes();
        let mut prompts = self.gateway.subscribe_prompt_changes();
        tools.mark_unchanged();
        resources.mark_unchanged();
        prompts.mark_unchanged();
        let sink = context.sink();
        let accepted = sink.accepted();
        let wants_tools = accepted.tools_list_changed == Some(true);
        let wants_resources = accepted.resources_list_changed == Some(true);
        let wants_prompts = accepted.prompts_list_changed == Some(true);
        // The resources it follows: each one's upstream is asked for updates (once, however
        // many follow it), which come back here under the URI the client named.
        let (updates, mut updated) = mpsc::unbounded_channel();
        let follower = Follower::Stream(updates);
        let session = self.session(context.request_context())?;
        let following = Following::new(&self.gateway, session, &follower);
        for uri in accepted.resource_subscriptions.iter().flatten() {
            following.follow(uri).await;
        }
        loop {
            // A closed channel means the gateway is gone: end the subscription gracefully. Only
            // the kinds the client asked for are sent (the sink refuses the others).
            let sent = tokio::select! {
                () = context.cancelled() => break,
                c = tools.changed() => {
                    c.is_ok() && (!wants_tools || sink.notify_tool_list_changed().await.is_ok())
                }
                c = resources.changed() => {
                    c.is_ok()
                        && (!wants_resources || sink.notify_resource_list_changed().await.is_ok())
                }
                c = prompts.changed() => {
                    c.is_ok() && (!wants_prompts || sink.notify_prompt_list_changed().await.is_ok())
                }
                Some(uri) = updated.recv() => {
                    let update = ResourceUpdatedNotification::new(
                        ResourceUpdatedNotificationParam::new(uri),
                    );
                    sink.send(ServerNotification::ResourceUpdatedNotification(update))
                        .await
                        .is_ok()
                }
            };
            if !sent {
                break;
            }
        }
        following.end().await;
        Ok(())
    }
}

impl ServerHandler for Handler {
    #[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, in the protocols we speak
    fn get_info(&self) -> InitializeResult {
        // Logging always (the gateway's own sessions have a level; upstreams' messages follow
        // it); resources with subscriptions, prompts and completions when upstreams may
        // offer them.
        let capabilities = if self.gateway.has_upstreams() {
            ServerCapabilities::builder()
                .enable_logging()
                .enable_completions()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_prompts_list_changed()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_logging()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        };
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
        self.count();
        // Upstream log messages not tied to a call reach this session from now on.
        self.link(&context.peer);
        // Tell this client whenever the tools it sees change (direct tools, controls appearing).
        let mut tools = self.gateway.engine().subscribe_tool_changes();
        let mut resources = self.gateway.subscribe_resource_changes();
        let mut prompts = self.gateway.subscribe_prompt_changes();
        let peer = context.peer;
        let ended = self.ended.clone();
        tokio::spawn(async move {
            tools.mark_unchanged();
            resources.mark_unchanged();
            prompts.mark_unchanged();
            loop {
                let sent = tokio::select! {
                    () = ended.cancelled() => false,
                    c = tools.changed() => match c {
                        Ok(()) => peer.notify_tool_list_changed().await.is_ok(),
                        Err(_) => false,
                    },
                    c = resources.changed() => match c {
                        Ok(()) => peer.notify_resource_list_changed().await.is_ok(),
                        Err(_) => false,
                    },
                    c = prompts.changed() => match c {
                        Ok(()) => peer.notify_prompt_list_changed().await.is_ok(),
                        Err(_) => false,
                    },
                };
                if !sent {
                    return;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Clients on protocol 2026-07-28 (stateless HTTP among them) hear about list changes
        // and resource updates only through `subscriptions/listen`; the SDK intersects this
        // with the request and with the capabilities offered.
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .resources_list_changed()
            .prompts_list_changed()
            .build();
        accepted
            .resource_subscriptions
            .clone_from(&requested.resource_subscriptions);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // Boxed: rmcp moves every request's handler future into a task, and this one is large.
        Box::pin(self.stream_changes(context)).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(Box::pin(passthrough::list_resources(
            &self.gateway,
            &self.session(&context)?,
        ))
        .await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(Box::pin(passthrough::list_resource_templates(
            &self.gateway,
            &self.session(&context)?,
        ))
        .await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Box::pin(passthrough::read_resource(
            &self.gateway,
            &self.session(&context)?,
            request,
        ))
        .await
        .map(ReadResourceResponse::Complete)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(Box::pin(passthrough::list_prompts(
            &self.gateway,
            &self.session(&context)?,
        ))
        .await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Box::pin(passthrough::get_prompt(
            &self.gateway,
            &self.session(&context)?,
            request,
        ))
        .await
        .map(GetPromptResponse::Complete)
    }

    #[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, in the protocols we speak
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session(&context)?;
        self.link(&context.peer).set_level(request.level);
        Box::pin(self.gateway.ask_log_level(request.level)).await;
        Ok(())
    }

    #[allow(deprecated)] // the handshake-era subscription; 2026-07-28 clients use `listen`
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let session = self.session(&context)?;
        let follower = Follower::session(&self.link(&context.peer));
        Box::pin(passthrough::subscribe(
            &self.gateway,
            &session,
            &follower,
            &request.uri,
        ))
        .await
    }

    #[allow(deprecated)] // the handshake-era subscription; 2026-07-28 clients use `listen`
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let session = self.session(&context)?;
        let follower = Follower::session(&self.link(&context.peer));
        Box::pin(passthrough::unsubscribe(
            &self.gateway,
            &session,
            &follower,
            &request.uri,
        ))
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let session = self.session(&context)?;
        Box::pin(passthrough::complete(&self.gateway, &session, request)).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method.as_str();
        if KNOWN_METHODS.contains(&method) {
            return Err(McpError::invalid_params(
                format!("the params of {method} do not have the shape the MCP schema gives them"),
                None,
            ));
        }
        Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
            None,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let session = self.session(&context)?;
        Ok(ListToolsResult {
            tools: self
                .gateway
                .engine()
                .tools_for(&session)
                .into_iter()
                .map(convert::mcp_tool)
                .collect(),
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The caller's trace goes on through the gateway (`_meta` first, else the header).
        let parent = trace_context::incoming(
            request.traceparent().or(context.meta.get_traceparent()),
            context
                .extensions
                .get::<http::request::Parts>()
                .map(|p| &p.headers),
        );
        let span = tracing::info_span!("tools/call", otel.kind = "server", tool = %request.name);
        trace_context::set_parent(&span, parent.as_deref());
        // Boxed: rmcp moves the handler's future into a task of its own, and this one is large.
        let answer = Box::pin(self.answer_call(request, context).instrument(span));
        trace_context::scoped(parent, answer).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ClientRequest;
    use rmcp::service::Service;

    /// The size of what `handler` returns, without calling it.
    fn returned<'a, H: 'a, Fut>(
        _: fn(&'a H, ClientRequest, RequestContext<RoleServer>) -> Fut,
    ) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// rmcp runs every request's handler in a task of its own, moving the future in and its
    /// output out: a handler whose future is large (an unboxed pass-through future was 11 KB)
    /// makes every call, `tools/call` too, copy that much. The gateway's stays near a bare
    /// handler's.
    #[test]
    fn the_request_future_stays_near_a_bare_handlers() {
        struct Bare;
        impl ServerHandler for Bare {}
        let ours = returned(<GatewayServer as Service<RoleServer>>::handle_request);
        let bare = returned(<Bare as Service<RoleServer>>::handle_request);
        assert!(
            ours <= bare + bare / 2,
            "the gateway's request future is {ours} bytes, a bare handler's {bare}: box the large handler"
        );
    }
}
