//! Each source's tool calls since start: how they ended and how long they took. Kept once and
//! read twice: `/metrics` encodes them (`toolsearch_source_calls_total{source,outcome}` and the
//! histogram `toolsearch_source_call_seconds{source}`), and the console's Sources view shows
//! the same counts and the median estimated from the same buckets, as Prometheus's
//! `histogram_quantile(0.5, …)` would.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use toolsearch::Outcome;

/// Upper bounds (seconds) of the latency buckets: from 0.25 ms, each √2 times the last (to two
/// significant digits, so that the `le` labels read 0.00035, 0.0005, …), to ~46 s — fine
/// enough that a median read off them is within a fifth of the true one.
fn bucket_bounds() -> &'static [f64; BUCKETS] {
    static BOUNDS: std::sync::OnceLock<[f64; BUCKETS]> = std::sync::OnceLock::new();
    BOUNDS.get_or_init(|| {
        std::array::from_fn(|i| {
            let exact = 0.000_25 * std::f64::consts::SQRT_2.powi(i as i32);
            format!("{exact:.1e}").parse().unwrap_or(exact)
        })
    })
}

/// How many finite buckets (0.25 ms · √2³⁵ ≈ 46 s, the last before a minute).
const BUCKETS: usize = 36;

/// The outcomes a source's call is counted under.
const OUTCOMES: [&str; 3] = ["ok", "tool_error", "error"];

/// One source's counts.
#[derive(Debug)]
struct Counts {
    /// By [`OUTCOMES`].
    outcomes: [AtomicU64; 3],
    /// Calls in each bucket: over the bound before, at or under its own (the last, over every
    /// bound). Not cumulative: the encoder sums them, as it does for a `Histogram`'s.
    buckets: [AtomicU64; BUCKETS + 1],
    sum_nanos: AtomicU64,
}

