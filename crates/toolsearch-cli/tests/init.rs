//! `toolsearch init` on each client's file format (shapes from each client's documentation,
//! `tests/init/*.json`): the config written is the golden `tests/init/*.toml` (regenerate with
//! `UPDATE_GOLDEN=1`, review the diff), no secret is copied, a client's file is found where the
//! client keeps it, `--install` is idempotent with a backup, `--connect` describes each group
//! from what its server says, and an existing different config is not overwritten.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
#[path = "../../../tests/support/golden.rs"]
mod golden;

use common::{root, temp_dir};
use golden::Golden;

fn fixtures() -> PathBuf {
    root().join("crates/toolsearch-cli/tests/init")
}

/// `toolsearch init ARGS` in `cwd` with `HOME` at `home`.
fn init(args: &[&str], cwd: &Path, home: &Path) -> Output {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    toolsearch_in(&all, cwd, home)
}

/// The values in the fixtures that are secrets: none may be written or printed.
const SECRETS: &[&str] = &[
    "ghp_example0TOKEN1234567890abcdefGH",
    "s3cr3t-pw",
    "BSA0example123456789",
    "BSAexampleKey0123456789abcdef",
    "value-of-the-key-123456789",
];

#[test]
fn each_clients_format_becomes_the_golden_config_with_no_secret_copied() {
    let mut golden = Golden::new(fixtures());
    for client in ["claude-desktop", "claude-code", "cursor", "vscode"] {
        let dir = temp_dir(&format!("init-{client}"));
        let from = fixtures().join(format!("{client}.json"));
        let out = init(
            &[
                "--from",
                from.to_str().expect("path"),
                "-o",
                "toolsearch.toml",
            ],
            &dir,
            &dir,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{client}: {stderr}");
        let written = std::fs::read_to_string(dir.join("toolsearch.toml")).expect("written");
        // The first line names the file it came from (a path of this checkout).
        let body = written.split_once('\n').map_or("", |(_, rest)| rest);
        golden.check(&format!("{client}.toml"), body);
        for secret in SECRETS {
            assert!(
                !written.contains(secret) && !stderr.contains(secret),
                "{client}: {secret} was copied"
            );
        }
        // What the user must set is said, by name.
        if client == "claude-desktop" {
            assert!(stderr.contains("GITHUB_PERSONAL_ACCESS_TOKEN"), "{stderr}");
            assert!(stderr.contains("POSTGRES_PASSWORD"), "{stderr}");
        }
    }
    golden.finish();
}

#[test]
fn a_clients_file_is_found_where_it_keeps_it_and_install_is_idempotent() {
    let home = temp_dir("init-install");
    let cursor = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().expect("dir")).expect("dir");
    let original = std::fs::read_to_string(fixtures().join("cursor.json")).expect("fixture");
    std::fs::write(&cursor, &original).expect("client file");
    let work = home.join("work");
    std::fs::create_dir_all(&work).expect("dir");

    let first = init(&["--from", "cursor", "--install"], &work, &home);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let config = std::fs::read_to_string(work.join("toolsearch.toml")).expect("config");
    assert!(config.contains("name = \"web-search\""), "{config}");
    let backup = home.join(".cursor/mcp.json.bak");
    assert_eq!(std::fs::read_to_string(&backup).expect("backup"), original);
    let installed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cursor).expect("client")).expect("JSON");
    let servers = installed["mcpServers"].as_object().expect("servers");
    assert_eq!(servers.len(), 1, "{installed}");
    let entry = &servers["toolsearch"];
    let binary = PathBuf::from(entry["command"].as_str().expect("command"));
    assert!(binary.is_absolute() && binary.exists(), "{entry}");
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(&args[..2], ["serve", "--config"]);
    assert_eq!(
        Path::new(args[2]),
        work.join("toolsearch.toml")
            .canonicalize()
            .expect("config path")
    );

    // Again: nothing changes (the servers are read from the backup; the config is the same).
    let client_after = std::fs::read_to_string(&cursor).expect("client");
    let second = init(&["--from", "cursor", "--install"], &work, &home);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&cursor).expect("client"),
        client_after
    );
    assert_eq!(std::fs::read_to_string(&backup).expect("backup"), original);
    assert_eq!(
        std::fs::read_to_string(work.join("toolsearch.toml")).expect("config"),
        config
    );

    // A different config in the way is not overwritten.
    std::fs::write(work.join("other.toml"), "# mine\n").expect("write");
    let refused = init(&["--from", "cursor", "-o", "other.toml"], &work, &home);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(work.join("other.toml")).expect("kept"),
        "# mine\n"
    );
    // No client file: said where it was looked for.
    let none = init(&["--from", "claude-desktop"], &work, &home);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("claude_desktop_config.json"));
}

