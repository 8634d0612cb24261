//! HTTP connections under pressure: with its open files exhausted by clients that connect and
//! send nothing, the gateway neither spins nor floods its log, closes the silent connections
//! after `[limits] http_header_timeout_ms`, and keeps answering; a kept-alive connection with no
//! request in progress is closed after `http_idle_timeout_s`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod common;

use common::{HttpGateway, root, temp_dir};

/// A gateway over the example catalog (no upstream processes) with `limits`.
fn config(name: &str, limits: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    let text = format!(
        "[limits]\n{limits}\n\n[[source]]\nname = \"examples\"\ncatalog = {:?}\n",
        root().join("examples/catalog.json").display().to_string()
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).expect("config");
    path
}

fn address(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

/// The CPU time (user + system) the process has used.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command (which may hold spaces): utime and stime are the 12th and 13th.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    // Linux reports clock ticks of 1/100 s (USER_HZ).
    Duration::from_millis(ticks * 10)
}

/// `GET /healthz` on a fresh connection: whether it was answered within `limit`.
fn healthy(address: &str, limit: Duration) -> bool {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(limit));
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

#[test]
fn out_of_file_descriptors_the_gateway_stays_quiet_and_responsive() {
    let config = config("connections-fds", "http_header_timeout_ms = 500");
    let http = HttpGateway::start_with_open_files(&config, &[], 64);
    let address = address(&http.url);
    assert!(
        healthy(&address, Duration::from_secs(5)),
        "answers at first"
    );

    // Slow clients: far more silent connections than it has file descriptors.
    let before = cpu_time(http.child.id());
    let started = Instant::now();
    let silent: Vec<TcpStream> = (0..150)
        .filter_map(|_| TcpStream::connect(&address).ok())
        .collect();
    assert!(silent.len() >= 100, "{} connections", silent.len());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_time(http.child.id()).saturating_sub(before);
    let elapsed = started.elapsed();
    // Spinning on a failing accept burns a whole core; backing off, nearly nothing.
    assert!(
        used < elapsed / 4,
        "{used:?} of CPU in {elapsed:?} with its file descriptors exhausted"
    );
    let failures = http.logged("accept failed");
    assert!(
        failures.len() <= 3,
        "{} lines about failed accepts: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    // The silent connections are closed after the header timeout, so it answers again while
    // they are still open at the client's end.
    let answered = (0..20).any(|_| healthy(&address, Duration::from_secs(2)));
    assert!(answered, "answers while slow clients hold connections");
    drop(silent);
}

#[test]
fn a_kept_alive_connection_with_nothing_in_progress_is_closed_after_the_idle_timeout() {
    let config = config(
        "connections-idle",
        "http_header_timeout_ms = 10000\nhttp_idle_timeout_s = 1",
    );
    let http = HttpGateway::start(&config);
    let address = address(&http.url);
    let mut stream = TcpStream::connect(&address).expect("connect");
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("write");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buffer = [0u8; 4096];
    let n = stream.read(&mut buffer).expect("the answer");
    assert!(buffer[..n].starts_with(b"HTTP/1.1 200"), "kept alive");
    let idle = Instant::now();
    // Nothing more is sent: the gateway closes the connection (EOF) after about a second.
    let closed = loop {
        match stream.read(&mut buffer) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(_) => break false,
        }
    };
    let waited = idle.elapsed();
    assert!(closed, "closed by the gateway");
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(4),
        "closed after {waited:?}"
    );
}

/// A TCP proxy to `upstream` that closes the connection carrying the first `tools/call`
/// request without passing it on, as a server closing a kept-alive connection does when a
/// request arrives just as its keep-alive ends; everything else passes. Its address.
async fn cutting_proxy(upstream: String) -> String {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let cut = Arc::new(AtomicBool::new(false));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                continue;
            };
            let cut = cut.clone();
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let back = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let mut buffer = vec![0u8; 64 * 1024];
                loop {
                    let n = match client_read.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = &buffer[..n];
                    let is_call = chunk.windows(12).any(|w| w == b"\"tools/call\"");
                    if is_call && !cut.swap(true, Ordering::SeqCst) {
                        // Closed under the request: nothing of it reaches the server.
                        back.abort();
                        return;
                    }
                    if server_write.write_all(chunk).await.is_err() {
                        break;
                    }
                }
                let _ = back.await;
            });
        }
    });
    address
}

/// The Python SDK's server over HTTP (uvicorn, its default 5 s keep-alive) behind the gateway,
/// through a proxy that closes the connection under the first call: that call is sent once
/// more on a new connection and succeeds, and so do calls after idle gaps around the server's
/// keep-alive (the gateway lets pooled connections go after 4 s).
#[test]
fn calls_survive_an_http_upstreams_keep_alive_closes() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let mut server = std::process::Command::new(common::python("pyenv"));
    server
        .arg(root().join("tests/python/upstream_server.py"))
        .arg("--http")
        .stderr(std::process::Stdio::null());
    let server = common::Listening::start(server, "the Python SDK's server");
    let upstream = server
        .1
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let runtime = common::runtime();
    let proxy = runtime.block_on(cutting_proxy(upstream));
    let dir = temp_dir("connections-keepalive");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[source]]\nname = \"py\"\nurl = \"http://{proxy}/mcp\"\ngroup = \"py\"\ndescription = \"Shouts\"\n"
        ),
    )
    .expect("config");
    let http = HttpGateway::start(&config);
    runtime.block_on(async {
        toolsearch_mcp::upstream::install_crypto_provider();
        let client = ()
            .serve(StreamableHttpClientTransport::with_client(
                reqwest::Client::new(),
                StreamableHttpClientTransportConfig::with_uri(http.url.clone()),
            ))
            .await
            .expect("initialize");
        let shout = |text: &str| {
            let arguments =
                serde_json::json!({"group": "py", "tool": "shout", "arguments": {"text": text}});
            let serde_json::Value::Object(arguments) = arguments else {
                unreachable!("an object")
            };
            CallToolRequestParams::new("call_tool").with_arguments(arguments)
        };
        // Connected first: what is measured is the calls, not the start-up.
        let started = Instant::now();
        loop {
            let groups = client
                .call_tool(CallToolRequestParams::new("list_tool_groups"))
                .await
                .expect("groups");
            let text = serde_json::to_string(&groups.content).unwrap_or_default();
            if !text.contains("unavailable") {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut failed = Vec::new();
        for gap_ms in [0, 4000, 5000, 6000] {
            tokio::time::sleep(Duration::from_millis(gap_ms)).await;
            let result = client.call_tool(shout("hi")).await.expect("an answer");
            let text = serde_json::to_string(&result.content).unwrap_or_default();
            if result.is_error == Some(true) || !text.contains("HI") {
                failed.push((gap_ms, text));
            }
        }
        assert!(
            failed.is_empty(),
            "failed calls (after idle gaps, ms): {failed:?}"
        );
        client.cancel().await.expect("close");
    });
}
