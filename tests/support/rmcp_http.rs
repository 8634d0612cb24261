//! Test support shared by the gateway tests of several crates (included with `#[path]`): an
//! rmcp server served over streamable HTTP on a loopback port, and `Whoami`, an upstream whose
//! one tool answers with the tenant and run headers its request carried.
#![allow(dead_code)] // each test binary uses its own part

use std::sync::Arc;

use http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;

/// Serves an rmcp server over streamable HTTP on a loopback port (a test upstream); the factory
/// makes the handler of each session, or of each request on the stateless protocol.
pub async fn serve_rmcp_http<S>(
    factory: impl Fn() -> S + Send + Sync + 'static,
) -> std::net::SocketAddr
where
    S: rmcp::ServerHandler + Clone + Send + 'static,
{
    serve_rmcp_http_answering_discover(factory, None).await
}

/// As [`serve_rmcp_http`], but a `server/discover` request gets `discover` as its JSON-RPC
/// `result` (when given) instead of rmcp's answer: an upstream whose discovery answer is of
/// no use (`{}`, or a result of the wrong shape). Every other message goes to rmcp's server.
pub async fn serve_rmcp_http_answering_discover<S>(
    factory: impl Fn() -> S + Send + Sync + 'static,
    discover: Option<serde_json::Value>,
) -> std::net::SocketAddr
where
    S: rmcp::ServerHandler + Clone + Send + 'static,
{
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use std::sync::Arc;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(factory()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    ));
    let discover = Arc::new(discover);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            let discover = discover.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(
                    move |req: http::Request<hyper::body::Incoming>| {
                        let service = service.clone();
                        let discover = discover.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let bytes = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let message: serde_json::Value =
                                serde_json::from_slice(&bytes).unwrap_or_default();
                            if let Some(result) = discover.as_ref()
                                && message["method"] == "server/discover"
                            {
                                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
                                let response = http::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(
                                        Full::new(bytes::Bytes::from(answer.to_string()))
                                            .map_err(|e| match e {})
                                            .boxed(),
                                    )
                                    .expect("response");
                                return Ok::<_, std::convert::Infallible>(response);
                            }
                            let req = http::Request::from_parts(parts, Full::new(bytes));
                            Ok(service.handle(req).await)
                        }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    addr
}

/// A tool list of one tool without arguments.
fn one_tool(name: &'static str, description: &'static str) -> ListToolsResult {
    let schema =
        serde_json::from_value(json!({"type": "object", "properties": {}})).expect("schema");
    ListToolsResult {
        tools: vec![Tool::new(name, description, Arc::new(schema))],
        ..ListToolsResult::default()
    }
}

/// An upstream whose tool `whoami` answers `tenant=<X-Tenant-ID>;run=<X-Run-ID>`.
#[derive(Clone)]
pub struct Whoami;

impl ServerHandler for Whoami {
    fn get_info(&self) -> rmcp::model::InitializeResult {
        rmcp::model::InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(one_tool(
            "whoami",
            "Tell which tenant and run the request belongs to.",
        ))
    }

    async fn call_tool(
        &self,
        _r: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let header = |name: &str| {
            context
                .extensions
                .get::<Parts>()
                .and_then(|p| p.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        let text = format!(
            "tenant={};run={}",
            header("x-tenant-id"),
            header("x-run-id")
        );
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

/// An upstream whose one tool, `count`, counts its calls and answers `calls=N`: what ran can be
/// told from what did not.
#[derive(Debug, Clone, Default)]
pub struct Counter(pub Arc<std::sync::atomic::AtomicUsize>);

impl ServerHandler for Counter {
    fn get_info(&self) -> rmcp::model::InitializeResult {
        rmcp::model::InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"note": {"type": "string"}},
        }))
        .expect("schema");
        Ok(ListToolsResult {
            tools: vec![Tool::new("count", "Count this call.", Arc::new(schema))],
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        _r: CallToolRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(format!("calls={n}")),
        ])))
    }
}

/// An upstream whose one tool, `trace`, answers with the trace context its call carried:
/// `header=<traceparent header>;meta=<_meta.traceparent>` (`-` for none).
#[derive(Debug, Clone, Default)]
pub struct TraceEcho;

impl ServerHandler for TraceEcho {
    fn get_info(&self) -> rmcp::model::InitializeResult {
        rmcp::model::InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(one_tool(
            "trace",
            "Tell which trace context the call carried.",
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        use rmcp::model::RequestParamsMeta;
        let header = context
            .extensions
            .get::<Parts>()
            .and_then(|p| p.headers.get("traceparent"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned();
        let meta = request
            .traceparent()
            .or(context.meta.get_traceparent())
            .unwrap_or("-")
            .to_owned();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(format!("header={header};meta={meta}")),
        ])))
    }
}
