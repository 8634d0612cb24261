//! Latency of one control call over streamable HTTP on a kept-alive connection, against the
//! same call with a new TCP connection per request (the peer, in the same run). Before the
//! gateway set `TCP_NODELAY`, Nagle's algorithm and the client's delayed ACK held every
//! kept-alive response for ~40 ms while a fresh connection took 1–2 ms.
//!
//! `cargo bench -p toolsearch-cli --bench http_keepalive` (divan; medians are the figures).
//! Target: the kept-alive call within 1.5× of the fresh-connection call and under 5 ms.

use std::sync::{Arc, OnceLock};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolsearch_mcp::Gateway;
use toolsearch_mcp::http::HttpServer;

#[path = "support/example_gateway.rs"]
mod example_gateway;

fn main() {
    divan::main();
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    kept_alive: RunningService<RoleClient, ()>,
    fresh: RunningService<RoleClient, ()>,
    _server: HttpServer,
    _gateway: Arc<Gateway>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let runtime = example_gateway::runtime();
        let (gateway, server, kept_alive, fresh) = runtime.block_on(async {
            let (gateway, server, url) = example_gateway::example_gateway().await;
            let connect = |client: reqwest::Client| {
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone());
                ().serve(StreamableHttpClientTransport::with_client(client, config))
            };
            let kept_alive = connect(reqwest::Client::new()).await.expect("client");
            let fresh = connect(
                reqwest::Client::builder()
                    .pool_max_idle_per_host(0)
                    .build()
                    .expect("client"),
            )
            .await
            .expect("client");
            (gateway, server, kept_alive, fresh)
        });
        Setup {
            runtime,
            kept_alive,
            fresh,
            _server: server,
            _gateway: gateway,
        }
    })
}

fn discover() -> CallToolRequestParams {
    let Value::Object(args) = json!({"query": "refund a payment"}) else {
        unreachable!()
    };
    CallToolRequestParams::new("discover_tools").with_arguments(args)
}

fn call(client: &RunningService<RoleClient, ()>, runtime: &tokio::runtime::Runtime) {
    let r = runtime
        .block_on(client.call_tool(discover()))
        .expect("tools/call");
    assert!(!r.is_error.unwrap_or(false));
}

/// `discover_tools` on one kept-alive connection.
#[divan::bench(sample_count = 200)]
fn discover_kept_alive() {
    let s = setup();
    call(&s.kept_alive, &s.runtime);
}

/// `discover_tools` with a new TCP connection per request (the peer).
#[divan::bench(sample_count = 200)]
fn discover_new_connection() {
    let s = setup();
    call(&s.fresh, &s.runtime);
}
