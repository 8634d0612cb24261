//! A binary built without some cargo features refuses, by name, the config and flags that need
//! them — it never starts half-working. Each test runs in a build without its feature
//! (`cargo test -p toolsearch-cli --no-default-features`); the default build has them all.

#![allow(unused_imports, dead_code)]

use std::process::{Command, Output, Stdio};

mod common;

use common::{root, temp_dir};

fn toolsearch(args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run toolsearch")
}

fn seed() -> String {
    root()
        .join("crates/toolsearch/tests/fixtures/seed.json")
        .display()
        .to_string()
}

/// Fails, and its stderr names `needle` (the feature) and no panic.
fn refused(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A config file in a fresh folder: `[[source]]` the seed catalog, then `extra`.
fn config(name: &str, extra: &str) -> String {
    let dir = temp_dir(name);
    let path = dir.join("gateway.toml");
    let text = format!(
        "[[source]]\nname = \"seed\"\ncatalog = {:?}\n\n{extra}",
        seed()
    );
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

#[cfg(not(feature = "codeact"))]
#[test]
fn without_codeact_a_config_that_enables_it_is_refused() {
    let cfg = config("features-codeact", "[codeact]\nenabled = true\n");
    refused(
        &toolsearch(&["check", "--config", &cfg], &[]),
        "cargo feature codeact",
    );
}

#[cfg(not(feature = "otel"))]
#[test]
fn without_otel_telemetry_is_refused() {
    let cfg = config(
        "features-otel",
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n",
    );
    refused(
        &toolsearch(&["serve", "--config", &cfg], &[]),
        "cargo feature otel",
    );
}

#[cfg(not(feature = "jwt"))]
#[test]
fn without_jwt_a_jwks_is_refused() {
    let cfg = config(
        "features-jwt",
        "[auth.jwt]\njwks = \"jwks.json\"\nissuer = \"https://issuer.example\"\naudience = \"toolsearch\"\n",
    );
    refused(
        &toolsearch(&["serve", "--http", "127.0.0.1:0", "--config", &cfg], &[]),
        "cargo feature jwt",
    );
}

#[cfg(not(feature = "token-stats"))]
#[test]
fn without_token_stats_export_stats_is_refused() {
    let out = toolsearch(
        &[
            "export",
            "--format",
            "openai",
            "--catalog",
            &seed(),
            "--stats",
        ],
        &[],
    );
    refused(&out, "cargo feature token-stats");
}

#[cfg(not(feature = "local-model"))]
#[test]
fn without_a_local_model_semantic_search_names_the_feature() {
    let dir = temp_dir("features-model");
    let out = toolsearch(
        &[
            "search",
            "--catalog",
            &seed(),
            "--method",
            "semantic",
            "refund",
        ],
        &[("TOOLSEARCH_MODEL", dir.to_str().expect("path"))],
    );
    refused(&out, "cargo feature local-model");
}
