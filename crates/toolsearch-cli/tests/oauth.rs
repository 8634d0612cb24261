//! A remote MCP server behind a real authorization server (oidc-provider, started by
//! `tests/mcp-servers/oauth-server.mjs`): before a login its source needs one and says so;
//! `toolsearch auth login` runs the flow (the script plays the browser) and stores the tokens
//! in a private file; calls go through with them; an expired access token is refreshed; a
//! revoked grant makes calls answer `needs_auth` again; `auth logout` forgets the tokens. No
//! token ever shows in what the gateway logs.

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Listening, root, runtime, temp_dir};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// How long the authorization server's access tokens live, in seconds.
const ACCESS_TTL: u64 = 3;

fn oauth_server() -> Listening {
    let mut command = Command::new("node");
    command
        .arg(root().join("tests/mcp-servers/oauth-server.mjs"))
        .env("ACCESS_TTL", ACCESS_TTL.to_string())
        .stderr(Stdio::null());
    Listening::start(command, "the OAuth-protected server")
}

fn write_config(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(
        &path,
        format!(
            "[[source]]\nname = \"protected\"\nurl = {url:?}\nauth = \"oauth\"\ngroup = \"protected\"\ndescription = \"A server behind a login\"\n"
        ),
    )
    .expect("config");
    path
}

/// `toolsearch auth login protected`, with the test server's browser opening the URL the
/// command prints on its own line: what the loopback page said, and the command's stderr.
fn log_in(config: &Path, state: &Path, base: &str) -> (String, String) {
    let mut login = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["auth", "login", "protected", "--timeout", "30", "--config"])
        .arg(config)
        .env("XDG_STATE_HOME", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn auth login");
    let mut line = String::new();
    std::io::BufReader::new(login.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the URL line");
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line:?}");
    for (key, want) in [
        ("code_challenge_method", "S256"),
        ("resource", &format!("{base}/mcp")),
    ] {
        let found = url::Url::parse(&url)
            .expect("url")
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned());
        assert_eq!(found.as_deref(), Some(want), "{key} in {url}");
    }
    let page: Value = runtime().block_on(async {
        reqwest::Client::new()
            .get(with_query(&format!("{base}/browse"), &[("url", &url)]))
            .send()
            .await
            .expect("browse")
            .json()
            .await
            .expect("json")
    });
    let out = login.wait_with_output().expect("auth login ends");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "auth login failed: {stderr}");
    (page["text"].as_str().unwrap_or_default().to_owned(), stderr)
}

/// What the token file holds now: the access token, the refresh token, the client ID.
fn stored(file: &Path) -> (String, String, String) {
    let saved: Value = serde_json::from_slice(&std::fs::read(file).expect("read")).expect("json");
    let text = |v: &Value| v.as_str().expect("stored").to_owned();
    let tokens = &saved["credentials"]["token_response"];
    (
        text(&tokens["access_token"]),
        text(&tokens["refresh_token"]),
        text(&saved["credentials"]["client_id"]),
    )
}

/// `url` with `pairs` as its query.
fn with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    let mut u = url::Url::parse(url).expect("url");
    u.query_pairs_mut().extend_pairs(pairs);
    u.to_string()
}

