//! The median time of a closure over `n` runs, after `n / 10` warm-up runs: shared by the
//! benchmarks that time one call at a time (`#[path]`-included).

use std::time::{Duration, Instant};

/// The median of `n` timed runs of `f`.
pub fn median(mut f: impl FnMut(), n: usize) -> Duration {
    for _ in 0..n / 10 {
        f();
    }
    let mut t: Vec<Duration> = (0..n)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[n / 2]
}
