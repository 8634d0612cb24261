//! The served gateway under attack, over raw HTTP: a session belongs to the caller that opened
//! it (another caller's POST, GET, resumption and DELETE are answered as for an unknown
//! session), every HTTP error to a JSON-RPC request carries a JSON-RPC error, a request id in
//! progress twice in a session gets an error, and no message body reaches the logs, even at
//! `trace`.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

mod common;

use common::{HttpGateway, misbehaving_source, root, runtime, temp_dir};

const ALICE: &str = "alice-token-5d21";
const BOB: &str = "bob-token-c8e4";
const SESSION: &str = "mcp-session-id";

/// Two clients; the example catalog, and the misbehaving server (its `sleep` keeps a request
/// in progress).
fn config(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    let catalog = root().join("examples/catalog.json");
    let text = format!(
        "[[client]]\nname = \"alice\"\ntoken = \"${{env:ALICE_TOKEN}}\"\n\n[[client]]\nname = \"bob\"\ntoken = \"${{env:BOB_TOKEN}}\"\n\n[[source]]\nname = \"examples\"\ncatalog = {:?}\n\n{}",
        catalog.display().to_string(),
        misbehaving_source("slow", ""),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).expect("config");
    path
}

fn env() -> [(&'static str, &'static str); 2] {
    [("ALICE_TOKEN", ALICE), ("BOB_TOKEN", BOB)]
}

/// One raw MCP client over HTTP: a bearer token and, once opened, a session.
struct Raw {
    http: reqwest::Client,
    url: String,
    token: &'static str,
}

/// An answer: status, the session header, and the body (JSON when it is JSON).
#[derive(Debug)]
struct Answer {
    status: u16,
    session: Option<String>,
    body: Value,
}

impl Raw {
    fn new(url: &str, token: &'static str) -> Self {
        toolsearch_mcp::upstream::install_crypto_provider();
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            token,
        }
    }

    async fn answer(response: reqwest::Response) -> Answer {
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get(SESSION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.expect("body");
        // An SSE answer: its data line.
        let json = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or(&text);
        let body = serde_json::from_str(json).unwrap_or(Value::String(text));
        Answer {
            status,
            session,
            body,
        }
    }

    async fn post(&self, session: Option<&str>, message: Value) -> Answer {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_string());
        if let Some(s) = session {
            request = request.header(SESSION, s);
        }
        Self::answer(request.send().await.expect("POST")).await
    }

    async fn get(&self, session: &str, last_event: Option<&str>) -> u16 {
        let mut request = self
            .http
            .get(&self.url)
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
            .header(ACCEPT, "text/event-stream")
            .header(SESSION, session);
        if let Some(id) = last_event {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("GET");
        response.status().as_u16()
    }

    async fn delete(&self, session: &str) -> u16 {
        let response = self
            .http
            .delete(&self.url)
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
            .header(SESSION, session)
            .send()
            .await
            .expect("DELETE");
        response.status().as_u16()
    }

    /// `initialize` and `notifications/initialized`: the new session's id.
    async fn open(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let answer = self.post(None, init).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let session = answer.session.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.post(Some(&session), initialized).await;
        assert_eq!(answer.status, 202, "{answer:?}");
        session
    }
}

fn list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

/// A 404 with the JSON-RPC error an unknown session gets.
fn assert_unknown_session(answer: &Answer, id: u64) {
    assert_eq!(answer.status, 404, "{answer:?}");
    assert_eq!(answer.body["id"], id, "{answer:?}");
    assert_eq!(answer.body["error"]["code"], -32001, "{answer:?}");
}

