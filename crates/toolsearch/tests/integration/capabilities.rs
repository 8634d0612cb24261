//! The `capabilities` surface: search_capabilities (buckets, grouping, topK rules, method per
//! call), invoke_tool (flattened args, errors, needs_auth), get_skill_content and the skills
//! catalog, and the per-turn helper.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::{
    CallResult, Engine, EngineBuilder, ExecError, GroupSpec, SearchMethod, Settings, Skills,
    Surface, Toolset,
};

use crate::common::shared_data_or_skip;

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// Numeric customer ID.
    customer_id: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

fn settings() -> Settings {
    Settings::default()
        .with_surface(Surface::Capabilities)
        .with_method(SearchMethod::Bm25)
}

fn builder() -> EngineBuilder {
    let crm = Toolset::new()
        .tool(
            "customer_name",
            "Look up the display name for a customer ID.",
            |a: Lookup| async move { Ok(json!({"name": format!("Customer {}", a.customer_id)})) },
        )
        .tool(
            "private_data",
            "Read customer data behind the identity provider.",
            |_: Empty| async move {
                Err::<Value, _>(ExecError::Unauthorized {
                    upstream: "idp".into(),
                    message: "token expired".into(),
                })
            },
        );
    let files = Toolset::new().tool(
        "read_file",
        "Read the contents of a file from disk.",
        |_: Empty| async move { Ok("contents") },
    );
    Engine::builder()
        .settings(settings())
        .source(crm.into_group("crm-svc", GroupSpec::new("crm", "Customer records")))
        .source(files.into_group("fs-svc", GroupSpec::new("fs", "Local files")))
}

fn skills_dir() -> PathBuf {
    let root = std::env::temp_dir().join(format!("toolsearch-skills-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (name, desc, body) in [
        (
            "customer-lookup",
            "How to find a customer and read their records",
            "# Customer lookup\n1. Search by name.\n",
        ),
        (
            "pdf-forms",
            "Fill in PDF forms from data",
            "# PDF forms\nUse the form fields.\n",
        ),
    ] {
        let d = root.join(name);
        std::fs::create_dir_all(&d).expect("dir");
        std::fs::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {desc}\n---\n{body}"),
        )
        .expect("write");
    }
    root
}

