//! `hybrid` and `semantic` search over 10k tools (`HYBRID_TOOLS=100000` for more), without the
//! query's embedding (which the model adds: see `toolsearch-embed`'s `embed` bench). The
//! catalog is ToolBench replicated to 10,000 tools (as in the `discover` bench); its vectors are random unit vectors of MiniLM's
//! 384 dimensions (the search cost does not depend on their values), queries are ToolBench's
//! 765, each with a random query vector. What is timed is exactly what `semantic` / `hybrid`
//! do per query: the cosine scan of the scope, BM25 to depth 100, and the fusion.
//! The same vectors as 32-bit floats, scanned with a float dot product, are measured beside
//! the index's signed bytes (`semantic-f32`), and both rankings' top 10 compared.
//!
//! `cargo bench -p toolsearch --bench hybrid` prints p50/p99 per query first, then divan runs.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::OnceLock;
use std::time::Duration;

use toolsearch::Directory;
use toolsearch::search::{FUSION_DEPTH, fuse};
use toolsearch::search::{VectorIndex, dot, normalize};
use toolsearch::{SearchIndex, Settings};

#[path = "support/percentiles.rs"]
mod percentiles;
#[path = "toolbench.rs"]
mod toolbench;
use toolbench::{queries, sources};

const DIM: usize = 384;

fn tools() -> usize {
    std::env::var("HYBRID_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// A small deterministic generator (xorshift), so runs compare.
fn unit_vectors(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut out = Vec::with_capacity(n * DIM);
    for _ in 0..n * DIM {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.push((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5);
    }
    out.chunks_exact_mut(DIM).for_each(normalize);
    out
}

struct Setup {
    dir: Directory,
    index: SearchIndex,
    vectors: VectorIndex,
    floats: Vec<f32>,
    qvecs: Vec<Vec<f32>>,
    settings: Settings,
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let dir = Directory::build(sources(tools())).expect("valid");
        let settings = Settings::default();
        let index = SearchIndex::build(&dir);
        index.bm25(&dir, &settings.bm25);
        let floats = unit_vectors(dir.tools().len(), 7);
        let vectors = VectorIndex::new("random", DIM, floats.clone());
        let qvecs = unit_vectors(queries().len(), 11)
            .chunks_exact(DIM)
            .map(<[f32]>::to_vec)
            .collect();
        Setup {
            dir,
            index,
            vectors,
            floats,
            qvecs,
            settings,
        }
    })
}

fn hybrid(s: &Setup, i: usize) -> usize {
    let scope = 0..s.dir.tools().len() as u32;
    let (dense, _) = s
        .vectors
        .search(&s.qvecs[i], scope.clone(), FUSION_DEPTH, -1.0);
    let index = s.index.bm25(&s.dir, &s.settings.bm25);
    let (bm25, _) = index.search(&queries()[i], scope, FUSION_DEPTH);
    let floor = s.settings.semantic.min_similarity();
    fuse(
        &bm25,
        &dense,
        floor,
        &s.settings.hybrid,
        20,
        index.rare_idf(),
    )
    .0
    .len()
}

fn semantic(s: &Setup, i: usize) -> usize {
    let scope = 0..s.dir.tools().len() as u32;
    s.vectors.search(&s.qvecs[i], scope, 20, -1.0).0.len()
}

/// The float scan the index replaced: every row's float dot product, the best 20 kept.
fn semantic_f32(s: &Setup, i: usize) -> usize {
    top_floats(s, i, 20).len()
}

fn top_floats(s: &Setup, i: usize, k: usize) -> Vec<u32> {
    let mut scored: Vec<(f32, u32)> = s
        .floats
        .chunks_exact(DIM)
        .enumerate()
        .map(|(t, row)| (dot(row, &s.qvecs[i]), t as u32))
        .collect();
    let order = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    scored.select_nth_unstable_by(k - 1, order);
    scored.truncate(k);
    scored.sort_unstable_by(order);
    scored.into_iter().map(|(_, t)| t).collect()
}

fn percentiles(f: impl Fn(&Setup, usize) -> usize) -> (Duration, Duration) {
    let s = setup();
    percentiles::percentiles(queries().len(), |i| f(s, i))
}

fn main() {
    let s = setup();
    println!(
        "{} tools, {} queries (3 timed passes, search only, query embedding excluded)",
        s.dir.tools().len(),
        queries().len()
    );
    println!(
        "vectors: {:.1} MB as signed bytes, {:.1} MB as floats",
        s.vectors.bytes() as f64 / 1e6,
        (s.floats.len() * 4) as f64 / 1e6
    );
    let scope = 0..s.dir.tools().len() as u32;
    let same: usize = (0..queries().len())
        .map(|i| {
            let bytes = s.vectors.search(&s.qvecs[i], scope.clone(), 10, -1.0).0;
            let floats = top_floats(s, i, 10);
            bytes.iter().filter(|h| floats.contains(&h.tool)).count()
        })
        .sum();
    println!(
        "top 10 shared with the float ranking: {:.2} %",
        100.0 * same as f64 / (10 * queries().len()) as f64
    );
    for (name, f) in [
        ("semantic", semantic as fn(&Setup, usize) -> usize),
        ("semantic-f32", semantic_f32),
        ("hybrid", hybrid),
    ] {
        let (p50, p99) = percentiles(f);
        println!("{name:12} p50 {p50:>10.1?}  p99 {p99:>10.1?}");
    }
    divan::main();
}

#[divan::bench(args = ["semantic", "semantic-f32", "hybrid"])]
fn search(bencher: divan::Bencher, method: &str) {
    let s = setup();
    let f = match method {
        "hybrid" => hybrid,
        "semantic-f32" => semantic_f32,
        _ => semantic,
    };
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % queries().len();
        f(s, i)
    });
}
