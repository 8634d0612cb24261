//! Vendor formats through the binary: `export --format anthropic|openai`, `control --format`,
//! and `POST /v1/tool_search` on `serve --http` (with its auth, caller policy and rate limit).
//! What they print and serve is checked against the official `anthropic` and `openai` Python
//! SDKs' typed params and sent through their real clients (`tests/python/vendor_shapes.py`),
//! so a drift of either shape fails here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod common;

use common::{HttpGateway, root, run_python, runtime, temp_dir};

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .output()
        .expect("run toolsearch")
}

fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A catalog with a name no vendor accepts, and the example's direct tool.
fn catalog(dir: &Path) -> PathBuf {
    let path = dir.join("catalog.json");
    let mut c: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("examples/catalog.json")).expect("example catalog"),
    )
    .expect("JSON");
    c["groups"][1]["tools"]
        .as_array_mut()
        .expect("billing tools")
        .push(json!({
            "name": "v1/charges.create",
            "description": "Create a charge on a card (Stripe-style endpoint).",
            "inputSchema": {"type": "object", "properties": {"amount": {"type": "integer"}}}
        }));
    std::fs::write(&path, c.to_string()).expect("write catalog");
    path
}

#[test]
fn exports_and_answers_take_the_vendors_published_shapes() {
    let dir = temp_dir("vendor-shapes");
    let catalog = catalog(&dir);
    let c = catalog.to_str().expect("path");
    let save = |name: &str, o: &Output| {
        std::fs::write(dir.join(name), &o.stdout).expect("save");
        stdout_json(o)
    };

    let a = toolsearch(&["export", "--format", "anthropic", "--catalog", c]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let a = save("anthropic_export.json", &a);
    let names: Vec<&str> = a
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    let short = names
        .iter()
        .find(|n| n.starts_with("billing__v1_charges_create_"))
        .expect("the short form of billing/v1/charges.create")
        .to_string();
    assert_eq!(short.len(), "billing__v1_charges_create_".len() + 8);
    assert_eq!(names[..2], ["tool_search", "current_time"]);

    let o = toolsearch(&["export", "--format", "openai", "--catalog", c]);
    assert!(o.status.success());
    let o = save("openai_export.json", &o);
    assert_eq!(
        o.as_array().expect("array").len(),
        2 + 4,
        "search, the direct tool, four namespaces"
    );

    // Searches in each shape; the short form comes back and maps back on the call.
    let found = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "anthropic",
        "tool_search",
        r#"{"query": "create a charge on a card", "limit": 3}"#,
    ]);
    assert!(found.status.success());
    let found = save("anthropic_search.json", &found);
    assert_eq!(found[0]["tool_name"], short.as_str());
    let none = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "anthropic",
        "tool_search",
        r#"{"query": "zebra xylophone"}"#,
    ]);
    assert!(none.status.success());
    assert_eq!(save("anthropic_search_none.json", &none)[0]["type"], "text");
    let call = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "anthropic",
        &short,
        r#"{"amount": 5}"#,
    ]);
    assert_eq!(
        call.status.code(),
        Some(1),
        "a static catalog's tool has no executor"
    );
    let call = save("anthropic_call.json", &call);
    assert!(
        call[0]["text"]
            .as_str()
            .expect("text")
            .contains("not_executable")
    );
    assert!(
        call[0]["text"]
            .as_str()
            .expect("text")
            .contains("v1/charges.create")
    );

    let found = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "openai",
        "tool_search",
        r#"{"call_id": "call_7", "arguments": "{\"query\": \"refund a payment\", \"limit\": 4}"}"#,
    ]);
    assert!(found.status.success());
    let found = save("openai_search.json", &found);
    assert_eq!(found["call_id"], "call_7");
    assert_eq!(found["tools"][0]["name"], "billing");
    assert_eq!(
        found["tools"][0]["tools"][0]["name"],
        "billing__refund_payment"
    );
    let call = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "openai",
        "billing__refund_payment",
        r#"{"call_id": "call_8", "arguments": {"amount_cents": 5}}"#,
    ]);
    assert_eq!(call.status.code(), Some(1));
    let call = save("openai_call.json", &call);
    assert_eq!(call["call_id"], "call_8");
    assert!(
        call["output"]
            .as_str()
            .expect("output")
            .contains("invalid_arguments"),
        "validated before dispatch"
    );

    let out = run_python("pyenv", "vendor_shapes.py", &[dir.display().to_string()]);
    assert!(out.starts_with("ok: "), "{out}");
}