#[test]
fn a_session_serves_the_caller_that_opened_it_and_nobody_else() {
    let http = HttpGateway::start_with(&config("sessions-owner"), &env());
    runtime().block_on(async {
        let alice = Raw::new(&http.url, ALICE);
        let bob = Raw::new(&http.url, BOB);
        let session = alice.open().await;

        // Bob first, with Alice's session id: as if it did not exist, whatever the method.
        assert_unknown_session(&bob.post(Some(&session), list(1)).await, 1);
        assert_eq!(bob.get(&session, None).await, 404);
        assert_eq!(bob.get(&session, Some("0")).await, 404);
        assert_eq!(bob.delete(&session).await, 404);

        // Alice's session is still hers.
        let answer = alice.post(Some(&session), list(2)).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body["result"]["tools"].is_array(), "{answer:?}");
        // Bob's own session works for Bob.
        let own = bob.open().await;
        assert_eq!(bob.post(Some(&own), list(3)).await.status, 200);
        assert_unknown_session(&alice.post(Some(&own), list(4)).await, 4);

        // Alice ends hers; then it is unknown to her too.
        assert_eq!(alice.delete(&session).await, 200);
        assert_unknown_session(&alice.post(Some(&session), list(5)).await, 5);
    });
}

#[test]
fn http_errors_to_requests_are_json_rpc_errors_and_a_busy_id_gets_one() {
    let http = HttpGateway::start_with(&config("sessions-errors"), &env());
    runtime().block_on(async {
        let alice = Raw::new(&http.url, ALICE);
        // A request that needs a session, without one.
        let answer = alice.post(None, list(7)).await;
        assert!((400..500).contains(&answer.status), "{answer:?}");
        assert_eq!(answer.body["jsonrpc"], "2.0", "{answer:?}");
        assert_eq!(answer.body["id"], 7, "{answer:?}");
        assert!(answer.body["error"]["message"].is_string(), "{answer:?}");
        // A session nobody opened.
        assert_unknown_session(&alice.post(Some("no-such-session"), list(8)).await, 8);
        // A token no client has: 401 and its challenge, with a JSON-RPC error.
        let stranger = Raw::new(&http.url, "no-such-token");
        let answer = stranger.post(None, list(10)).await;
        assert_eq!(answer.status, 401, "{answer:?}");
        assert_eq!(answer.body["id"], 10, "{answer:?}");
        assert!(answer.body["error"]["message"].is_string(), "{answer:?}");

        // One id twice at once in a session: the second gets an error at once; the first
        // its answer.
        let session = alice.open().await;
        let slow = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "call_tool",
            "arguments": {"group": "slow", "tool": "sleep", "arguments": {"ms": 1500}}}});
        let first = alice.post(Some(&session), slow.clone());
        let second = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            alice.post(Some(&session), slow.clone()).await
        };
        let (first, second) = tokio::join!(first, second);
        assert_eq!(first.status, 200, "{first:?}");
        assert_eq!(first.body["id"], 9, "{first:?}");
        assert!(first.body["result"].is_object(), "{first:?}");
        assert_eq!(second.status, 400, "{second:?}");
        assert_eq!(second.body["id"], 9, "{second:?}");
        let message = second.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("already in progress"), "{second:?}");
        // Once answered, the id may be used again.
        assert_eq!(alice.post(Some(&session), list(9)).await.status, 200);
    });
}

#[test]
fn no_message_body_reaches_the_logs_even_at_trace() {
    let secret_argument = "argument-value-6b1f";
    let http = HttpGateway::start_args(
        &config("sessions-logs"),
        &[],
        &[
            ("ALICE_TOKEN", ALICE),
            ("BOB_TOKEN", BOB),
            ("TOOLSEARCH_LOG", "trace"),
        ],
    );
    runtime().block_on(async {
        let alice = Raw::new(&http.url, ALICE);
        let session = alice.open().await;
        let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "call_tool",
            "arguments": {"group": "slow", "tool": "echo", "arguments": {"message": secret_argument}}}});
        let answer = alice.post(Some(&session), echo).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.to_string().contains(secret_argument), "{answer:?}");
    });
    std::thread::sleep(Duration::from_millis(300));
    let log = http
        .log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .join("\n");
    assert!(log.len() > 1000, "trace logs were written: {log}");
    for secret in [secret_argument, ALICE, BOB] {
        assert!(!log.contains(secret), "{secret} is in the logs");
    }
}
