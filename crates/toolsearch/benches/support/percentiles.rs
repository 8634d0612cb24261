//! p50 and p99 of one call per query: a warm-up pass over the `n` queries, then three timed
//! passes (`#[path]`-included by the benchmarks that print them before divan runs).

use std::hint::black_box;
use std::time::{Duration, Instant};

/// p50 and p99 of `f(i)` over three passes of the queries `0..n`, after one untimed pass.
pub fn percentiles<T>(n: usize, mut f: impl FnMut(usize) -> T) -> (Duration, Duration) {
    for i in 0..n {
        black_box(f(i));
    }
    let mut times: Vec<Duration> = (0..3 * n)
        .map(|k| {
            let t = Instant::now();
            black_box(f(k % n));
            t.elapsed()
        })
        .collect();
    times.sort();
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99))
}
