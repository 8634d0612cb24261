//! The `toolsearch` binary: output and exit codes (0 ok, 1 tool error, 2 bad usage/config/catalog).

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example() -> String {
    root().join("examples/catalog.json").display().to_string()
}

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .output()
        .expect("run toolsearch")
}

fn stdout_json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// Exit 2 with exactly one line on stderr, no panic, nothing on stdout.
fn assert_usage_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(o.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("toolsearch-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn discover_prints_the_model_json_and_exits_0() {
    let o = toolsearch(&[
        "control",
        "--catalog",
        &example(),
        "discover_tools",
        r#"{"query":"refund a payment"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = stdout_json(&o);
    assert_eq!(v["tools"][0]["tool"], "refund_payment");
    // Exactly one line of compact JSON.
    let text = String::from_utf8(o.stdout.clone()).expect("utf8");
    assert_eq!(text.lines().count(), 1);
    assert_eq!(text.trim_end(), serde_json::to_string(&v).expect("json"));
}

#[test]
fn tool_errors_exit_1_with_the_json_on_stdout() {
    let o = toolsearch(&[
        "control",
        "--catalog",
        &example(),
        "describe_tool",
        r#"{"group":"nope","tool":"x"}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = stdout_json(&o);
    assert_eq!(v["isError"], true);
    assert_eq!(v["error"], "unknown_group");
    assert_eq!(v["groups"].as_array().expect("groups").len(), 4);
}

#[test]
fn flags_override_limits() {
    let o = toolsearch(&[
        "control",
        "--catalog",
        &example(),
        "--max-results",
        "2",
        "list_tools",
        "{}",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = stdout_json(&o);
    assert_eq!(v["tools"].as_array().expect("tools").len(), 2);
    assert_eq!(v["next_offset"], 2);
    let o = toolsearch(&[
        "control",
        "--catalog",
        &example(),
        "--max-search-bytes",
        "1024",
        "list_tools",
        r#"{"detail":"full"}"#,
    ]);
    assert!(o.stdout.len() <= 1025, "{}", o.stdout.len());
}

#[test]
fn config_sets_names_and_limits() {
    let cfg = temp_file(
        "names.toml",
        "[search]\nmax_results = 3\n[names]\ndiscover = \"find_tools\"\n",
    );
    let o = toolsearch(&[
        "control",
        "--catalog",
        &example(),
        "--config",
        &cfg,
        "find_tools",
        "{}",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(stdout_json(&o)["tools"].as_array().expect("tools").len(), 3);
    let o = toolsearch(&[
        "control",
        "--catalog",
        &example(),
        "--config",
        &cfg,
        "discover_tools",
        "{}",
    ]);
    assert_usage_error(
        &o,
        "\"discover_tools\" is not a control; the controls are: find_tools",
    );
}

#[test]
fn bad_usage_exits_2_with_one_line() {
    let ex = example();
    assert_usage_error(
        &toolsearch(&["control", "--catalog", &ex, "discover_tools", "{nope"]),
        "ARGS_JSON is not valid JSON",
    );
    assert_usage_error(
        &toolsearch(&["control", "--catalog", &ex, "summon", "{}"]),
        "is not a control",
    );
    assert_usage_error(
        &toolsearch(&[
            "control",
            "--catalog",
            "/no/such/file.json",
            "list_tools",
            "{}",
        ]),
        "cannot read",
    );
    assert_usage_error(
        &toolsearch(&[
            "control",
            "--catalog",
            &ex,
            "--max-results",
            "101",
            "list_tools",
            "{}",
        ]),
        "max_results: 101",
    );
    assert_usage_error(
        &toolsearch(&[
            "control",
            "--catalog",
            &ex,
            "--max-search-bytes",
            "1023",
            "list_tools",
            "{}",
        ]),
        "max_search_bytes: 1023",
    );
    assert_usage_error(
        &toolsearch(&[
            "control",
            "--catalog",
            &ex,
            "--surface",
            "fancy",
            "list_tools",
            "{}",
        ]),
        "--surface",
    );
    // clap's own usage errors also exit 2.
    assert_eq!(
        toolsearch(&["control", "list_tools"]).status.code(),
        Some(2)
    );
    assert_eq!(toolsearch(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn every_invalid_catalog_exits_2() {
    let cases = [
        ("syntax.json", "{\"groups\": [", "not valid JSON"),
        ("array.json", "[]", "a catalog is a JSON object"),
        (
            "types.json",
            r#"{"groups":[{"name":"g","description":"d","tools":[{"name":"t","inputSchema":"x"}]}]}"#,
            "tools[0] (\"t\"): \"inputSchema\" must be a JSON Schema object",
        ),
        (
            "group.json",
            r#"{"groups":[{"name":"a__b","description":"d","tools":[]}]}"#,
            "must not contain \"__\"",
        ),
        (
            "desc.json",
            r#"{"groups":[{"name":"g","description":"","tools":[]}]}"#,
            "group description is blank",
        ),
        (
            "dup.json",
            r#"{"groups":[{"name":"g","description":"d","tools":[{"name":"t"},{"name":"t"}]}]}"#,
            "tools[1] (\"t\"): tool name is already used",
        ),
        (
            "shared.json",
            r#"{"groups":[{"name":"g","description":"d","tools":[]},{"name":"g","description":"e","tools":[]}]}"#,
            "describes this group differently",
        ),
        (
            "unknown.json",
            r#"{"groups":[],"tols":[]}"#,
            "unknown key \"tols\"",
        ),
        (
            "longdesc.json",
            &format!(
                r#"{{"groups":[{{"name":"g","description":"{}","tools":[]}}]}}"#,
                "d".repeat(513)
            ),
            "at most 512",
        ),
    ];
    for (name, text, needle) in cases {
        let path = temp_file(name, text);
        assert_usage_error(
            &toolsearch(&["control", "--catalog", &path, "list_tools", "{}"]),
            needle,
        );
    }
}

#[test]
fn every_invalid_config_exits_2() {
    let cases = [
        ("unknown.toml", "[search]\nmax_result = 3\n", "max_result"),
        ("syntax.toml", "surface = \n", "line 1"),
        ("surface.toml", "surface = \"nope\"\n", "surface: \"nope\""),
        (
            "method.toml",
            "[search]\nmethod = \"magic\"\n",
            "search.method",
        ),
        (
            "names.toml",
            "[names]\ndiscover = \"describe_tool\"\n",
            "is also the name of",
        ),
        (
            "badname.toml",
            "[names]\ndiscover = \"has space\"\n",
            "not a valid control name",
        ),
        (
            "source.toml",
            "[[source]]\nname = \"s\"\n",
            "needs one of command, url or catalog",
        ),
        (
            "type.toml",
            "[search]\nmax_results = \"ten\"\n",
            "max_results",
        ),
    ];
    for (name, text, needle) in cases {
        let cfg = temp_file(name, text);
        assert_usage_error(
            &toolsearch(&[
                "control",
                "--catalog",
                &example(),
                "--config",
                &cfg,
                "list_tools",
                "{}",
            ]),
            needle,
        );
    }
}

#[test]
fn call_tool_on_a_static_catalog_is_not_executable_and_validates_first() {
    let ex = example();
    let o = toolsearch(&[
        "control",
        "--catalog",
        &ex,
        "call_tool",
        r#"{"group":"crm","tool":"customer_name","arguments":{"customer_id":"x"}}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout_json(&o)["error"], "invalid_arguments");
    let o = toolsearch(&[
        "control",
        "--catalog",
        &ex,
        "call_tool",
        r#"{"group":"crm","tool":"customer_name","arguments":{"customer_id":7}}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout_json(&o)["error"], "not_executable");
}

/// An external tool of a catalog file: the validated request is printed for the host, exit 0;
/// arguments that do not match its schema are refused first.
#[test]
fn call_tool_on_an_external_tool_prints_the_deferred_request() {
    let catalog = root()
        .join("crates/toolsearch/tests/fixtures/external.json")
        .display()
        .to_string();
    let o = toolsearch(&[
        "control",
        "--catalog",
        &catalog,
        "call_tool",
        r#"{"group":"people","tool":"ask_person","arguments":{"question":"Ship it?"}}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = stdout_json(&o);
    let deferred = &out["deferred"];
    assert!(
        deferred["call_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{out}"
    );
    assert_eq!(deferred["canonical_name"], "people__ask_person");
    assert_eq!(
        deferred["arguments"],
        serde_json::json!({"question": "Ship it?"})
    );
    let o = toolsearch(&[
        "control",
        "--catalog",
        &catalog,
        "call_tool",
        r#"{"group":"people","tool":"ask_person","arguments":{}}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout_json(&o)["error"], "invalid_arguments");
}

#[test]
fn the_toolproxy_surface_is_selectable() {
    let ex = example();
    let o = toolsearch(&[
        "control",
        "--catalog",
        &ex,
        "--surface",
        "toolproxy",
        "search_proxy_tools",
        r#"{"query":"refund","limit":1}"#,
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = stdout_json(&o);
    assert_eq!(v["detail"], "full");
    assert_eq!(v["tools"][0]["tool"], "refund_payment");
    let o = toolsearch(&[
        "control",
        "--catalog",
        &ex,
        "--surface",
        "toolproxy",
        "discover_tools",
        "{}",
    ]);
    assert_usage_error(&o, "search_proxy_tools, call_proxy_tool");
}

/// `learn --from` imports uses into the config's `[learning] file` (every line checked first:
/// a bad one writes nothing), `learn --forget TOOL` removes that tool's.
#[test]
fn learn_imports_and_forgets_uses() {
    let dir = std::env::temp_dir().join(format!("toolsearch-cli-learn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("toolsearch.toml");
    std::fs::write(
        &config,
        "[learning]\nenabled = true\nfile = \"learned.jsonl\"\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let learned = dir.join("learned.jsonl");
    let uses = temp_file(
        "uses.jsonl",
        "{\"query\":\"make the charge vanish\",\"tool\":\"billing__refund_payment\"}\n\n{\"query\":\"who is it\",\"tool\":\"crm__customer_name\"}\n",
    );
    let bad = temp_file(
        "bad-uses.jsonl",
        "{\"query\":\"fine\",\"tool\":\"crm__customer_name\"}\n{\"query\":\"\",\"tool\":\"crm__customer_name\"}\n",
    );
    assert_usage_error(
        &toolsearch(&["learn", "--config", &config, "--from", &bad]),
        "bad-uses.jsonl:2: the query and the tool must not be empty",
    );
    assert!(!learned.exists(), "nothing written");
    let o = toolsearch(&["learn", "--config", &config, "--from", &uses]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        std::fs::read_to_string(&learned)
            .expect("file")
            .lines()
            .count(),
        2
    );
    let o = toolsearch(&[
        "learn",
        "--config",
        &config,
        "--forget",
        "crm__customer_name",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("1 uses forgotten"));
    assert_eq!(
        std::fs::read_to_string(&learned).expect("file"),
        "{\"query\":\"make the charge vanish\",\"tool\":\"billing__refund_payment\"}\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
