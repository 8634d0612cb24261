//! A live catalog over streamable HTTP on protocol 2026-07-28, where change notifications travel
//! only inside `subscriptions/listen` subscriptions. The upstream is a small rmcp HTTP server
//! whose `grow` tool adds a tool and notifies its subscribers; the gateway must subscribe, refresh
//! the source, and (the source being direct) tell its own subscribed HTTP client.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerNotification,
    SubscriptionFilter, Tool,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleClient, RoleServer, SubscriptionContext,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServerHandler};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;
use toolsearch_mcp::http::{HttpOptions, serve_http};

/// The upstream's state, shared by the per-request handlers of the stateless HTTP service.
#[derive(Clone)]
struct Garden {
    tools: Arc<Mutex<Vec<String>>>,
    changed: watch::Sender<u64>,
}

fn empty_schema() -> Arc<rmcp::model::JsonObject> {
    Arc::new(serde_json::from_value(json!({"type": "object", "properties": {}})).expect("schema"))
}

impl ServerHandler for Garden {
    fn get_info(&self) -> rmcp::model::InitializeResult {
        rmcp::model::InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changed = self.changed.subscribe();
        changed.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                r = changed.changed() => {
                    if r.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let names = self.tools.lock().expect("lock").clone();
        Ok(ListToolsResult {
            tools: names
                .into_iter()
                .map(|n| Tool::new(n.clone(), format!("The {n} tool."), empty_schema()))
                .collect(),
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = if request.name == "grow" {
            self.tools.lock().expect("lock").push("sprout".to_owned());
            self.changed.send_modify(|n| *n += 1);
            "grown".to_owned()
        } else {
            format!("hello from {}", request.name)
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

async fn serve_garden() -> (std::net::SocketAddr, Garden) {
    let garden = Garden {
        tools: Arc::new(Mutex::new(vec!["grow".to_owned()])),
        changed: watch::channel(0).0,
    };
    let per_request = garden.clone();
    let addr = common::serve_rmcp_http(move || per_request.clone()).await;
    (addr, garden)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_protocol_2026_07_28_changes_travel_in_subscriptions() {
    live_catalog_over_http(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_legacy_sessions_changes_travel_as_plain_notifications() {
    live_catalog_over_http(false).await;
}

/// Notes `tools/list_changed` heard outside subscriptions (legacy sessions).
#[derive(Clone)]
struct Recorder(mpsc::UnboundedSender<()>);

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

async fn live_catalog_over_http(modern: bool) {
    let (upstream, garden) = serve_garden().await;
    let toml = format!(
        "[[source]]\nname = \"garden\"\nurl = \"http://{upstream}/\"\npresentation = \"direct\"\n"
    );
    let g = Gateway::start(
        parse_config("live.toml", &toml, std::path::Path::new(".")).expect("ok"),
        Default::default(),
    )
    .await
    .expect("starts");
    let upstream_version = g
        .upstream("garden")
        .expect("upstream")
        .protocol_version()
        .await;
    assert_eq!(
        upstream_version.as_deref(),
        Some("2026-07-28"),
        "the gateway speaks the newest protocol to an upstream that does"
    );
    let server = serve_http(
        g.clone(),
        HttpOptions::new("127.0.0.1:0".parse().expect("addr")),
    )
    .await
    .expect("bind");

    // A downstream client hears about the gateway's tool-list changes: in a subscription on
    // 2026-07-28, as a plain notification on a legacy session.
    toolsearch_mcp::upstream::install_crypto_provider();
    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/", server.local_addr)),
    );
    let (tx, mut plain) = mpsc::unbounded_channel();
    let lifecycle = if modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    let client = Recorder(tx)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("connect");
    let version = client
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    assert_eq!(version == "2026-07-28", modern, "{version}");
    let names = |tools: Vec<Tool>| {
        tools
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    assert!(!names(client.list_all_tools().await.expect("list")).contains(&"sprout".to_owned()));
    let mut subscription = if modern {
        Some(
            client
                .peer()
                .listen(SubscriptionFilter::builder().tools_list_changed().build())
                .await
                .expect("the gateway accepts a tools/list_changed subscription"),
        )
    } else {
        None
    };

    // The upstream grows a tool (called through the gateway) and notifies its subscribers.
    let r = g.engine().handle("grow", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(garden.tools.lock().expect("lock").len(), 2);

    // The gateway heard it and refreshed the source ...
    let started = Instant::now();
    while !g.engine().tools().iter().any(|t| t.name == "sprout") {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the HTTP upstream's new tool never reached the catalog"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // ... and, the tool being direct, told its subscribed client, which now lists and calls it.
    match subscription.as_mut() {
        Some(subscription) => {
            let note = tokio::time::timeout(Duration::from_secs(5), subscription.next())
                .await
                .expect("notified in time")
                .expect("a valid notification");
            assert!(
                matches!(
                    note,
                    Some(ServerNotification::ToolListChangedNotification(_))
                ),
                "{note:?}"
            );
        }
        None => {
            tokio::time::timeout(Duration::from_secs(5), plain.recv())
                .await
                .expect("notified in time")
                .expect("open");
        }
    }
    assert!(names(client.list_all_tools().await.expect("list")).contains(&"sprout".to_owned()));
    let r = client
        .call_tool(CallToolRequestParams::new("sprout"))
        .await
        .expect("call");
    assert!(
        serde_json::to_string(&r)
            .expect("json")
            .contains("hello from sprout")
    );

    if let Some(mut s) = subscription {
        let _ = s.cancel().await;
    }
    let _ = client.cancel().await;
    server.shutdown().await;
    g.shutdown().await;
}
