//! The engine's settings as plain data: the surface, the search method and its parameters,
//! the page limits and the control names, with every problem they have.

use super::range::outside;
use super::search_settings::BM25_FIELDS;
use super::{
    Bm25Params, CodeActSettings, EmbeddingSettings, HybridParams, MAX_RESULTS_RANGE,
    MAX_SEARCH_BYTES_RANGE, SearchMethod, Surface,
};
use crate::catalog::name::is_valid_control_name;
use crate::problem::Problems;

/// The names of every control (configurable under `[names]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlNames {
    /// `discover_tools`.
    pub discover: String,
    /// `describe_tool`.
    pub describe: String,
    /// `call_tool`.
    pub call: String,
    /// `list_tools`.
    pub list: String,
    /// `list_tool_groups`.
    pub list_groups: String,
    /// `search_proxy_tools`.
    pub search_proxy: String,
    /// `call_proxy_tool`.
    pub call_proxy: String,
    /// `search_capabilities`.
    pub search_capabilities: String,
    /// `invoke_tool`.
    pub invoke: String,
    /// `get_skill_content`.
    pub get_skill: String,
    /// `run_code` (CodeAct).
    pub run_code: String,
    /// `run_program` (CodeAct).
    pub run_program: String,
}

impl Default for ControlNames {
    fn default() -> Self {
        Self {
            discover: "discover_tools".into(),
            describe: "describe_tool".into(),
            call: "call_tool".into(),
            list: "list_tools".into(),
            list_groups: "list_tool_groups".into(),
            search_proxy: "search_proxy_tools".into(),
            call_proxy: "call_proxy_tool".into(),
            search_capabilities: "search_capabilities".into(),
            invoke: "invoke_tool".into(),
            get_skill: "get_skill_content".into(),
            run_code: "run_code".into(),
            run_program: "run_program".into(),
        }
    }
}

impl ControlNames {
    /// `(config key, name)` of the controls a surface shows.
    pub fn for_surface(&self, surface: Surface) -> Vec<(&'static str, &str)> {
        match surface {
            Surface::Toolsearch => vec![
                ("discover", &self.discover),
                ("describe", &self.describe),
                ("call", &self.call),
                ("list", &self.list),
                ("list_groups", &self.list_groups),
            ],
            Surface::Toolproxy => vec![
                ("search_proxy", &self.search_proxy),
                ("call_proxy", &self.call_proxy),
            ],
            Surface::Capabilities => vec![
                ("search_capabilities", &self.search_capabilities),
                ("invoke", &self.invoke),
                ("get_skill", &self.get_skill),
            ],
        }
    }

    /// `(config key, name)` of every control shown: the surface's, then `run_code` and
    /// `run_program` when `codeact` offers them.
    pub fn shown(&self, surface: Surface, codeact: &CodeActSettings) -> Vec<(&'static str, &str)> {
        let mut names = self.for_surface(surface);
        if codeact.enabled {
            names.push(("run_code", &self.run_code));
        }
        if codeact.offers_programs() {
            names.push(("run_program", &self.run_program));
        }
        names
    }

    /// Problems with the names shown (see [`shown`](Self::shown)): pattern, and distinctness.
    pub fn problems(&self, surface: Surface, codeact: &CodeActSettings) -> Problems {
        let mut out = Problems::new();
        let names = self.shown(surface, codeact);
        for (i, (key, name)) in names.iter().enumerate() {
            if !is_valid_control_name(name) {
                out.add(
                    format!("names.{key}"),
                    format!(
                        "{name:?} is not a valid control name ([A-Za-z_][A-Za-z0-9_-]{{0,63}})"
                    ),
                );
            }
            if let Some((other, _)) = names[..i].iter().find(|(_, n)| n == name) {
                out.add(
                    format!("names.{key}"),
                    format!("{name:?} is also the name of names.{other}"),
                );
            }
        }
        out
    }
}