#[test]
fn bad_usage_exits_2_and_a_bad_search_exits_1() {
    let dir = temp_dir("vendor-usage");
    let catalog = catalog(&dir);
    let c = catalog.to_str().expect("path");
    let bad = toolsearch(&["export", "--format", "gemini", "--catalog", c]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("anthropic or openai"));
    let bad = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "xml",
        "tool_search",
        "{}",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{\"groups\": [").expect("write");
    let bad = toolsearch(&[
        "export",
        "--format",
        "openai",
        "--catalog",
        broken.to_str().expect("path"),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&bad.stderr).lines().count(), 1);

    // From a config: its sources gathered by a short-lived gateway, the same array.
    let config = dir.join("toolsearch.toml");
    std::fs::write(
        &config,
        format!("[[source]]\nname = \"example\"\ncatalog = {c:?}\n"),
    )
    .expect("write config");
    let by_config = toolsearch(&[
        "export",
        "--format",
        "anthropic",
        "--config",
        config.to_str().expect("path"),
    ]);
    assert!(
        by_config.status.success(),
        "{}",
        String::from_utf8_lossy(&by_config.stderr)
    );
    let by_catalog = toolsearch(&["export", "--format", "anthropic", "--catalog", c]);
    assert_eq!(stdout_json(&by_config), stdout_json(&by_catalog));

    // --lean: OpenAI only, the full export without its namespaces.
    let lean = toolsearch(&["export", "--format", "anthropic", "--lean", "--catalog", c]);
    assert_eq!(lean.status.code(), Some(2));
    let full = stdout_json(&toolsearch(&[
        "export",
        "--format",
        "openai",
        "--catalog",
        c,
    ]));
    let lean = stdout_json(&toolsearch(&[
        "export",
        "--format",
        "openai",
        "--lean",
        "--catalog",
        c,
    ]));
    let kept: Vec<&Value> = full
        .as_array()
        .expect("array")
        .iter()
        .filter(|t| t["type"] != "namespace")
        .collect();
    assert_eq!(
        lean.as_array().expect("array").iter().collect::<Vec<_>>(),
        kept
    );
    assert_eq!(lean[0]["type"], "tool_search");
    assert_eq!(lean[1]["name"], "current_time");

    let e = toolsearch(&[
        "control",
        "--catalog",
        c,
        "--format",
        "openai",
        "tool_search",
        r#"{"arguments": {"limit": 99}}"#,
    ]);
    assert_eq!(e.status.code(), Some(1));
    let e = stdout_json(&e);
    assert_eq!(e["error"], "invalid_request");

    let stats = toolsearch(&["export", "--format", "anthropic", "--catalog", c, "--stats"]);
    assert!(stats.status.success());
    let text = String::from_utf8_lossy(&stats.stdout);
    let number = |row: &str, col: usize| -> usize {
        let line = text
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("{row} in {text}"));
        let cols: Vec<&str> = line[row.len()..].split_whitespace().collect();
        cols[col].parse().expect("a number")
    };
    let all = number("every tool loaded directly", 0);
    let always = number("deferred export, always loaded", 0);
    assert!(always < all, "{text}");
    assert!(
        number("deferred export, always loaded", 1) * 2 < always,
        "tokens are fewer than bytes"
    );
}