impl Default for Counts {
    fn default() -> Self {
        Self {
            outcomes: Default::default(),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

/// What the console shows of one source's calls.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SourceCallSummary {
    /// Calls answered.
    pub calls: u64,
    /// Of them, those that did not end `ok` (a tool error or an error code).
    pub errors: u64,
    /// The median duration, estimated from the buckets; `None` before any call.
    pub p50: Option<Duration>,
}

/// Every source's calls.
#[derive(Debug, Default)]
pub struct SourceCalls {
    by_source: RwLock<HashMap<Arc<str>, Arc<Counts>>>,
}

impl SourceCalls {
    /// Counts one call of a tool of `source`.
    pub fn record(&self, source: &str, outcome: &Outcome, elapsed: Duration) {
        let counts = self.counts(source);
        let which = match outcome {
            Outcome::Ok => 0,
            Outcome::ToolError => 1,
            _ => 2,
        };
        counts.outcomes[which].fetch_add(1, Ordering::Relaxed);
        let secs = elapsed.as_secs_f64();
        let bucket = bucket_bounds().partition_point(|b| *b < secs);
        counts.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        counts.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn counts(&self, source: &str) -> Arc<Counts> {
        if let Some(c) = self.by_source.read().get(source) {
            return c.clone();
        }
        self.by_source
            .write()
            .entry(Arc::from(source))
            .or_default()
            .clone()
    }

    /// Starts `source`'s series at zero, so a scraper sees them from the start.
    pub fn track(&self, source: &str) {
        let _ = self.counts(source);
    }

    /// `source`'s calls so far.
    pub fn summary(&self, source: &str) -> SourceCallSummary {
        let Some(c) = self.by_source.read().get(source).cloned() else {
            return SourceCallSummary::default();
        };
        let outcomes: Vec<u64> = c
            .outcomes
            .iter()
            .map(|o| o.load(Ordering::Relaxed))
            .collect();
        let buckets: Vec<u64> = c
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        SourceCallSummary {
            calls: outcomes.iter().sum(),
            errors: outcomes[1] + outcomes[2],
            p50: median(&buckets).map(Duration::from_secs_f64),
        }
    }
}

/// The median of counts by bucket, interpolated linearly inside its bucket (the first bucket
/// from zero; past the last bound, the last bound), as `histogram_quantile` does.
fn median(buckets: &[u64]) -> Option<f64> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = total as f64 / 2.0;
    let bounds = bucket_bounds();
    let mut below = 0u64;
    for (i, n) in buckets.iter().enumerate() {
        if *n > 0 && (below + n) as f64 >= rank {
            let Some(upper) = bounds.get(i) else {
                return Some(bounds[BUCKETS - 1]);
            };
            let lower = if i == 0 { 0.0 } else { bounds[i - 1] };
            return Some(lower + (upper - lower) * (rank - below as f64) / *n as f64);
        }
        below += n;
    }
    None
}

impl Collector for SourceCalls {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut sources: Vec<(Arc<str>, Arc<Counts>)> = self
            .by_source
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        sources.sort_by(|a, b| a.0.cmp(&b.0));
        {
            let mut family = encoder.encode_descriptor(
                "source_calls",
                "Tool calls answered by each source's tools, by how they ended: ok, tool_error, or error (any error code)",
                None,
                MetricType::Counter,
            )?;
            for (source, counts) in &sources {
                for (outcome, n) in OUTCOMES.iter().zip(&counts.outcomes) {
                    let labels = [("source", &**source), ("outcome", *outcome)];
                    let metric = family.encode_family(&labels)?;
                    prometheus_client::metrics::counter::ConstCounter::new(
                        n.load(Ordering::Relaxed),
                    )
                    .encode(metric)?;
                }
            }
        }
        let mut family = encoder.encode_descriptor(
            "source_call_seconds",
            "How long each source's tool calls took, in seconds",
            None,
            MetricType::Histogram,
        )?;
        for (source, counts) in &sources {
            let labels = [("source", &**source)];
            let mut metric = family.encode_family(&labels)?;
            let buckets: Vec<(f64, u64)> = counts
                .buckets
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let bound = bucket_bounds().get(i).copied().unwrap_or(f64::INFINITY);
                    (bound, n.load(Ordering::Relaxed))
                })
                .collect();
            let count = buckets.iter().map(|(_, n)| n).sum();
            let sum = counts.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            metric.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The median lies in the bucket holding the middle call, interpolated inside it; no
    /// calls, no median.
    #[test]
    fn the_median_is_read_off_the_buckets() {
        let calls = SourceCalls::default();
        assert_eq!(calls.summary("s").p50, None);
        for ms in [1, 2, 3, 40, 50] {
            calls.record("s", &Outcome::Ok, Duration::from_millis(ms));
        }
        calls.record("s", &Outcome::ToolError, Duration::from_millis(3));
        calls.record(
            "s",
            &Outcome::Error(toolsearch::ErrorCode::Timeout),
            Duration::from_secs(90),
        );
        let s = calls.summary("s");
        assert_eq!((s.calls, s.errors), (7, 2));
        let p50 = s.p50.expect("a median").as_secs_f64();
        // The middle (4th of 7) call took 3 ms: the estimate stays within its √2-wide bucket.
        assert!((0.0025..=0.0045).contains(&p50), "{p50}");
        assert_eq!(calls.summary("other"), SourceCallSummary::default());
    }

    /// The encoded histogram is cumulative, ending at the count: what a scraper reads.
    #[test]
    fn the_encoded_histogram_is_cumulative() {
        let calls = SourceCalls::default();
        for ms in [1, 1, 30] {
            calls.record("s", &Outcome::Ok, Duration::from_millis(ms));
        }
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(Arc::new(calls)));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        let bucket = |le: &str| {
            let line = format!("source_call_seconds_bucket{{le=\"{le}\",source=\"s\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(&line))
                .unwrap_or_else(|| panic!("{line} in\n{text}"))
                .to_owned()
        };
        assert_eq!(bucket("0.00071"), "0");
        assert_eq!(bucket("0.001"), "2");
        assert_eq!(bucket("0.023"), "2");
        assert_eq!(bucket("0.032"), "3");
        assert_eq!(bucket("+Inf"), "3");
        assert!(
            text.contains("source_call_seconds_count{source=\"s\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("source_calls_total{source=\"s\",outcome=\"ok\"} 3"),
            "{text}"
        );
    }

    /// Calls past every bound count in `+Inf`, and a median there is the last bound.
    #[test]
    fn a_median_past_every_bound_is_the_last_bound() {
        let calls = SourceCalls::default();
        calls.record("slow", &Outcome::Ok, Duration::from_secs(600));
        let p50 = calls.summary("slow").p50.expect("a median");
        assert!(
            (p50.as_secs_f64() - bucket_bounds()[BUCKETS - 1]).abs() < 1e-6,
            "{p50:?}"
        );
    }
}
