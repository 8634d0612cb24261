//! `discover_tools` speed on ToolBench (`../shared/data/toolbench-stable`), at 1k, 10k and 100k
//! tools. Larger catalogs replicate the 2,479-tool catalog under renamed groups (`<group>-r<i>`,
//! truncated to 32 characters); 1k takes the first groups up to 1,000 tools.
//!
//! `cargo bench -p toolsearch --bench discover` first prints a per-query latency table (p50,
//! p99 over all 765 ToolBench queries, through the whole control: arguments, ranking, paging,
//! JSON) with the reference scan as the peer, and the load + index time; then divan runs.
//!
//! The index caches each keyword's merged hits per snapshot, so three regimes are reported:
//! *cold* (cache emptied before every query), *first-seen* (one pass over the 765 distinct
//! queries from an empty cache, so only words shared between different queries are reused),
//! and *warm* (the same queries again). The allocator is mimalloc, as in the `toolsearch` binary.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;
use toolsearch::search::reference::rank_all;
use toolsearch::vendor::Format;
use toolsearch::{Directory, Engine, Settings, Snapshot, parse_catalog};
use toolsearch::{Policy, PolicyRule};

#[path = "toolbench.rs"]
mod toolbench;
use toolbench::{catalog_json, queries, sources};

fn engine(size: usize) -> &'static Engine {
    static ENGINES: OnceLock<Vec<(usize, Engine)>> = OnceLock::new();
    let all = ENGINES.get_or_init(|| {
        [1_000, 10_000, 100_000]
            .into_iter()
            .map(|n| {
                (
                    n,
                    Engine::new(Settings::default(), sources(n)).expect("valid"),
                )
            })
            .collect()
    });
    &all.iter().find(|(n, _)| *n == size).expect("size").1
}

/// The 10k engine with a policy that hides every tool of the groups whose names start with
/// a–m (about half of them), for every caller.
fn policy_engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| {
        let policy =
            Policy::new(&[PolicyRule::for_everyone(&["*"], &["[a-mA-M]*"])]).expect("valid policy");
        Engine::builder()
            .sources(sources(10_000))
            .policy(policy)
            .build()
            .expect("valid")
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// p50 and p99 of `f` over `qs`, after `warmup` untimed passes, over `passes` timed passes.
fn time_queries(
    qs: &[String],
    warmup: usize,
    passes: usize,
    mut f: impl FnMut(&str),
) -> (Duration, Duration) {
    for _ in 0..warmup {
        for q in qs {
            f(q);
        }
    }
    let mut times = Vec::with_capacity(qs.len() * passes);
    for _ in 0..passes {
        for q in qs {
            let t = Instant::now();
            f(q);
            times.push(t.elapsed());
        }
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn report() {
    let qs = queries();
    let sample: Vec<String> = qs.iter().step_by(15).cloned().collect();
    println!(
        "discover_tools over {} ToolBench queries (whole control call, default arguments)",
        qs.len()
    );
    println!(
        "| tools | cold p50 | cold p99 | first-seen p50 | first-seen p99 | warm p50 | warm p99 | reference scan p50 (peer, {} queries) | peer p99 | peer / first-seen p50 |",
        sample.len()
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for size in [1_000, 10_000, 100_000] {
        let e = engine(size);
        let snap = e.snapshot();
        let dir = snap.directory();
        let index = snap.index().keyword(dir);
        let call = |q: &str| {
            black_box(e.handle_control("discover_tools", &json!({"query": q})));
        };
        let cold = time_queries(qs, 0, 1, |q| {
            index.clear_cache();
            call(q)
        });
        index.clear_cache();
        let first = time_queries(qs, 0, 1, call);
        let warm = time_queries(qs, 1, 3, call);
        let peer = if size <= 10_000 {
            let (a, b) = time_queries(&sample, 0, 1, |q| {
                black_box(rank_all(dir, q, 0..dir.tools().len() as u32));
            });
            format!(
                "{a:.2?} | {b:.2?} | {:.0}x",
                a.as_secs_f64() / first.0.as_secs_f64()
            )
        } else {
            "not run (too slow) | - | -".to_owned()
        };
        println!(
            "| {size} | {:.0?} | {:.0?} | {:.0?} | {:.0?} | {:.0?} | {:.0?} | {peer} |",
            cold.0, cold.1, first.0, first.1, warm.0, warm.1
        );
    }
    println!();
    // The same 10k queries for a caller whose policy hides about half the tools (filtered
    // before ranking, against the shared indexes), alternated with the unfiltered engine.
    let (open, filtered) = (engine(10_000), policy_engine());
    let visible = filtered
        .handle_control("list_tools", &json!({}))
        .map(|o| o.value()["total"].as_u64().unwrap_or(0))
        .unwrap_or(0);
    let call = |e: &Engine, q: &str| {
        black_box(e.handle_control("discover_tools", &json!({"query": q})));
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for q in qs {
            let t = Instant::now();
            call(open, q);
            let x = t.elapsed();
            let t = Instant::now();
            call(filtered, q);
            let y = t.elapsed();
            if round > 0 {
                a.push(x);
                b.push(y);
            }
        }
    }
    a.sort_unstable();
    b.sort_unstable();
    println!(
        "| 10000 tools, {visible} visible to the caller | unfiltered p50 | p99 | filtered p50 | p99 | ratio p50 |"
    );
    println!("|---|---|---|---|---|---|");
    let (a50, b50) = (percentile(&a, 0.5), percentile(&b, 0.5));
    println!(
        "| warm, alternated | {a50:.0?} | {:.0?} | {b50:.0?} | {:.0?} | {:.2}x |",
        percentile(&a, 0.99),
        percentile(&b, 0.99),
        b50.as_secs_f64() / a50.as_secs_f64()
    );
    println!();
    println!(
        "| tools | JSON bytes | load: parse + validate + index | of which directory build (validate, entries, index) |"
    );
    println!("|---|---|---|---|");
    for size in [1_000, 10_000, 100_000] {
        let text = catalog_json(size);
        let mut best = (Duration::MAX, Duration::MAX);
        for _ in 0..3 {
            let t = Instant::now();
            let srcs = parse_catalog("bench", &text)
                .expect("valid")
                .into_sources("bench", false);
            let parsed = t.elapsed();
            // The directory, its keyword index and validators: what the engine swaps in.
            let snap = Snapshot::new(Directory::build(srcs).expect("valid"));
            let total = t.elapsed();
            black_box(snap);
            best = (best.0.min(total), best.1.min(total - parsed));
        }
        println!(
            "| {size} | {} | {:.2?} | {:.2?} |",
            text.len(),
            best.0,
            best.1
        );
    }
    println!();
}

fn main() {
    report();
    divan::main();
}

#[divan::bench(args = [1_000, 10_000, 100_000])]
fn discover(bencher: divan::Bencher, size: usize) {
    let e = engine(size);
    let qs = queries();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % qs.len();
        black_box(e.handle_control("discover_tools", &json!({"query": qs[i]})))
    });
}

/// `discover` at 10k for a caller whose policy hides about half the tools.
#[divan::bench]
fn discover_policy_half_10k(bencher: divan::Bencher) {
    let e = policy_engine();
    let qs = queries();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % qs.len();
        black_box(e.handle_control("discover_tools", &json!({"query": qs[i]})))
    });
}

