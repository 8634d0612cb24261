//! The gateway's Prometheus metrics (`prometheus-client`): what the engine reports of each
//! tool call and search ([`Observer`]), upstream state and restarts, open sessions — rendered
//! in the Prometheus text format (or OpenMetrics, when the scraper asks for it).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `toolsearch_tool_calls_total` | counter | `group`, `tool`, `outcome` |
//! | `toolsearch_tool_call_seconds` | histogram | `group`, `tool` |
//! | `toolsearch_searches_total` | counter | `control`, `method`, `found` (`some` \| `none`) |
//! | `toolsearch_upstream_up` | gauge | `source` |
//! | `toolsearch_upstream_restarts_total` | counter | `source` |
//! | `toolsearch_source_calls_total` | counter | `source`, `outcome` (`ok` \| `tool_error` \| `error`) |
//! | `toolsearch_source_call_seconds` | histogram | `source` |
//! | `toolsearch_sessions` | gauge | — |
//!
//! Label values are bounded: tool, group, control and source names exist in the config or the
//! catalog (a call that names no existing tool counts under `tool=""`), outcomes are `ok`,
//! `tool_error` or an error code; no query, argument value or caller name is ever a label.

mod source_calls;

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, OnceLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use toolsearch::{CallEvent, Observer, Outcome, SearchEvent};

pub use source_calls::{SourceCallSummary, SourceCalls};

/// The `Content-Type` of the Prometheus text format the gateway answers by default.
pub const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
/// The `Content-Type` of the OpenMetrics text format, answered to a scraper that asks for it.
pub const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds (seconds) of the call latency buckets: a millisecond to the default timeout.
const CALL_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    group: String,
    tool: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    group: String,
    tool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SearchLabels {
    control: String,
    method: &'static str,
    found: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

fn call_histogram() -> Histogram {
    Histogram::new(CALL_BUCKETS)
}

/// One tool's series, kept by name so that recording a call builds no labels: the families'
/// own handles (a clone shares the series), each made on the tool's first call that needs it.
#[derive(Debug)]
struct ToolSeries {
    seconds: Histogram,
    ok: OnceLock<Counter>,
    tool_error: OnceLock<Counter>,
}

/// Tools' series by group (`""` for none), then tool.
type SeriesByTool = HashMap<String, HashMap<String, ToolSeries>>;

/// Every metric of one gateway.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<ToolLabels, Histogram, fn() -> Histogram>,
    /// The series of the tools called so far (bounded, as their labels are).
    series: RwLock<SeriesByTool>,
    searches: Family<SearchLabels, Counter>,
    upstream_up: Family<SourceLabels, Gauge>,
    restarts: Family<SourceLabels, Counter>,
    sessions: Gauge,
    /// Each source's calls, read by the console too.
    source_calls: Arc<SourceCalls>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("toolsearch");
        let calls = Family::<CallLabels, Counter>::default();
        let call_seconds: Family<ToolLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(call_histogram);
        let searches = Family::<SearchLabels, Counter>::default();
        let upstream_up = Family::<SourceLabels, Gauge>::default();
        let restarts = Family::<SourceLabels, Counter>::default();
        let sessions = Gauge::default();
        registry.register(
            "tool_calls",
            "Tool calls answered, by the tool reached (a call control's target, or the control or direct tool called) and how they ended: ok, tool_error, or an error code",
            calls.clone(),
        );
        registry.register(
            "tool_call_seconds",
            "How long tool calls took, in seconds, by the tool reached",
            call_seconds.clone(),
        );
        registry.register(
            "searches",
            "Searches of the discovery controls, by control, method, and whether they found anything (some or none)",
            searches.clone(),
        );
        registry.register(
            "upstream_up",
            "1 when the source is ready (an upstream connected, or a static catalog), else 0",
            upstream_up.clone(),
        );
        registry.register(
            "upstream_restarts",
            "Times an upstream was reconnected after it stopped or failed to connect",
            restarts.clone(),
        );
        registry.register("sessions", "MCP sessions open", sessions.clone());
        let source_calls = Arc::new(SourceCalls::default());
        registry.register_collector(Box::new(source_calls.clone()));
        Self {
            registry,
            calls,
            call_seconds,
            series: RwLock::default(),
            searches,
            upstream_up,
            restarts,
            sessions,
            source_calls,
        }
    }
}

impl Metrics {
    /// Counts a reconnection attempt of upstream `source`.
    pub fn restarted(&self, source: &str) {
        self.restarts
            .get_or_create(&SourceLabels {
                source: source.to_owned(),
            })
            .inc();
    }

    /// Counts one session open until the guard is dropped.
    pub fn session(&self) -> SessionGuard {
        self.sessions.inc();
        SessionGuard(self.sessions.clone())
    }

    /// Starts every source's restart counter at 0, so a scraper sees the series from the start.
    pub fn track_source(&self, source: &str) {
        let _ = self.restarts.get_or_create(&SourceLabels {
            source: source.to_owned(),
        });
        self.source_calls.track(source);
    }

    /// Times upstream `source` was reconnected (the counter `/metrics` shows).
    pub fn restarts(&self, source: &str) -> u64 {
        self.restarts
            .get_or_create(&SourceLabels {
                source: source.to_owned(),
            })
            .get()
    }

