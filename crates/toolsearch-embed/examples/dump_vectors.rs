//! Writes what the semantic and hybrid searches of a catalog see, for analysis outside the
//! engine (`research/semantic_lab.py`): every tool's vector, key and embedded text, and every
//! query's vectors (the whole query's, then each sentence's) with BM25's first 100 tools.
//!
//! `cargo run --release -p toolsearch-embed --example dump_vectors CATALOG QUERIES OUT_DIR`
//! (model from `$TOOLSEARCH_MODEL`, else `target/models/all-MiniLM-L6-v2`; the vectors come
//! from the embedding cache when `toolsearch index` built it). In `OUT_DIR`: `tools.f32` and
//! `queries.f32` (little-endian f32 rows of `dim` values), `tools.txt` (a key per line, in
//! tool id order), `texts.jsonl` (each tool's embedded text), `queries.jsonl` (`id`, `query`,
//! `split`, `relevant`, `nvec` — its rows in `queries.f32` — and `bm25`: `[tool id, score]`),
//! and `meta.json` (`dim`, `n`, BM25's `rare_idf`).

mod common;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde_json::json;
use toolsearch::SearchIndex;
use toolsearch::eval::{Split, load_queries, tool_key};
use toolsearch::search::Corpus;
use toolsearch::search::{Embeddings, tool_text};
use toolsearch::{Directory, load_catalog_file};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [catalog, queries, out] = args.as_slice() else {
        return Err("usage: dump_vectors CATALOG QUERIES OUT_DIR".into());
    };
    std::fs::create_dir_all(out)?;
    let settings = common::settings();
    let sem = Embeddings::open(
        toolsearch_embed::load(&settings.semantic)?,
        &settings.semantic,
        false,
    )?;
    let dir = Directory::build(load_catalog_file(catalog)?.into_sources("catalog", false))?;
    let index = SearchIndex::build(&dir);
    let vectors = index.vectors(&dir, &sem)?;
    let bm25 = index.bm25(&dir, &settings.bm25);
    let n = dir.tools().len() as u32;
    let create = |name: &str| File::create(out.join(name)).map(BufWriter::new);
    let (mut rows, mut keys, mut texts) = (
        create("tools.f32")?,
        create("tools.txt")?,
        create("texts.jsonl")?,
    );
    let with_group = dir.group_count() > 1;
    for id in 0..n {
        for x in vectors.vector(id) {
            rows.write_all(&x.to_le_bytes())?;
        }
        writeln!(keys, "{}", tool_key(&dir, id))?;
        let doc = dir.doc(id);
        let text = tool_text(&doc, dir.group_name(doc.group), with_group);
        writeln!(texts, "{}", json!(text))?;
    }
    let (mut qrows, mut qlines) = (create("queries.f32")?, create("queries.jsonl")?);
    for (split, name) in [(Split::Train, "train"), (Split::Test, "test")] {
        for q in load_queries(queries, split)? {
            let v = sem.embed_query(&q.query)?;
            for x in v.all().iter().flatten() {
                qrows.write_all(&x.to_le_bytes())?;
            }
            let (hits, _) = bm25.search(&q.query, 0..n, 100);
            let hits: Vec<(u32, f32)> = hits.iter().map(|h| (h.tool, h.score)).collect();
            let line = json!({"id": q.id, "query": q.query, "split": name,
                "relevant": q.relevant, "nvec": v.all().len(), "bm25": hits});
            writeln!(qlines, "{line}")?;
        }
    }
    let meta = json!({"dim": vectors.dim(), "n": n, "rare_idf": bm25.rare_idf()});
    std::fs::write(out.join("meta.json"), meta.to_string())?;
    for mut w in [rows, keys, texts, qrows, qlines] {
        w.flush()?;
    }
    Ok(())
}
