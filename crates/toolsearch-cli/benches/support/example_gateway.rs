//! The gateway the HTTP benchmarks call: `examples/catalog.json` as a static source, served
//! over streamable HTTP on loopback (`#[path]`-included by the benchmarks).

use std::sync::Arc;

use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;
use toolsearch_mcp::http::{HttpOptions, HttpServer, serve_http};

/// A two-worker runtime for the gateway and its clients.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The example catalog's gateway, served on a free loopback port; its MCP URL.
pub async fn example_gateway() -> (Arc<Gateway>, HttpServer, String) {
    let catalog =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/catalog.json");
    let toml = format!(
        "[[source]]\nname = \"example\"\ncatalog = {:?}\n",
        catalog.display().to_string()
    );
    let config = parse_config("bench.toml", &toml, std::path::Path::new(".")).expect("config");
    let gateway = Gateway::start(config, Default::default())
        .await
        .expect("gateway");
    let server = serve_http(
        gateway.clone(),
        HttpOptions::new("127.0.0.1:0".parse().expect("addr")),
    )
    .await
    .expect("bind");
    let url = format!("http://{}/", server.local_addr);
    toolsearch_mcp::upstream::install_crypto_provider();
    (gateway, server, url)
}
