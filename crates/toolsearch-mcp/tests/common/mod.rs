//! Shared helpers of the gateway tests.

use std::path::PathBuf;

#[allow(dead_code)] // not every test binary that shares this module uses it
/// server-everything's entry point, installed by `.ci/run` (`npm ci` in tests/mcp-servers).
pub fn everything_js() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "run `npm ci` in tests/mcp-servers (.ci/run does)"
    );
    p.display().to_string()
}

#[path = "../../../../tests/support/rmcp_http.rs"]
mod rmcp_http;
#[allow(unused_imports)] // not every test binary that shares this module uses them
pub use rmcp_http::{Whoami, serve_rmcp_http, serve_rmcp_http_answering_discover};

/// `tests/mcp-servers/misbehaving-server.mjs` (see its header for the `MISBEHAVE` modes).
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn misbehaving_js() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/misbehaving-server.mjs");
    p.display().to_string()
}

/// A `[[source]]` running the misbehaving server in `mode` ("" for well-behaved).
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn misbehaving_source(name: &str, mode: &str) -> String {
    format!(
        "[[source]]\nname = {name:?}\ncommand = \"node\"\nargs = [{:?}]\nenv = {{ MISBEHAVE = {mode:?} }}\ngroup = {name:?}\ndescription = \"A test server that misbehaves on request\"\n\n",
        misbehaving_js()
    )
}

/// A catalog file with `json` in a fresh temporary directory named for `tag`, and the
/// `[[source]]` (named `static`) that serves it: (directory, catalog path, config text).
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn static_source(tag: &str, json: &str) -> (PathBuf, PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("toolsearch-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let catalog = dir.join("catalog.json");
    std::fs::write(&catalog, json).expect("catalog");
    let toml = format!(
        "[[source]]\nname = \"static\"\ncatalog = {:?}\n",
        catalog.display().to_string()
    );
    (dir, catalog, toml)
}
