//! Retrieval quality: queries with known relevant tools, ranked by a method, scored with the
//! docs/reference.md metrics (Recall@k, nDCG@10 with binary gains, MRR) and timed.
//!
//! Choices where docs/reference.md is silent:
//! - Each query is ranked to depth [`DEPTH`] (20); MRR counts a first relevant hit within it
//!   (0 otherwise), and recall@k is kept for k = 1..=20 (for plots).
//! - A relevant id that is not in the catalog stays in its query's denominator (it can never be
//!   found); [`Report::unknown_relevant`] counts them so a data mismatch is visible.
//! - Latency is the ranking call alone, per query, in microseconds; p50/p99 are nearest-rank
//!   percentiles.
//! - [`Split`]: a query belongs to the train half when the FNV-1a hash of its id is even, so
//!   parameters can be tuned on one half and reported on the other.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::catalog::{Directory, ToolId};
use crate::config::SearchMethod;
use crate::search::{self, SearchError, Searcher};

/// Ranking depth per query.
pub const DEPTH: usize = 20;

/// One evaluation query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct LabelledQuery {
    /// Its id.
    pub id: String,
    /// The text searched.
    pub query: String,
    /// Relevant tools as `group/tool`.
    pub relevant: Vec<String>,
}

/// A problem with a queries file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The file cannot be read.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a query object.
    #[error("{file}:{line}: {message}")]
    Line {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A query's ranking could not be written out.
    #[error("cannot write the rankings: {0}")]
    Rankings(#[source] std::io::Error),
    /// The method cannot search.
    #[error(transparent)]
    Search(#[from] SearchError),
}

/// Which queries to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Split {
    /// All of them.
    #[default]
    All,
    /// Those whose id hashes even.
    Train,
    /// Those whose id hashes odd.
    Test,
}

impl Split {
    /// Parses `all`, `train` or `test`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "all" => Some(Self::All),
            "train" => Some(Self::Train),
            "test" => Some(Self::Test),
            _ => None,
        }
    }

    /// Whether the query with this id is in the split.
    pub fn contains(self, id: &str) -> bool {
        let h = crate::text::fnv1a(id);
        match self {
            Self::All => true,
            Self::Train => h.is_multiple_of(2),
            Self::Test => !h.is_multiple_of(2),
        }
    }
}

/// Reads a `queries.jsonl` file (blank lines skipped), keeping the queries of `split`.
pub fn load_queries(path: &Path, split: Split) -> Result<Vec<LabelledQuery>, EvalError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        file: file.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let q: LabelledQuery = serde_json::from_str(line).map_err(|e| EvalError::Line {
            file: file.clone(),
            line: i + 1,
            message: format!("not a query object {{\"id\", \"query\", \"relevant\"}}: {e}"),
        })?;
        if split.contains(&q.id) {
            out.push(q);
        }
    }
    Ok(out)
}

/// The scores of one method on one query set.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The method.
    pub method: String,
    /// Tools in the catalog.
    pub tools: usize,
    /// Queries evaluated.
    pub queries: usize,
    /// Time to build the method's index from the loaded catalog, in milliseconds.
    pub build_ms: f64,
    /// Recall@k for k = 1..=[`DEPTH`] (index k-1).
    pub recall: Vec<f64>,
    /// nDCG@10, binary gains.
    pub ndcg10: f64,
    /// Mean reciprocal rank of the first relevant tool (within [`DEPTH`]).
    pub mrr: f64,
    /// Median latency of one ranking, µs.
    pub p50_us: f64,
    /// 99th-percentile latency, µs.
    pub p99_us: f64,
    /// Relevant ids absent from the catalog.
    pub unknown_relevant: usize,
}

impl Report {
    /// Recall@k (k in 1..=DEPTH).
    pub fn recall_at(&self, k: usize) -> f64 {
        self.recall[k.clamp(1, DEPTH) - 1]
    }