    /// Each source's calls (the series `/metrics` shows).
    pub fn source_calls(&self) -> &SourceCalls {
        &self.source_calls
    }

    /// The metrics as text, with the sources' readiness `(name, ready)` as of now; OpenMetrics
    /// when `openmetrics`, else the Prometheus text format.
    pub fn render<'a>(
        &self,
        sources: impl IntoIterator<Item = (&'a str, bool)>,
        openmetrics: bool,
    ) -> String {
        self.upstream_up.clear();
        for (name, up) in sources {
            self.upstream_up
                .get_or_create(&SourceLabels {
                    source: name.to_owned(),
                })
                .set(i64::from(up));
        }
        let mut out = String::new();
        let written = if openmetrics {
            prometheus_client::encoding::text::encode(&mut out, &self.registry)
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
        };
        if let Err(e) = written {
            // Writing into a String cannot fail; say so if it ever does.
            tracing::error!(error = %e, "encoding the metrics failed");
        }
        out
    }
}

impl Metrics {
    /// The counter of `group`/`tool`'s calls that ended with `outcome`, through the family.
    fn outcome_counter(&self, group: &str, tool: &str, outcome: &str) -> Counter {
        self.calls
            .get_or_create(&CallLabels {
                group: group.to_owned(),
                tool: tool.to_owned(),
                outcome: outcome.to_owned(),
            })
            .clone()
    }

    /// Records one call of a tool whose series exist.
    fn record(&self, series: &ToolSeries, event: &CallEvent<'_>, group: &str) {
        series.seconds.observe(event.elapsed.as_secs_f64());
        let counter = match &event.outcome {
            Outcome::Ok => &series.ok,
            Outcome::ToolError => &series.tool_error,
            // An error code (rarer), or a label the gateway never sees (`deferred`: its
            // tools run upstream): through the family.
            other => {
                self.outcome_counter(group, event.tool, other.as_str())
                    .inc();
                return;
            }
        };
        counter
            .get_or_init(|| self.outcome_counter(group, event.tool, event.outcome.as_str()))
            .inc();
    }
}

impl Observer for Metrics {
    fn call(&self, event: &CallEvent<'_>) {
        if let Some(source) = event.source {
            self.source_calls
                .record(source, &event.outcome, event.elapsed);
        }
        let group = event.group.unwrap_or_default();
        {
            let series = self.series.read();
            if let Some(s) = series.get(group).and_then(|tools| tools.get(event.tool)) {
                self.record(s, event, group);
                return;
            }
        }
        let seconds = self
            .call_seconds
            .get_or_create(&ToolLabels {
                group: group.to_owned(),
                tool: event.tool.to_owned(),
            })
            .clone();
        let mut series = self.series.write();
        let s = series
            .entry(group.to_owned())
            .or_default()
            .entry(event.tool.to_owned())
            .or_insert_with(|| ToolSeries {
                seconds,
                ok: OnceLock::new(),
                tool_error: OnceLock::new(),
            });
        self.record(s, event, group);
    }

    fn search(&self, event: &SearchEvent<'_>) {
        self.searches
            .get_or_create(&SearchLabels {
                control: event.control.to_owned(),
                method: event.method.as_str(),
                found: if event.found { "some" } else { "none" },
            })
            .inc();
    }
}

/// One open session, counted in `toolsearch_sessions` until dropped.
#[derive(Debug)]
pub struct SessionGuard(Gauge<i64, AtomicI64>);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolsearch::ErrorCode;

    use super::*;

    fn call(m: &Metrics, group: Option<&str>, tool: &str, outcome: Outcome) {
        m.call(&CallEvent::new(
            group,
            tool,
            outcome,
            Duration::from_millis(3),
        ));
    }

    /// The kept handles share the families' series: every call counts once, in the series of
    /// its own tool and outcome, and only outcomes that happened are exposed.
    #[test]
    fn each_call_counts_once_in_its_own_series() {
        let m = Metrics::default();
        call(&m, Some("g"), "t", Outcome::Ok);
        call(&m, Some("g"), "t", Outcome::Ok);
        call(&m, Some("g"), "t", Outcome::ToolError);
        call(&m, Some("g"), "t", Outcome::Error(ErrorCode::Timeout));
        call(&m, Some("g"), "u", Outcome::Ok);
        call(&m, None, "search_tools", Outcome::Ok);
        let text = m.render([], false);
        for line in [
            r#"toolsearch_tool_calls_total{group="g",tool="t",outcome="ok"} 2"#,
            r#"toolsearch_tool_calls_total{group="g",tool="t",outcome="tool_error"} 1"#,
            r#"toolsearch_tool_calls_total{group="g",tool="t",outcome="timeout"} 1"#,
            r#"toolsearch_tool_calls_total{group="g",tool="u",outcome="ok"} 1"#,
            r#"toolsearch_tool_calls_total{group="",tool="search_tools",outcome="ok"} 1"#,
            r#"toolsearch_tool_call_seconds_count{group="g",tool="t"} 4"#,
            r#"toolsearch_tool_call_seconds_count{group="g",tool="u"} 1"#,
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(
            !text.contains(r#"tool="u",outcome="tool_error""#),
            "an outcome that never happened has no series:\n{text}"
        );
    }
}
