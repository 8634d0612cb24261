//! A downstream client is told when the tools it sees change, and then lists the new ones.

use std::time::Duration;

use rmcp::service::{NotificationContext, RoleClient};
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::mpsc;
use toolsearch::catalog::load_catalog_file;
use toolsearch::config::parse_config;
use toolsearch::{SourceTools, ToolDef};
use toolsearch_mcp::{Gateway, GatewayServer};

#[derive(Clone)]
struct Recorder(mpsc::UnboundedSender<()>);

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_get_tools_list_changed_when_direct_tools_change() {
    let dir = std::env::temp_dir().join(format!("toolsearch-notify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let catalog = dir.join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"groups":[{"name":"crm","description":"Customer records","tools":[{"name":"customer_name"}]}]}"#,
    )
    .expect("catalog");
    let toml = format!(
        "[[source]]\nname = \"static\"\ncatalog = {:?}\n",
        catalog.display().to_string()
    );
    let gateway = Gateway::start(parse_config("n.toml", &toml, &dir).expect("valid"))
        .await
        .expect("starts");

    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let server_gateway = gateway.clone();
    tokio::spawn(async move {
        let running = GatewayServer::new(server_gateway)
            .serve(tokio::io::split(server_io))
            .await
            .expect("serve");
        let _ = running.waiting().await;
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = Recorder(tx)
        .serve(tokio::io::split(client_io))
        .await
        .expect("initialize");
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