    /// The `--json` object of docs/reference.md, keys in its order.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "method": self.method,
            "tools": self.tools,
            "queries": self.queries,
            "build_ms": round(self.build_ms, 3),
            "recall@1": round(self.recall_at(1), 4),
            "recall@5": round(self.recall_at(5), 4),
            "recall@10": round(self.recall_at(10), 4),
            "ndcg@10": round(self.ndcg10, 4),
            "mrr": round(self.mrr, 4),
            "p50_us": round(self.p50_us, 1),
            "p99_us": round(self.p99_us, 1),
        })
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Accumulates the metrics of rankings produced by anything (this crate's methods, or a peer
/// in a benchmark), so every system is scored by the same code.
#[derive(Debug, Clone, Default)]
pub struct Scorer {
    recall: Vec<f64>,
    ndcg: f64,
    mrr: f64,
    times: Vec<f64>,
    queries: usize,
}

impl Scorer {
    /// An empty scorer.
    pub fn new() -> Self {
        Self {
            recall: vec![0.0; DEPTH],
            ..Self::default()
        }
    }

    /// Adds one query: its relevant ids, the ranked ids (best first, only the first
    /// [`DEPTH`] count), and how long the ranking took in µs.
    pub fn add<R: AsRef<str>>(&mut self, relevant: &[String], ranked: &[R], micros: f64) {
        self.queries += 1;
        self.times.push(micros);
        if relevant.is_empty() {
            return;
        }
        // A tool ranked twice is found once: only its first place counts.
        let ranked: Vec<&str> = ranked.iter().take(DEPTH).map(AsRef::as_ref).collect();
        let is_rel: Vec<bool> = ranked
            .iter()
            .enumerate()
            .map(|(i, r)| relevant.iter().any(|x| x == r) && !ranked[..i].contains(r))
            .collect();
        let n_rel = relevant.len() as f64;
        let mut found = 0usize;
        for (k, slot) in self.recall.iter_mut().enumerate() {
            if is_rel.get(k).copied().unwrap_or(false) {
                found += 1;
            }
            *slot += found as f64 / n_rel;
        }
        let dcg: f64 = is_rel
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, r)| **r)
            .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
            .sum();
        let ideal: f64 = (0..relevant.len().min(10))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        self.ndcg += dcg / ideal;
        if let Some(first) = is_rel.iter().position(|r| *r) {
            self.mrr += 1.0 / (first + 1) as f64;
        }
    }

    /// The report.
    pub fn finish(mut self, method: &str, tools: usize, build_ms: f64) -> Report {
        let n = self.queries.max(1) as f64;
        self.times.sort_by(f64::total_cmp);
        let times = &self.times;
        let pct = |p: f64| {
            if times.is_empty() {
                0.0
            } else {
                // Nearest rank: the smallest value with at least p of the samples at or below.
                let rank = (p * times.len() as f64).ceil() as usize;
                times[rank.clamp(1, times.len()) - 1]
            }
        };
        Report {
            method: method.to_owned(),
            tools,
            queries: self.queries,
            build_ms,
            recall: self.recall.iter().map(|r| r / n).collect(),
            ndcg10: self.ndcg / n,
            mrr: self.mrr / n,
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            unknown_relevant: 0,
        }
    }
}

/// One query's ranking as `eval --rankings` writes it: what was asked, what is relevant, what
/// came first, and where each relevant tool came.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Ranking<'a> {
    /// The method that ranked.
    pub method: &'a str,
    /// The query's id.
    pub id: &'a str,
    /// The text searched.
    pub query: &'a str,
    /// Each relevant tool (`group/tool`) with its 1-based rank within [`DEPTH`], or `None`
    /// when it was not ranked that high (or is not in the catalog).
    pub relevant: Vec<(&'a str, Option<usize>)>,
    /// The first ten tools ranked, best first.
    pub top: &'a [String],
}

impl<'a> Ranking<'a> {
    /// The ranking of `query` by `method`, from its ranked `group/tool` ids.
    pub fn new(method: &'a str, query: &'a LabelledQuery, ranked: &'a [String]) -> Self {
        let depth = ranked.len().min(DEPTH);
        Self {
            method,
            id: &query.id,
            query: &query.query,
            relevant: query
                .relevant
                .iter()
                .map(|r| {
                    let rank = ranked[..depth].iter().position(|x| x == r).map(|i| i + 1);
                    (r.as_str(), rank)
                })
                .collect(),
            top: &ranked[..ranked.len().min(10)],
        }
    }

    /// The JSON line: `{"method", "id", "query", "relevant": [{"tool", "rank"}], "top"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "method": self.method,
            "id": self.id,
            "query": self.query,
            "relevant": self
                .relevant
                .iter()
                .map(|(tool, rank)| serde_json::json!({"tool": tool, "rank": rank}))
                .collect::<Vec<_>>(),
            "top": self.top,
        })
    }
}

