//! The ToolBench data of the benches (`../shared/data/toolbench-stable`) and its replication
//! to larger catalogs: groups renamed `<group>-r<i>` (truncated to 32 characters); smaller
//! sizes take the first groups.

#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::{Value, json};
use toolsearch::{CatalogFile, SourceTools, parse_catalog};

pub const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/toolbench-stable"
);

pub fn base() -> &'static CatalogFile {
    static BASE: OnceLock<CatalogFile> = OnceLock::new();
    BASE.get_or_init(|| {
        let text =
            std::fs::read_to_string(format!("{DATA}/catalog.json")).expect("toolbench catalog");
        parse_catalog("toolbench", &text).expect("valid")
    })
}

pub fn queries() -> &'static [String] {
    static Q: OnceLock<Vec<String>> = OnceLock::new();
    Q.get_or_init(|| {
        let text = std::fs::read_to_string(format!("{DATA}/queries.jsonl")).expect("queries");
        text.lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("jsonl")["query"]
                    .as_str()
                    .expect("q")
                    .to_owned()
            })
            .collect()
    })
}

/// The catalog at `size` tools, as catalog JSON text.
pub fn catalog_json(size: usize) -> String {
    let mut groups = Vec::new();
    let mut names = HashSet::new();
    let mut count = 0;
    'outer: for r in 0.. {
        for (gi, (g, instructions, tools)) in base().groups.iter().enumerate() {
            if count >= size {
                break 'outer;
            }
            let name = if r == 0 {
                g.name.clone()
            } else {
                let suffix = format!("-r{r}");
                let keep = g.name.len().min(32 - suffix.len());
                format!("{}{suffix}", &g.name[..keep])
            };
            let name = if names.insert(name.clone()) {
                name
            } else {
                format!("g{gi}-r{r}")
            };
            let take = tools.len().min(size - count);
            count += take;
            let tools: Vec<Value> = tools[..take]
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
                .collect();
            groups.push(json!({"name": name, "description": g.description, "instructions": instructions, "tools": tools}));
        }
    }
    json!({"groups": groups}).to_string()
}

pub fn sources(size: usize) -> Vec<SourceTools> {
    parse_catalog("bench", &catalog_json(size))
        .expect("valid")
        .into_sources("bench", false)
}
