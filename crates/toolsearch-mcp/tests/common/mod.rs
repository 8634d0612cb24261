//! Shared helpers of the gateway tests.

use std::path::PathBuf;

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
