//! Context headers: concurrent downstream sessions get separate upstream connections, each
//! carrying its own values, and they never cross. The upstream is a small rmcp server over
//! HTTP whose one tool answers with the headers its request carried.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use toolsearch::Session;
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;

async fn serve_whoami() -> std::net::SocketAddr {
    common::serve_rmcp_http(|| common::Whoami).await
}

fn session(tenant: Option<&str>) -> Arc<Session> {
    let mut ctx = BTreeMap::new();
    if let Some(t) = tenant {
        ctx.insert("identity.tenant_id".to_owned(), t.to_owned());
    }
    Arc::new(Session::with_context(ctx))
}

async fn whoami(g: &Gateway, s: &Arc<Session>) -> (String, bool) {
    let r = g
        .engine()
        .handle_in(
            s,
            "call_tool",
            json!({"group": "tenant", "tool": "whoami", "arguments": {}}),
        )
        .await;
    let v = serde_json::to_value(&r).expect("json");
    (
        v["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        r.is_error,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_get_their_own_upstream_connections_and_headers() {
    let addr = serve_whoami().await;
    let toml = format!(
        "[[source]]\nname = \"tenant-api\"\nurl = \"http://{addr}/\"\ncontext_headers = {{ \"X-Tenant-ID\" = \"identity.tenant_id\", \"X-Run-ID\" = \"run.id\" }}\ngroup = \"tenant\"\ndescription = \"A tenant-scoped API\"\n"
    );
    let g = Gateway::start(
        parse_config("ctx.toml", &toml, std::path::Path::new(".")).expect("valid"),
        Default::default(),
    )
    .await
    .expect("starts");
    assert_eq!(
        g.statuses()[0].tools,
        1,
        "the tool list is read without context headers"
    );

    let (acme, globex) = (session(Some("acme")), session(Some("globex")));
    // Many interleaved calls from both sessions at once.
    let mut calls = Vec::new();
    for i in 0..20 {
        let (g, s) = (
            g.clone(),
            if i % 2 == 0 {
                acme.clone()
            } else {
                globex.clone()
            },
        );
        calls.push(tokio::spawn(async move { (i % 2, whoami(&g, &s).await) }));
    }
    for c in calls {
        let (parity, (text, is_error)) = c.await.expect("task");
        assert!(!is_error, "{text}");
        let (tenant, run) = if parity == 0 {
            ("acme", acme.context("run.id"))
        } else {
            ("globex", globex.context("run.id"))
        };
        assert_eq!(
            text,
            format!("tenant={tenant};run={}", run.expect("run id")),
            "headers crossed sessions"
        );
    }

    // A session without the required value fails its own connection, clearly; others go on.
    let (text, is_error) = whoami(&g, &session(None)).await;
    assert!(is_error);
    assert!(
        text.contains("identity.tenant_id") && text.contains("X-Tenant-ID"),
        "{text}"
    );
    assert!(!whoami(&g, &acme).await.1);
    g.shutdown().await;
}

/// A TCP forwarder to `target` that can be switched off: while off, it closes every
/// connection it has forwarded and every one it accepts, as an upstream that is down would.
async fn switch_to(
    target: std::net::SocketAddr,
) -> (std::net::SocketAddr, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (on, watch) = tokio::sync::watch::channel(true);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let mut watch = watch.clone();
            if !*watch.borrow() {
                continue;
            }
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = watch.wait_for(|on| !on) => {}
                }
            });
        }
    });
    (addr, on)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_upstream_was_down_at_its_first_call_reaches_it_once_it_is_back() {
    let (addr, on) = switch_to(serve_whoami().await).await;
    let toml = format!(
        "[[source]]\nname = \"tenant-api\"\nurl = \"http://{addr}/\"\ncontext_headers = {{ \"X-Tenant-ID\" = \"identity.tenant_id\" }}\ngroup = \"tenant\"\ndescription = \"A tenant-scoped API\"\n"
    );
    let g = Gateway::start(
        parse_config("ctx.toml", &toml, std::path::Path::new(".")).expect("valid"),
        Default::default(),
    )
    .await
    .expect("starts");
    assert_eq!(g.statuses()[0].tools, 1);

    // The upstream goes down before this session's first call: its own connection fails.
    on.send_replace(false);
    let acme = session(Some("acme"));
    let (text, is_error) = whoami(&g, &acme).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("unavailable") && text.contains("this session's connection"),
        "{text}"
    );

    // Back: the session's next calls (after a short wait) reach it, with its own header.
    on.send_replace(true);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let (text, is_error) = whoami(&g, &acme).await;
        if !is_error {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never reached again: {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(text.starts_with("tenant=acme;"), "{text}");

    // Down again, and back: a connection that closed under a session is made again too.
    on.send_replace(false);
    let (text, is_error) = whoami(&g, &acme).await;
    assert!(is_error, "{text}");
    on.send_replace(true);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (text, is_error) = whoami(&g, &acme).await;
        if !is_error {
            assert!(text.starts_with("tenant=acme;"), "{text}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never reached again: {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    g.shutdown().await;
}
