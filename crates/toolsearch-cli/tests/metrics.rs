//! `/metrics` of the served gateway, scraped and parsed by the official Prometheus Python
//! client's parsers (`tests/python/metrics_scrape.py`): `serve --http` with a bearer token in
//! front of server-everything, a static catalog and an upstream that never starts, driven by
//! rmcp's HTTP client; a stdio gateway's `--metrics` listener; and a gateway with policies,
//! whose MCP listener keeps its metrics to itself.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

mod common;

use common::{
    HttpGateway, OPS_ANNOUNCED, announced, everything_source, run_python, runtime, temp_dir,
    wait_until,
};

const TOKEN: &str = "metrics-test-token-5d1e";

/// A scrape as the parser saw it.
struct Scrape {
    status: u64,
    content_type: String,
    families: Map<String, Value>,
    samples: Vec<Value>,
    text: String,
}

impl Scrape {
    fn of(url: &str, format: &str, token: Option<&str>) -> Self {
        let mut args = vec![url.to_owned(), format.to_owned()];
        args.extend(token.map(str::to_owned));
        let out = run_python("pyenv", "metrics_scrape.py", &args);
        let v: Value = serde_json::from_str(&out).expect("the scraper prints JSON");
        Self {
            status: v["status"].as_u64().expect("status"),
            content_type: v["content_type"].as_str().unwrap_or_default().to_owned(),
            families: v["families"].as_object().cloned().unwrap_or_default(),
            samples: v["samples"].as_array().cloned().unwrap_or_default(),
            text: out,
        }
    }

    /// The value of sample `name` whose labels are exactly `labels`.
    fn value(&self, name: &str, labels: Value) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s["name"] == name && s["labels"] == labels)
            .and_then(|s| s["value"].as_f64())
    }

    /// Asserts that sample `name` with exactly `labels` has `value`.
    #[track_caller]
    fn assert(&self, name: &str, labels: Value, value: f64) {
        assert_eq!(
            self.value(name, labels.clone()),
            Some(value),
            "{name} {labels}\n{}",
            self.text
        );
    }

    /// The samples named `name`.
    fn named(&self, name: &str) -> Vec<&Value> {
        self.samples.iter().filter(|s| s["name"] == name).collect()
    }
}

/// A static catalog source, `crm`, written into `dir`.
fn crm_source(dir: &std::path::Path) -> String {
    let catalog = dir.join("crm.json");
    std::fs::write(
        &catalog,
        r#"{"groups":[{"name":"crm","description":"Customer records","tools":[{"name":"find_customer","description":"Find a customer by email"}]}]}"#,
    )
    .expect("catalog");
    format!(
        "[[source]]\nname = \"crm\"\ncatalog = {:?}\n\n",
        catalog.display().to_string()
    )
}

/// An upstream that never starts.
const BROKEN_SOURCE: &str = "[[source]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\ngroup = \"broken\"\ndescription = \"Never starts\"\n\n";

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