#[test]
fn connect_describes_each_group_from_what_its_server_says() {
    let dir = temp_dir("init-connect");
    let client = serde_json::json!({"mcpServers": {
        "py": {"command": common::python("pyenv"),
               "args": [root().join("tests/python/upstream_server.py")]},
        "broken": {"command": "/nonexistent/mcp-server"}
    }});
    std::fs::write(dir.join("client.json"), client.to_string()).expect("client");
    let out = init(
        &["--from", "client.json", "--connect", "--wait", "20"],
        &dir,
        &dir,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let config = std::fs::read_to_string(dir.join("toolsearch.toml")).expect("config");
    let described = config
        .lines()
        .skip_while(|l| *l != "name = \"py\"")
        .find(|l| l.starts_with("description"))
        .expect("py's description");
    assert!(
        described.contains("python-upstream")
            && described.contains("Tools: ")
            && described.contains("shout"),
        "{described}"
    );
    assert!(stderr.contains("broken did not answer"), "{stderr}");
}

/// The README's quickstart, run as written: a Claude Desktop config where Claude Desktop keeps
/// it (two of the official reference servers), each `toolsearch` line of the quickstart block
/// in turn, then the client's side — the installed entry launched as the client launches it —
/// with a search and a call through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_quickstart_works_as_written() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;

    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let block = readme
        .split("<!-- quickstart -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /quickstart -->").next())
        .expect("a quickstart block in the README");
    let commands: Vec<Vec<&str>> = block
        .lines()
        .filter(|l| l.starts_with("toolsearch "))
        .map(|l| l.split_whitespace().skip(1).collect())
        .collect();
    assert!(commands.len() >= 2, "{block}");

    let home = temp_dir("quickstart");
    let files = home.join("project");
    std::fs::create_dir_all(&files).expect("dir");
    std::fs::write(files.join("notes.txt"), "hello").expect("file");
    let desktop = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(desktop.parent().expect("dir")).expect("dir");
    let client = serde_json::json!({"mcpServers": {
        "everything": {"command": "node", "args": [common::reference_server_js("everything")]},
        "filesystem": {"command": "node",
                       "args": [common::reference_server_js("filesystem"), files.display().to_string()]}
    }});
    std::fs::write(&desktop, client.to_string()).expect("client file");
    let work = home.join("work");
    std::fs::create_dir_all(&work).expect("dir");
    for args in &commands {
        let out = toolsearch_in(args, &work, &home);
        assert!(
            out.status.success(),
            "toolsearch {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The client's side: what it launches now.
    let installed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&desktop).expect("client")).expect("JSON");
    let entry = &installed["mcpServers"]["toolsearch"];
    let mut cmd = tokio::process::Command::new(entry["command"].as_str().expect("command"));
    for a in entry["args"].as_array().expect("args") {
        cmd.arg(a.as_str().expect("arg"));
    }
    cmd.env("HOME", &home);
    let gateway =
        ().serve(rmcp::transport::TokioChildProcess::new(cmd).expect("launch"))
            .await
            .expect("initialize");
    let call = |name: &'static str, args: serde_json::Value| {
        let gateway = &gateway;
        async move {
            let serde_json::Value::Object(args) = args else {
                unreachable!("an object")
            };
            let r = gateway
                .call_tool(CallToolRequestParams::new(name).with_arguments(args))
                .await
                .expect("answered");
            serde_json::to_value(&r).expect("json").to_string()
        }
    };
    let mut found = String::new();
    for _ in 0..100 {
        found = call(
            "discover_tools",
            serde_json::json!({"query": "echo back a message"}),
        )
        .await;
        if found.contains("\\\"echo\\\"") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(found.contains("\\\"echo\\\""), "{found}");
    let echoed = call(
        "call_tool",
        serde_json::json!({"group": "everything", "tool": "echo", "arguments": {"message": "quickstart-ok"}}),
    )
    .await;
    assert!(echoed.contains("quickstart-ok"), "{echoed}");
    gateway.cancel().await.expect("close");
}

/// `toolsearch ARGS` in `cwd` with `HOME` at `home`.
fn toolsearch_in(args: &[&str], cwd: &Path, home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("TOOLSEARCH_LOG")
        .output()
        .expect("run toolsearch")
}
