//! What the console costs the agents: one `/mcp` call's latency with no console open, with
//! consoles open as a browser keeps them (Sources and Calls each refreshed every 2 s, by four
//! operators at once), and — the bound — with one client reading console pages back to back.
//! Each page is whole (the Calls page lists the last 1,000 calls, which the calls measured fill).
//!
//! `cargo bench -p toolsearch-cli --bench console` (divan; medians are the figures). Target:
//! with consoles open as a browser keeps them, the call's median within the run-to-run noise
//! of the closed case.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

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

/// No console open.
const CLOSED: u8 = 0;
/// Four consoles, each refreshing Sources and Calls every 2 s: a page every 250 ms.
const BROWSERS: u8 = 1;
/// Pages read back to back by one client.
const FLOOD: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(CLOSED);

struct Setup {
    runtime: tokio::runtime::Runtime,
    client: RunningService<RoleClient, ()>,
    _server: HttpServer,
    _gateway: Arc<Gateway>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let runtime = example_gateway::runtime();
        let (gateway, server, client) = runtime.block_on(async {
            let (gateway, server, url) = example_gateway::example_gateway().await;
            let config = StreamableHttpClientTransportConfig::with_uri(url);
            let client = ()
                .serve(StreamableHttpClientTransport::with_client(
                    reqwest::Client::new(),
                    config,
                ))
                .await
                .expect("client");
            (gateway, server, client)
        });
        // The operators' browsers: a thread of their own, as a browser is another process.
        let base = format!("http://{}", server.local_addr);
        std::thread::spawn(move || poll(&base));
        Setup {
            runtime,
            client,
            _server: server,
            _gateway: gateway,
        }
    })
}

/// Reads console pages as [`MODE`] says, forever.
fn poll(base: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let http = reqwest::Client::new();
    let pages = [format!("{base}/ui/"), format!("{base}/ui/calls")];
    runtime.block_on(async {
        for n in 0usize.. {
            let mode = MODE.load(Ordering::Relaxed);
            if mode == CLOSED {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            let page = &pages[n % pages.len()];
            let r = http.get(page).send().await.expect("console page");
            assert!(r.status().is_success(), "{page}: {}", r.status());
            let _ = r.bytes().await.expect("page body");
            if mode == BROWSERS {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    });
}

fn discover() -> CallToolRequestParams {
    let Value::Object(args) = json!({"query": "refund a payment"}) else {
        unreachable!()
    };
    CallToolRequestParams::new("discover_tools").with_arguments(args)
}

fn measure(bencher: divan::Bencher, mode: u8) {
    let s = setup();
    MODE.store(mode, Ordering::Relaxed);
    // The calls ring full, as a busy gateway's is; and the pollers started.
    for _ in 0..1000 {
        call(s);
    }
    bencher.bench(|| call(s));
    MODE.store(CLOSED, Ordering::Relaxed);
}

fn call(s: &Setup) {
    let r = s
        .runtime
        .block_on(s.client.call_tool(discover()))
        .expect("tools/call");
    assert!(!r.is_error.unwrap_or(false));
}

/// `discover_tools` over `/mcp`, no console open.
#[divan::bench(sample_count = 300)]
fn call_console_closed(bencher: divan::Bencher) {
    measure(bencher, CLOSED);
}

/// The same call while four consoles refresh as a browser does.
#[divan::bench(sample_count = 300)]
fn call_consoles_open(bencher: divan::Bencher) {
    measure(bencher, BROWSERS);
}

/// The same call while one client reads console pages back to back (the bound).
#[divan::bench(sample_count = 300)]
fn call_console_flooded(bencher: divan::Bencher) {
    measure(bencher, FLOOD);
}