async fn json_of(e: &Engine, control: &str, args: Value) -> (bool, Value) {
    let r = e.handle(control, args).await;
    let text = r.first_text().expect("text").to_owned();
    (
        r.is_error,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn search_capabilities_groups_tool_hits_by_server_with_skills_bucket() {
    let dir = skills_dir();
    let skills = Skills::load(std::slice::from_ref(&dir)).expect("skills");
    let e = builder().skills(Arc::new(skills)).build().expect("engine");
    let names: Vec<String> = e.tools().into_iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        ["search_capabilities", "invoke_tool", "get_skill_content"]
    );
    let desc = &e.tools()[0].description;
    assert!(
        desc.contains("crm (Customer records)") && desc.contains("fs (Local files)"),
        "{desc}"
    );

    let (err, v) = json_of(
        &e,
        "search_capabilities",
        json!({"query": "customer records"}),
    )
    .await;
    assert!(!err, "{v}");
    let groups = v["tools"]["groups"].as_array().expect("groups");
    assert_eq!(groups[0]["server"]["name"], "crm");
    let hit = &groups[0]["hits"][0];
    assert!(
        hit["toolId"].as_str().expect("id").starts_with("crm__"),
        "{v}"
    );
    assert!(hit["score"].as_f64().expect("score") > 0.0);
    assert!(hit["inputSchema"]["properties"].is_object(), "{v}");
    for g in groups {
        let server = g["server"]["name"].as_str().expect("name");
        for h in g["hits"].as_array().expect("hits") {
            assert!(
                h["toolId"]
                    .as_str()
                    .expect("id")
                    .starts_with(&format!("{server}__"))
            );
        }
    }
    assert_eq!(v["skills"][0]["skillId"], "customer-lookup", "{v}");
    assert!(
        v["skills"][0]["description"]
            .as_str()
            .expect("d")
            .contains("find a customer")
    );

    let (err, body) = json_of(&e, "get_skill_content", json!({"skillId": "pdf-forms"})).await;
    assert!(!err);
    assert_eq!(body, "# PDF forms\nUse the form fields.\n");
    let (err, v) = json_of(&e, "get_skill_content", json!({"skillId": "nope"})).await;
    assert!(err);
    assert_eq!(v["error"], "unknown_skill");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn top_k_defaults_clamps_and_never_errors() {
    let Some(path) = shared_data_or_skip("toolbench-stable/catalog.json") else {
        return;
    };
    let sources = toolsearch::load_catalog_file(&path)
        .expect("catalog")
        .into_sources("tb", false);
    let e = Engine::builder()
        .settings(settings())
        .sources(sources)
        .build()
        .expect("engine");
    let count = |v: &Value| -> usize {
        v["tools"]["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g["hits"].as_array().expect("hits").len())
            .sum()
    };
    let q = "get weather and news data";
    for (k, want) in [
        (Value::Null, 5),
        (json!(2), 2),
        (json!(0), 5),
        (json!(-3), 5),
        (json!(true), 5),
        (json!(2.5), 5),
        // A string of digits is the integer it spells (models send them); no other string is.
        (json!("7"), 7),
        (json!("seven"), 5),
        (json!("-3"), 5),
        (json!(500), 50),
    ] {
        let mut args = json!({"query": q, "topKSkills": k.clone()});
        if !k.is_null() {
            args["topKTools"] = k.clone();
        }
        let (err, v) = json_of(&e, "search_capabilities", args).await;
        assert!(!err, "{k}: {v}");
        assert_eq!(count(&v), want, "topKTools {k}");
        assert_eq!(v["skills"], json!([]), "no skill catalog: an empty bucket");
    }
    // Per-call method: keyword and bm25 both answer; an unknown one is an error.
    let (err, _) = json_of(
        &e,
        "search_capabilities",
        json!({"query": q, "method": "keyword"}),
    )
    .await;
    assert!(!err);
    let (err, v) = json_of(
        &e,
        "search_capabilities",
        json!({"query": q, "method": "fuzzy"}),
    )
    .await;
    assert!(
        err && v["message"].as_str().expect("m").contains("fuzzy"),
        "{v}"
    );
    let (err, v) = json_of(
        &e,
        "search_capabilities",
        json!({"query": q, "method": "semantic"}),
    )
    .await;
    assert!(err && v["error"] == "search_unavailable", "{v}");
    assert!(
        v["message"]
            .as_str()
            .expect("m")
            .contains("toolsearch index"),
        "{v}"
    );
    let (err, v) = json_of(&e, "search_capabilities", json!({"query": "  "})).await;
    assert!(err && v["error"] == "invalid_request", "{v}");
}

#[tokio::test]
async fn invoke_tool_dispatches_with_args_or_flattened_keys_and_reports_errors() {
    let fired: Arc<Mutex<Vec<String>>> = Arc::default();
    let f = fired.clone();
    let e = builder()
        .on_unauthorized(move |u| f.lock().expect("lock").push(u.to_owned()))
        .build()
        .expect("engine");
    let ok = |r: CallResult| {
        assert!(!r.is_error, "{r:?}");
        r.structured_content.clone().unwrap_or(Value::Null)
    };
    let r = e
        .handle(
            "invoke_tool",
            json!({"toolId": "crm__customer_name", "args": {"customer_id": 7}}),
        )
        .await;
    assert_eq!(ok(r)["name"], "Customer 7");
    // args missing or null: the other top-level keys are the arguments.
    let r = e
        .handle(
            "invoke_tool",
            json!({"toolId": "crm__customer_name", "customer_id": 8}),
        )
        .await;
    assert_eq!(ok(r)["name"], "Customer 8");
    let r = e
        .handle(
            "invoke_tool",
            json!({"toolId": "crm__customer_name", "args": null, "customer_id": 9}),
        )
        .await;
    assert_eq!(ok(r)["name"], "Customer 9");
    for (args, code) in [
        (
            json!({"toolId": "crm__customer_name", "args": {"customer_id": "x"}}),
            "invalid_arguments",
        ),
        (
            json!({"toolId": "crm__customer_name", "args": [1]}),
            "invalid_request",
        ),
        (json!({"toolId": "crm__nope", "args": {}}), "unknown_tool"),
        (json!({"args": {}}), "invalid_request"),
        (json!("crm__customer_name"), "invalid_request"),
    ] {
        let (err, v) = json_of(&e, "invoke_tool", args.clone()).await;
        assert!(err, "{args}");
        assert_eq!(v["error"], code, "{args}: {v}");
        assert_eq!(v["isError"], true);
    }
    let (err, v) = json_of(
        &e,
        "invoke_tool",
        json!({"toolId": "crm__private_data", "args": {}}),
    )
    .await;
    assert!(err);
    assert_eq!(v["error"], "needs_auth");
    assert_eq!(v["hint"], "call the auth tool to re-authorize idp");
    assert_eq!(v["upstream"], "idp");
    assert_eq!(*fired.lock().expect("lock"), ["idp"]);
}

#[tokio::test]
async fn the_turn_helper_adds_the_best_tools_callable_by_their_id() {
    let e = builder().build().expect("engine");
    let defs = e.turn_tools("read a file from disk", 1).expect("turn");
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "search_capabilities",
            "invoke_tool",
            "get_skill_content",
            "fs__read_file"
        ]
    );
    assert_eq!(
        defs[3].description,
        "Read the contents of a file from disk."
    );
    let r = e.handle("fs__read_file", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    // Canonical names are callable only on this surface.
    let other = Engine::builder()
        .source(
            Toolset::new()
                .tool(
                    "read_file",
                    "Read a file.",
                    |_: Empty| async move { Ok("x") },
                )
                .into_group("fs-svc", GroupSpec::new("fs", "Local files")),
        )
        .build()
        .expect("engine");
    assert!(other.handle("fs__read_file", json!({})).await.is_error);
}

#[test]
fn skills_load_reports_every_problem_with_its_file() {
    let root = std::env::temp_dir().join(format!("toolsearch-badskills-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (dir, text) in [
        ("a", "---\nname: dup\ndescription: one\n---\n"),
        ("b", "---\nname: dup\ndescription: two\n---\n"),
        ("c", "no front matter"),
    ] {
        std::fs::create_dir_all(root.join(dir)).expect("dir");
        std::fs::write(root.join(dir).join("SKILL.md"), text).expect("write");
    }
    let e = Skills::load(&[root.clone(), root.join("missing")])
        .expect_err("bad")
        .to_string();
    assert!(
        e.contains("c/SKILL.md: does not start with a YAML front matter"),
        "{e}"
    );
    assert!(e.contains("missing"), "{e}");
    std::fs::remove_dir_all(root.join("c")).expect("rm");
    let e = Skills::load(std::slice::from_ref(&root))
        .expect_err("dup")
        .to_string();
    assert!(e.contains("two skills named \"dup\""), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}
