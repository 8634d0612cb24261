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
