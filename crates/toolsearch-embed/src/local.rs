//! A sentence-transformers BERT-family model run in process with candle.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};
use toolsearch::search::semantic::{EmbedError, Embedder};

use crate::LoadError;

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
    model: BertModel,
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
    /// Loads the model in `dir`. The maximum input length is the directory's
    /// `sentence_bert_config.json` `max_seq_length` (else 256), capped by the model's
    /// positions; padding in `tokenizer.json` is turned off (batches pad to their longest).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, LoadError> {
        Self::load_with(dir, None)
    }

    /// [`load`](Self::load), cutting inputs at `max_tokens` instead of the model's
    /// `max_seq_length` when given.
    pub fn load_with(dir: impl AsRef<Path>, max_tokens: Option<usize>) -> Result<Self, LoadError> {
        let dir = dir.as_ref();
        let config_bytes = read(dir, "config.json")?;
        let config: Config = serde_json::from_slice(&config_bytes).map_err(|e| {
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
            .map_or(256, |n| n as usize);
        let max_len = max_tokens
            .unwrap_or(max_len)
            .min(config.max_position_embeddings);
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
        let device = Device::Cpu;
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(|e| {
                LoadError::new(format!("{}: {e}", dir.join("model.safetensors").display()))
            })?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| LoadError::new(format!("{}: not a BERT model: {e}", dir.display())))?;
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

    fn forward(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, candle_core::Error> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(format!("tokenizing: {e}")))?;
        let longest = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let n = encodings.len();
        let mut ids = vec![0u32; n * longest];
        let mut mask = vec![0u32; n * longest];
        for (i, e) in encodings.iter().enumerate() {
            let row = i * longest;
            ids[row..row + e.len()].copy_from_slice(e.get_ids());
            mask[row..row + e.len()].copy_from_slice(e.get_attention_mask());
        }
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, (n, longest), device)?;
        let mask = Tensor::from_vec(mask, (n, longest), device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let pooled = match self.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let sum = hidden.broadcast_mul(&m)?.sum(1)?;
                let count = m.sum(1)?.clamp(1e-9, f64::MAX)?;
                sum.broadcast_div(&count)?
            }
        };
        pooled.to_vec2::<f32>()
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
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // Similar lengths share a batch, so little padding is computed.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size()) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self
                .forward(&batch)
                .map_err(|e| EmbedError(format!("model {}: {e}", self.dir.display())))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
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
