//! What a large catalog costs in memory, stage by stage: the catalog text, the parsed catalog,
//! the directory (tool entries with their schemas), the snapshot (exact names, validators),
//! the keyword index, the BM25 index (a process searching by BM25 builds no keyword index). A
//! counting allocator gives the bytes live after each stage and the peak reached during it.
//! (`peak_alloc` counts what the system allocator hands out.) ToolBench (`../shared/data/toolbench-stable`) replicated under renamed groups to 10k and
//! 100k tools (see `toolbench.rs`).
//!
//! `cargo bench -p toolsearch --bench memory` prints the table of `BENCHMARKS.md`. With
//! `MEMORY_CATALOG=FILE` it measures that catalog file instead (e.g. the MCP-sized catalog of
//! `scripts/mcp-sized-catalog.py`).

use std::hint::black_box;
use std::time::Instant;

use peak_alloc::PeakAlloc;

use toolsearch::{Bm25Params, Directory, Snapshot, parse_catalog};

mod toolbench;
use toolbench::catalog_json;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

fn mb(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / 1_048_576.0)
}

/// Runs `stage`, returning its value, the bytes it added to what is live, and its peak above
/// what was live before it.
fn stage<T>(stage: impl FnOnce() -> T) -> (T, isize, usize, f64) {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let t = Instant::now();
    let out = stage();
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let after = ALLOCATOR.current_usage();
    let peak = ALLOCATOR.peak_usage();
    (out, after as isize - before as isize, peak - before, ms)
}

fn main() {
    println!(
        "| tools | stage | live after (MB) | added (MB) | peak during, above the start (MB) | ms |"
    );
    println!("|---|---|---|---|---|---|");
    let file = std::env::var_os("MEMORY_CATALOG");
    let sizes: &[usize] = if file.is_some() {
        &[0]
    } else {
        &[10_000, 100_000]
    };
    for &size in sizes {
        let label = if file.is_some() {
            "file".to_owned()
        } else {
            size.to_string()
        };
        let base = ALLOCATOR.current_usage();
        let row = |name: &str, added: isize, peak: usize, ms: f64| {
            println!(
                "| {label} | {name} | {} | {:+.1} | {} | {ms:.0} |",
                mb(ALLOCATOR.current_usage() - base),
                added as f64 / 1_048_576.0,
                mb(peak),
            );
        };
        let (text, added, peak, ms) = stage(|| match &file {
            Some(path) => std::fs::read_to_string(path).expect("MEMORY_CATALOG is readable"),
            None => catalog_json(size),
        });
        row("catalog text", added, peak, ms);
        let (sources, added, peak, ms) = stage(|| {
            parse_catalog("bench", &text)
                .expect("valid")
                .into_sources("bench", false)
        });
        row("parsed catalog", added, peak, ms);
        let ((), added, peak, ms) = stage(|| drop(text));
        row("text dropped", added, peak, ms);
        let (directory, added, peak, ms) = stage(|| Directory::build(sources).expect("valid"));
        row("directory", added, peak, ms);
        let (snapshot, added, peak, ms) = stage(|| Snapshot::new(directory));
        row("+ exact names, validators", added, peak, ms);
        let ((), added, peak, ms) = stage(|| {
            black_box(snapshot.index().keyword(snapshot.directory()));
        });
        row("+ keyword index", added, peak, ms);
        let (bm25, added, peak, ms) = stage(|| {
            snapshot
                .index()
                .bm25(snapshot.directory(), &Bm25Params::default())
        });
        row("+ BM25 index", added, peak, ms);
        black_box(&bm25);
        drop(bm25);
        drop(snapshot);
    }
}
