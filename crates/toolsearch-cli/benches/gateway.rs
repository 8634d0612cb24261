//! The gateway's cost on the wire. A real rmcp client over stdio:
//! - `call_tool` → server-everything's `echo` through `toolsearch serve`, against the same
//!   client calling the same upstream directly (the peer) and a line through `cat` (the floor
//!   of any process hop), interleaved call by call; with `TOOLSEARCH_BENCH_BASELINE` set to
//!   other `toolsearch` binaries (older builds; paths separated by `:`), those too, in the same
//!   run; with
//!   `TOOLSEARCH_BENCH_FORWARDER` set, a bare rmcp forwarder too (a gateway doing nothing on
//!   rmcp's service loops on both sides; the gateway's own stdio calls skip the hand-off into
//!   the client loop on its call lane: see `forwarder`, and BENCHMARKS.md "The call lane");
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

// The allocator `toolsearch` runs on, for the forwarder's sake (the client's calls share it).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// A gateway connects its upstreams in the background: waits until the tool answers.
async fn wait_until_callable(
    client: &RunningService<RoleClient, ()>,
    params: &CallToolRequestParams,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while client
        .call_tool(params.clone())
        .await
        .expect("call")
        .is_error
        == Some(true)
    {
        assert!(
            Instant::now() < deadline,
            "{} never became callable",
            params.name
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn median_of(
    n: usize,
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> Duration {
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(object(args));
    wait_until_callable(client, &params).await;
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
    median(times)
}

/// A `cat` child process over pipes: the floor of any extra process hop.
struct Cat {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    line: String,
}

impl Cat {
    fn spawn() -> Self {
        let mut child = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("cat");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        }
    }

    /// One short line to `cat` and back.
    async fn round_trip(&mut self) -> Duration {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let t = Instant::now();
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\"}\n")
            .await
            .expect("write");
        self.line.clear();
        self.stdout.read_line(&mut self.line).await.expect("read");
        t.elapsed()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The stdio hop: the direct call, the `cat` floor and each gateway, interleaved call by call
/// (so the machine's drift hits them alike; the gateways' order turns), in `rounds` rounds of
/// `n`. Prints a row per round
/// and the gateways' share (measured − direct − floor).
async fn hop_rounds(
    rounds: usize,
    n: usize,
    direct: &RunningService<RoleClient, ()>,
    gateways: &[(&str, &RunningService<RoleClient, ()>)],
) {
    let echo = object(json!({"message": "benchmark"}));
    let plain = CallToolRequestParams::new("echo").with_arguments(echo.clone());
    let proxied = CallToolRequestParams::new("call_tool").with_arguments(object(
        json!({"group": "everything", "tool": "echo", "arguments": echo}),
    ));
    for (_, g) in gateways {
        wait_until_callable(g, &proxied).await;
    }
    let mut cat = Cat::spawn();
    let mut header = "| round | direct (peer) | `cat` floor |".to_owned();
    for (name, _) in gateways {
        header += &format!(" through {name} | share |");
    }
    println!("{header}");
    println!("|{}", "---|".repeat(3 + 2 * gateways.len()));
    let mut shares: Vec<Vec<f64>> = vec![Vec::new(); gateways.len()];
    for round in 0..rounds {
        let (mut d, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut g: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); gateways.len()];
        for i in 0..n + n / 10 {
            let warm = i < n / 10;
            let t = Instant::now();
            let r = direct.call_tool(plain.clone()).await.expect("call");
            let took = t.elapsed();
            assert!(r.is_error != Some(true), "{r:?}");
            let hop = cat.round_trip().await;
            if !warm {
                d.push(took);
                f.push(hop);
            }
            // Each gateway goes first in turn, so none always follows the other.
            for j in 0..gateways.len() {
                let k = (i + j) % gateways.len();
                let gw = gateways[k].1;
                let t = Instant::now();
                let r = gw.call_tool(proxied.clone()).await.expect("call");
                let took = t.elapsed();
                assert!(r.is_error != Some(true), "{r:?}");
                if !warm {
                    g[k].push(took);
                }
            }
        }
        let (d, f) = (us(median(d)), us(median(f)));
        let mut row = format!("| {} | {d:.1} µs | {f:.1} µs |", round + 1);
        for (k, times) in g.into_iter().enumerate() {
            let through = us(median(times));
            let share = through - d - f;
            shares[k].push(share);
            row += &format!(" {through:.1} µs ({:.2}×) | {share:.1} µs |", through / d);
        }
        println!("{row}");
    }
    // Every other gateway's share against the first one's (the baseline, when there is one).
    if let Some(((base, _), first)) = gateways.first().zip(shares.first()) {
        for ((name, _), share) in gateways.iter().zip(&shares).skip(1) {
            let ratios: Vec<f64> = share.iter().zip(first).map(|(c, b)| c / b).collect();
            println!("share of {name} / share of {base}, per round: {ratios:.2?}");
        }
    }
    let _ = cat.child.kill().await;
}

/// The least a gateway on rmcp's service loops can do: an rmcp server whose `call_tool` hands
/// `{group, tool, arguments}` to one stdio upstream's rmcp client and its answer back, on the
/// gateway's own line transports and a single-threaded runtime as `toolsearch serve` runs,
/// with nothing between (no routing, validation, metrics, audit or traces). Run as this bench
/// binary re-executed with `FORWARDER_UPSTREAM` set to the upstream's script.
mod forwarder {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, InitializeResult, ServerCapabilities,
    };
    use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
    use rmcp::{ErrorData, ServerHandler, ServiceExt};
    use toolsearch_mcp::JsonRpcStdio;

    struct Forward(Peer<RoleClient>);

    impl ServerHandler for Forward {
        fn get_info(&self) -> InitializeResult {
            InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let args = request.arguments.unwrap_or_default();
            let tool = args
                .get("tool")
                .and_then(|t| t.as_str())
                .unwrap_or_default();
            let mut call = CallToolRequestParams::new(tool.to_owned());
            if let Some(serde_json::Value::Object(a)) = args.get("arguments") {
                call = call.with_arguments(a.clone());
            }
            self.0
                .call_tool_once(call)
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))
        }
    }

    pub fn run(script: &str) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut child = tokio::process::Command::new("node")
                .arg(script)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("upstream");
            let io = JsonRpcStdio::<_, _, RoleClient>::with_io(
                child.stdout.take().expect("stdout"),
                child.stdin.take().expect("stdin"),
            );
            let upstream = ().serve(io).await.expect("upstream initialize");
            let server = Forward(upstream.peer().clone())
                .serve(JsonRpcStdio::new())
                .await
                .expect("initialize");
            let _ = server.waiting().await;
        });
    }
}

