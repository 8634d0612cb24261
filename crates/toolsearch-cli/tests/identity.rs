//! Who is calling, through the served gateway over HTTP: the official Python MCP SDK's client
//! drives `toolsearch serve --http` as two `[[client]]`s with disjoint policies and as a JWT
//! caller, against server-everything and `Whoami` (an HTTP upstream whose tool answers with
//! the tenant header its request carried); bad tokens, the resource metadata, per-session
//! context headers, the audit log, `check`'s per-client counts and the rate limit.

use std::path::Path;

mod common;
#[path = "../../../tests/support/rmcp_http.rs"]
mod rmcp_http;

use common::{HttpGateway, everything_source, run_python, run_python_with, runtime, temp_dir};

const ALICE: &str = "alice-token-7f3a";
const BOB: &str = "bob-token-91c2";

fn config(dir: &Path, whoami: std::net::SocketAddr, extra: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
[[client]]
name = "alice"
token = "${{env:ALICE_TOKEN}}"
claims = {{ tenant_id = "acme" }}

[[client]]
name = "bob"
token = "${{env:BOB_TOKEN}}"
claims = {{ tenant_id = "globex" }}

[auth.jwt]
jwks = "jwks.json"
issuer = "https://idp.test/"
audience = "toolsearch"
algorithms = ["RS256"]
admin_claim = "toolsearch_admin"

[[policy]]
match = {{ client = "alice" }}
allow = ["whoami/*", "everything/echo"]

[[policy]]
match = {{ client = "bob" }}
allow = ["whoami/*", "everything/get-sum"]

[[policy]]
match = {{ claims = {{ "identity.team" = "ops" }} }}
allow = ["everything/*"]
deny = ["everything/get-env"]

[audit]
file = "audit.jsonl"
{extra}
{everything}
[[source]]
name = "whoami"
url = "http://{whoami}/"
context_headers = {{ "X-Tenant-ID" = "identity.tenant_id" }}
group = "whoami"
description = "Says which tenant is asking"
"#,
        everything = everything_source(),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).expect("config");
    path
}

#[test]
fn callers_see_their_own_catalogs_and_carry_their_own_context() {
    let rt = runtime();
    let whoami = rt.block_on(rmcp_http::serve_rmcp_http(|| rmcp_http::Whoami));
    let dir = temp_dir("identity");
    let d = dir.display().to_string();
    run_python("pyenv", "identity_client.py", &["keys".into(), d.clone()]);
    let cfg = config(&dir, whoami, "");
    let env = [("ALICE_TOKEN", ALICE), ("BOB_TOKEN", BOB)];

    // `check` counts what each client sees (policies applied).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["check", "--config"])
        .arg(&cfg)
        .envs(env)
        .output()
        .expect("check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |client: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(client))
            .map(|l| l.split_whitespace().last().unwrap_or_default().to_owned())
    };
    assert_eq!(row("alice").as_deref(), Some("2"), "{text}");
    assert_eq!(row("bob").as_deref(), Some("2"), "{text}");

    let http = HttpGateway::start_with(&cfg, &env);
    let out = run_python_with(
        "pyenv",
        "identity_client.py",
        &["check".into(), http.url.clone(), d],
        &env,
    );
    assert!(out.contains("33 passed, 0 failed"), "{out}");
    drop(http);
    drop(rt);
}

#[test]
fn the_rate_limit_holds_per_caller() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let whoami = rt.block_on(rmcp_http::serve_rmcp_http(|| rmcp_http::Whoami));
    let dir = temp_dir("identity-rate");
    run_python(
        "pyenv",
        "identity_client.py",
        &["keys".into(), dir.display().to_string()],
    );
    let cfg = config(
        &dir,
        whoami,
        "[limits]\nrate = { calls_per_minute = 6, burst = 3 }\n",
    );
    let env = [("ALICE_TOKEN", ALICE), ("BOB_TOKEN", BOB)];
    let http = HttpGateway::start_with(&cfg, &env);
    let out = run_python_with(
        "pyenv",
        "identity_client.py",
        &["rate".into(), http.url.clone()],
        &env,
    );
    assert!(out.contains("2 passed, 0 failed"), "{out}");
}

#[test]
fn approval_gated_tools_ask_the_person_through_the_client() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let counter = rmcp_http::Counter::default();
    let ran = counter.0.clone();
    let upstream = rt.block_on(rmcp_http::serve_rmcp_http(move || counter.clone()));
    let dir = temp_dir("identity-approval");
    let cfg = dir.join("gateway.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[[client]]
name = "alice"
token = "${{env:ALICE_TOKEN}}"

[[policy]]
match = {{ client = "alice" }}
allow = ["counter/*", "everything/echo"]

[approval]
tools = ["counter/*", "everything/*"]

[codeact]
enabled = true

[audit]
file = "audit.jsonl"
{everything}
[[source]]
name = "counter"
url = "http://{upstream}/"
group = "counter"
description = "Counts its calls"
codeact = true
"#,
            everything = everything_source(),
        ),
    )
    .expect("config");
    let env = [("ALICE_TOKEN", ALICE)];
    let http = HttpGateway::start_with(&cfg, &env);
    let out = run_python_with(
        "pyenv",
        "identity_client.py",
        &["approval".into(), http.url.clone()],
        &env,
    );
    assert!(out.contains("15 passed, 0 failed; 4 accepted"), "{out}");
    // The upstream ran exactly the accepted calls: nothing declined, cancelled or unasked ran.
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 4, "{out}");
    drop(http);
    // Over stdio (no caller identity, so no policy): both protocols, accepted and declined.
    let stdio_cfg = dir.join("stdio.toml");
    std::fs::write(
        &stdio_cfg,
        format!(
            r#"
[approval]
tools = ["counter/*"]

[[source]]
name = "counter"
url = "http://{upstream}/"
group = "counter"
description = "Counts its calls"
"#
        ),
    )
    .expect("config");
    let out = run_python(
        "pyenv",
        "identity_client.py",
        &[
            "approval-stdio".into(),
            env!("CARGO_BIN_EXE_toolsearch").into(),
            stdio_cfg.display().to_string(),
        ],
    );
    assert!(out.contains("5 passed, 0 failed"), "{out}");
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 6, "{out}");
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).expect("audit");
    let outcomes: Vec<String> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["tool"] == "count")
        .map(|l| l["outcome"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        outcomes,
        [
            "ok", "denied", "denied", "ok", "denied", "denied", "ok", "denied", "ok"
        ],
        "{audit}"
    );
    drop(rt);
}
