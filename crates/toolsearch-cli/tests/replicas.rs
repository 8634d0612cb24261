//! Two `serve --http --replica` replicas behind nginx (Debian's package; `.ci/run` installs
//! it), with the repository's own `deploy/nginx.conf` (addresses filled in): stateless
//! 2026-07-28 clients are spread round-robin, legacy sessions stay on the replica that opened
//! them, both replicas read one embedding cache built beforehand and never write it, and a
//! replica killed mid-run costs only what it had in flight.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Map, Value, json};

mod common;

use common::{HttpGateway, model_dir, root, run_python, runtime, signal, temp_dir};

type Client = RunningService<RoleClient, ()>;

fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    assert!(
        found.is_some() || std::env::var("CI").as_deref() != Ok("true"),
        "nginx is missing: .ci/run installs it (apt-get install nginx)"
    );
    if found.is_none() {
        eprintln!("skipped: no nginx (apt-get install nginx)");
    }
    found
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn port_of(url: &str) -> u16 {
    url.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

/// nginx, running `deploy/nginx.conf` with the replicas' ports and its own.
struct Nginx {
    child: std::process::Child,
    url: String,
}

impl Nginx {
    fn start(binary: &Path, dir: &Path, a: u16, b: u16) -> Self {
        let site =
            std::fs::read_to_string(root().join("deploy/nginx.conf")).expect("deploy/nginx.conf");
        let port = free_port();
        let site = site
            .replace("127.0.0.1:8001", &format!("127.0.0.1:{a}"))
            .replace("127.0.0.1:8002", &format!("127.0.0.1:{b}"))
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
        let tmp = dir.join("nginx-tmp");
        std::fs::create_dir_all(&tmp).expect("nginx temp dir");
        let d = dir.display();
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log info;\nevents {{ worker_connections 256; }}\nhttp {{\n    access_log {d}/nginx-access.log;\n    client_body_temp_path {t}/body;\n    proxy_temp_path {t}/proxy;\n    fastcgi_temp_path {t}/fastcgi;\n    uwsgi_temp_path {t}/uwsgi;\n    scgi_temp_path {t}/scgi;\n{site}\n}}\n",
            t = tmp.display()
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).expect("nginx.conf");
        let child = std::process::Command::new(binary)
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start nginx");
        let url = format!("http://127.0.0.1:{port}/");
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not start: {}",
                std::fs::read_to_string(dir.join("nginx-error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, url }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers (SIGKILL would leave them running).
        signal(self.child.id(), "TERM");
        let _ = self.child.wait();
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

/// A client through `url`: on the stateless 2026-07-28 protocol, or a legacy session.
async fn client(url: &str, stateless: bool) -> Client {
    toolsearch_mcp::upstream::install_crypto_provider();
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    if stateless {
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: None,
        };
        ().serve_with_lifecycle(transport, lifecycle)
            .await
            .expect("a stateless client")
    } else {
        ().serve(transport).await.expect("initialize")
    }
}

async fn call(client: &Client, name: &str, args: Value) -> Result<String, String> {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(object(args)))
        .await
        .map(|r| serde_json::to_string(&r).unwrap_or_default())
        .map_err(|e| e.to_string())
}

/// `toolsearch_tool_calls_total{tool=<tool>}` of one replica, read from its own `/metrics`.
fn calls_on(replica_url: &str, tool: &str) -> f64 {
    let url = format!("{}/metrics", replica_url.trim_end_matches('/'));
    let out = run_python("pyenv", "metrics_scrape.py", &[url, "prometheus".into()]);
    let v: Value = serde_json::from_str(&out).expect("json");
    v["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| {
            s["name"] == "toolsearch_tool_calls_total"
                && s["labels"]["tool"] == tool
                && s["labels"]["outcome"] == "ok"
        })
        .filter_map(|s| s["value"].as_f64())
        .sum()
}

/// What the cache folder holds: each file's name, length and modification time.
fn cache_state(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| {
                    let m = e.metadata().ok()?;
                    Some((
                        e.file_name().to_string_lossy().into_owned(),
                        m.len(),
                        m.modified().ok()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn two_replicas_behind_nginx_share_the_load_keep_sessions_and_survive_a_kill() {
    let Some(nginx_bin) = nginx() else { return };
    let dir = temp_dir("replicas");
    let catalog = root().join("examples/catalog.json");
    let cache = dir.join("embeddings");
    let model = model_dir();
    let search = match &model {
        Some(m) => format!(
            "[search]\nmethod = \"hybrid\"\n\n[search.semantic]\nmodel = {m:?}\ncache_dir = {:?}\n\n",
            cache.display().to_string()
        ),
        None => "[search]\nmethod = \"bm25\"\n\n".to_owned(),
    };
    let cfg = dir.join("gateway.toml");
    std::fs::write(
        &cfg,
        format!(
            "{search}[[source]]\nname = \"examples\"\ncatalog = {:?}\n",
            catalog.display().to_string()
        ),
    )
    .expect("config");
    // The embedding cache is built once, before the replicas start; they only read it.
    if model.is_some() {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["index", "--config"])
            .arg(&cfg)
            .output()
            .expect("index");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cached = cache_state(&cache);
    assert_eq!(cached.is_empty(), model.is_none(), "{cached:?}");

    let mut a = HttpGateway::start_args(&cfg, &["--replica", "a"], &[]);
    let b = HttpGateway::start_args(&cfg, &["--replica", "b"], &[]);
    let proxy = Nginx::start(&nginx_bin, &dir, port_of(&a.url), port_of(&b.url));

    let rt = runtime();
    rt.block_on(async {
        // Stateless clients: every request may go anywhere; round-robin uses both.
        let stateless = client(&proxy.url, true).await;
        for _ in 0..10 {
            let found = call(
                &stateless,
                "discover_tools",
                json!({"query": "refund a payment"}),
            )
            .await
            .expect("a stateless call through nginx");
            assert!(found.contains("refund"), "{found}");
        }
        let (on_a, on_b) = (
            calls_on(&a.url, "discover_tools"),
            calls_on(&b.url, "discover_tools"),
        );
        assert_eq!(on_a + on_b, 10.0, "a {on_a}, b {on_b}");
        assert!(on_a >= 3.0 && on_b >= 3.0, "not spread: a {on_a}, b {on_b}");

        // Legacy sessions: each stays on the replica that opened it (a request reaching the
        // other one would find no such session).
        let first = client(&proxy.url, false).await;
        let second = client(&proxy.url, false).await;
        for _ in 0..6 {
            for c in [&first, &second] {
                call(c, "list_tool_groups", json!({}))
                    .await
                    .expect("a session's call through nginx");
            }
        }
        let (on_a, on_b) = (
            calls_on(&a.url, "list_tool_groups"),
            calls_on(&b.url, "list_tool_groups"),
        );
        assert_eq!(on_a + on_b, 12.0);
        assert!(
            on_a % 6.0 == 0.0 && on_b % 6.0 == 0.0,
            "a session's calls were split: a {on_a}, b {on_b}"
        );

        // Replica a dies mid-run: what it had in flight is lost, nothing more.
        let mut failed = 0;
        for i in 0..20 {
            if i == 6 {
                let _ = a.child.kill();
                let _ = a.child.wait();
            }
            if call(
                &stateless,
                "discover_tools",
                json!({"query": "schedule a meeting"}),
            )
            .await
            .is_err()
            {
                failed += 1;
            }
        }
        assert!(failed <= 1, "{failed} calls failed after one replica died");
        // The sessions on b go on; one on a is gone with it (it is never moved to b).
        let mut ok_sessions = 0.0;
        for c in [&first, &second] {
            if call(c, "list_tool_groups", json!({})).await.is_ok() {
                ok_sessions += 1.0;
            }
        }
        assert_eq!(ok_sessions * 6.0, on_b, "sessions on b: {}", on_b / 6.0);
    });
    // Neither replica wrote the shared cache.
    assert_eq!(cache_state(&cache), cached);
    drop(proxy);
    drop(b);
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn operations_md_shows_the_tested_nginx_config() {
    let conf = std::fs::read_to_string(root().join("deploy/nginx.conf")).expect("conf");
    let doc =
        std::fs::read_to_string(root().join("docs/operations.md")).expect("docs/operations.md");
    assert!(
        doc.contains(conf.trim()),
        "docs/operations.md must quote deploy/nginx.conf verbatim"
    );
}