fn main() {
    if let Ok(script) = std::env::var("FORWARDER_UPSTREAM") {
        return forwarder::run(&script);
    }
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
        let serve = |bin: &str| {
            let mut cmd = tokio::process::Command::new(bin);
            cmd.args(["serve", "--config"]).arg(&config);
            spawn(cmd)
        };
        let gateway = serve(env!("CARGO_BIN_EXE_toolsearch")).await;
        // Other builds to compare with in the same run (the share before a change), their
        // paths separated by `:`.
        let mut baselines = Vec::new();
        for bin in std::env::var("TOOLSEARCH_BENCH_BASELINE")
            .unwrap_or_default()
            .split(':')
            .filter(|b| !b.is_empty())
        {
            let name = std::path::Path::new(bin)
                .file_name()
                .map_or_else(|| bin.to_owned(), |n| n.to_string_lossy().into_owned());
            baselines.push((format!("`{name} serve` (baseline)"), serve(bin).await));
        }
        // With TOOLSEARCH_BENCH_FORWARDER set, the floor of a gateway on rmcp's service loops
        // (see `forwarder`).
        let forwarder = if std::env::var_os("TOOLSEARCH_BENCH_FORWARDER").is_some() {
            let mut cmd = tokio::process::Command::new(std::env::current_exe().expect("exe"));
            cmd.env("FORWARDER_UPSTREAM", everything_js());
            Some(spawn(cmd).await)
        } else {
            None
        };
        let mut gateways = Vec::new();
        for (name, b) in &baselines {
            gateways.push((name.as_str(), b));
        }
        if let Some(f) = &forwarder {
            gateways.push(("a bare rmcp forwarder", f));
        }
        gateways.push(("`toolsearch serve` (stdio)", &gateway));

        // TOOLSEARCH_BENCH_CALLS: calls per round (more, to profile a gateway while it runs).
        let n = std::env::var("TOOLSEARCH_BENCH_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2000);
        println!("The stdio hop: `call_tool` → server-everything's `echo`; medians of {n} per round");
        println!();
        hop_rounds(3, n, &direct, &gateways).await;
        for other in baselines.into_iter().map(|(_, b)| b).chain(forwarder) {
            other.cancel().await.expect("close");
        }
        println!();
        let echo = json!({"message": "benchmark"});
        let plain = median_of(n, &direct, "echo", echo.clone()).await;
        println!("| round trip (median of {n}) | time | vs direct |");
        println!("|---|---|---|");
        println!("| echo on server-everything, rmcp client over stdio, direct (peer) | {plain:.1?} | 1.00x |");

        // The same gateway in-process: no extra process hop, so what remains is the gateway's
        // own work (validation, dispatch, conversion) on top of the same upstream hop.
        let config_text = std::fs::read_to_string(&config).expect("config");
        let in_process = toolsearch_mcp::Gateway::start(
            toolsearch_mcp::config::parse_config("gateway.toml", &config_text, &dir).expect("config"),
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
        let library = median(times);
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