#[divan::bench(args = [1_000, 10_000])]
fn reference_peer(bencher: divan::Bencher, size: usize) {
    let snap = engine(size).snapshot();
    let dir = snap.directory();
    let qs = queries();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % qs.len();
        black_box(rank_all(dir, &qs[i], 0..dir.tools().len() as u32))
    });
}

#[divan::bench(args = [1_000, 10_000], sample_count = 5)]
fn build_directory(bencher: divan::Bencher, size: usize) {
    let srcs = sources(size);
    bencher.bench_local(|| {
        black_box(Snapshot::new(
            Directory::build(srcs.clone()).expect("valid"),
        ))
    });
}

#[divan::bench]
fn describe_tool(bencher: divan::Bencher) {
    let e = engine(10_000);
    bencher.bench_local(|| {
        black_box(e.handle_control(
            "describe_tool",
            &json!({"group": "TheClique", "tool": "Transfermarkt search"}),
        ))
    });
}

/// `discover_tools` at 10k with a page of 5: the peer of `tool_search_10k`.
#[divan::bench]
fn discover_limit5_10k(bencher: divan::Bencher) {
    let e = engine(10_000);
    let qs = queries();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % qs.len();
        black_box(e.handle_control("discover_tools", &json!({"query": qs[i], "limit": 5})))
    });
}

/// The vendor search at 10k (default limit 5, the same keyword method): Anthropic's
/// `tool_reference` blocks, OpenAI's `tool_search_output` with each function's schema.
#[divan::bench(args = ["anthropic", "openai"])]
fn tool_search_10k(bencher: divan::Bencher, format: &str) {
    let e = engine(10_000);
    let format: Format = format.parse().expect("a format");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let qs = queries();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % qs.len();
        let args = match format {
            Format::Anthropic => json!({"query": qs[i]}),
            Format::Openai => json!({"call_id": "c", "arguments": {"query": qs[i]}}),
        };
        black_box(rt.block_on(e.handle_vendor(format, "tool_search", args)))
    });
}
