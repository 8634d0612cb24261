//! The engine settings of a config file — `surface`, `[search]` (with `bm25`, `semantic`,
//! `hybrid`) and `[names]` — validated into [`Settings`], every problem with its key path.

use std::ops::RangeInclusive;
use std::path::Path;

use super::raw::{RawCodeAct, RawConfig};
use toolsearch::{
    CodeActSettings, ControlNames, Fusion, MAX_RESULTS_RANGE, MAX_SEARCH_BYTES_RANGE, SearchMethod,
    Surface, outside,
};
use toolsearch::{Problems, Settings};

/// The settings `raw` gives (defaults where it is silent); problems are appended.
pub(super) fn settings(raw: &mut RawConfig, base: &Path, problems: &mut Problems) -> Settings {
    let mut settings = Settings::default();
    if let Some(s) = &raw.surface {
        match Surface::parse(s) {
            Some(v) => settings.surface = v,
            None => problems.add(
                "surface",
                format!("{s:?} is not one of toolsearch, toolproxy, capabilities"),
            ),
        }
    }
    if settings.surface == Surface::Capabilities {
        settings.method = SearchMethod::Bm25;
    }
    let search = raw.search.take().unwrap_or_default();
    if let Some(m) = &search.method {
        match SearchMethod::parse(m) {
            Some(v) => settings.method = v,
            None => problems.add(
                "search.method",
                format!("{m:?} is not one of keyword, bm25, semantic, hybrid"),
            ),
        }
    }
    // A value no `usize` holds (negative) is reported as given; the range check of
    // `Settings::problems` reports the rest.
    let mut int = |key: &str,
                   v: Option<i64>,
                   default: usize,
                   range: &std::ops::RangeInclusive<usize>| match v {
        None => default,
        Some(n) => usize::try_from(n).unwrap_or_else(|_| {
            let range = *range.start() as i64..=*range.end() as i64;
            problems.extend(outside(&format!("search.{key}"), n, &range));
            default
        }),
    };
    settings.max_results = int(
        "max_results",
        search.max_results,
        settings.max_results,
        &MAX_RESULTS_RANGE,
    );
    settings.max_search_bytes = int(
        "max_search_bytes",
        search.max_search_bytes,
        settings.max_search_bytes,
        &MAX_SEARCH_BYTES_RANGE,
    );
    if let Some(b) = &search.bm25 {
        let p = &mut settings.bm25;
        let set = |slot: &mut f32, v: Option<f64>| {
            if let Some(v) = v {
                *slot = v as f32;
            }
        };
        set(&mut p.k1, b.k1);
        for (slot, v) in p.b.iter_mut().zip([
            b.b_name.or(b.b),
            b.b_description.or(b.b),
            b.b_parameters.or(b.b),
            b.b_group.or(b.b),
        ]) {
            set(slot, v);
        }
        for (slot, v) in p
            .weights
            .iter_mut()
            .zip([b.name, b.description, b.parameters, b.group])
        {
            set(slot, v);
        }
    }
    if let Some(sem) = &search.semantic {
        let e = &mut settings.semantic;
        let blank = |k: &str, v: &Option<String>, problems: &mut Problems| {
            if v.as_deref().is_some_and(|v| v.trim().is_empty()) {
                problems.add(format!("search.semantic.{k}"), "must not be empty");
            }
        };
        blank("model", &sem.model, problems);
        blank("url", &sem.url, problems);
        blank("api_key_env", &sem.api_key_env, problems);
        blank("cache_dir", &sem.cache_dir, problems);
        match &sem.url {
            Some(url) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problems.add(
                        "search.semantic.url",
                        format!("{url:?} is not an http:// or https:// address"),
                    );
                }
                if sem.model.is_none() {
                    problems.add(
                        "search.semantic.model",
                        "an endpoint (url) needs the model name it serves",
                    );
                }
                e.url = Some(url.clone());
                e.endpoint_model = sem.model.clone();
            }
            None => {
                if sem.api_key_env.is_some() {
                    problems.add(
                        "search.semantic.api_key_env",
                        "only an endpoint (url) takes a key",
                    );
                }
                e.model = sem.model.as_deref().map(|m| base.join(m));
            }
        }
        e.api_key_env = sem.api_key_env.clone();
        e.cache_dir = sem.cache_dir.as_deref().map(|d| base.join(d));
        e.min_similarity = sem.min_similarity.map(|v| v as f32);
        e.sentences = sem.sentences;
        e.max_tokens = sem.max_tokens.map(|n| usize::try_from(n).unwrap_or(0));
    }
    if let Some(h) = &search.hybrid {
        let p = &mut settings.hybrid;
        if let Some(f) = &h.fusion {
            match Fusion::parse(f) {
                Some(v) => p.fusion = v,
                None => problems.add(
                    "search.hybrid.fusion",
                    format!("{f:?} is not one of adaptive, scores, rrf"),
                ),
            }
        }
        if let Some(w) = h.semantic_weight {
            p.semantic_weight = w as f32;
        }
        if let Some(k) = h.rrf_k {
            p.rrf_k = k as f32;
        }
        if let Some(c) = h.confidence_scale {
            p.confidence_scale = c as f32;
        }
        if let Some(s) = h.confidence_slope {
            p.confidence_slope = s as f32;
        }
    }
    if let Some(n) = raw.names.take() {
        let mut names = ControlNames::default();
        for (slot, v) in [
            (&mut names.discover, n.discover),
            (&mut names.describe, n.describe),
            (&mut names.call, n.call),
            (&mut names.list, n.list),
            (&mut names.list_groups, n.list_groups),
            (&mut names.search_proxy, n.search_proxy),
            (&mut names.call_proxy, n.call_proxy),
            (&mut names.search_capabilities, n.search_capabilities),
            (&mut names.invoke, n.invoke),
            (&mut names.get_skill, n.get_skill),
            (&mut names.run_code, n.run_code),
            (&mut names.run_program, n.run_program),
        ] {
            if let Some(v) = v {
                *slot = v;
            }
        }
        settings.names = names;
    }
    if let Some(c) = raw.codeact.take() {
        settings.codeact = codeact(c, base, problems);
    }
    problems.extend(settings.problems());
    settings
}

/// `[codeact]`; out-of-range numbers are reported by `CodeActSettings::problems` (negative
/// ones here, as given).
fn codeact(c: RawCodeAct, base: &Path, problems: &mut Problems) -> CodeActSettings {
    let mut out = CodeActSettings::default();
    out.enabled = c.enabled.unwrap_or(false);
    let mut number = |key: &str, v: Option<i64>, range: RangeInclusive<i64>| -> Option<usize> {
        let n = v?;
        if n < 1 {
            problems.extend(outside(&format!("codeact.{key}"), n, &range));
            return None;
        }
        usize::try_from(n).ok()
    };
    if let Some(ms) = number("timeout_ms", c.timeout_ms, 1..=600_000) {
        out.timeout = std::time::Duration::from_millis(ms as u64);
    }
    if let Some(mb) = number("max_memory_mb", c.max_memory_mb, 1..=4096) {
        out.max_memory_mb = mb;
    }
    if let Some(n) = number("max_calls", c.max_calls, 1..=10_000) {
        out.max_calls = n;
    }
    for (i, p) in c.programs.unwrap_or_default().into_iter().enumerate() {
        if p.trim().is_empty() {
            problems.add(format!("codeact.programs[{i}]"), "must not be empty");
        } else {
            out.programs.push(base.join(p));
        }
    }
    out
}
