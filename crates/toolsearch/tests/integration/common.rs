//! Shared helpers: fixture catalogs and engines.

use std::path::PathBuf;

use serde_json::Value;
use toolsearch::search::Embeddings;
use toolsearch::search::{Hit, Query, SearchError, SearchIndex, Searcher};
use toolsearch::{ControlOutput, Directory, Engine, Settings, SourceTools};
use toolsearch::{SearchMethod, load_catalog_file};

/// This crate's folder.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/data/<rel>` from the workspace root.
pub fn shared_data(rel: &str) -> PathBuf {
    crate_dir().join("../../../shared/data").join(rel)
}

/// [`shared_data`] when it exists; `None` (the test then skips, saying so) when it is missing
/// and `TOOLSEARCH_SKIP_SHARED_DATA=1` allows that (`.ci/run` sets it outside CI in a clone
/// without `../shared`). Missing otherwise is a failure.
pub fn shared_data_or_skip(rel: &str) -> Option<PathBuf> {
    let path = shared_data(rel);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("TOOLSEARCH_SKIP_SHARED_DATA").as_deref() == Ok("1"),
        "{} is missing: these tests read the shared retrieval data beside the repository (set TOOLSEARCH_SKIP_SHARED_DATA=1 to skip them)",
        path.display()
    );
    eprintln!("skipped: {} is missing", path.display());
    None
}

/// Sources of a fixture under `tests/fixtures/`.
pub fn fixture_sources(name: &str) -> Vec<SourceTools> {
    let path = crate_dir().join("tests/fixtures").join(name);
    load_catalog_file(&path)
        .expect("fixture parses")
        .into_sources(name, false)
}

/// An engine over a fixture.
pub fn engine(name: &str, settings: Settings) -> Engine {
    Engine::new(settings, fixture_sources(name)).expect("fixture is a valid catalog")
}

/// Runs a control that must exist.
pub fn run(engine: &Engine, control: &str, args: Value) -> ControlOutput {
    engine
        .handle_control(control, &args)
        .unwrap_or_else(|| panic!("{control} is a control"))
}

/// `(group, tool)` pairs of a result's `tools`.
pub fn names(out: &ControlOutput) -> Vec<(String, String)> {
    out.value()["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| {
            (
                t["group"].as_str().expect("group").to_owned(),
                t["tool"].as_str().expect("tool").to_owned(),
            )
        })
        .collect()
}

/// Five tools in two groups (files and weather), for the ranked-retrieval tests.
pub const FILES: &str = r#"{"groups":[
  {"name":"fs","description":"Local files","tools":[
    {"name":"read_file","description":"Read the contents of a file from disk.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Where the file lives"}}}},
    {"name":"write_file","description":"Write text into a file, replacing it."},
    {"name":"list_directory","description":"List the entries of a directory."}]},
  {"name":"weather","description":"Forecasts","tools":[
    {"name":"get_forecast","description":"Weather forecast for a city, for the next days."},
    {"name":"get_alerts","description":"Severe weather alerts of a US state."}]}]}"#;

/// The best `k` tools of the whole of `dir` for `query` by `method`, through the search entry
/// point over a fresh index.
pub fn rank(
    dir: &Directory,
    settings: &Settings,
    semantic: Option<&Embeddings>,
    method: SearchMethod,
    query: &str,
    k: usize,
) -> Result<Vec<Hit>, SearchError> {
    let index = SearchIndex::build(dir);
    Ok(Searcher::new(dir, &index, settings, semantic)
        .rank(&Query::new(query, method, k))?
        .hits)
}
