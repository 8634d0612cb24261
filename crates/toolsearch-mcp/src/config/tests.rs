//! The config file as a whole: the reference's example, every section's values, and every
//! problem reported with its key path.

use std::path::{Path, PathBuf};

use super::{Config, ConfigError, parse_config};
use crate::config::SourceKind;
use toolsearch::{SearchMethod, Settings};

fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_config("gw.toml", text, Path::new("/etc/ts"))
}

#[test]
fn design_example_parses() {
    let c = parse(
        r#"
surface = "toolsearch"
[search]
method = "keyword"
max_results = 10
max_search_bytes = 32768
[names]
discover = "discover_tools"
[[source]]
name = "fs"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
env = { LOG_LEVEL = "warn" }
group = "files"
description = "Read and write project files"
[[source]]
name = "knowledge"
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer ${env:KNOWLEDGE_TOKEN}" }
context_headers = { "X-Run-ID" = "run.id", "X-Tenant-ID" = "identity.tenant_id" }
group = "knowledge"
description = "Search and read the tenant's knowledge base"
[[source]]
name = "status"
catalog = "catalogs/status.json"
presentation = "direct"
"#,
    )
    .expect("valid");
    assert_eq!(c.sources.len(), 3);
    assert_eq!(
        c.sources[2].kind,
        SourceKind::Catalog {
            path: PathBuf::from("/etc/ts/catalogs/status.json")
        }
    );
    assert!(c.sources[2].direct);
    assert_eq!(c.settings, Settings::default());
}

#[test]
fn semantic_and_hybrid_settings_parse_resolve_and_validate() {
    let c = parse(
        "[search]\nmethod = \"hybrid\"\n[search.semantic]\nmodel = \"models/minilm\"\n\
         cache_dir = \"cache\"\nmin_similarity = 0.3\nsentences = false\n[search.hybrid]\nfusion = \"rrf\"\n\
         semantic_weight = 0.7\nrrf_k = 10\nconfidence_scale = 5\nconfidence_slope = 3\n",
    )
    .expect("valid");
    let e = &c.settings.semantic;
    assert_eq!(e.model.as_deref(), Some(Path::new("/etc/ts/models/minilm")));
    assert_eq!(e.cache_dir(), PathBuf::from("/etc/ts/cache"));
    assert_eq!(e.min_similarity(), 0.3);
    assert!(!e.sentences());
    assert!(
        Settings::default().semantic.sentences(),
        "on unless turned off"
    );
    assert_eq!(c.settings.hybrid.fusion, toolsearch::Fusion::Rrf);
    assert_eq!(c.settings.hybrid.semantic_weight, 0.7);
    assert_eq!(
        (
            c.settings.hybrid.confidence_scale,
            c.settings.hybrid.confidence_slope
        ),
        (5.0, 3.0)
    );
    let c = parse(
        "[search.semantic]\nurl = \"http://127.0.0.1:11434/v1/embeddings\"\nmodel = \"nomic\"\n\
         api_key_env = \"KEY\"\n",
    )
    .expect("valid");
    let e = &c.settings.semantic;
    assert_eq!(e.endpoint_model.as_deref(), Some("nomic"));
    assert_eq!(
        (e.model.as_ref(), e.api_key_env.as_deref()),
        (None, Some("KEY"))
    );
    let text = parse(
        "[search.semantic]\nurl = \"ftp://x\"\nmin_similarity = 2\n[search.hybrid]\n\
         fusion = \"max\"\nsemantic_weight = 1.5\nconfidence_scale = 0\nconfidence_slope = -1\n",
    )
    .expect_err("invalid")
    .to_string();
    for needle in [
        "search.semantic.url: \"ftp://x\" is not an http",
        "search.semantic.model: an endpoint (url) needs the model name",
        "search.semantic.min_similarity: 2 is outside",
        "search.hybrid.fusion: \"max\" is not one of adaptive, scores, rrf",
        "search.hybrid.semantic_weight: 1.5 is outside 0..=1",
        "search.hybrid.confidence_scale: 0 is not a positive number",
        "search.hybrid.confidence_slope: -1 is outside 0..=100",
    ] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    let text = parse("[search.semantic]\nmodel = \"m\"\napi_key_env = \"K\"\n")
        .expect_err("key without url")
        .to_string();
    assert!(
        text.contains("only an endpoint (url) takes a key"),
        "{text}"
    );
    assert!(parse("[search.semantic]\nmodle = \"m\"\n").is_err());
}

