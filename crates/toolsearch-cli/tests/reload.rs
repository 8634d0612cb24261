//! Live reload of a served gateway, with a session open throughout: SIGHUP applies a new
//! config by reconciling sources (a removed catalog goes, an added one comes, a changed
//! upstream restarts — a new process — and an untouched one keeps its process), and refuses an
//! invalid file or a change only a restart applies, the old config serving on; with
//! `[reload] watch = true` a change of the file is enough.

use std::path::Path;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Map, Value, json};

mod common;

use common::{HttpGateway, root, runtime, signal, temp_dir, wait_until};

/// A catalog source `name` with one tool `<name>_tool` in group `name`.
fn catalog_source(dir: &Path, name: &str) -> String {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(
        &file,
        json!({"groups": [{"name": name, "description": format!("The {name} records"), "tools": [{"name": format!("{name}_tool"), "description": "Look a record up"}]}]}).to_string(),
    )
    .expect("catalog");
    format!(
        "[[source]]\nname = {name:?}\ncatalog = {:?}\n\n",
        file.display().to_string()
    )
}

/// A stdio upstream (the misbehaving test server, behaving) in group `name`.
fn upstream_source(name: &str, description: &str) -> String {
    let js = root().join("tests/mcp-servers/misbehaving-server.mjs");
    format!(
        "[[source]]\nname = {name:?}\ncommand = \"node\"\nargs = [{:?}]\ngroup = {name:?}\ndescription = {description:?}\n\n",
        js.display().to_string()
    )
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

type Client = RunningService<RoleClient, ()>;

async fn call(client: &Client, name: &str, args: Value) -> String {
    let r = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(object(args)))
        .await
        .expect("tools/call");
    serde_json::to_string(&r).expect("json")
}

