//! Embedding speed of the local model (all-MiniLM-L6-v2 from `target/models`, or
//! `$TOOLSEARCH_MODEL`): one query as `semantic` search embeds it, and tool texts in the
//! batches `toolsearch index` uses. Texts come from `../shared/data`.
//!
//! `cargo bench -p toolsearch-embed --bench embed`

use std::path::PathBuf;

use toolsearch::search::Corpus;
use toolsearch::search::{Embedder, tool_text};
use toolsearch::{Directory, load_catalog_file};
use toolsearch_embed::LocalModel;

fn main() {
    divan::main();
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model() -> LocalModel {
    let dir = std::env::var_os("TOOLSEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/models/all-MiniLM-L6-v2"));
    LocalModel::load(&dir).expect("the model (run .ci/run or set TOOLSEARCH_MODEL)")
}

fn queries(set: &str, n: usize) -> Vec<String> {
    let path = root().join(format!("../shared/data/{set}/queries.jsonl"));
    std::fs::read_to_string(path)
        .expect("queries")
        .lines()
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            v["query"].as_str().expect("query").to_owned()
        })
        .collect()
}

fn tool_texts(set: &str, n: usize) -> Vec<String> {
    let path = root().join(format!("../shared/data/{set}/catalog.json"));
    let sources = load_catalog_file(&path)
        .expect("catalog")
        .into_sources(set, false);
    let dir = Directory::build(sources).expect("directory");
    (0..dir.tools().len().min(n) as u32)
        .map(|t| tool_text(&dir.doc(t), &dir.group_of(t).name, dir.groups().len() > 1))
        .collect()
}

/// One query at a time, cycling through the first 32 queries of a set.
#[divan::bench(args = ["metatool", "toolbench-stable"], sample_count = 64)]
fn query(bencher: divan::Bencher, set: &str) {
    let m = model();
    let qs = queries(set, 32);
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % qs.len();
        m.embed(&[qs[i].as_str()]).expect("embed")
    });
}

/// 16 tool texts (one `toolsearch index` batch); divide by 16 for the time per tool.
#[divan::bench(args = ["metatool", "toolbench-stable"], sample_count = 8)]
fn tools_16(bencher: divan::Bencher, set: &str) {
    let m = model();
    let texts = tool_texts(set, 16);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    bencher.bench_local(|| m.embed(&refs).expect("embed"));
}
