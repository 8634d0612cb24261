//! OpenTelemetry traces of the served gateway: `serve --http` with `[telemetry]` exports its
//! spans over OTLP/HTTP to a loopback receiver that decodes them with the official protobuf
//! types (`tests/python/otlp_receiver.py`); a caller's `traceparent` (in `_meta`, or as the
//! HTTP header) continues its trace through the gateway and on to an HTTP upstream, which
//! reports the trace context it received (`TraceEcho`). Without `[telemetry]` the caller's
//! `traceparent` is passed on as it came.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, RequestParamsMeta};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

mod common;
#[path = "../../../tests/support/rmcp_http.rs"]
mod rmcp_http;

use common::{HttpGateway, Listening, python, root, runtime, signal, temp_dir};

const TRACE_A: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_A: &str = "00f067aa0ba902b7";
const TRACE_B: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_B: &str = "b7ad6b7169203331";

/// The receiver: its child and the endpoint it listens on.
/// The OTLP receiver (tests/python/otlp_receiver.py), writing the spans it gets to `out`.
fn receiver(out: &std::path::Path) -> Listening {
    let mut command = std::process::Command::new(python("pyenv"));
    command
        .arg(root().join("tests/python/otlp_receiver.py"))
        .arg(out);
    Listening::start(command, "the OTLP receiver")
}

fn config(
    dir: &std::path::Path,
    upstream: std::net::SocketAddr,
    telemetry: &str,
) -> std::path::PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(
        &path,
        format!(
            "{telemetry}\n[[source]]\nname = \"traced\"\nurl = \"http://{upstream}/\"\ngroup = \"traced\"\ndescription = \"Says which trace context a call carried\"\n"
        ),
    )
    .expect("config");
    path
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

