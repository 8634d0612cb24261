//! Legacy HTTP+SSE upstreams (`transport = "sse"`): the reference server-everything run with
//! the TypeScript SDK's own SSE server transport, behind the gateway; and hand-made event
//! streams that misbehave (an endpoint on another origin, a 401, no endpoint at all).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolsearch_mcp::Gateway;
use toolsearch_mcp::config::parse_config;

async fn gateway(toml: &str) -> Arc<Gateway> {
    let config = parse_config("test.toml", toml, std::path::Path::new(".")).expect("valid config");
    Gateway::start(config, Default::default())
        .await
        .expect("gateway starts")
}

fn sse_source(name: &str, url: &str) -> String {
    format!(
        "[[source]]\nname = {name:?}\nurl = {url:?}\ntransport = \"sse\"\ngroup = {name:?}\ndescription = \"A legacy SSE server\"\n\n"
    )
}

/// server-everything over its SSE transport on a free port; the child is killed on drop.
struct EverythingSse {
    child: tokio::process::Child,
    port: u16,
}

impl EverythingSse {
    async fn start() -> Self {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let child = tokio::process::Command::new("node")
            .arg(common::everything_js())
            .arg("sse")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Self { child, port };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server-everything's SSE server did not listen on {port}");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }
}

fn text_of(r: &toolsearch::CallResult) -> Value {
    serde_json::from_str(r.first_text().expect("text")).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_server_is_discovered_described_and_called() {
    let mut server = EverythingSse::start().await;
    let g = gateway(&sse_source("legacy", &server.url())).await;
    let statuses = g.statuses();
    assert_eq!(statuses[0].status, Ok(()), "{statuses:?}");
    assert!(statuses[0].tools >= 10, "{statuses:?}");

    let found = g
        .engine()
        .handle(
            "discover_tools",
            json!({"query": "echo back the input message"}),
        )
        .await;
    assert!(!found.is_error, "{found:?}");
    assert!(
        serde_json::to_string(&found)
            .expect("json")
            .contains("echo"),
        "{found:?}"
    );

    let described = g
        .engine()
        .handle("describe_tool", json!({"group": "legacy", "tool": "echo"}))
        .await;
    assert!(!described.is_error, "{described:?}");
    let schema = text_of(&described);
    assert!(
        schema.to_string().contains("message"),
        "the upstream's own schema: {schema}"
    );

    // Calls run concurrently over the one event stream: each answer reaches its own call.
    let calls = (0..8).map(|i| {
        let g = g.clone();
        async move {
            let r = g
                .engine()
                .handle(
                    "call_tool",
                    json!({"group": "legacy", "tool": "echo", "arguments": {"message": format!("over sse {i}")}}),
                )
                .await;
            assert!(!r.is_error, "{r:?}");
            let text = serde_json::to_string(&r).expect("json");
            assert!(text.contains(&format!("over sse {i}")), "{text}");
        }
    });
    futures_util::future::join_all(calls).await;

    let sum = g
        .engine()
        .handle(
            "call_tool",
            json!({"group": "legacy", "tool": "get-sum", "arguments": {"a": 2, "b": 40}}),
        )
        .await;
    assert!(!sum.is_error, "{sum:?}");
    assert!(serde_json::to_string(&sum).expect("json").contains("42"));

    // The server goes away: a call says its source is not available, and nothing hangs.
    server.child.kill().await.expect("kill");
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        g.engine().handle(
            "call_tool",
            json!({"group": "legacy", "tool": "echo", "arguments": {"message": "gone"}}),
        ),
    )
    .await
    .expect("a call to a dead SSE server answers");
    assert!(r.is_error, "{r:?}");
    g.shutdown().await;
}

/// A one-shot HTTP server: answers each connection with `respond(request head)` and counts the
/// connections it accepted.
async fn hand_made(
    respond: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0u8; 8192];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let answer = respond(&head);
            let _ = socket.write_all(answer.as_bytes()).await;
            // Keep the stream open a while, as an event stream is.
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
    (port, accepted)
}

fn event_stream(events: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n{events}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_on_another_origin_gets_no_header_and_no_message() {
    // The elsewhere server counts connections: none may reach it.
    let (elsewhere, reached) = hand_made(|_| "HTTP/1.1 202 Accepted\r\n\r\n".into()).await;
    let (port, _) = hand_made(move |_| {
        event_stream(&format!(
            "event: endpoint\ndata: http://127.0.0.1:{elsewhere}/messages?sessionId=1\n\n"
        ))
    })
    .await;
    let toml = format!(
        "[[source]]\nname = \"leaky\"\nurl = \"http://127.0.0.1:{port}/sse\"\ntransport = \"sse\"\nheaders = {{ Authorization = \"Bearer ${{env:HOME}}\" }}\ngroup = \"leaky\"\ndescription = \"An SSE server naming another origin\"\n"
    );
    let g = gateway(&toml).await;
    let status = g.statuses()[0].status.clone().expect_err("refused");
    assert!(status.contains("not on the stream's origin"), "{status}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "nothing was sent elsewhere"
    );
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_or_silent_stream_is_named_for_what_it_did() {
    let (unauthorized, _) = hand_made(|_| {
        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\n\r\n".into()
    })
    .await;
    let (not_sse, _) = hand_made(|_| {
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}".into()
    })
    .await;
    let (no_endpoint, _) = hand_made(|_| {
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 12\r\n\r\n: keepalive\n"
            .into()
    })
    .await;
    // An event that never ends: read up to the bound, not into memory without end.
    let (endless, _) =
        hand_made(|_| event_stream(&format!("data: {}", "x".repeat(17 << 20)))).await;
    let toml = [
        sse_source("locked", &format!("http://127.0.0.1:{unauthorized}/sse")),
        sse_source("json", &format!("http://127.0.0.1:{not_sse}/sse")),
        sse_source("silent", &format!("http://127.0.0.1:{no_endpoint}/sse")),
        sse_source("endless", &format!("http://127.0.0.1:{endless}/sse")),
    ]
    .concat();
    let g = gateway(&toml).await;
    let statuses = g.statuses();
    let reason = |i: usize| statuses[i].status.clone().expect_err("down");
    assert!(reason(0).contains("unauthorized"), "{}", reason(0));
    assert!(reason(1).contains("not text/event-stream"), "{}", reason(1));
    assert!(
        reason(2).contains("ended before it named its message endpoint"),
        "{}",
        reason(2)
    );
    assert!(
        reason(3).contains("an event of more than 16777216 bytes"),
        "{}",
        reason(3)
    );
    g.shutdown().await;
}