#[test]
fn metrics_count_calls_searches_upstreams_and_sessions() {
    let dir = temp_dir("metrics-http");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[search]\nmethod = \"bm25\"\n\n{}{}{BROKEN_SOURCE}",
            everything_source(),
            crm_source(&dir)
        ),
    )
    .expect("config");
    let http = HttpGateway::start_with(&config, &[("TOOLSEARCH_HTTP_TOKEN", TOKEN)]);
    let metrics_url = format!("{}/metrics", http.url.trim_end_matches('/'));

    // Without the token /metrics is refused like MCP.
    let refused = Scrape::of(&metrics_url, "prometheus", None);
    assert_eq!(refused.status, 401, "{}", refused.text);

    let rt = runtime();
    rt.block_on(async {
        toolsearch_mcp::upstream::install_crypto_provider();
        let transport = StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            StreamableHttpClientTransportConfig::with_uri(http.url.clone())
                .auth_header(TOKEN.to_owned()),
        );
        let client = ().serve(transport).await.expect("initialize");
        let call = |name: &str, args: Value| {
            CallToolRequestParams::new(name.to_owned()).with_arguments(object(args))
        };
        // Wait for server-everything, so its calls run.
        let started = std::time::Instant::now();
        loop {
            let r = client
                .call_tool(call("list_tool_groups", json!({})))
                .await
                .expect("list_tool_groups");
            let text = serde_json::to_string(&r).expect("json");
            if !text.contains("still connecting") || started.elapsed() > Duration::from_secs(30) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for args in [
            json!({"query": "echo back a message"}),
            json!({"query": "xylophone zqvxw"}),
        ] {
            client
                .call_tool(call("discover_tools", args))
                .await
                .expect("discover_tools");
        }
        for args in [
            json!({"group": "everything", "tool": "echo", "arguments": {"message": "one"}}),
            json!({"group": "everything", "tool": "echo", "arguments": {"message": "two"}}),
            json!({"group": "everything", "tool": "echo", "arguments": {}}),
            json!({"group": "everything", "tool": "secret_tool_name_asked", "arguments": {}}),
        ] {
            client
                .call_tool(call("call_tool", args))
                .await
                .expect("call_tool");
        }

        let m = Scrape::of(&metrics_url, "prometheus", Some(TOKEN));
        assert_eq!(m.status, 200, "{}", m.text);
        assert!(
            m.content_type.starts_with("text/plain; version=0.0.4"),
            "{}",
            m.content_type
        );
        let calls = "toolsearch_tool_calls_total";
        let ok = json!({"group": "everything", "tool": "echo", "outcome": "ok"});
        m.assert(calls, ok, 2.0);
        let invalid =
            json!({"group": "everything", "tool": "echo", "outcome": "invalid_arguments"});
        m.assert(calls, invalid, 1.0);
        // A tool that does not exist is never a label value: it counts under tool="".
        let unknown = json!({"group": "", "tool": "", "outcome": "unknown_tool"});
        m.assert(calls, unknown, 1.0);
        assert!(!m.text.contains("secret_tool_name_asked"), "{}", m.text);
        let discover = json!({"group": "", "tool": "discover_tools", "outcome": "ok"});
        m.assert(calls, discover, 2.0);

        let searches = "toolsearch_searches_total";
        let some = json!({"control": "discover_tools", "method": "bm25", "found": "some"});
        let none = json!({"control": "discover_tools", "method": "bm25", "found": "none"});
        m.assert(searches, some, 1.0);
        m.assert(searches, none, 1.0);
        // No query text either.
        assert!(!m.text.contains("xylophone"), "{}", m.text);

        // The latency histogram: three echo calls, every bucket cumulative up to +Inf.
        let echo = json!({"group": "everything", "tool": "echo"});
        m.assert("toolsearch_tool_call_seconds_count", echo.clone(), 3.0);
        let inf = json!({"group": "everything", "tool": "echo", "le": "+Inf"});
        m.assert("toolsearch_tool_call_seconds_bucket", inf, 3.0);
        let sum = m
            .value("toolsearch_tool_call_seconds_sum", echo)
            .expect("sum");
        assert!(sum > 0.0 && sum < 30.0, "{sum}");

        // Each source's calls (the console reads the same series): the two echoes ok, the one
        // with bad arguments an error; the unknown tool and the searches reached no source.
        let by_source = "toolsearch_source_calls_total";
        m.assert(
            by_source,
            json!({"source": "everything", "outcome": "ok"}),
            2.0,
        );
        m.assert(
            by_source,
            json!({"source": "everything", "outcome": "error"}),
            1.0,
        );
        m.assert(
            by_source,
            json!({"source": "everything", "outcome": "tool_error"}),
            0.0,
        );
        m.assert(by_source, json!({"source": "crm", "outcome": "ok"}), 0.0);
        let everything = json!({"source": "everything"});
        m.assert("toolsearch_source_call_seconds_count", everything, 3.0);
        let inf = json!({"source": "everything", "le": "+Inf"});
        m.assert("toolsearch_source_call_seconds_bucket", inf, 3.0);
        assert_eq!(m.families["toolsearch_source_call_seconds"], "histogram");

        // Upstream state, and the sessions open (this client's).
        for (source, up) in [("everything", 1.0), ("crm", 1.0), ("broken", 0.0)] {
            m.assert("toolsearch_upstream_up", json!({"source": source}), up);
        }
        m.assert("toolsearch_sessions", json!({}), 1.0);
        assert_eq!(
            m.families["toolsearch_tool_calls"], "counter",
            "{:?}",
            m.families
        );
        assert_eq!(m.families["toolsearch_tool_call_seconds"], "histogram");
        assert_eq!(m.families["toolsearch_upstream_up"], "gauge");

        client.cancel().await.expect("close");
    });

    // The upstream that never starts is retried with backoff: its restarts are counted.
    let restarts = |m: &Scrape| {
        m.value(
            "toolsearch_upstream_restarts_total",
            json!({"source": "broken"}),
        )
        .unwrap_or_default()
    };
    wait_until("restarts of broken", Duration::from_secs(20), || {
        restarts(&Scrape::of(&metrics_url, "prometheus", Some(TOKEN))) >= 1.0
    });
    // The closed session is no longer counted.
    wait_until("the session to close", Duration::from_secs(20), || {
        Scrape::of(&metrics_url, "prometheus", Some(TOKEN)).value("toolsearch_sessions", json!({}))
            == Some(0.0)
    });

    // OpenMetrics when asked for it, as Prometheus asks; its own parser checks `# EOF`.
    let om = Scrape::of(&metrics_url, "openmetrics", Some(TOKEN));
    assert_eq!(om.status, 200, "{}", om.text);
    assert!(
        om.content_type.starts_with("application/openmetrics-text"),
        "{}",
        om.content_type
    );
    let ok = json!({"group": "everything", "tool": "echo", "outcome": "ok"});
    om.assert("toolsearch_tool_calls_total", ok, 2.0);
    let ok = json!({"source": "everything", "outcome": "ok"});
    om.assert("toolsearch_source_calls_total", ok, 2.0);
    assert!(restarts(&om) >= 1.0, "{}", om.text);
    drop(http);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `serve` over stdio with `--metrics 127.0.0.1:0`: the child, its stdin, and the URL of
