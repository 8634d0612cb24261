//! The OpenAI-compatible endpoint embedder against a small HTTP server of the test's own:
//! the request it sends, vectors put back in input order, and errors without the key.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolsearch::search::Embedder;
use toolsearch_embed::EndpointEmbedder;

/// Serves `/v1/embeddings`: each input's vector is `[len(text), 1]`, listed in reverse with
/// explicit indexes; a request for the model "locked" gets 401.
async fn server(seen: Arc<Mutex<Vec<String>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let body_start = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..body_start]).to_string();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap_or(0))
                    })
                    .unwrap_or(0);
                while buf.len() < body_start + len {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body: serde_json::Value =
                    serde_json::from_slice(&buf[body_start..]).unwrap_or_default();
                seen.lock().expect("present").push(format!("{head}{body}"));
                let (status, out) = if body["model"] == "locked" {
                    ("401 Unauthorized", r#"{"error":"bad key"}"#.to_owned())
                } else {
                    let inputs = body["input"].as_array().cloned().unwrap_or_default();
                    let data: Vec<serde_json::Value> = inputs
                        .iter()
                        .enumerate()
                        .rev()
                        .map(|(i, t)| {
                            let n = t.as_str().unwrap_or("").len() as f32;
                            serde_json::json!({"index": i, "embedding": [n, 1.0]})
                        })
                        .collect();
                    ("200 OK", serde_json::json!({"data": data}).to_string())
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
                    out.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/v1/embeddings")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeds_in_order_sends_the_key_and_reports_failures_without_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = server(seen.clone()).await;
    let u = url.clone();
    let e = tokio::task::spawn_blocking(move || {
        EndpointEmbedder::connect(u, "mini", Some("sk-secret".into()), Duration::from_secs(5))
    })
    .await
    .expect("join")
    .expect("connect");
    assert_eq!(e.dim(), 2);
    assert!(!format!("{e:?}").contains("sk-secret"));
    // Called from inside the async runtime: it blocks this thread only, and works.
    let v = e.embed(&["a", "abc", "ab"]).expect("embed");
    assert_eq!(v, [vec![1.0, 1.0], vec![3.0, 1.0], vec![2.0, 1.0]]);
    let last = seen
        .lock()
        .expect("present")
        .last()
        .cloned()
        .unwrap_or_default();
    assert!(
        last.to_ascii_lowercase()
            .contains("authorization: bearer sk-secret"),
        "{last}"
    );
    assert!(
        last.contains(r#""model":"mini""#) && last.contains(r#""input":["a","abc","ab"]"#),
        "{last}"
    );

    let u = url.clone();
    let err = tokio::task::spawn_blocking(move || {
        EndpointEmbedder::connect(
            u,
            "locked",
            Some("sk-secret".into()),
            Duration::from_secs(5),
        )
    })
    .await
    .expect("join")
    .expect_err("an error")
    .to_string();
    assert!(err.contains("401") && err.contains(&url), "{err}");
    assert!(!err.contains("sk-secret"), "{err}");

    let down = tokio::task::spawn_blocking(|| {
        EndpointEmbedder::connect(
            "http://127.0.0.1:9/v1/embeddings",
            "m",
            None,
            Duration::from_secs(5),
        )
    })
    .await
    .expect("join")
    .expect_err("an error")
    .to_string();
    assert!(down.contains("127.0.0.1:9"), "{down}");
}