/// Calls `traced/trace` through the gateway at `url` with `meta_traceparent` in `_meta` and
/// `header_traceparent` as an HTTP header on every request; returns what the upstream saw.
async fn call_through(
    url: &str,
    meta_traceparent: Option<&str>,
    header_traceparent: Option<&str>,
) -> String {
    toolsearch_mcp::upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(tp) = header_traceparent {
        config.custom_headers = HashMap::from([(
            http::HeaderName::from_static("traceparent"),
            http::HeaderValue::from_str(tp).expect("header value"),
        )]);
    }
    let client = ()
        .serve(StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            config,
        ))
        .await
        .expect("initialize");
    // The upstream connects in the background: wait for its group to be ready.
    let mut params = CallToolRequestParams::new("call_tool").with_arguments(object(
        json!({"group": "traced", "tool": "trace", "arguments": {}}),
    ));
    if let Some(tp) = meta_traceparent {
        params.set_traceparent(tp);
    }
    let started = std::time::Instant::now();
    let text = loop {
        let r = client.call_tool(params.clone()).await.expect("tools/call");
        let text = serde_json::to_string(&r).expect("json");
        if text.contains("header=") || started.elapsed() > Duration::from_secs(20) {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    client
        .call_tool(
            CallToolRequestParams::new("discover_tools")
                .with_arguments(object(json!({"query": "trace context"}))),
        )
        .await
        .expect("discover_tools");
    client.cancel().await.expect("close");
    let start = text.find("header=").unwrap_or_else(|| panic!("{text}"));
    text[start..]
        .split('"')
        .next()
        .expect("the answer")
        .to_owned()
}

/// `(header, meta)` of an answer `header=H;meta=M`.
fn seen(answer: &str) -> (String, String) {
    let (h, m) = answer.split_once(";meta=").expect(answer);
    (h.trim_start_matches("header=").to_owned(), m.to_owned())
}

#[test]
fn a_callers_trace_goes_through_the_gateway_to_an_http_upstream_and_its_spans_are_exported() {
    let dir = temp_dir("traces");
    let spans_file = dir.join("spans.jsonl");
    let receiver = receiver(&spans_file);
    let rt = runtime();
    let upstream = rt.block_on(rmcp_http::serve_rmcp_http(|| rmcp_http::TraceEcho));
    let cfg = config(
        &dir,
        upstream,
        &format!(
            "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"gw-test\"\n",
            receiver.1
        ),
    );
    let mut http = HttpGateway::start(&cfg);
    let traceparent_a = format!("00-{TRACE_A}-{PARENT_A}-01");
    let traceparent_b = format!("00-{TRACE_B}-{PARENT_B}-01");
    let (a, b, fresh) = rt.block_on(async {
        (
            call_through(&http.url, Some(&traceparent_a), None).await,
            call_through(&http.url, None, Some(&traceparent_b)).await,
            call_through(&http.url, None, None).await,
        )
    });
    // SIGTERM: the gateway stops and exports the spans it still holds.
    signal(http.child.id(), "TERM");
    let status = http.child.wait().expect("the gateway exits");
    assert!(status.success(), "{status}");

    let lines: Vec<Value> = std::fs::read_to_string(&spans_file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert!(lines.iter().all(|l| l.get("error").is_none()), "{lines:#?}");
    let in_trace =
        |trace: &str| -> Vec<&Value> { lines.iter().filter(|s| s["trace_id"] == trace).collect() };
    let one = |spans: &[&Value], name: &str| -> Value {
        let found: Vec<&&Value> = spans.iter().filter(|s| s["name"] == name).collect();
        assert!(!found.is_empty(), "no {name} span in {spans:#?}");
        (*found[0]).clone()
    };

    for (trace, parent, answer) in [(TRACE_A, PARENT_A, &a), (TRACE_B, PARENT_B, &b)] {
        let spans = in_trace(trace);
        // From the call to the upstream up: its dispatch, the engine's call, the MCP request's
        // span — which continues the caller's trace under the caller's span.
        let client = one(&spans, "upstream tools/call");
        assert_eq!(client["kind"], "SPAN_KIND_CLIENT");
        let parent_of = |span: &Value, name: &str| -> Value {
            let p = spans
                .iter()
                .find(|s| s["span_id"] == span["parent_span_id"])
                .unwrap_or_else(|| panic!("no parent of {span} in {spans:#?}"));
            assert_eq!(p["name"], name, "{spans:#?}");
            (*p).clone()
        };
        let dispatch = parent_of(&client, "dispatch");
        assert_eq!(dispatch["attributes"]["group"], "traced");
        assert_eq!(dispatch["attributes"]["tool"], "trace");
        let call = parent_of(&dispatch, "tool_call");
        assert_eq!(call["attributes"]["tool"], "call_tool");
        let server = parent_of(&call, "tools/call");
        assert_eq!(server["parent_span_id"], parent, "{server}");
        assert_eq!(server["kind"], "SPAN_KIND_SERVER");
        assert_eq!(server["service"], "gw-test");
        // The upstream got the trace, with the gateway's client span as the parent, both in
        // the HTTP header and in `_meta`.
        let expected = format!(
            "00-{trace}-{}-01",
            client["span_id"].as_str().expect("span id")
        );
        assert_eq!(seen(answer), (expected.clone(), expected), "{answer}");
    }
    // A discovery control has its span too: the client with the header sent it in its trace.
    let discover = in_trace(TRACE_B)
        .into_iter()
        .filter(|s| s["name"] == "tool_call" && s["attributes"]["tool"] == "discover_tools")
        .count();
    assert_eq!(discover, 1, "{lines:#?}");

    // A call without a trace context starts a new trace, carried on all the same.
    let (header, meta) = seen(&fresh);
    assert_eq!(header, meta);
    let fresh_trace = header.split('-').nth(1).expect("trace id").to_owned();
    assert!(fresh_trace != TRACE_A && fresh_trace != TRACE_B);
    let root = one(&in_trace(&fresh_trace), "tools/call");
    assert_eq!(root["parent_span_id"], "", "{root}");
    drop(receiver);

    // Without [telemetry] nothing is recorded, and the caller's trace context is passed on
    // as it came.
    let cfg = config(&dir, upstream, "");
    let http = HttpGateway::start(&cfg);
    let passed = rt.block_on(call_through(&http.url, Some(&traceparent_a), None));
    assert_eq!(
        seen(&passed),
        (traceparent_a.clone(), traceparent_a.clone())
    );
    let passed = rt.block_on(call_through(&http.url, None, None));
    assert_eq!(seen(&passed), ("-".to_owned(), "-".to_owned()));
    drop(http);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_telemetry_endpoint_is_a_config_error() {
    let dir = temp_dir("traces-bad");
    let cfg = dir.join("gateway.toml");
    std::fs::write(&cfg, "[telemetry]\notlp_endpoint = \"collector:4318\"\n").expect("config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", "--config"])
        .arg(&cfg)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("serve");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("telemetry.otlp_endpoint"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