/// Ranks every query with `method` and scores the rankings (a query's latency includes
/// embedding it, for `semantic` and `hybrid`). `build_ms` is the caller's
/// measurement of building the index (it is only reported). `seen` gets each query's
/// ranking, after it is timed.
pub fn evaluate(
    search: &Searcher<'_, Directory>,
    method: SearchMethod,
    queries: &[LabelledQuery],
    build_ms: f64,
    mut seen: impl FnMut(Ranking<'_>) -> std::io::Result<()>,
) -> Result<Report, EvalError> {
    let dir = search.corpus();
    let mut scorer = Scorer::new();
    let mut unknown = 0;
    for q in queries {
        unknown += q
            .relevant
            .iter()
            .filter(|r| {
                r.split_once('/')
                    .and_then(|(g, t)| dir.tool_id(g, t))
                    .is_none()
            })
            .count();
        let started = Instant::now();
        let hits = search
            .rank(&search::Query::new(&q.query, method, DEPTH))?
            .hits;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        let ids: Vec<String> = hits.iter().map(|h| tool_key(dir, h.tool)).collect();
        scorer.add(&q.relevant, &ids, micros);
        seen(Ranking::new(method.as_str(), q, &ids)).map_err(EvalError::Rankings)?;
    }
    let mut report = scorer.finish(method.as_str(), dir.tools().len(), build_ms);
    report.unknown_relevant = unknown;
    Ok(report)
}

/// A tool's `group/tool` key, as queries files name relevant tools.
pub fn tool_key(dir: &Directory, id: ToolId) -> String {
    format!("{}/{}", dir.group_of(id).name, dir.tool(id).name)
}

/// An SVG line chart of recall@k (k = 1..=20), one line per report.
pub fn recall_plot_svg(reports: &[Report], title: &str) -> String {
    const W: f64 = 640.0;
    const H: f64 = 400.0;
    const L: f64 = 56.0;
    const R: f64 = 150.0;
    const T: f64 = 40.0;
    const B: f64 = 48.0;
    const COLORS: [&str; 6] = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    ];
    let x = |k: usize| L + (k as f64 - 1.0) / (DEPTH as f64 - 1.0) * (W - L - R);
    let y = |v: f64| T + (1.0 - v) * (H - T - B);
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n",
        (W - R + L) / 2.0,
        esc(title)
    );
    for i in 0..=10 {
        let v = f64::from(i) / 10.0;
        svg.push_str(&format!(
            "<line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.1}</text>\n",
            W - R,
            L - 6.0,
            y(v) + 4.0,
            y = y(v)
        ));
    }
    for k in [1usize, 5, 10, 15, 20] {
        svg.push_str(&format!(
            "<line x1=\"{x:.1}\" y1=\"{T}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{k}</text>\n",
            H - B,
            H - B + 16.0,
            x = x(k)
        ));
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">k</text>\n<text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">recall@k</text>\n",
        (W - R + L) / 2.0,
        H - 12.0,
        (H - B + T) / 2.0
    ));
    for (i, r) in reports.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<String> = (1..=DEPTH)
            .map(|k| format!("{:.1},{:.1}", x(k), y(r.recall_at(k))))
            .collect();
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>\n",
            points.join(" "),
            esc(&r.method)
        ));
        let ly = T + 10.0 + i as f64 * 20.0;
        svg.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{} (R@5 {:.3})</text>\n",
            W - R + 12.0,
            W - R + 32.0,
            W - R + 38.0,
            ly + 4.0,
            esc(&r.method),
            r.recall_at(5)
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(relevant: &[&str]) -> LabelledQuery {
        LabelledQuery {
            id: "q1".to_owned(),
            query: "find it".to_owned(),
            relevant: relevant.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    #[test]
    fn a_ranking_gives_each_relevant_tool_its_rank_and_the_first_ten() {
        let ranked: Vec<String> = (1..=DEPTH + 5).map(|i| format!("g/t{i}")).collect();
        let q = query(&["g/t3", "g/t20", "g/t21", "other/x"]);
        let r = Ranking::new("bm25", &q, &ranked);
        assert_eq!(
            r.relevant,
            [
                ("g/t3", Some(3)),
                ("g/t20", Some(20)),
                // Ranked, but below the depth that eval measures.
                ("g/t21", None),
                ("other/x", None)
            ]
        );
        assert_eq!(r.top, &ranked[..10]);
        assert_eq!(
            r.to_json(),
            serde_json::json!({
                "method": "bm25",
                "id": "q1",
                "query": "find it",
                "relevant": [
                    {"tool": "g/t3", "rank": 3},
                    {"tool": "g/t20", "rank": 20},
                    {"tool": "g/t21", "rank": null},
                    {"tool": "other/x", "rank": null}
                ],
                "top": ranked[..10],
            })
        );
        // A short ranking: all of it is the top, and a tool ranked twice has its first place.
        let short = ["g/a".to_owned(), "g/b".to_owned(), "g/a".to_owned()];
        let r = Ranking::new("hybrid", &q, &short);
        assert_eq!(r.top, &short);
        let q = query(&["g/a"]);
        assert_eq!(
            Ranking::new("hybrid", &q, &short).relevant,
            [("g/a", Some(1))]
        );
    }
}
