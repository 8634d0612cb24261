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

/// Serves an rmcp server over streamable HTTP on a loopback port (a test upstream); the factory
/// makes the handler of each session, or of each request on the stateless protocol.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub async fn serve_rmcp_http<S>(
    factory: impl Fn() -> S + Send + Sync + 'static,
) -> std::net::SocketAddr
where
    S: rmcp::ServerHandler + Clone + Send + 'static,
{
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use std::sync::Arc;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(factory()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    ));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |req| {
                    let service = service.clone();
                    async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    addr
}

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