/// the operator's listener.
fn stdio_gateway(
    config: &std::path::Path,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::BufReader<std::process::ChildStdout>,
    String,
) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", "--metrics", "127.0.0.1:0", "--config"])
        .arg(config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = announced(&mut lines, OPS_ANNOUNCED, |_| {});
    std::thread::spawn(move || for _ in lines {});
    (child, stdin, stdout, url)
}

#[test]
fn a_stdio_gateway_serves_metrics_and_probes_on_its_own_listener() {
    use std::io::{BufRead, Write};
    let dir = temp_dir("metrics-stdio");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!("[search]\nmethod = \"keyword\"\n\n{}", crm_source(&dir)),
    )
    .expect("config");
    let (mut child, mut stdin, mut stdout, url) = stdio_gateway(&config);

    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).expect("initialize answered");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "discover_tools", "arguments": {"query": "customer email"}}}),
    );
    line.clear();
    stdout.read_line(&mut line).expect("tools/call answered");
    assert!(line.contains("find_customer"), "{line}");

    let m = Scrape::of(&format!("{url}/metrics"), "prometheus", None);
    assert_eq!(m.status, 200, "{}", m.text);
    let discover = json!({"group": "", "tool": "discover_tools", "outcome": "ok"});
    m.assert("toolsearch_tool_calls_total", discover, 1.0);
    let found = json!({"control": "discover_tools", "method": "keyword", "found": "some"});
    m.assert("toolsearch_searches_total", found, 1.0);
    m.assert("toolsearch_sessions", json!({}), 1.0);
    m.assert("toolsearch_upstream_up", json!({"source": "crm"}), 1.0);
    assert!(m.named("toolsearch_upstream_restarts_total").is_empty());

    // The probes are there too, and nothing else.
    let rt = runtime();
    rt.block_on(async {
        toolsearch_mcp::upstream::install_crypto_provider();
        let get = |path: &str| reqwest::Client::new().get(format!("{url}{path}")).send();
        let r = get("/readyz").await.expect("readyz");
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.json::<Value>().await.expect("json"),
            json!({"status": "ready"})
        );
        assert_eq!(get("/healthz").await.expect("healthz").status(), 200);
        assert_eq!(get("/").await.expect("root").status(), 404);
        let post = reqwest::Client::new()
            .post(format!("{url}/metrics"))
            .send()
            .await
            .expect("post");
        assert_eq!(post.status(), 405);
    });

    drop(stdin);
    let status = child.wait().expect("the gateway exits when stdin closes");
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_policies_the_mcp_listener_keeps_the_metrics_to_the_operators_listener() {
    let dir = temp_dir("metrics-policy");
    let config = dir.join("gateway.toml");
    let sources = crm_source(&dir);
    std::fs::write(
        &config,
        format!(
            "[[client]]\nname = \"alice\"\ntoken = \"${{env:ALICE_TOKEN}}\"\n\n[[policy]]\nmatch = {{ client = \"alice\" }}\nallow = [\"nothing/*\"]\n\n{sources}"
        ),
    )
    .expect("config");
    let http = HttpGateway::start_args(
        &config,
        &["--metrics", "127.0.0.1:0"],
        &[("ALICE_TOKEN", TOKEN)],
    );
    let main = format!("{}/metrics", http.url.trim_end_matches('/'));
    // alice sees no tool: the metrics, which name every tool, are not hers to read.
    let m = Scrape::of(&main, "prometheus", Some(TOKEN));
    assert_eq!(m.status, 403, "{}", m.text);
    assert!(!m.text.contains("find_customer"), "{}", m.text);
    assert_eq!(Scrape::of(&main, "prometheus", None).status, 401);
    let ops = http
        .ops_url
        .clone()
        .expect("--metrics announced its listener");
    let m = Scrape::of(&format!("{ops}/metrics"), "prometheus", None);
    assert_eq!(m.status, 200, "{}", m.text);
    m.assert("toolsearch_upstream_up", json!({"source": "crm"}), 1.0);
    drop(http);
    let _ = std::fs::remove_dir_all(&dir);
}
