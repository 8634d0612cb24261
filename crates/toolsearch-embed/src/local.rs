//! A sentence-transformers BERT-family model run in process (see [`crate::bert`]).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};
use toolsearch::search::{EmbedError, Embedder};

use crate::LoadError;
use crate::bert::{Bert, BertConfig};
use crate::matmul::Threads;

/// The input length used when neither the caller nor the settings give one, capped by the
/// model's own `max_seq_length`. all-MiniLM-L6-v2 was trained on 128-token inputs; on
/// ToolBench (long parameter texts) cutting at 128 instead of 256 measured the same nDCG@10
/// (hybrid 0.7172 vs 0.7179, semantic 0.6157 vs 0.6164) and builds the cache 1.5× faster.
pub const DEFAULT_MAX_TOKENS: usize = 128;

/// How token vectors become one sentence vector (sentence-transformers' `1_Pooling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the token vectors under the attention mask (all-MiniLM-L6-v2 and most models).
    Mean,
    /// The `[CLS]` token's vector.
    Cls,
}

/// A local sentence-embedding model: a directory holding `config.json`, `tokenizer.json` and
/// `model.safetensors` (a sentence-transformers BERT-family model such as all-MiniLM-L6-v2).
/// Runs on the CPU; vectors are not normalised here (the index normalises them).
pub struct LocalModel {
    dir: PathBuf,
    id: String,
    dim: usize,
    pooling: Pooling,
    tokenizer: Tokenizer,
    model: Bert,
}

impl fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalModel")
            .field("dir", &self.dir)
            .field("id", &self.id)
            .field("dim", &self.dim)
            .field("pooling", &self.pooling)
            .finish_non_exhaustive()
    }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, LoadError> {
    let path = dir.join(name);
    fs::read(&path).map_err(|e| LoadError::new(format!("{}: {e}", path.display())))
}

impl LocalModel {
    /// Loads the model in `dir`. The maximum input length is [`DEFAULT_MAX_TOKENS`], or the
    /// directory's `sentence_bert_config.json` `max_seq_length` when smaller, capped by the
    /// model's positions; padding in `tokenizer.json` is turned off (each text is encoded
    /// alone, at its own length).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, LoadError> {
        Self::load_with(dir, None)
    }

    /// [`load`](Self::load), cutting inputs at `max_tokens` when given (still capped by the
    /// model's positions).
    pub fn load_with(dir: impl AsRef<Path>, max_tokens: Option<usize>) -> Result<Self, LoadError> {
        let dir = dir.as_ref();
        let config_bytes = read(dir, "config.json")?;
        let config: BertConfig = serde_json::from_slice(&config_bytes).map_err(|e| {
            LoadError::new(format!(
                "{}: not a BERT config: {e}",
                dir.join("config.json").display()
            ))
        })?;
        let tokenizer_bytes = read(dir, "tokenizer.json")?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| {
            LoadError::new(format!("{}: {e}", dir.join("tokenizer.json").display()))
        })?;
        let max_len = fs::read(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("max_seq_length")?.as_u64())
            .map_or(DEFAULT_MAX_TOKENS, |n| (n as usize).min(DEFAULT_MAX_TOKENS));
        let max_len = max_tokens
            .unwrap_or(max_len)
            .clamp(1, config.max_position_embeddings);
        tokenizer.with_padding(None::<PaddingParams>);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                ..TruncationParams::default()
            }))
            .map_err(|e| LoadError::new(format!("tokenizer truncation: {e}")))?;
        let pooling = fs::read(dir.join("1_Pooling/config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .map_or(Pooling::Mean, |v| {
                if v.get("pooling_mode_cls_token") == Some(&serde_json::Value::Bool(true)) {
                    Pooling::Cls
                } else {
                    Pooling::Mean
                }
            });
        let weights = read(dir, "model.safetensors")?;
        let digest = digest(&[&config_bytes, &tokenizer_bytes, &weights]);
        let model = Bert::load(&config, &weights).map_err(|e| {
            LoadError::new(format!("{}: {e}", dir.join("model.safetensors").display()))
        })?;
        // The id names the weights, not the folder: a moved model keeps its cache.
        let id = format!(
            "local:bert-{}x{}@{digest:016x}:{max_len}",
            config.hidden_size, config.num_hidden_layers
        );
        Ok(Self {
            dir: dir.to_owned(),
            id,
            dim: config.hidden_size,
            pooling,
            tokenizer,
            model,
        })
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sentence vector of one tokenized text.
    fn encode(&self, ids: &[u32], threads: Threads) -> Result<Vec<f32>, String> {
        let hidden = self.model.forward(ids, threads)?;
        Ok(match self.pooling {
            Pooling::Cls => hidden[..self.dim].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0.0f32; self.dim];
                for row in hidden.chunks_exact(self.dim) {
                    sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
                }
                let n = (hidden.len() / self.dim).max(1) as f32;
                sum.iter_mut().for_each(|s| *s /= n);
                sum
            }
        })
    }
}

impl Embedder for LocalModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let fail = |e: String| EmbedError(format!("model {}: {e}", self.dir.display()));
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| {
                self.tokenizer
                    .encode(*t, true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| fail(format!("tokenizing: {e}")))
            })
            .collect::<Result<_, _>>()?;
        match ids.as_slice() {
            [] => Ok(Vec::new()),
            // One text (a query): its matrix products use every core.
            [one] => Ok(vec![self.encode(one, Threads::All).map_err(fail)?]),
            // Several: one text per core, longest first so the cores finish together.
            _ => {
                let mut order: Vec<usize> = (0..ids.len()).collect();
                order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
                let vectors: Vec<(usize, Vec<f32>)> = order
                    .par_iter()
                    .map(|&i| Ok((i, self.encode(&ids[i], Threads::One)?)))
                    .collect::<Result<_, String>>()
                    .map_err(fail)?;
                let mut out = vec![Vec::new(); ids.len()];
                for (i, v) in vectors {
                    out[i] = v;
                }
                Ok(out)
            }
        }
    }

    fn batch_size(&self) -> usize {
        16
    }
}

/// A 64-bit digest of some byte strings (FNV-1a over 8-byte words; identity, not security).
fn digest(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        let (words, rest) = part.as_chunks::<8>();
        for w in words {
            h ^= u64::from_le_bytes(*w);
            h = h.wrapping_mul(0x0100_0000_01b3).rotate_left(29);
        }
        for b in rest {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= part.len() as u64;
    }
    h
}
