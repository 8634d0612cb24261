//! The layering of docs/architecture.md: in every crate of the workspace, the top-level
//! modules import one another without a circle, and in this crate each imports only
//! the layers below it. Imports are read from the source (`crate::…` paths outside comments,
//! including `use crate::{a, b::c}` groups and items the crate root re-exports).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// This crate's top-level modules, bottom layer first (docs/architecture.md).
const CORE_LAYERS: &[&str] = &[
    "text", "page", "parallel", "problem", "error", "outcome", "exec", "codeact", "catalog",
    "skills", "config", "policy", "learn", "search", "eval", "dispatch", "controls", "vendor",
    "engine",
];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_owned()
}

/// Source without comments (line comments and doc comments; string literals are kept).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = '\0';
        let mut cut = line.len();
        for (i, c) in line.char_indices() {
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            }
            if !in_str && c == '/' && prev == '/' {
                cut = i - 1;
                break;
            }
            prev = c;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every `crate::` path in `text`.
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `$crate::` or a longer identifier
        }
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of a `{…}` group.
            let mut depth = 0;
            let mut start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        start = false;
                        out.push(ident_at(&group[j..]).to_owned());
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident_at(rest).to_owned());
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Top-level modules of a crate (its `lib.rs`, or a binary's `main.rs`) and the sibling
/// modules each imports.
fn module_graph(src: &Path) -> Graph {
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|f| f.exists())
        .expect("lib.rs or main.rs");
    let lib = strip_comments(&fs::read_to_string(root).expect("the crate root"));
    let mut modules = BTreeSet::new();
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for line in lib.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words.iter().position(|w| *w == "mod")
            && let Some(name) = words.get(i + 1).and_then(|n| n.strip_suffix(';'))
            && words[..i]
                .iter()
                .all(|w| w.starts_with("pub") || w.starts_with("#["))
        {
            modules.insert(name.to_owned());
        }
    }
    for stmt in lib.split(';') {
        if let Some(path) = stmt.trim().strip_prefix("pub use ") {
            let module = ident_at(path.trim()).to_owned();
            for item in path.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if item.starts_with(|c: char| c.is_uppercase()) {
                    reexports.insert(item.to_owned(), module.clone());
                }
            }
        }
    }
    let mut graph = Graph::new();
    for m in &modules {
        let mut files = Vec::new();
        let file = src.join(format!("{m}.rs"));
        if file.exists() {
            files.push(file);
        }
        rust_files(&src.join(m), &mut files);
        assert!(!files.is_empty(), "module {m} has no source in {src:?}");
        let deps = graph.entry(m.clone()).or_default();
        for f in files {
            let text = strip_comments(&fs::read_to_string(&f).expect("source"));
            for first in crate_paths(&text) {
                let target = if modules.contains(&first) {
                    Some(first)
                } else {
                    reexports.get(&first).cloned()
                };
                if let Some(t) = target.filter(|t| t != m) {
                    deps.insert(t);
                }
            }
        }
    }
    graph
}

/// A circle of the graph, when it has one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &Graph,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for d in graph.get(n).into_iter().flatten() {
            match state.get(d.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| s == d).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(d, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n.as_str())
            && let Some(c) = visit(n, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_reader_sees_imports_in_groups_and_ignores_comments() {
    let text = strip_comments(
        "use crate::{a::X, b, c::{d, e}};\n// crate::zz\nlet s = \"//\"; crate::f::g();\n",
    );
    assert_eq!(crate_paths(&text), ["a", "b", "c", "f"]);
    let graph: Graph = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"])]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
        .collect();
    assert_eq!(find_cycle(&graph).expect("a circle"), ["a", "b", "c", "a"]);
}

#[test]
fn no_crate_has_a_circle_among_its_top_level_modules() {
    let mut checked = Vec::new();
    for entry in fs::read_dir(crates_dir()).expect("crates/") {
        let src = entry.expect("entry").path().join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = module_graph(&src);
        assert_eq!(find_cycle(&graph), None, "{}: {graph:#?}", src.display());
        checked.push(src);
    }
    // Every crate of the workspace, the binary's too.
    assert!(checked.len() >= 6, "{checked:?}");
}

#[test]
fn each_core_layer_imports_only_layers_below_it() {
    let graph = module_graph(&crates_dir().join("toolsearch").join("src"));
    let listed: BTreeSet<String> = CORE_LAYERS.iter().map(|s| (*s).to_owned()).collect();
    let found: BTreeSet<String> = graph.keys().cloned().collect();
    assert_eq!(found, listed, "every top-level module has its layer");
    let rank = |m: &str| CORE_LAYERS.iter().position(|l| *l == m);
    let mut upward = Vec::new();
    for (m, deps) in &graph {
        for d in deps {
            if rank(d) >= rank(m) {
                upward.push(format!("{m} imports {d}"));
            }
        }
    }
    assert!(upward.is_empty(), "imports that go up: {upward:?}");
}