/// The group names `list_tool_groups` shows, sorted, once none is still connecting.
async fn groups(client: &Client) -> Vec<String> {
    let started = std::time::Instant::now();
    loop {
        let text = call(client, "list_tool_groups", json!({})).await;
        if !text.contains("still connecting") || started.elapsed() > Duration::from_secs(20) {
            let r: Value = serde_json::from_str(&text).expect("json");
            let inner: Value =
                serde_json::from_str(r["content"][0]["text"].as_str().expect("text"))
                    .expect("the control's JSON");
            let mut names: Vec<String> = inner["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .map(|g| g["group"].as_str().expect("group").to_owned())
                .collect();
            names.sort();
            return names;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The pid the upstream of `group` answers (its process).
async fn pid(client: &Client, group: &str) -> String {
    let text = call(
        client,
        "call_tool",
        json!({"group": group, "tool": "pid", "arguments": {}}),
    )
    .await;
    let r: Value = serde_json::from_str(&text).expect("json");
    r["content"][0]["text"].as_str().expect("pid").to_owned()
}

async fn open(url: &str) -> Client {
    toolsearch_mcp::upstream::install_crypto_provider();
    ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .expect("initialize")
}

/// Sends SIGHUP and waits for the line saying what became of it.
fn reload_and_wait(http: &HttpGateway, needle: &str) {
    let before = http.logged(needle).len();
    signal(http.child.id(), "HUP");
    wait_until(needle, Duration::from_secs(20), || {
        http.logged(needle).len() > before
    });
}

#[test]
fn sighup_reconciles_sources_and_refuses_a_bad_config_while_a_session_goes_on() {
    let dir = temp_dir("reload");
    let cfg = dir.join("gateway.toml");
    let alpha = catalog_source(&dir, "alpha");
    let delta = catalog_source(&dir, "delta");
    let bravo = upstream_source("bravo", "Bravo's tools");
    std::fs::write(
        &cfg,
        format!(
            "{alpha}{bravo}{}",
            upstream_source("charlie", "Charlie's tools")
        ),
    )
    .expect("config");
    let http = HttpGateway::start(&cfg);
    let rt = runtime();
    rt.block_on(async {
        let client = open(&http.url).await;
        assert_eq!(groups(&client).await, ["alpha", "bravo", "charlie"]);
        let (bravo_pid, charlie_pid) = (pid(&client, "bravo").await, pid(&client, "charlie").await);

        // alpha removed, delta added, charlie changed, bravo untouched.
        let next = format!(
            "{delta}{bravo}{}",
            upstream_source("charlie", "Charlie's tools, described anew")
        );
        std::fs::write(&cfg, &next).expect("config");
        reload_and_wait(&http, "config reloaded");
        let line = http.logged("config reloaded").join("\n");
        assert!(
            line.contains("added delta; removed alpha; restarted charlie; unchanged bravo"),
            "{line}"
        );
        // The same session sees the new catalog; bravo kept its process, charlie has a new one.
        assert_eq!(groups(&client).await, ["bravo", "charlie", "delta"]);
        assert_eq!(pid(&client, "bravo").await, bravo_pid);
        let new_charlie = pid(&client, "charlie").await;
        assert_ne!(new_charlie, charlie_pid);
        let found = call(&client, "discover_tools", json!({"query": "record"})).await;
        assert!(found.contains("delta_tool") && !found.contains("alpha_tool"), "{found}");

        // A file that is not a valid config: refused, the running config serves on.
        std::fs::write(&cfg, "surface = [[[").expect("config");
        reload_and_wait(&http, "config reload refused");
        assert_eq!(groups(&client).await, ["bravo", "charlie", "delta"]);

        // A change only a restart applies: refused as a whole (its new source is not added).
        std::fs::write(
            &cfg,
            format!("[search]\nmax_results = 3\n\n{next}{alpha}"),
        )
        .expect("config");
        reload_and_wait(&http, "config reload of");
        let refused = http.logged("config reload of").join("\n");
        assert!(refused.contains("[search]"), "{refused}");
        assert_eq!(groups(&client).await, ["bravo", "charlie", "delta"]);
        assert_eq!(pid(&client, "bravo").await, bravo_pid);
        assert_eq!(pid(&client, "charlie").await, new_charlie);

        // A new catalog whose group clashes with delta's (described differently): the file is
        // a valid config, but the catalog it makes is not; refused, nothing started or stopped.
        let clash = dir.join("clash.json");
        std::fs::write(
            &clash,
            json!({"groups": [{"name": "delta", "description": "Something else", "tools": [{"name": "other"}]}]}).to_string(),
        )
        .expect("catalog");
        std::fs::write(
            &cfg,
            format!(
                "{next}{}[[source]]\nname = \"clash\"\ncatalog = {:?}\n",
                upstream_source("echo", "A new upstream, never started"),
                clash.display().to_string()
            ),
        )
        .expect("config");
        reload_and_wait(&http, "not a valid catalog");
        assert_eq!(groups(&client).await, ["bravo", "charlie", "delta"]);
        assert_eq!(pid(&client, "charlie").await, new_charlie);
        client.cancel().await.expect("close");
    });
    drop(http);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_watch_a_changed_file_is_reloaded_without_a_signal() {
    let dir = temp_dir("reload-watch");
    let cfg = dir.join("gateway.toml");
    let alpha = catalog_source(&dir, "alpha");
    let delta = catalog_source(&dir, "delta");
    std::fs::write(&cfg, format!("[reload]\nwatch = true\n\n{alpha}")).expect("config");
    let http = HttpGateway::start(&cfg);
    let rt = runtime();
    rt.block_on(async {
        let client = open(&http.url).await;
        assert_eq!(groups(&client).await, ["alpha"]);
        std::fs::write(&cfg, format!("[reload]\nwatch = true\n\n{alpha}{delta}")).expect("config");
        let started = std::time::Instant::now();
        while groups(&client).await != ["alpha", "delta"] {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "the change was not picked up"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Watching off (by a reload): later changes wait for SIGHUP.
        std::fs::write(&cfg, format!("[reload]\nwatch = false\n\n{alpha}{delta}")).expect("config");
        let wait = std::time::Instant::now();
        while http.logged("config reloaded").len() < 2 {
            assert!(
                wait.elapsed() < Duration::from_secs(15),
                "watch = false not applied"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        std::fs::write(&cfg, format!("[reload]\nwatch = false\n\n{delta}")).expect("config");
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(groups(&client).await, ["alpha", "delta"]);
        client.cancel().await.expect("close");
    });
    drop(http);
    let _ = std::fs::remove_dir_all(&dir);
}