#[test]
fn unknown_keys_are_errors_with_their_place() {
    let e = parse("[search]\nmax_result = 3\n").expect_err("unknown key");
    let text = e.to_string();
    assert!(
        text.contains("max_result") && text.contains("line 2"),
        "{text}"
    );
    assert!(parse("bogus = 1").is_err());
    assert!(parse("[[source]]\nname='a'\ncatalog='x'\nfoo=1").is_err());
}

#[test]
fn every_value_problem_is_reported_with_its_path() {
    let e = parse(
        r#"
surface = "tools"
[search]
method = "magic"
max_results = 0
max_search_bytes = 100
[names]
discover = "1bad"
describe = "call_tool"
[[source]]
name = "a"
command = "x"
group = "a__b"
description = " "
[[source]]
name = "a"
url = "ftp://x"
headers = { Auth = "${KEY}", auth = "x" }
context_headers = { "X-Run" = "run..id" }
group = "g"
description = "d"
[[source]]
name = "c"
"#,
    )
    .expect_err("invalid");
    let ConfigError::Invalid { problems, .. } = &e else {
        panic!("{e}")
    };
    let text = problems
        .iter()
        .map(|p| format!("{p}\n"))
        .collect::<String>();
    for needle in [
        "surface: \"tools\"",
        "search.method: \"magic\"",
        "search.max_results: 0 is outside 1..=100",
        "search.max_search_bytes: 100 is outside 1024..=32768",
        "names.discover: \"1bad\" is not a valid control name",
        "names.call: \"call_tool\" is also the name of names.describe",
        "source[0] (\"a\").group: group name \"a__b\" must not contain \"__\"",
        "source[0] (\"a\").group: group description is blank",
        "source[1] (\"a\").name: used by an earlier source",
        "source[1] (\"a\").url: \"ftp://x\"",
        "source[1] (\"a\").headers: \"auth\" is given twice",
        "source[1] (\"a\").headers.Auth: \"${KEY}\" is not a secret reference",
        "source[1] (\"a\").context_headers.X-Run: \"run..id\"",
        "source[2] (\"c\"): needs one of command, url or catalog",
        "source[2] (\"c\"): a proxied source needs group and description",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert_eq!(problems.len(), 15, "{text}");
}

#[test]
fn a_sources_tool_filter_and_call_timeout_parse_and_validate() {
    let c = parse(
        "[[source]]\nname = \"gh\"\ncommand = \"gh-mcp\"\ngroup = \"gh\"\ndescription = \"d\"\ntools = { allow = [\"get_*\", \"list_*\"], deny = [\"get_secret\"] }\ncall_timeout_ms = 5000\n\n[[source]]\nname = \"open\"\nurl = \"http://127.0.0.1:1/mcp\"\ngroup = \"o\"\ndescription = \"d\"\ntools = { deny = [\"drop_*\"] }\n",
    )
    .expect("valid");
    let gh = &c.sources[0];
    assert_eq!(
        gh.tools.allow.as_deref(),
        Some(&["get_*".to_owned(), "list_*".to_owned()][..])
    );
    assert_eq!(gh.tools.deny, ["get_secret"]);
    assert_eq!(
        gh.call_timeout,
        Some(std::time::Duration::from_millis(5000))
    );
    let open = &c.sources[1];
    assert!(open.tools.allow.is_none() && open.call_timeout.is_none());
    assert!(!open.tools.is_open());

    let e = parse("[[source]]\nname = \"a\"\ncommand = \"x\"\ngroup = \"a\"\ndescription = \"d\"\ntools = { allow = [\"[\"], only = [] }\n\n[[source]]\nname = \"b\"\ncommand = \"x\"\ngroup = \"b\"\ndescription = \"d\"\ntools = { deny = [\"\"] }\ncall_timeout_ms = 0\n\n[[source]]\nname = \"c\"\ncatalog = \"c.json\"\ntools = { deny = [\"x\"] }\n")
        .expect_err("invalid");
    assert!(e.to_string().contains("unknown field `only`"), "{e}");
    let e = parse("[[source]]\nname = \"a\"\ncommand = \"x\"\ngroup = \"a\"\ndescription = \"d\"\ntools = { allow = [\"[\"] }\n\n[[source]]\nname = \"b\"\ncommand = \"x\"\ngroup = \"b\"\ndescription = \"d\"\ntools = { deny = [\"\"] }\ncall_timeout_ms = 0\n\n[[source]]\nname = \"c\"\ncatalog = \"c.json\"\ntools = { deny = [\"x\"] }\n")
        .expect_err("invalid");
    let text = e.to_string();
    for needle in [
        "source[0] (\"a\").tools.allow: \"[\"",
        "source[1] (\"b\").tools.deny: \"\": an empty glob matches nothing",
        "source[1] (\"b\").call_timeout_ms: 0 is outside 1..=86400000",
        "source[2] (\"c\").tools: only allowed with command or url",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn a_negative_number_is_reported_as_given() {
    let e = parse("[search]\nmax_results = -5\nmax_search_bytes = -1\n").expect_err("invalid");
    let ConfigError::Invalid { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(
        problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "search.max_results: -5 is outside 1..=100".to_owned(),
            "search.max_search_bytes: -1 is outside 1024..=32768".to_owned()
        ]
    );
}

#[test]
fn codeact_settings_and_source_choices_parse_and_validate() {
    let c = parse(
        r#"
[codeact]
enabled = true
programs = ["programs", "/srv/shared"]
timeout_ms = 2500
max_memory_mb = 32
max_calls = 7
[names]
run_code = "python"
[[source]]
name = "a"
command = "x"
group = "a"
description = "A"
codeact = true
[[source]]
name = "b"
url = "http://127.0.0.1:1/mcp"
group = "b"
description = "B"
codeact = ["one", "two"]
[[source]]
name = "c"
catalog = "c.json"
"#,
    )
    .expect("valid");
    let ca = &c.settings.codeact;
    assert!(ca.enabled && ca.offers_programs());
    assert_eq!(
        ca.programs,
        [
            PathBuf::from("/etc/ts/programs"),
            PathBuf::from("/srv/shared")
        ]
    );
    assert_eq!(ca.timeout, std::time::Duration::from_millis(2500));
    assert_eq!((ca.max_memory_mb, ca.max_calls), (32, 7));
    assert_eq!(c.settings.names.run_code, "python");
    use toolsearch::CodeActTools;
    assert_eq!(c.sources[0].codeact, CodeActTools::All);
    assert_eq!(
        c.sources[1].codeact,
        CodeActTools::Only(vec!["one".into(), "two".into()])
    );
    assert_eq!(c.sources[2].codeact, CodeActTools::None);
    assert!(!parse("").expect("valid").settings.codeact.enabled);

    let e = parse(
        "[codeact]\nenabled = true\ntimeout_ms = 0\nmax_memory_mb = 5000\nmax_calls = -1\nprograms = [\" \"]\n[names]\nrun_code = \"discover_tools\"\n[[source]]\nname = \"s\"\ncatalog = \"x.json\"\ncodeact = [\"\"]\n",
    )
    .expect_err("invalid")
    .to_string();
    for needle in [
        "codeact.timeout_ms: 0 is outside 1..=600000",
        "codeact.max_memory_mb: 5000 is outside 1..=4096",
        "codeact.max_calls: -1 is outside 1..=10000",
        "codeact.programs[0]: must not be empty",
        "names.run_code: \"discover_tools\" is also the name of names.discover",
        "source[0] (\"s\").codeact: \"\" is not a tool name",
    ] {
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    assert!(parse("[codeact]\nenable = true\n").is_err());
    assert!(parse("[[source]]\nname='a'\ncatalog='x'\ncodeact='yes'\n").is_err());
}

#[test]
fn the_identity_and_policy_sections_parse_and_validate() {
    let c = parse(
        r#"
[[client]]
name = "alice"
token = "${env:ALICE_TOKEN}"
claims = { tenant_id = "acme", team = "support" }
[[client]]
name = "ops"
token = "${env:OPS_TOKEN}"
admin = true
[auth.jwt]
jwks = "https://idp.example.com/.well-known/jwks.json"
issuer = "https://idp.example.com/"
audience = "toolsearch"
algorithms = ["RS256", "ES256"]
leeway_s = 30
authorization_servers = ["https://idp.example.com/"]
admin_claim = "toolsearch_admin"
[[policy]]
match = { client = "alice" }
allow = ["crm/*", "billing/get_*"]
deny = ["billing/refund_*"]
[[policy]]
match = { claims = { "identity.tenant_id" = "acme" } }
allow = ["*"]
[approval]
tools = ["billing/refund_*"]
[limits]
rate = { calls_per_minute = 120, burst = 20 }
[audit]
file = "/var/log/toolsearch/audit.jsonl"
"#,
    )
    .expect("the contract's example is valid");
    let a = &c.access;
    assert_eq!(a.clients[0].name, "alice");
    assert_eq!(a.clients[0].claims["team"], "support");
    assert_eq!((a.clients[0].admin, a.clients[1].admin), (false, true));
    let jwt = a.jwt.as_ref().expect("jwt");
    assert_eq!(jwt.admin_claim.as_deref(), Some("toolsearch_admin"));
    assert_eq!(
        jwt.jwks,
        crate::config::JwksSource::Url("https://idp.example.com/.well-known/jwks.json".into())
    );
    assert_eq!((jwt.leeway_s, jwt.algorithms.len()), (30, 2));
    assert_eq!(a.policies[0].client.as_deref(), Some("alice"));
    assert_eq!(a.policies[1].claims["identity.tenant_id"], "acme");
    assert_eq!(a.approval, ["billing/refund_*"]);
    let rate = a.rate.expect("rate");
    assert_eq!((rate.calls_per_minute, rate.burst), (120.0, 20));
    assert_eq!(
        a.audit_file.as_deref(),
        Some(Path::new("/var/log/toolsearch/audit.jsonl"))
    );
    assert!(a.authenticates());
    let c = parse("[auth.jwt]\njwks = \"keys.json\"\nissuer = \"i\"\naudience = \"a\"\n")
        .expect("valid");
    let jwt = c.access.jwt.expect("jwt");
    assert_eq!(
        jwt.jwks,
        crate::config::JwksSource::File(PathBuf::from("/etc/ts/keys.json"))
    );
    assert_eq!(
        (jwt.algorithms, jwt.authorization_servers),
        (vec!["RS256".to_owned()], vec!["i".to_owned()])
    );

    let e = parse(
        r#"
[[client]]
name = "a"
token = "plain-secret"
[[client]]
name = "a"
token = "${env:A}"
[auth.jwt]
jwks = "http://idp.example.com/jwks"
issuer = ""
audience = "x"
algorithms = ["none", "HS256"]
leeway_s = 9999
admin_claim = "identity.admin"
[[policy]]
match = { claims = { "tenant" = "x" } }
allow = ["[z-a]"]
[approval]
tools = [""]
[limits]
rate = { calls_per_minute = 0 }
[audit]
file = ""
"#,
    )
    .expect_err("invalid")
    .to_string();
    for needle in [
        "client[0] (\"a\").token: a client's token comes from the environment",
        "client[1] (\"a\").name: used by an earlier client",
        "auth.jwt.issuer: missing or empty",
        "auth.jwt.jwks: \"http://idp.example.com/jwks\": keys are fetched over https://",
        "auth.jwt.algorithms: \"none\" is never accepted",
        "auth.jwt.algorithms: \"HS256\" is not one of",
        "auth.jwt.leeway_s: 9999 is outside 0..=600",
        "auth.jwt.admin_claim: \"identity.admin\" is not a claim name",
        "policy[0].match.claims: \"tenant\" is not a context path",
        "policy[0].allow[0]: \"[z-a]\"",
        "approval.tools[0]: \"\": an empty glob",
        "limits.rate.calls_per_minute",
        "audit.file: missing or empty",
    ] {
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    let c =
        parse("[auth.jwt]\njwks = \"http://127.0.0.1:9/jwks\"\nissuer = \"i\"\naudience = \"a\"\n");
    assert!(c.is_ok(), "a loopback JWKS may be plain http");
}

#[test]
fn limits() {
    let c = parse("[limits]\ncall_timeout_ms = 1500\nmax_tool_calls = 40\nmax_http_sessions = 50\nhttp_session_idle_s = 60\nstartup_wait_ms = 250\nhttp_header_timeout_ms = 2000\nhttp_idle_timeout_s = 30\n").expect("valid");
    assert_eq!(
        c.http_header_timeout,
        Some(std::time::Duration::from_millis(2000))
    );
    assert_eq!(
        c.http_idle_timeout,
        Some(std::time::Duration::from_secs(30))
    );
    assert_eq!(c.startup_wait, Some(std::time::Duration::from_millis(250)));
    assert_eq!(c.call_timeout, Some(std::time::Duration::from_millis(1500)));
    assert_eq!(c.max_tool_calls, Some(40));
    assert_eq!(c.max_http_sessions, Some(50));
    assert_eq!(
        c.http_session_idle,
        Some(std::time::Duration::from_secs(60))
    );
    let e = parse(
        "[limits]\nmax_http_sessions = 0\nhttp_session_idle_s = -1\nstartup_wait_ms = -5\nhttp_header_timeout_ms = 5\nhttp_idle_timeout_s = 0\n",
    )
    .expect_err("invalid");
    let text = e.to_string();
    assert!(
        text.contains("limits.max_http_sessions: 0 is outside")
            && text.contains("limits.http_session_idle_s: -1 is outside")
            && text.contains("limits.startup_wait_ms: -5 is outside")
            && text.contains("limits.http_header_timeout_ms: 5 is outside")
            && text.contains("limits.http_idle_timeout_s: 0 is outside"),
        "{text}"
    );
    let e = parse("[limits]\ncall_timeout_ms = 0\nmax_tool_calls = 0\n").expect_err("invalid");
    let text = e.to_string();
    assert!(
        text.contains("limits.call_timeout_ms: 0") && text.contains("limits.max_tool_calls: 0"),
        "{text}"
    );
    assert!(parse("[limits]\ntimeout = 1\n").is_err());
}

#[test]
fn capabilities_defaults_to_bm25() {
    let c = parse("surface = \"capabilities\"").expect("valid");
    assert_eq!(c.settings.method, SearchMethod::Bm25);
    let c = parse("surface = \"capabilities\"\n[search]\nmethod = \"hybrid\"").expect("valid");
    assert_eq!(c.settings.method, SearchMethod::Hybrid);
}

#[test]
fn bm25_parameters_come_from_the_config_and_are_validated() {
    let c = parse_config(
        "c.toml",
        "[search]\nmethod = \"bm25\"\n[search.bm25]\nk1 = 0.9\nb = 0.5\nb_name = 0.1\nname = 4\n",
        std::path::Path::new("."),
    )
    .expect("valid");
    assert_eq!(c.settings.method, SearchMethod::Bm25);
    assert_eq!(c.settings.bm25.k1, 0.9);
    assert_eq!(c.settings.bm25.b, [0.1, 0.5, 0.5, 0.5]);
    assert_eq!(c.settings.bm25.weights[0], 4.0);
    let e = parse_config(
        "c.toml",
        "[search.bm25]\nk1 = -1\nb = 2\ngroup = 1000\nk3 = 1\n",
        std::path::Path::new("."),
    )
    .expect_err("invalid");
    assert!(e.to_string().contains("k3"), "{e}");
    let e = parse_config(
        "c.toml",
        "[search.bm25]\nk1 = -1\nb = 2\ngroup = 1000\n",
        std::path::Path::new("."),
    )
    .expect_err("invalid")
    .to_string();
    for needle in [
        "search.bm25.k1: -1 is outside 0..=10",
        "search.bm25.b_name: 2 is outside 0..=1",
        "search.bm25.group: 1000 is outside 0..=100",
    ] {
        assert!(e.contains(needle), "{needle} in {e}");
    }
}

#[test]
fn a_policy_that_only_denies_allows_every_other_tool() {
    let c = parse("[[policy]]\nmatch = { client = \"alice\" }\ndeny = [\"billing/refund_*\"]\n")
        .expect("valid");
    assert_eq!(c.access.policies[0].allow, ["*"]);
    assert_eq!(c.access.policies[0].deny, ["billing/refund_*"]);
}

#[test]
fn a_url_sources_transport_is_streamable_http_unless_it_says_sse() {
    use crate::config::HttpTransport;
    let c = parse("[[source]]\nname = \"new\"\nurl = \"http://127.0.0.1:1/mcp\"\ngroup = \"n\"\ndescription = \"d\"\n\n[[source]]\nname = \"old\"\nurl = \"http://127.0.0.1:1/sse\"\ntransport = \"sse\"\ngroup = \"o\"\ndescription = \"d\"\n\n[[source]]\nname = \"said\"\nurl = \"http://127.0.0.1:1/mcp\"\ntransport = \"streamable-http\"\ngroup = \"s\"\ndescription = \"d\"\n")
        .expect("valid");
    let transports: Vec<HttpTransport> = c
        .sources
        .iter()
        .map(|s| match &s.kind {
            SourceKind::Http { transport, .. } => *transport,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        transports,
        [
            HttpTransport::StreamableHttp,
            HttpTransport::Sse,
            HttpTransport::StreamableHttp
        ]
    );
    let text = parse("[[source]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/sse\"\ntransport = \"websocket\"\ngroup = \"a\"\ndescription = \"d\"\n\n[[source]]\nname = \"b\"\ncommand = \"x\"\ntransport = \"sse\"\ngroup = \"b\"\ndescription = \"d\"\n\n[[source]]\nname = \"c\"\ncatalog = \"c.json\"\ntransport = \"sse\"\n")
        .expect_err("invalid")
        .to_string();
    for needle in [
        "source[0] (\"a\").transport: \"websocket\" is not one of streamable-http, sse",
        "source[1] (\"b\").transport: only allowed with url",
        "source[2] (\"c\").transport: only allowed with url",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn an_oauth_source_names_its_client_or_registers_itself() {
    use crate::config::OAuthConfig;
    let c = parse(concat!(
        "[[source]]\nname = \"linear\"\nurl = \"https://mcp.linear.app/mcp\"\nauth = \"oauth\"\ngroup = \"issues\"\ndescription = \"d\"\n\n",
        "[[source]]\nname = \"corp\"\nurl = \"https://mcp.corp.example/mcp\"\ngroup = \"c\"\ndescription = \"d\"\n",
        "auth = { client_id = \"toolsearch\", client_secret = \"${env:CORP_SECRET}\", scopes = [\"read\", \"write\"] }\n\n",
        "[[source]]\nname = \"plain\"\nurl = \"https://mcp.example/mcp\"\ngroup = \"p\"\ndescription = \"d\"\n",
    ))
    .expect("valid");
    let oauth: Vec<Option<OAuthConfig>> = c
        .sources
        .iter()
        .map(|s| match &s.kind {
            SourceKind::Http { oauth, .. } => oauth.as_deref().cloned(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(oauth[0], Some(OAuthConfig::default()));
    let corp = oauth[1].clone().expect("oauth");
    assert_eq!(corp.client_id.as_deref(), Some("toolsearch"));
    assert_eq!(corp.client_secret.as_deref(), Some("${env:CORP_SECRET}"));
    assert_eq!(corp.scopes, ["read", "write"]);
    assert_eq!(oauth[2], None);
}

#[test]
fn a_bad_auth_is_named_by_its_path() {
    let text = parse(concat!(
        "[[source]]\nname = \"a\"\nurl = \"https://h/mcp\"\nauth = \"basic\"\ngroup = \"a\"\ndescription = \"d\"\n\n",
        "[[source]]\nname = \"b\"\nurl = \"https://h/mcp\"\ngroup = \"b\"\ndescription = \"d\"\n",
        "auth = { client_secret = \"hunter2\", client_metadata_url = \"http://h/c.json\", scopes = [\"a b\"] }\n\n",
        "[[source]]\nname = \"c\"\ncommand = \"x\"\nauth = \"oauth\"\ngroup = \"c\"\ndescription = \"d\"\n\n",
        "[[source]]\nname = \"d\"\nurl = \"https://h/sse\"\ntransport = \"sse\"\nauth = \"oauth\"\nheaders = { Authorization = \"Bearer ${env:T}\" }\ngroup = \"d\"\ndescription = \"d\"\n\n",
        "[[source]]\nname = \"e\"\nurl = \"https://h/mcp\"\nauth = { client_id = \"x\", tenant = \"y\" }\ngroup = \"e\"\ndescription = \"d\"\n",
    ))
    .expect_err("invalid")
    .to_string();
    for needle in [
        "source[0] (\"a\").auth: \"basic\" is not \"oauth\"",
        "source[1] (\"b\").auth.client_secret: a secret belongs to a client_id",
        "source[1] (\"b\").auth.client_secret: secrets come from the environment",
        "source[1] (\"b\").auth.client_metadata_url: \"http://h/c.json\" must be an https:// URL with a path",
        "source[1] (\"b\").auth.scopes: \"a b\" is not a scope",
        "source[2] (\"c\").auth: only allowed with url",
        "source[3] (\"d\").auth: OAuth works with transport = \"streamable-http\"",
        "source[3] (\"d\").headers.Authorization: the OAuth login supplies the Authorization header",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(
        text.contains("source[4] (\"e\").auth: unknown field `tenant`"),
        "{text}"
    );
    // The secret itself is never repeated.
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn a_client_credentials_source_names_its_client_and_secret() {
    use crate::config::OAuthGrant;
    let c = parse(concat!(
        "[[source]]\nname = \"svc\"\nurl = \"https://mcp.example/mcp\"\ngroup = \"s\"\ndescription = \"d\"\n",
        "auth = { grant = \"client_credentials\", client_id = \"gw\", client_secret = \"${env:GW_SECRET}\" }\n",
    ))
    .expect("valid");
    let SourceKind::Http { oauth: Some(o), .. } = &c.sources[0].kind else {
        panic!("{:?}", c.sources[0].kind)
    };
    assert_eq!(o.grant, OAuthGrant::ClientCredentials);
    let with_key = parse(concat!(
        "[[source]]\nname = \"svc\"\nurl = \"https://mcp.example/mcp\"\ngroup = \"s\"\ndescription = \"d\"\n",
        "auth = { grant = \"client_credentials\", client_id = \"gw\", private_key = \"${env:GW_KEY}\", signing_algorithm = \"ES256\" }\n",
    ));
    if cfg!(feature = "jwt") {
        let c = with_key.expect("valid");
        let SourceKind::Http { oauth: Some(o), .. } = &c.sources[0].kind else {
            panic!("{:?}", c.sources[0].kind)
        };
        assert_eq!(o.private_key.as_deref(), Some("${env:GW_KEY}"));
        assert_eq!(o.signing_algorithm.as_deref(), Some("ES256"));
    } else {
        // A build without JWT support says so instead of failing at the first token request.
        let text = with_key.expect_err("no JWT support").to_string();
        assert!(text.contains("no JWT support"), "{text}");
    }
    let text = parse(concat!(
        "[[source]]\nname = \"a\"\nurl = \"https://h/mcp\"\ngroup = \"a\"\ndescription = \"d\"\n",
        "auth = { grant = \"client_credentials\", client_id = \"gw\" }\n\n",
        "[[source]]\nname = \"b\"\nurl = \"https://h/mcp\"\ngroup = \"b\"\ndescription = \"d\"\n",
        "auth = { grant = \"password\" }\n\n",
        "[[source]]\nname = \"c\"\nurl = \"https://h/mcp\"\ngroup = \"c\"\ndescription = \"d\"\n",
        "auth = { grant = \"client_credentials\", client_id = \"gw\", private_key = \"-----BEGIN\", signing_algorithm = \"HS256\" }\n\n",
        "[[source]]\nname = \"d\"\nurl = \"https://h/mcp\"\ngroup = \"d\"\ndescription = \"d\"\n",
        "auth = { client_id = \"gw\", private_key = \"${env:K}\" }\n",
    ))
    .expect_err("invalid")
    .to_string();
    for needle in [
        "source[0] (\"a\").auth.grant: client_credentials needs client_id and one of client_secret, private_key",
        "source[1] (\"b\").auth.grant: \"password\" is not one of authorization_code, client_credentials",
        "source[2] (\"c\").auth.private_key: secrets come from the environment",
        "source[2] (\"c\").auth.signing_algorithm: \"HS256\" is not one of RS256",
        "source[3] (\"d\").auth.private_key: only with grant = \"client_credentials\"",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn an_enterprise_managed_source_names_its_identity_provider() {
    use crate::config::OAuthGrant;
    let c = parse(concat!(
        "[[source]]\nname = \"crm\"\nurl = \"https://mcp.crm.example/mcp\"\ngroup = \"c\"\ndescription = \"d\"\n",
        "auth = { grant = \"enterprise_managed\", client_id = \"gw\", client_secret = \"${env:CRM_SECRET}\", ",
        "idp_issuer = \"https://idp.example\", idp_token_endpoint = \"https://idp.example/token\", ",
        "idp_client_id = \"gw-at-idp\", id_token = \"${env:ID_TOKEN}\" }\n",
    ))
    .expect("valid");
    let SourceKind::Http { oauth: Some(o), .. } = &c.sources[0].kind else {
        panic!("{:?}", c.sources[0].kind)
    };
    assert_eq!(o.grant, OAuthGrant::EnterpriseManaged);
    let idp = o.idp.as_ref().expect("idp");
    assert_eq!(idp.token_endpoint, "https://idp.example/token");
    assert_eq!(idp.id_token, "${env:ID_TOKEN}");
    let text = parse(concat!(
        "[[source]]\nname = \"a\"\nurl = \"https://h/mcp\"\ngroup = \"a\"\ndescription = \"d\"\n",
        "auth = { grant = \"enterprise_managed\", client_id = \"gw\", id_token = \"eyJ.literal.token\" }\n\n",
        "[[source]]\nname = \"b\"\nurl = \"https://h/mcp\"\ngroup = \"b\"\ndescription = \"d\"\n",
        "auth = { idp_issuer = \"https://idp.example\" }\n",
    ))
    .expect_err("invalid")
    .to_string();
    for needle in [
        "source[0] (\"a\").auth.idp_issuer: missing (enterprise_managed needs it)",
        "source[0] (\"a\").auth.id_token: secrets come from the environment",
        "source[1] (\"b\").auth: idp_* and id_token are only for grant = \"enterprise_managed\"",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(!text.contains("eyJ.literal.token"), "{text}");
}
