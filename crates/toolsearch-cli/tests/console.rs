//! The console in a real browser: `serve --http` with two sources and two clients, and
//! headless Chromium driven through chromedriver by tests/python/console_browser.py (signing
//! in, a source killed and kept down a while, then back; a call without its arguments; every
//! method side by side).
//! Screenshots land in `target/console/`.

mod common;

use common::{
    HttpGateway, Listening, model_dir, python, reference_server_js, root, run_python, temp_dir,
};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

#[test]
fn the_console_in_a_browser_signs_in_admins_follows_sources_and_calls_and_ranks_side_by_side() {
    if !std::path::Path::new(CHROMIUM).exists() || !std::path::Path::new(CHROMEDRIVER).exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{CHROMIUM} and {CHROMEDRIVER} are required (.ci/run installs Debian's chromium and chromium-driver)"
        );
        eprintln!(
            "skipped: no {CHROMIUM} or {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
        );
        return;
    }
    // Every method includes the dense ones: the model is needed.
    let Some(model) = model_dir() else { return };
    let dir = temp_dir("console");

    let mut command = std::process::Command::new(python("pyenv"));
    command
        .arg(root().join("tests/python/upstream_server.py"))
        .arg("--http");
    let upstream = Listening::start(command, "the Python upstream");
    // server-everything through `sh`, which will not start it while `hold` exists: a kill
    // with `hold` in place keeps the source down until the browser has seen it so.
    let hold = dir.join("hold");
    let everything = format!(
        "[[source]]\nname = \"everything\"\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\ngroup = \"everything\"\ndescription = \"The MCP reference test server\"\n\n",
        format!(
            "test -e '{}' && exit 1; exec node '{}'",
            hold.display(),
            reference_server_js("everything")
        )
    );

    let config = dir.join("console.toml");
    std::fs::write(
        &config,
        format!(
            "[search]\nmethod = \"hybrid\"\n[search.semantic]\nmodel = {model:?}\ncache_dir = \"cache\"\n\n\
             [[source]]\nname = \"python\"\nurl = {:?}\ngroup = \"python\"\ndescription = \"A Python SDK server\"\n\n\
             {}\
             [[client]]\nname = \"ops\"\ntoken = \"${{env:CONSOLE_OPS_TOKEN}}\"\nadmin = true\n\n\
             [[client]]\nname = \"agent\"\ntoken = \"${{env:CONSOLE_AGENT_TOKEN}}\"\n",
            upstream.1, everything,
        ),
    )
    .expect("config");
    let (ops, agent) = ("ops-2f8e41c7d9", "agent-5b0a93e6f1");
    let gateway = HttpGateway::start_with(
        &config,
        &[("CONSOLE_OPS_TOKEN", ops), ("CONSOLE_AGENT_TOKEN", agent)],
    );
    let shots = root().join("target/console");
    let mut args = vec![
        gateway.url.clone(),
        ops.to_owned(),
        agent.to_owned(),
        gateway.child.id().to_string(),
        hold.display().to_string(),
        shots.display().to_string(),
    ];
    // TOOLSEARCH_UPDATE_DOCS_IMAGES=1 also writes the views docs/console.md shows.
    if std::env::var("TOOLSEARCH_UPDATE_DOCS_IMAGES").as_deref() == Ok("1") {
        args.push(root().join("docs/images").display().to_string());
    }
    let out = run_python("pyenv", "console_browser.py", &args);
    assert!(out.contains(" passed, 0 failed"), "{out}");
    // What a source killed is shown as: down, and why.
    assert!(out.contains("shown while down: 'down"), "{out}");
    for view in ["sign-in", "sources", "sources-down", "calls", "tools"] {
        let png = shots.join(format!("console-{view}.png"));
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", png.display());
    }
    drop(gateway);
    drop(upstream);
}