/// Engine settings: surface, search method, limits and control names.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// The surface served.
    pub surface: Surface,
    /// The method `discover_tools` ranks with.
    pub method: SearchMethod,
    /// Largest page (1..=100, default 10).
    pub max_results: usize,
    /// Largest response in bytes of compact UTF-8 JSON (1024..=32768, default 32768).
    pub max_search_bytes: usize,
    /// Control names.
    pub names: ControlNames,
    /// BM25 parameters (`[search.bm25]`).
    pub bm25: Bm25Params,
    /// The embedding model and cache of `semantic` and `hybrid` (`[search.semantic]`).
    pub semantic: EmbeddingSettings,
    /// How `hybrid` fuses BM25 and semantic (`[search.hybrid]`).
    pub hybrid: HybridParams,
    /// CodeAct (`[codeact]`): off by default.
    pub codeact: CodeActSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            surface: Surface::Toolsearch,
            method: SearchMethod::Keyword,
            max_results: 10,
            max_search_bytes: 32768,
            names: ControlNames::default(),
            bm25: Bm25Params::default(),
            semantic: EmbeddingSettings::default(),
            hybrid: HybridParams::default(),
            codeact: CodeActSettings::default(),
        }
    }
}

impl Settings {
    /// Sets `max_results`.
    pub fn with_max_results(mut self, n: usize) -> Self {
        self.max_results = n;
        self
    }

    /// Sets `max_search_bytes`.
    pub fn with_max_search_bytes(mut self, n: usize) -> Self {
        self.max_search_bytes = n;
        self
    }

    /// Sets the search method of `discover_tools` (and the other search controls).
    pub fn with_method(mut self, method: SearchMethod) -> Self {
        self.method = method;
        self
    }

    /// Sets the BM25 parameters.
    pub fn with_bm25(mut self, params: Bm25Params) -> Self {
        self.bm25 = params;
        self
    }

    /// Sets the surface.
    pub fn with_surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// Sets the CodeAct settings.
    pub fn with_codeact(mut self, codeact: CodeActSettings) -> Self {
        self.codeact = codeact;
        self
    }

    /// Sets the control names.
    pub fn with_names(mut self, names: ControlNames) -> Self {
        self.names = names;
        self
    }

    /// Every problem with these settings.
    pub fn problems(&self) -> Problems {
        let mut out = Problems::new();
        out.extend(outside(
            "search.max_results",
            self.max_results,
            &MAX_RESULTS_RANGE,
        ));
        out.extend(outside(
            "search.max_search_bytes",
            self.max_search_bytes,
            &MAX_SEARCH_BYTES_RANGE,
        ));
        let p = &self.bm25;
        out.extend(outside("search.bm25.k1", p.k1, &(0.0..=10.0)));
        for ((w, b), f) in p.weights.iter().zip(&p.b).zip(BM25_FIELDS) {
            out.extend(outside(&format!("search.bm25.{f}"), *w, &(0.0..=100.0)));
            out.extend(outside(&format!("search.bm25.b_{f}"), *b, &(0.0..=1.0)));
        }
        if let Some(n) = self.semantic.max_tokens {
            out.extend(outside("search.semantic.max_tokens", n, &(8..=8192)));
        }
        if let Some(m) = self.semantic.min_similarity {
            out.extend(outside("search.semantic.min_similarity", m, &(-1.0..=1.0)));
        }
        let h = &self.hybrid;
        out.extend(outside(
            "search.hybrid.semantic_weight",
            h.semantic_weight,
            &(0.0..=1.0),
        ));
        out.extend(outside("search.hybrid.rrf_k", h.rrf_k, &(0.0..=1000.0)));
        if !(h.confidence_scale.is_finite() && h.confidence_scale > 0.0) {
            out.add(
                "search.hybrid.confidence_scale",
                format!("{} is not a positive number", h.confidence_scale),
            );
        }
        out.extend(outside(
            "search.hybrid.confidence_slope",
            h.confidence_slope,
            &(0.0..=100.0),
        ));
        out.extend(self.codeact.problems());
        out.extend(self.names.problems(self.surface, &self.codeact));
        out
    }
}
