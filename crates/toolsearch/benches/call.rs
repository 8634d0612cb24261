//! `call_tool` overhead: the whole envelope (usage check, routing, cached jsonschema
//! validation, approval-free dispatch with timeout and panic guard) against calling the same
//! executor directly, for a small schema. Both run inside the same current-thread runtime.
//!
//! `cargo bench -p toolsearch --bench call` prints medians and the difference, then divan runs.

use std::hint::black_box;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolsearch::{Engine, Executor, GroupSpec, Toolset};

#[path = "support/median.rs"]
mod median;
use median::median;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// Numeric customer ID.
    customer_id: u64,
    /// Include archived records.
    #[serde(default)]
    archived: bool,
}

fn toolset() -> Toolset {
    Toolset::new().tool(
        "customer_name",
        "Look up a customer's display name.",
        |a: Lookup| async move {
            Ok(json!({"name": "Ada", "id": a.customer_id, "archived": a.archived}))
        },
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

fn engine() -> Engine {
    Engine::builder()
        .source(toolset().into_group("crm", GroupSpec::new("crm", "Customer records")))
        .build()
        .expect("valid")
}

fn args() -> Map<String, Value> {
    let Value::Object(m) = json!({"customer_id": 42, "archived": false}) else {
        unreachable!()
    };
    m
}

fn main() {
    let rt = runtime();
    let e = engine();
    let direct = toolset();
    let envelope = json!({"group": "crm", "tool": "customer_name", "arguments": args()});
    let through = median(
        || {
            black_box(rt.block_on(e.handle("call_tool", envelope.clone())));
        },
        200_000,
    );
    let plain = median(
        || {
            black_box(rt.block_on(direct.call("customer_name", args()))).ok();
        },
        200_000,
    );
    println!("| path | median per call |");
    println!("|---|---|");
    println!("| executor called directly (peer) | {plain:.2?} |");
    println!("| call_tool through the engine | {through:.2?} |");
    println!(
        "| overhead (routing + validation + guards) | {:.2?} |",
        through.saturating_sub(plain)
    );
    println!(
        "| ratio | {:.2}x |",
        through.as_secs_f64() / plain.as_secs_f64()
    );
    println!();
    divan::main();
}

#[divan::bench]
fn call_tool_through_engine(bencher: divan::Bencher) {
    let rt = runtime();
    let e = engine();
    let envelope = json!({"group": "crm", "tool": "customer_name", "arguments": args()});
    bencher.bench_local(|| rt.block_on(e.handle("call_tool", envelope.clone())));
}

#[divan::bench]
fn executor_directly(bencher: divan::Bencher) {
    let rt = runtime();
    let t = toolset();
    bencher.bench_local(|| rt.block_on(t.call("customer_name", args())));
}
