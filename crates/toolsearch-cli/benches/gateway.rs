//! The gateway's cost on the wire. A real rmcp client over stdio:
//! - `call_tool` → server-everything's `echo` through `toolsearch serve`, against the same
//!   client calling the same upstream directly (the peer);
//! - `discover_tools` through `toolsearch serve` with ToolBench (2,479 tools) as a static
//!   source, against the same call answered in-process by the engine.
//!
//! `cargo bench -p toolsearch-cli --bench gateway` prints medians and ratios (needs
//! `npm ci` in tests/mcp-servers and a built `toolsearch` binary, which cargo provides).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn everything_js() -> String {
    let p = root().join(
        "tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(p.exists(), "run `npm ci` in tests/mcp-servers first");
    p.display().to_string()
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

async fn spawn(cmd: tokio::process::Command) -> RunningService<RoleClient, ()> {
    ().serve(TokioChildProcess::new(cmd).expect("spawn"))
        .await
        .expect("initialize")
}

async fn median_of(
    n: usize,
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> Duration {
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(object(args));
    for _ in 0..n / 10 {
        client.call_tool(params.clone()).await.expect("call");
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = client.call_tool(params.clone()).await.expect("call");
        times.push(t.elapsed());
        assert!(!r.is_error.unwrap_or(false), "{r:?}");
    }
    times.sort();
    times[n / 2]
}

/// Median round trip of one short line through a `cat` child process over pipes.
async fn pipe_round_trip(n: usize) -> Duration {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cat");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut times = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let t = Instant::now();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\"}\n")
            .await
            .expect("write");
        line.clear();
        stdout.read_line(&mut line).await.expect("read");
        if i >= n / 10 {
            times.push(t.elapsed());
        }
    }
    drop(stdin);
    let _ = child.wait().await;
    times.sort();
    times[n / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("toolsearch-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let config = dir.join("gateway.toml");
        let toolbench = root().join("../shared/data/toolbench-stable/catalog.json");
        std::fs::write(
            &config,
            format!(
                "[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"Reference test server\"\n\n[[source]]\nname = \"toolbench\"\ncatalog = {:?}\n",
                everything_js(),
                toolbench.display().to_string()
            ),
        )
        .expect("config");

        let mut direct_cmd = tokio::process::Command::new("node");
        direct_cmd.arg(everything_js());
        let direct = spawn(direct_cmd).await;
        let mut gw_cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
        gw_cmd.args(["serve", "--config"]).arg(&config);
        let gateway = spawn(gw_cmd).await;

        let n = 2000;
        let echo = json!({"message": "benchmark"});
        let plain = median_of(n, &direct, "echo", echo.clone()).await;
        let through = median_of(n, &gateway, "call_tool", json!({"group": "everything", "tool": "echo", "arguments": echo})).await;
        println!("| round trip (median of {n}) | time | vs direct |");
        println!("|---|---|---|");
        println!("| echo on server-everything, rmcp client over stdio, direct (peer) | {plain:.1?} | 1.00x |");
        println!("| call_tool → echo through `toolsearch serve` (stdio, a second process hop) | {through:.1?} | {:.2}x |", through.as_secs_f64() / plain.as_secs_f64());

        // The floor of any extra process hop here: one line through `cat` and back over pipes.
        let hop = pipe_round_trip(n).await;
        println!("| floor: one line to `cat` and back over pipes (no MCP at all) | {hop:.1?} | |");
        println!("| through `toolsearch serve`, lower bound: direct + that floor | {:.1?} | {:.2}x |", plain + hop, (plain + hop).as_secs_f64() / plain.as_secs_f64());

        // The same gateway in-process: no extra process hop, so what remains is the gateway's
        // own work (validation, dispatch, conversion) on top of the same upstream hop.
        let config_text = std::fs::read_to_string(&config).expect("config");
        let in_process = toolsearch_mcp::Gateway::start(
            toolsearch::config::parse_config("gateway.toml", &config_text, &dir).expect("config"),
            Default::default(),
        )
        .await
        .expect("gateway");
        let call = json!({"group": "everything", "tool": "echo", "arguments": echo});
        for _ in 0..n / 10 {
            in_process.engine().handle("call_tool", call.clone()).await;
        }
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let r = in_process.engine().handle("call_tool", call.clone()).await;
            times.push(t.elapsed());
            assert!(!r.is_error, "{r:?}");
        }
        times.sort();
        let library = times[n / 2];
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let server = toolsearch_mcp::GatewayServer::new(in_process.clone());
        tokio::spawn(async move {
            if let Ok(running) = server.serve(tokio::io::split(server_io)).await {
                let _ = running.waiting().await;
            }
        });
        let mcp_in_process = ().serve(tokio::io::split(client_io)).await.expect("initialize");
        let over_memory = median_of(n, &mcp_in_process, "call_tool", call.clone()).await;
        println!("| call_tool → echo, gateway in-process as a library (`Engine::handle`) | {library:.1?} | {:.2}x |", library.as_secs_f64() / plain.as_secs_f64());
        println!("| call_tool → echo, rmcp client ↔ gateway over an in-memory stream | {over_memory:.1?} | {:.2}x |", over_memory.as_secs_f64() / plain.as_secs_f64());
        mcp_in_process.cancel().await.expect("close");
        in_process.shutdown().await;

        let queries: Vec<String> = std::fs::read_to_string(root().join("../shared/data/toolbench-stable/queries.jsonl"))
            .expect("queries")
            .lines()
            .take(200)
            .map(|l| serde_json::from_str::<Value>(l).expect("json")["query"].as_str().expect("q").to_owned())
            .collect();
        let mut over_wire = Vec::new();
        for q in &queries {
            let params = CallToolRequestParams::new("discover_tools").with_arguments(object(json!({"query": q})));
            let t = Instant::now();
            gateway.call_tool(params).await.expect("discover");
            over_wire.push(t.elapsed());
        }
        over_wire.sort();
        println!("| discover_tools through toolsearch serve, ToolBench static source, 200 queries, p50 | {:.1?} |", over_wire[over_wire.len() / 2]);
        println!("| same, p99 | {:.1?} |", over_wire[over_wire.len() * 99 / 100]);

        gateway.cancel().await.expect("close");
        direct.cancel().await.expect("close");
    });
}
