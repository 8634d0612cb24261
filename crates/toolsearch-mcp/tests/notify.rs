//! A downstream client is told when the tools it sees change, and then lists the new ones; and
//! when an upstream's resources or prompts change, and then reads and gets the new ones.

mod common;

use std::time::Duration;

use rmcp::service::{NotificationContext, RoleClient};
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::mpsc;
use toolsearch::{SourceTools, ToolDef, load_catalog_file};
use toolsearch_mcp::config::parse_config;
use toolsearch_mcp::{Gateway, GatewayServer};

#[derive(Clone)]
struct Recorder(mpsc::UnboundedSender<()>);

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

/// A client with `handler`, connected to its own `GatewayServer` session over an in-memory
/// stream.
async fn connect<H: ClientHandler>(
    gateway: &std::sync::Arc<Gateway>,
    handler: H,
) -> rmcp::service::RunningService<RoleClient, H> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let server_gateway = gateway.clone();
    tokio::spawn(async move {
        let running = GatewayServer::new(server_gateway)
            .serve(tokio::io::split(server_io))
            .await
            .expect("serve");
        let _ = running.waiting().await;
    });
    handler
        .serve(tokio::io::split(client_io))
        .await
        .expect("initialize")
}

/// Which list-changed notifications a client heard.
#[derive(Clone)]
struct Lists(mpsc::UnboundedSender<&'static str>);

impl ClientHandler for Lists {
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("resources");
    }
    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("prompts");
    }
}

async fn heard(rx: &mut mpsc::UnboundedReceiver<&'static str>, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(w)) if w == what => return,
            Ok(Some(_)) => {}
            _ => panic!("no {what}/list_changed reached the client"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_resource_and_prompt_changes_reach_the_client() {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/dynamic-server.mjs");
    let toml = format!(
        "[[source]]\nname = \"dyn_src\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"dyn\"\ndescription = \"Lists that grow at run time\"\n",
        script.display().to_string()
    );
    let gateway = Gateway::start(
        parse_config("n.toml", &toml, std::path::Path::new(".")).expect("valid"),
        Default::default(),
    )
    .await
    .expect("starts");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = connect(&gateway, Lists(tx)).await;
    let caps = client.peer_info().expect("info").capabilities.clone();
    assert!(
        caps.resources.is_some() && caps.prompts.is_some(),
        "{caps:?}"
    );

    // The source's name has an underscore: the offered names escape it.
    let uris =
        |list: Vec<rmcp::model::Resource>| list.into_iter().map(|r| r.uri).collect::<Vec<_>>();
    assert_eq!(
        uris(client.list_all_resources().await.expect("resources/list")),
        ["toolsearch://dyn_src/mem://first"]
    );
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts[0].name, "dyn_usrc__first");

    let call = |tool: &'static str| {
        let g = gateway.clone();
        async move {
            let r = g
                .engine()
                .handle(
                    "call_tool",
                    serde_json::json!({"group": "dyn", "tool": tool, "arguments": {"name": "second"}}),
                )
                .await;
            assert!(!r.is_error, "{r:?}");
        }
    };
    call("add_resource").await;
    heard(&mut rx, "resources").await;
    let now = uris(client.list_all_resources().await.expect("resources/list"));
    assert!(
        now.contains(&"toolsearch://dyn_src/mem://second".to_owned()),
        "{now:?}"
    );
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "toolsearch://dyn_src/mem://second",
        ))
        .await
        .expect("resources/read");
    let text = serde_json::to_value(&read).expect("json");
    assert_eq!(
        text["contents"][0]["uri"], "toolsearch://dyn_src/mem://second",
        "{text}"
    );
    assert_eq!(text["contents"][0]["text"], "contents of second", "{text}");

    call("add_prompt").await;
    heard(&mut rx, "prompts").await;
    let got = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("dyn_usrc__second"))
        .await
        .expect("prompts/get");
    assert!(
        serde_json::to_string(&got)
            .expect("json")
            .contains("say second")
    );

    // Unknown names are the client's error, not a crash.
    let missing = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("nobody__x"))
        .await;
    assert!(missing.is_err());

    client.cancel().await.expect("close");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_get_tools_list_changed_when_direct_tools_change() {
    let (dir, catalog, toml) = common::static_source(
        "notify",
        r#"{"groups":[{"name":"crm","description":"Customer records","tools":[{"name":"customer_name"}]}]}"#,
    );
    let gateway = Gateway::start(
        parse_config("n.toml", &toml, &dir).expect("valid"),
        Default::default(),
    )
    .await
    .expect("starts");

    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = connect(&gateway, Recorder(tx)).await;
    assert_eq!(client.list_all_tools().await.expect("list").len(), 5);

    // A reload that changes nothing the model sees announces nothing.
    let same = load_catalog_file(&catalog)
        .expect("catalog")
        .into_sources("static", false);
    gateway.engine().reload(same.clone()).expect("reload");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "no change, no notification"
    );

    // A new direct tool is announced, and listed.
    let mut more = same;
    more.push(SourceTools::direct(
        "late",
        vec![ToolDef::new(
            "late_tool",
            "Arrived after the client connected.",
        )],
    ));
    gateway.engine().reload(more).expect("reload");
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("notified in time")
        .expect("open");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"late_tool".to_owned()), "{names:?}");

    client.cancel().await.expect("close");
    gateway.shutdown().await;
}
