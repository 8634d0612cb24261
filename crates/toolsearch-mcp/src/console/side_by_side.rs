//! One question ranked over the whole catalog with every method the gateway can run —
//! `keyword` and `bm25` always, `semantic` and `hybrid` when an embedder is configured — each
//! hit with its score and why. The operator's view: no policy hides a tool here, and no
//! caller's learned queries rank it.

use toolsearch::{Query, SearchMethod, Searcher};

use crate::Gateway;

/// Hits shown per method.
pub(super) const HITS: usize = 10;

/// One hit of one method.
#[derive(Debug, Clone)]
pub(super) struct Hit {
    /// `group/tool`.
    pub(super) name: String,
    /// The canonical name (the tool's page).
    pub(super) canonical: String,
    pub(super) score: f64,
    /// The method's reason: BM25's terms, the cosine, keyword's matched words.
    pub(super) why: String,
}

/// One method's ranking, or why it could not rank.
#[derive(Debug, Clone)]
pub(super) struct MethodRanking {
    pub(super) method: SearchMethod,
    /// How the method combines, when it does (hybrid's fusion rule and weight).
    pub(super) note: Option<String>,
    pub(super) hits: Result<Vec<Hit>, String>,
}

/// `question` ranked by every method the gateway can run.
pub(super) fn rank(gateway: &Gateway, question: &str) -> Vec<MethodRanking> {
    let engine = gateway.engine();
    let snap = engine.snapshot();
    let dir = snap.directory();
    let settings = engine.settings();
    let semantic = engine.semantic_search().map(AsRef::as_ref);
    let searcher = Searcher::new(dir, snap.index(), settings, semantic);
    let mut methods = vec![SearchMethod::Keyword, SearchMethod::Bm25];
    if semantic.is_some() {
        methods.extend([SearchMethod::Semantic, SearchMethod::Hybrid]);
    }
    let mut ranked: Vec<MethodRanking> = methods
        .into_iter()
        .map(|method| {
            let hits = searcher
                .rank(&Query::new(question, method, HITS))
                .map(|ranking| {
                    ranking
                        .hits
                        .iter()
                        .map(|h| {
                            let t = dir.tool(h.tool);
                            Hit {
                                name: format!("{}/{}", dir.group_of(h.tool).name, t.name),
                                canonical: t.canonical.clone(),
                                score: h.score,
                                why: searcher.explain(method, question, h.tool),
                            }
                        })
                        .collect()
                })
                .map_err(|e| e.to_string());
            let note = (method == SearchMethod::Hybrid).then(|| {
                let h = &settings.hybrid;
                match h.fusion {
                    toolsearch::Fusion::Rrf => format!(
                        "fusion rrf: Σ weight / ({} + rank), semantic weight {}",
                        h.rrf_k, h.semantic_weight
                    ),
                    other => format!(
                        "fusion {}: semantic weight {}",
                        other.as_str(),
                        h.semantic_weight
                    ),
                }
            });
            MethodRanking { method, note, hits }
        })
        .collect();
    with_sides(&mut ranked);
    ranked
}

/// Each hybrid hit says where its two sides placed it (`bm25 #2, semantic #1`, or `below
/// HITS`): what the fusion weighed.
fn with_sides(ranked: &mut [MethodRanking]) {
    let place = |method: SearchMethod, canonical: &str| -> String {
        let side = ranked
            .iter()
            .find(|m| m.method == method)
            .and_then(|m| m.hits.as_ref().ok())
            .and_then(|hits| hits.iter().position(|h| h.canonical == canonical));
        match side {
            Some(i) => format!("{} #{}", method.as_str(), i + 1),
            None => format!("{} below {HITS}", method.as_str()),
        }
    };
    let places: Vec<String> = ranked
        .iter()
        .find(|m| m.method == SearchMethod::Hybrid)
        .and_then(|m| m.hits.as_ref().ok())
        .map(|hits| {
            hits.iter()
                .map(|h| {
                    format!(
                        "{}, {}",
                        place(SearchMethod::Bm25, &h.canonical),
                        place(SearchMethod::Semantic, &h.canonical)
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(Ok(hits)) = ranked
        .iter_mut()
        .find(|m| m.method == SearchMethod::Hybrid)
        .map(|m| m.hits.as_mut())
    {
        for (h, place) in hits.iter_mut().zip(places) {
            h.why = format!("fused from {place}; {}", h.why);
        }
    }
}
