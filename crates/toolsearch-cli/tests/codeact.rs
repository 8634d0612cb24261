//! CodeAct through the served gateway: the official Python MCP SDK's client drives
//! `toolsearch serve` (stdio and HTTP) in front of server-everything, whose source lets
//! programs call `echo` and `get-sum` only; and `toolsearch control run_code` with a config.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{HttpGateway, root, run_python, temp_dir};

fn write_config(dir: &Path) -> PathBuf {
    let everything = root().join(
        "tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "run `npm ci` in tests/mcp-servers (.ci/run does)"
    );
    let programs = dir.join("programs");
    std::fs::create_dir_all(&programs).expect("dir");
    std::fs::write(
        programs.join("echo.codeact.py"),
        "async def main(inputs):\n    r = await call_tool(group=\"everything\", tool=\"echo\", arguments={\"message\": inputs[\"word\"]})\n    return r[\"content\"][0][\"text\"]\n",
    )
    .expect("program");
    std::fs::write(
        dir.join("outside.codeact.py"),
        "async def main(inputs):\n    return 1\n",
    )
    .expect("program");
    let config = format!(
        r#"
[codeact]
enabled = true
programs = ["programs"]
timeout_ms = 1500

[[source]]
name = "everything"
command = "node"
args = [{everything:?}]
group = "everything"
description = "The MCP reference test server: echo, sums, samples"
codeact = ["echo", "get-sum"]
"#,
        everything = everything.display().to_string(),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).expect("config");
    path
}

#[test]
fn the_python_sdk_client_runs_programs_through_the_gateway() {
    let dir = temp_dir("codeact");
    let config = write_config(&dir);
    let binary = env!("CARGO_BIN_EXE_toolsearch").to_owned();
    let out = run_python(
        "pyenv",
        "codeact_client.py",
        &[binary.clone(), config.display().to_string()],
    );
    assert!(out.contains("15 passed, 0 failed"), "{out}");
    let http = HttpGateway::start(&config);
    let out = run_python(
        "pyenv",
        "codeact_client.py",
        &[binary, config.display().to_string(), http.url.clone()],
    );
    assert!(out.contains("15 passed, 0 failed"), "{out}");
}

#[test]
fn control_runs_code_with_a_config() {
    let dir = temp_dir("codeact-control");
    let config = dir.join("codeact.toml");
    std::fs::write(&config, "[codeact]\nenabled = true\nmax_calls = 2\n").expect("config");
    let catalog = root().join("examples/catalog.json");
    let control = |code: &str| {
        Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .arg("control")
            .arg("--catalog")
            .arg(&catalog)
            .arg("--config")
            .arg(&config)
            .arg("run_code")
            .arg(serde_json::json!({ "code": code }).to_string())
            .output()
            .expect("run toolsearch")
    };
    let o = control("r = await discover_tools(query='refund a payment')\nr['tools'][0]['tool']");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        r#"{"result":"refund_payment","stdout":"","calls":1}"#
    );
    let o = control("for i in range(3):\n    await list_tool_groups()\n");
    assert_eq!(o.status.code(), Some(1), "a tool error exits 1");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["error"], "usage_limit", "{v}");
    // The memory limit holds in the binary (its global allocator counts the program's bytes).
    let o = control("x = 'a' * (300 * 1024 * 1024)\n");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["error"], "resource_limit", "{v}");
    // Without [codeact] there is no run_code.
    let o = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["control", "--catalog"])
        .arg(&catalog)
        .args(["run_code", r#"{"code":"1"}"#])
        .output()
        .expect("run toolsearch");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}
