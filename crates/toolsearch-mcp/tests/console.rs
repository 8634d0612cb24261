//! The console over HTTP, in front of the reference server-everything: its three views show
//! what the gateway knows (and never a call's arguments), its counts are `/metrics`' own, and
//! only admins get in when callers are configured. The same pages in a real browser are
//! driven by `crates/toolsearch-cli/tests/console_browser.rs`.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use toolsearch::Session;
use toolsearch_mcp::config::parse_config;
use toolsearch_mcp::http::{HttpOptions, HttpServer, serve_http};
use toolsearch_mcp::{Authenticator, Gateway};

const EVERYTHING: &str = "everything";

async fn gateway(extra: &str) -> Arc<Gateway> {
    let toml = format!(
        "[[source]]\nname = \"{EVERYTHING}\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n\n{extra}",
        common::everything_js()
    );
    let config = parse_config("console.toml", &toml, std::path::Path::new(".")).expect("valid");
    Gateway::start(config, Default::default())
        .await
        .expect("gateway starts")
}

async fn serve(g: &Arc<Gateway>, addr: &str, auth: Option<Arc<Authenticator>>) -> HttpServer {
    let options = HttpOptions::new(addr.parse().expect("addr")).with_auth(auth);
    serve_http(g.clone(), options).await.expect("bind")
}

struct Page {
    status: u16,
    body: String,
    headers: reqwest::header::HeaderMap,
}

async fn get(url: &str, headers: &[(&str, &str)]) -> Page {
    toolsearch_mcp::upstream::install_crypto_provider();
    let mut req = reqwest::Client::new().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("answered");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    Page {
        status,
        body: r.text().await.expect("body"),
        headers,
    }
}

