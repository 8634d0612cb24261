//! Our BERT forward pass (`toolsearch-embed`, our own matrix kernels) against
//! candle-transformers 0.9's `BertModel` — the crate it replaced — on the same weights
//! (all-MiniLM-L6-v2 from `target/models`, or `$TOOLSEARCH_MODEL`), inputs cut at 128 tokens,
//! in the same run:
//! queries one at a time (as `semantic` search embeds them) and tool texts in batches of 16
//! (as `toolsearch index` does), from `../shared/data`. Candle's batches pad to their longest
//! text with an attention mask, as our earlier candle-based embedder did (texts sorted by
//! length first). Also prints how far apart the two models' vectors are.
//!
//! `PEER_QUERIES=N PEER_TOOLS=M cargo bench -p toolsearch-peers --bench encoder`
//! (defaults 200 and 256).

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};
use toolsearch::search::Corpus;
use toolsearch::search::{Embedder, dot, normalize, tool_text};
use toolsearch::{Directory, load_catalog_file};
use toolsearch_embed::LocalModel;

const MAX_TOKENS: usize = 128;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Candle {
    tokenizer: Tokenizer,
    model: BertModel,
}

impl Candle {
    fn load(dir: &Path) -> Self {
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).expect("config"))
                .expect("config");
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer");
        tokenizer.with_padding(None::<PaddingParams>);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .expect("truncation");
        let weights = std::fs::read(dir.join("model.safetensors")).expect("weights");
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .expect("weights");
        let model = BertModel::load(vb, &config).expect("model");
        Self { tokenizer, model }
    }

    /// Mean-pooled vectors of one padded batch.
    fn forward(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let enc = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .expect("tokenize");
        let longest = enc.iter().map(|e| e.len()).max().unwrap_or(1);
        let n = enc.len();
        let mut ids = vec![0u32; n * longest];
        let mut mask = vec![0u32; n * longest];
        for (i, e) in enc.iter().enumerate() {
            ids[i * longest..i * longest + e.len()].copy_from_slice(e.get_ids());
            mask[i * longest..i * longest + e.len()].copy_from_slice(e.get_attention_mask());
        }
        let ids = Tensor::from_vec(ids, (n, longest), &Device::Cpu).expect("ids");
        let mask = Tensor::from_vec(mask, (n, longest), &Device::Cpu).expect("mask");
        let types = ids.zeros_like().expect("types");
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .expect("forward");
        let m = mask
            .to_dtype(DType::F32)
            .and_then(|m| m.unsqueeze(2))
            .expect("mask");
        let sum = hidden
            .broadcast_mul(&m)
            .and_then(|h| h.sum(1))
            .expect("sum");
        let count = m.sum(1).expect("count");
        sum.broadcast_div(&count)
            .and_then(|v| v.to_vec2::<f32>())
            .expect("pool")
    }

    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let batch: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
        let mut out = vec![Vec::new(); texts.len()];
        for (&i, v) in order.iter().zip(self.forward(&batch)) {
            out[i] = v;
        }
        out
    }
}

fn median_ms(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2] * 1e3
}

fn main() {
    let nq: usize = std::env::var("PEER_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let nt: usize = std::env::var("PEER_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let dir = std::env::var_os("TOOLSEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/models/all-MiniLM-L6-v2"));
    let ours = LocalModel::load_with(&dir, Some(MAX_TOKENS)).expect("model");
    let candle = Candle::load(&dir);
    println!(
        "| set | engine | query p50 ms | query mean ms | ms per tool (batches of 16) |\n|---|---|---|---|---|"
    );
    for set in ["metatool", "toolbench-stable"] {
        let data = root().join("../shared/data").join(set);
        let queries: Vec<String> = std::fs::read_to_string(data.join("queries.jsonl"))
            .expect("queries")
            .lines()
            .take(nq)
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("json");
                v["query"].as_str().expect("query").to_owned()
            })
            .collect();
        let sources = load_catalog_file(&data.join("catalog.json"))
            .expect("catalog")
            .into_sources(set, false);
        let d = Directory::build(sources).expect("directory");
        let groups = d.groups().len() > 1;
        let tools: Vec<String> = (0..d.len().min(nt) as u32)
            .map(|id| tool_text(&d.doc(id), &d.group_of(id).name, groups))
            .collect();
        let tool_refs: Vec<&str> = tools.iter().map(String::as_str).collect();

        let mut worst_cos = 1.0f32;
        let mut results = Vec::new();
        for engine in ["candle", "toolsearch"] {
            let embed = |texts: &[&str]| -> Vec<Vec<f32>> {
                if engine == "candle" {
                    candle.embed(texts)
                } else {
                    ours.embed(texts).expect("embed")
                }
            };
            embed(&[queries[0].as_str()]); // warm up
            let mut times = Vec::with_capacity(queries.len());
            for q in &queries {
                let t = Instant::now();
                std::hint::black_box(embed(&[q.as_str()]));
                times.push(t.elapsed().as_secs_f64());
            }
            let mean = times.iter().sum::<f64>() / times.len() as f64 * 1e3;
            let p50 = median_ms(times);
            let t = Instant::now();
            let mut vectors = Vec::new();
            for chunk in tool_refs.chunks(16) {
                vectors.extend(embed(chunk));
            }
            let per_tool = t.elapsed().as_secs_f64() * 1e3 / tool_refs.len() as f64;
            println!("| {set} | {engine} | {p50:.2} | {mean:.2} | {per_tool:.2} |");
            results.push((p50, per_tool, vectors));
        }
        for (a, b) in results[0].2.iter().zip(&results[1].2) {
            let (mut a, mut b) = (a.clone(), b.clone());
            normalize(&mut a);
            normalize(&mut b);
            worst_cos = worst_cos.min(dot(&a, &b));
        }
        println!(
            "| {set} | candle / toolsearch | {:.2}× | | {:.2}× (lowest cosine between the two models' tool vectors: {worst_cos:.6}) |",
            results[0].0 / results[1].0,
            results[0].1 / results[1].1
        );
    }
}