async fn control(peer: &Peer<RoleClient>, name: &'static str, arguments: Value) -> Value {
    let r = peer
        .call_tool(
            CallToolRequestParams::new(name)
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
        .await
        .expect("answer");
    let text = r.content[0].as_text().expect("text").text.clone();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

async fn whoami(peer: &Peer<RoleClient>) -> Value {
    control(
        peer,
        "call_tool",
        json!({"group": "protected", "tool": "whoami", "arguments": {}}),
    )
    .await
}

async fn group_state(peer: &Peer<RoleClient>) -> Value {
    let v = control(peer, "list_tool_groups", json!({})).await;
    v["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["group"] == "protected"))
        .cloned()
        .unwrap_or(Value::Null)
}

async fn stats(base: &str) -> Value {
    reqwest::get(format!("{base}/stats"))
        .await
        .expect("stats")
        .json()
        .await
        .expect("json")
}

#[test]
fn a_login_gives_calls_a_token_that_is_refreshed_until_it_is_revoked() {
    toolsearch_mcp::upstream::install_crypto_provider();
    let server = oauth_server();
    let base = server.1.trim_end_matches("/mcp").to_owned();
    let dir = temp_dir("oauth-login");
    let state = dir.join("state");
    let config = write_config(&dir, &server.1);

    let serve = |state: PathBuf, config: PathBuf| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
        cmd.arg("serve")
            .arg("--config")
            .arg(config)
            .env("XDG_STATE_HOME", state)
            .env("TOOLSEARCH_LOG", "debug,rmcp=debug");
        TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve")
    };
    let logs = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = |stderr: Option<tokio::process::ChildStderr>| {
        let logs = logs.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut text = String::new();
            if let Some(mut e) = stderr {
                let _ = e.read_to_string(&mut text).await;
            }
            logs.lock().expect("logs").push_str(&text);
        })
    };

    // Before any login: the group says it needs one, and a call says how to give it.
    let rt = runtime();
    rt.block_on(async {
        let (transport, stderr) = serve(state.clone(), config.clone());
        let drained = keep(stderr);
        let client = ().serve(transport).await.expect("initialize");
        let peer = client.peer().clone();
        let mut group = Value::Null;
        for _ in 0..100 {
            group = group_state(&peer).await;
            if group["unavailable"] == "needs login" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(group["unavailable"], "needs login", "{group}");
        let v = whoami(&peer).await;
        assert_eq!(v["error"], "needs_auth", "{v}");
        assert_eq!(v["hint"], "run: toolsearch auth login protected", "{v}");
        client.cancel().await.expect("close");
        drained.await.expect("stderr");
    });
    // Nothing reached the server with a token, and nothing was stored.
    assert_eq!(rt.block_on(stats(&base))["authorization_code"], 0);
    assert!(!state.join("toolsearch/auth/protected.json").exists());

    // The login: URL printed, browser sent back to the loopback listener, tokens stored 0600.
    let (page, said) = log_in(&config, &state, &base);
    assert!(page.contains("logged in"), "{page}");
    assert!(said.contains("logged in to protected"), "{said}");
    let file = state.join("toolsearch/auth/protected.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file)
            .expect("token file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (access, first_refresh, client_id) = stored(&file);
    assert_eq!(rt.block_on(stats(&base))["authorization_code"], 1);
    // The redirect listener took its one callback and is gone.
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    let redirect = saved["client"]["redirect_uri"].as_str().expect("redirect");
    let port = url::Url::parse(redirect)
        .expect("url")
        .port()
        .expect("port");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());

    let status = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["auth", "status", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("auth status");
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(
        status.contains(&format!("logged in as client {client_id}")),
        "{status}"
    );
    assert!(status.contains("refreshable"), "{status}");
    assert!(
        !status.contains(&access) && !status.contains(&first_refresh),
        "{status}"
    );

    rt.block_on(async {
        let (transport, stderr) = serve(state.clone(), config.clone());
        let drained = keep(stderr);
        let client = ().serve(transport).await.expect("initialize");
        let peer = client.peer().clone();
        let mut v = Value::Null;
        for _ in 0..100 {
            v = whoami(&peer).await;
            if v == "you are alice" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(v, "you are alice");
        // Past the access token's life: the gateway refreshes it and the call goes through.
        let refreshed = stats(&base).await["refresh_token"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_secs(ACCESS_TTL + 1)).await;
        assert_eq!(whoami(&peer).await, "you are alice");
        let after = stats(&base).await;
        assert!(
            after["refresh_token"].as_u64().unwrap_or(0) > refreshed,
            "{after}"
        );
        // The server refuses the access token before it expires: it answers 401, the gateway
        // refreshes once and the call goes through.
        let (current, ..) = stored(&file);
        let refreshed = stats(&base).await["refresh_token"].as_u64().unwrap_or(0);
        let refused = reqwest::Client::new()
            .post(with_query(
                &format!("{base}/reject"),
                &[("token", current.as_str())],
            ))
            .send()
            .await
            .expect("reject");
        assert!(refused.status().is_success(), "{refused:?}");
        let v = whoami(&peer).await;
        assert_eq!(v, "you are alice", "{}", stats(&base).await);
        let after = stats(&base).await;
        assert!(
            after["refresh_token"].as_u64().unwrap_or(0) > refreshed,
            "{after}"
        );
        let (_, refresh, _) = stored(&file);
        // The grant revoked at the authorization server: the next call needs a login again,
        // and the group says so.
        let revoked = reqwest::Client::new()
            .post(with_query(
                &format!("{base}/revoke"),
                &[
                    ("token", refresh.as_str()),
                    ("client_id", client_id.as_str()),
                ],
            ))
            .send()
            .await
            .expect("revoke");
        assert!(revoked.status().is_success(), "{revoked:?}");
        tokio::time::sleep(Duration::from_secs(ACCESS_TTL + 1)).await;
        let v = whoami(&peer).await;
        assert_eq!(v["error"], "needs_auth", "{v}");
        assert_eq!(v["hint"], "run: toolsearch auth login protected", "{v}");
        let mut group = Value::Null;
        for _ in 0..100 {
            group = group_state(&peer).await;
            if group["unavailable"] == "needs login" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(group["unavailable"], "needs login", "{group}");
        client.cancel().await.expect("close");
        drained.await.expect("stderr");
    });
    let logs = logs.lock().expect("logs").clone();
    assert!(logs.contains("DEBUG"), "the gateway logged at debug level");
    let now: Value = serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    for secret in [
        access.as_str(),
        first_refresh.as_str(),
        now["credentials"]["token_response"]["access_token"]
            .as_str()
            .unwrap_or("-"),
    ] {
        assert!(!logs.contains(secret), "a token is in the gateway's log");
    }

    // Logged out: the file is gone.
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["auth", "logout", "protected", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("auth logout");
    assert!(out.status.success());
    assert!(!file.exists());
}