/// A call as a caller named `agent-7` makes it, with an argument the console must never show.
async fn call_echo(g: &Gateway, message: &str) {
    let session = Arc::new(Session::with_context(BTreeMap::from([(
        "identity.client".to_owned(),
        "agent-7".to_owned(),
    )])));
    let r = g
        .engine()
        .handle_in(
            &session,
            "call_tool",
            json!({"group": "everything", "tool": "echo", "arguments": {"message": message}}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_sources_rankings_side_by_side_and_calls_without_arguments() {
    let g = gateway("").await;
    let server = serve(&g, "127.0.0.1:0", None).await;
    let base = format!("http://{}", server.local_addr);

    // Sources: the upstream, ready, its tools counted, no call yet.
    let page = get(&format!("{base}/ui/"), &[]).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains(r#"<tr data-source="everything">"#),
        "{}",
        page.body
    );
    assert!(page.body.contains(r#"<span class="ready">ready</span>"#));
    assert!(page.body.contains(r#"<td class="n calls">0</td>"#));
    let csp = page.headers["content-security-policy"]
        .to_str()
        .expect("csp");
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert!(page.headers.get("set-cookie").is_none());

    call_echo(&g, "s3cret-argument").await;

    // The call is counted in the source's row and in /metrics, from the same counters.
    let page = get(&format!("{base}/ui/"), &[]).await;
    assert!(
        page.body.contains(r#"<td class="n calls">1</td>"#),
        "{}",
        page.body
    );
    assert!(page.body.contains(r#"<td class="n errors">0</td>"#));
    let metrics = get(&format!("{base}/metrics"), &[]).await.body;
    assert!(
        metrics.contains(r#"toolsearch_source_calls_total{source="everything",outcome="ok"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"toolsearch_source_call_seconds_count{source="everything"} 1"#));

    // Calls: when, who, what, how — never the argument.
    let page = get(&format!("{base}/ui/calls"), &[]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<td>agent-7</td>"), "{}", page.body);
    assert!(page.body.contains(r#"<td class="tool">echo</td>"#));
    assert!(page.body.contains(r#"<td class="outcome">ok</td>"#));
    assert!(!page.body.contains("s3cret-argument"), "{}", page.body);

    // Tools: the question ranked by each method, BM25's hits with their terms.
    let page = get(&format!("{base}/ui/tools?q=echo+back+a+message"), &[]).await;
    assert_eq!(page.status, 200);
    for method in ["keyword", "bm25"] {
        assert!(
            page.body.contains(&format!(r#"data-method="{method}""#)),
            "{method}: {}",
            page.body
        );
    }
    let bm25 = page
        .body
        .split(r#"data-method="bm25""#)
        .nth(1)
        .expect("a bm25 section");
    let first = bm25.split("<li").nth(1).expect("a bm25 hit");
    assert!(first.contains("everything/echo"), "{first}");
    assert!(first.contains("echo (name ×1"), "BM25's reasons: {first}");
    // Escaped: a question is text, never markup.
    let page = get(
        &format!("{base}/ui/tools?q=%3Cscript%3Ealert(1)%3C/script%3E"),
        &[],
    )
    .await;
    assert!(!page.body.contains("<script>alert(1)"), "{}", page.body);
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

    // One tool's definition.
    let page = get(&format!("{base}/ui/tools?tool=everything__echo"), &[]).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Input schema") && page.body.contains("&quot;message&quot;"));

    // Read-only, and Host and Origin checked as for /mcp.
    toolsearch_mcp::upstream::install_crypto_provider();
    let post = reqwest::Client::new()
        .post(format!("{base}/ui/"))
        .send()
        .await
        .expect("answered");
    assert_eq!(post.status().as_u16(), 405);
    let page = get(&format!("{base}/ui/"), &[("host", "evil.example")]).await;
    assert_eq!(page.status, 403);
    let page = get(&format!("{base}/ui/"), &[("origin", "http://evil.example")]).await;
    assert_eq!(page.status, 403);
    let page = get(
        &format!("{base}/ui/"),
        &[("origin", "http://localhost:3000")],
    )
    .await;
    assert_eq!(page.status, 200);
    server.shutdown().await;
    g.shutdown().await;
}

/// Without credentials the console is open on loopback only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_the_console_is_refused_off_loopback() {
    let g = gateway("").await;
    let server = serve(&g, "0.0.0.0:0", None).await;
    let page = get(
        &format!("http://127.0.0.1:{}/ui/", server.local_addr.port()),
        &[],
    )
    .await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("only on a loopback address"));
    server.shutdown().await;
    g.shutdown().await;
}

/// With `[[client]]`s, only an admin's token opens a page; the sign-in form and the assets need
/// none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_clients_only_an_admin_gets_in() {
    // Tokens come from the environment: two variables every test run has.
    let g = gateway(
        "[[client]]\nname = \"ops\"\ntoken = \"${env:HOME}\"\nadmin = true\n\n[[client]]\nname = \"agent\"\ntoken = \"${env:PATH}\"\n",
    )
    .await;
    let auth = Authenticator::new(g.access(), None)
        .await
        .expect("auth")
        .map(Arc::new);
    let server = serve(&g, "127.0.0.1:0", auth).await;
    let base = format!("http://{}", server.local_addr);
    let (ops, agent) = (
        format!("Bearer {}", std::env::var("HOME").expect("HOME")),
        format!("Bearer {}", std::env::var("PATH").expect("PATH")),
    );

    let page = get(&format!("{base}/ui/"), &[]).await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains(r#"<form id="login""#), "{}", page.body);
    assert!(
        !page.body.contains("data-source"),
        "no data before signing in"
    );
    let page = get(
        &format!("{base}/ui/calls"),
        &[("authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(page.status, 401);
    let page = get(&format!("{base}/ui/calls"), &[("authorization", &agent)]).await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("not an admin"));
    let page = get(&format!("{base}/ui/"), &[("authorization", &ops)]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains(r#"data-source="everything""#));
    let page = get(&format!("{base}/ui/console.js"), &[]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("sessionStorage"));
    server.shutdown().await;
    g.shutdown().await;
}