#[test]
fn the_http_search_answers_each_caller_in_either_shape() {
    let dir = temp_dir("vendor-http");
    let catalog = catalog(&dir);
    let config = dir.join("toolsearch.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[client]]
name = "alice"
token = "${{env:ALICE_TOKEN}}"

[[client]]
name = "bob"
token = "${{env:BOB_TOKEN}}"

[[policy]]
match = {{ client = "alice" }}
allow = ["billing/*"]

[[policy]]
match = {{ client = "bob" }}
allow = ["crm/*"]

[limits]
rate = {{ calls_per_minute = 60, burst = 4 }}

[[source]]
name = "example"
catalog = {catalog:?}
"#,
            catalog = catalog.display().to_string()
        ),
    )
    .expect("write config");
    let gw = HttpGateway::start_with(
        &config,
        &[("ALICE_TOKEN", "alice-7q"), ("BOB_TOKEN", "bob-3k")],
    );
    let url = format!("{}v1/tool_search", gw.url);
    runtime().block_on(async {
        toolsearch_mcp::upstream::install_crypto_provider();
        let client = reqwest::Client::new();
        let post = |token: Option<&'static str>, body: Value| {
            let mut r = client.post(&url).json(&body);
            if let Some(t) = token {
                r = r.bearer_auth(t);
            }
            r.send()
        };
        let r = post(None, json!({"format": "anthropic", "query": "refund"}))
            .await
            .expect("post");
        assert_eq!(r.status(), 401);

        let r = post(
            Some("alice-7q"),
            json!({"format": "anthropic", "query": "refund a payment", "limit": 2}),
        )
        .await
        .expect("post");
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.expect("json");
        assert_eq!(
            body[0],
            json!({"type": "tool_reference", "tool_name": "billing__refund_payment"})
        );
        std::fs::write(dir.join("anthropic_search_http.json"), body.to_string()).expect("save");

        // bob sees only crm: the same query finds none of billing.
        let r = post(
            Some("bob-3k"),
            json!({"format": "openai", "query": "refund a payment", "call_id": "c1"}),
        )
        .await
        .expect("post");
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["type"], "tool_search_output");
        assert_eq!(body["call_id"], "c1");
        assert!(!body.to_string().contains("billing"), "{body}");
        let r = post(
            Some("bob-3k"),
            json!({"format": "openai", "query": "customer email"}),
        )
        .await
        .expect("post");
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["tools"][0]["name"], "crm");
        std::fs::write(dir.join("openai_search_http.json"), body.to_string()).expect("save");

        for (bad, path) in [
            (json!({"format": "gemini", "query": "x"}), "/format"),
            (json!({"format": "openai"}), "/query"),
            (
                json!({"format": "openai", "query": "x", "limit": 0}),
                "/limit",
            ),
            (json!({"format": "anthropic", "query": "x", "k": 1}), "/k"),
            (
                json!({"format": "anthropic", "query": "x", "call_id": "c"}),
                "/call_id",
            ),
        ] {
            let r = post(Some("bob-3k"), bad.clone()).await.expect("post");
            assert_eq!(r.status(), 400, "{bad}");
            let e: Value = r.json().await.expect("json");
            assert_eq!(e["error"], "invalid_request", "{bad}");
            assert!(
                e["path"].as_str().expect("path").ends_with(path),
                "{bad}: {e}"
            );
        }
        let r = client
            .get(&url)
            .bearer_auth("bob-3k")
            .send()
            .await
            .expect("get");
        assert_eq!(r.status(), 405);

        // alice's bucket holds 4: one search made, then three more, then refused.
        let mut statuses = Vec::new();
        for _ in 0..4 {
            let r = post(
                Some("alice-7q"),
                json!({"format": "anthropic", "query": "invoice"}),
            )
            .await
            .expect("post");
            statuses.push(r.status().as_u16());
            if r.status() != 200 {
                assert!(r.headers().contains_key("retry-after"));
                let e: Value = r.json().await.expect("json");
                assert_eq!(e["error"], "rate_limited");
            }
        }
        assert_eq!(statuses, [200, 200, 200, 429]);
    });
    drop(gw);
    // What the HTTP search served takes the vendors' shapes too; the exports come from a
    // config whose source lets programs call its tools (OpenAI's `allowed_callers`).
    let programmable = dir.join("programmable.toml");
    std::fs::write(
        &programmable,
        format!(
            "[[source]]\nname = \"example\"\ncatalog = {:?}\ncodeact = [\"customer_name\"]\n",
            catalog.display().to_string()
        ),
    )
    .expect("write config");
    for (name, format) in [
        ("anthropic_export.json", "anthropic"),
        ("openai_export.json", "openai"),
    ] {
        let o = toolsearch(&[
            "export",
            "--format",
            format,
            "--config",
            programmable.to_str().expect("path"),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(dir.join(name), &o.stdout).expect("save");
    }
    let openai: Value =
        serde_json::from_slice(&std::fs::read(dir.join("openai_export.json")).expect("read"))
            .expect("JSON");
    assert!(
        openai
            .to_string()
            .contains("\"allowed_callers\":[\"direct\",\"programmatic\"]")
    );
    let call = toolsearch(&[
        "control",
        "--catalog",
        catalog.to_str().expect("path"),
        "--format",
        "anthropic",
        "crm__customer_name",
        r#"{"customer_id": 1}"#,
    ]);
    std::fs::write(dir.join("anthropic_call.json"), &call.stdout).expect("save");
    let call = toolsearch(&[
        "control",
        "--catalog",
        catalog.to_str().expect("path"),
        "--format",
        "openai",
        "crm__customer_name",
        r#"{"call_id": "c", "arguments": {"customer_id": 1}}"#,
    ]);
    std::fs::write(dir.join("openai_call.json"), &call.stdout).expect("save");
    let out = run_python("pyenv", "vendor_shapes.py", &[dir.display().to_string()]);
    assert!(out.starts_with("ok: "), "{out}");
}
