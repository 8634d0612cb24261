//! What the gateway's metrics cost: `call_tool` through an engine that reports every call and
//! search to [`Metrics`] (each call counted for its tool and its source) against the same
//! engine without an observer (the peer); then that engine also handing each call's audit
//! record to the console's ring of recent calls, as the gateway's does — all in one run on one
//! current-thread runtime, alternated; then rendering `/metrics` with a thousand tools' series.
//!
//! `cargo bench -p toolsearch-mcp --bench metrics` prints medians and the difference.

use std::hint::black_box;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolsearch::{AuditSink, Engine, GroupSpec, Toolset};
use toolsearch_mcp::Metrics;
use toolsearch_mcp::recent_calls::RecentCalls;

#[path = "../../toolsearch/benches/support/median.rs"]
mod median;
use median::median;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// Numeric customer ID.
    customer_id: u64,
}

fn engine(metrics: Option<Arc<Metrics>>, tools: usize, ring: Option<Arc<RecentCalls>>) -> Engine {
    let mut set = Toolset::new();
    for i in 0..tools {
        set = set.tool(
            &format!("customer_name_{i}"),
            "Look up a customer's display name.",
            |a: Lookup| async move { Ok(json!({"name": "Ada", "id": a.customer_id})) },
        );
    }
    let mut b = Engine::builder().source(set.into_group("crm", GroupSpec::new("crm", "Customers")));
    if let Some(m) = metrics {
        b = b.observer(m);
    }
    if let Some(ring) = ring {
        b = b.audit(AuditSink::new(move |r| ring.record(r)));
    }
    b.build().expect("valid")
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let envelope =
        json!({"group": "crm", "tool": "customer_name_0", "arguments": {"customer_id": 42}});
    let plain = engine(None, 1, None);
    let observed = engine(Some(Arc::new(Metrics::default())), 1, None);
    let ringed = engine(
        Some(Arc::new(Metrics::default())),
        1,
        Some(Arc::new(RecentCalls::default())),
    );
    let call = |e: &Engine| {
        black_box(rt.block_on(e.handle("call_tool", envelope.clone())));
    };
    // Alternate the two, so that drift of the machine touches both alike.
    let (mut without, mut with, mut with_ring) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        without.push(median(|| call(&plain), 40_000));
        with.push(median(|| call(&observed), 40_000));
        with_ring.push(median(|| call(&ringed), 40_000));
    }
    without.sort();
    with.sort();
    with_ring.sort();
    let (without, with, with_ring) = (without[2], with[2], with_ring[2]);
    println!("| path | median |");
    println!("|---|---|");
    println!("| call_tool, engine without an observer (peer) | {without:.2?} |");
    println!("| call_tool, engine reporting to Metrics | {with:.2?} |");
    println!(
        "| the metrics' share of a call | {:.2?} |",
        with.saturating_sub(without)
    );
    println!(
        "| call_tool, engine reporting to Metrics and to the ring of recent calls | {with_ring:.2?} |"
    );
    println!(
        "| the ring's share of a call | {:.2?} |",
        with_ring.saturating_sub(with)
    );

    let many = Arc::new(Metrics::default());
    let e = engine(Some(many.clone()), 1000, None);
    for i in 0..1000 {
        let envelope = json!({"group": "crm", "tool": format!("customer_name_{i}"), "arguments": {"customer_id": i}});
        rt.block_on(e.handle("call_tool", envelope));
    }
    let sources = [("crm", true)];
    let bytes = many.render(sources, false).len();
    let render = median(
        || {
            black_box(many.render(sources, false));
        },
        200,
    );
    println!("| render /metrics after 1,000 tools were called ({bytes} bytes) | {render:.2?} |");
}
