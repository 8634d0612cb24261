//! A BERT encoder's forward pass in plain Rust (and MPNet's, which is BERT with a relative
//! position bias added to every layer's attention scores and positions counted from 2):
//! matrix products by `matmul` (our AVX-512 or AVX2 kernel over weights packed at load, else
//! the `gemm` crate), everything else (embeddings, layer norm, softmax, GELU, pooling) fused
//! loops over row-major buffers, compiled for AVX2 where the CPU has it.
//!
//! It replaces candle's `BertModel` because it measured faster on the same weights (see
//! `BENCHMARKS.md`, `cargo bench -p toolsearch-peers --bench encoder`): one sequence is encoded
//! at a time, so there is no padding and no attention mask; Q, K and V are one product; the
//! weights are transposed once at load. The outputs match candle's to float rounding
//! (`tests/model.rs` holds vectors candle produced).

mod ops;
mod weights;

use serde::Deserialize;

use crate::LoadError;
use crate::matmul::{Packed, Threads};
use ops::{attention, gelu, gelu_tanh, layer_norm, linear};
use weights::Weights;

/// The `config.json` fields the encoder reads.
#[derive(Debug, Deserialize)]
pub(crate) struct BertConfig {
    #[serde(default)]
    model_type: Option<String>,
    pub(crate) hidden_size: usize,
    num_attention_heads: usize,
    pub(crate) num_hidden_layers: usize,
    intermediate_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f32,
    pub(crate) max_position_embeddings: usize,
    vocab_size: usize,
    #[serde(default = "default_act")]
    hidden_act: String,
    #[serde(default)]
    position_embedding_type: Option<String>,
    /// MPNet: how many relative-position buckets the attention bias has.
    #[serde(default)]
    relative_attention_num_buckets: Option<usize>,
}

fn default_eps() -> f32 {
    1e-12
}

fn default_act() -> String {
    "gelu".to_owned()
}

#[derive(Debug, Clone, Copy)]
enum Activation {
    /// `x·Φ(x)` with the exact normal CDF (BERT's `gelu`).
    Gelu,
    /// The tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// A linear layer, weight stored transposed (`[inputs × outputs]`) and packed for the CPU.
struct Linear {
    weight: Packed,
    bias: Vec<f32>,
}

struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// BERT weights ready to run.
pub(crate) struct Bert {
    hidden: usize,
    heads: usize,
    eps: f32,
    activation: Activation,
    vocab: usize,
    max_positions: usize,
    words: Vec<f32>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    /// The first token's position (BERT 0; MPNet 2: its padding index plus one).
    first_position: usize,
    /// MPNet: the attention bias of each relative-position bucket, `[buckets × heads]`.
    relative: Option<Vec<f32>>,
}

/// MPNet's relative positions beyond this share the last bucket.
const MAX_DISTANCE: f32 = 128.0;

/// MPNet's (and T5's) bidirectional bucket of the relative position `memory − context`: half
/// the buckets for each direction, exact below a quarter of them, logarithmic up to
/// [`MAX_DISTANCE`].
fn relative_bucket(relative: i64, buckets: usize) -> usize {
    let half = (buckets / 2) as i64;
    let n = -relative;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let exact = half / 2;
    bucket += if n < exact {
        n
    } else {
        let log = (n as f32 / exact as f32).ln() / (MAX_DISTANCE / exact as f32).ln();
        (exact + (log * (half - exact) as f32) as i64).min(half - 1)
    };
    bucket as usize
}

impl Bert {
    /// Builds the encoder `config` describes from safetensors `bytes`.
    pub(crate) fn load(config: &BertConfig, bytes: &[u8]) -> Result<Self, LoadError> {
        let mpnet = match config.model_type.as_deref() {
            None | Some("bert") => false,
            Some("mpnet") => true,
            Some(t) => {
                return Err(LoadError::new(format!(
                    "model_type {t:?}: only BERT and MPNet models are supported"
                )));
            }
        };
        if let Some(p) = config.position_embedding_type.as_deref()
            && p != "absolute"
        {
            return Err(LoadError::new(format!(
                "position_embedding_type {p:?}: only absolute positions are supported"
            )));
        }
        let activation = match config.hidden_act.as_str() {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" => Activation::GeluTanh,
            other => {
                return Err(LoadError::new(format!(
                    "hidden_act {other:?}: only gelu is supported"
                )));
            }
        };
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            return Err(LoadError::new(format!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            )));
        }
        let w = Weights::new(bytes)?;
        let token_type = if mpnet {
            vec![0.0; h]
        } else {
            let token_types = w
                .rows_of("embeddings.token_type_embeddings.weight")
                .unwrap_or(1);
            let mut t = w.get("embeddings.token_type_embeddings.weight", &[token_types, h])?;
            t.truncate(h);
            t
        };
        let relative = match (mpnet, config.relative_attention_num_buckets) {
            (false, _) => None,
            (true, buckets) => {
                let buckets = buckets.unwrap_or(32);
                Some(w.get(
                    "encoder.relative_attention_bias.weight",
                    &[buckets, config.num_attention_heads],
                )?)
            }
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let i = config.intermediate_size;
            let (q, k, v, out, norm) = if mpnet {
                ("attn.q", "attn.k", "attn.v", "attn.o", "")
            } else {
                (
                    "self.query",
                    "self.key",
                    "self.value",
                    "output.dense",
                    ".output",
                )
            };
            layers.push(Layer {
                qkv: w.linear(
                    &[
                        &format!("{p}.attention.{q}"),
                        &format!("{p}.attention.{k}"),
                        &format!("{p}.attention.{v}"),
                    ],
                    h,
                    h,
                )?,
                attention_out: w.linear(&[&format!("{p}.attention.{out}")], h, h)?,
                attention_norm: w.norm(&format!("{p}.attention{norm}"), h)?,
                up: w.linear(&[&format!("{p}.intermediate.dense")], h, i)?,
                down: w.linear(&[&format!("{p}.output.dense")], i, h)?,
                out_norm: w.norm(&format!("{p}.output"), h)?,
            });
        }
        Ok(Self {
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps,
            activation,
            vocab: config.vocab_size,
            max_positions: config.max_position_embeddings,
            words: w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            positions: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type,
            embedding_norm: w.norm("embeddings", h)?,
            layers,
            first_position: if mpnet { 2 } else { 0 },
            relative,
        })
    }

    /// The last hidden layer for the token `ids` of one sequence, `[ids.len() × hidden]`
    /// row-major. `threads` splits the matrix products.
    ///
    /// On x86-64 CPUs with AVX2 and FMA the pass is compiled a second time for them, so the
    /// loops outside the matrix products (attention, softmax, GELU, layer norms) run 8 lanes
    /// wide instead of SSE2's 4; the CPU is checked once per call.
    pub(crate) fn forward(&self, ids: &[u32], threads: Threads) -> Result<Vec<f32>, String> {
        crate::cpu::run_best(Forward {
            bert: self,
            ids,
            threads,
        })
    }

    /// The pass itself; it and the loops it calls are inlined into each caller, so they are
    /// compiled for that caller's CPU features (see [`Forward`]).
    #[inline(always)]
    fn forward_any(&self, ids: &[u32], threads: Threads) -> Result<Vec<f32>, String> {
        let n = ids.len();
        let h = self.hidden;
        if n + self.first_position > self.max_positions {
            return Err(format!(
                "{n} tokens, more than the model's {} positions",
                self.max_positions - self.first_position
            ));
        }
        let mut x = vec![0.0f32; n * h];
        for (t, &id) in ids.iter().enumerate() {
            let id = id as usize;
            if id >= self.vocab {
                return Err(format!("token id {id} outside the vocabulary"));
            }
            let row = &mut x[t * h..(t + 1) * h];
            let word = &self.words[id * h..(id + 1) * h];
            let p = t + self.first_position;
            let pos = &self.positions[p * h..(p + 1) * h];
            for (((o, w), p), tt) in row.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                *o = w + p + tt;
            }
        }
        layer_norm(&mut x, &self.embedding_norm, self.eps);

        let inter = self.layers.first().map_or(0, |l| l.up.weight.cols());
        let mut qkv = vec![0.0f32; n * 3 * h];
        let mut context = vec![0.0f32; n * h];
        let mut tmp = vec![0.0f32; n * h];
        let mut up = vec![0.0f32; n * inter];
        let mut scores = vec![0.0f32; n * n];
        let mut keys = vec![0.0f32; n * (h / self.heads)];
        let bias = self.relative.as_ref().map(|r| self.position_bias(r, n));
        for layer in &self.layers {
            linear(&x, n, &layer.qkv, &mut qkv, false, threads);
            attention(
                &qkv,
                n,
                h,
                self.heads,
                bias.as_deref(),
                &mut scores,
                &mut keys,
                &mut context,
            );
            tmp.copy_from_slice(&x);
            linear(&context, n, &layer.attention_out, &mut tmp, true, threads);
            layer_norm(&mut tmp, &layer.attention_norm, self.eps);
            std::mem::swap(&mut x, &mut tmp);

            linear(&x, n, &layer.up, &mut up, false, threads);
            match self.activation {
                Activation::Gelu => up.iter_mut().for_each(|v| *v = gelu(*v)),
                Activation::GeluTanh => up.iter_mut().for_each(|v| *v = gelu_tanh(*v)),
            }
            tmp.copy_from_slice(&x);
            linear(&up, n, &layer.down, &mut tmp, true, threads);
            layer_norm(&mut tmp, &layer.out_norm, self.eps);
            std::mem::swap(&mut x, &mut tmp);
        }
        Ok(x)
    }

    /// MPNet's attention bias for `n` tokens, `[heads × n × n]`: head `h`'s bias of query `i`
    /// and key `j` is the weight of the bucket of `j − i`, the same in every layer.
    fn position_bias(&self, relative: &[f32], n: usize) -> Vec<f32> {
        let buckets = relative.len() / self.heads;
        let mut bias = vec![0.0f32; self.heads * n * n];
        for i in 0..n {
            for j in 0..n {
                let b = relative_bucket(j as i64 - i as i64, buckets);
                for head in 0..self.heads {
                    bias[(head * n + i) * n + j] = relative[b * self.heads + head];
                }
            }
        }
        bias
    }
}

/// One forward pass as [`FeatureWork`](crate::cpu::FeatureWork), so it is compiled a second
/// time for AVX2 and FMA and run that way where the CPU has them.
struct Forward<'a> {
    bert: &'a Bert,
    ids: &'a [u32],
    threads: Threads,
}

impl crate::cpu::FeatureWork for Forward<'_> {
    type Output = Result<Vec<f32>, String>;

    #[inline(always)]
    fn run(self) -> Self::Output {
        self.bert.forward_any(self.ids, self.threads)
    }
}

#[cfg(test)]
mod tests {
    use super::relative_bucket;

    #[test]
    fn relative_buckets_are_exact_near_and_logarithmic_far_in_each_direction() {
        // A key before the query (j < i) falls in the first half, after it in the second.
        assert_eq!(relative_bucket(0, 32), 0);
        assert_eq!(relative_bucket(-1, 32), 1);
        assert_eq!(relative_bucket(1, 32), 17);
        assert_eq!(relative_bucket(-7, 32), 7);
        assert_eq!(relative_bucket(7, 32), 23);
        // From 8 on: 8 + ⌊ln(n/8) / ln(16) · 8⌋, at most 15.
        assert_eq!(relative_bucket(-8, 32), 8);
        assert_eq!(relative_bucket(-16, 32), 10);
        assert_eq!(relative_bucket(-127, 32), 15);
        assert_eq!(relative_bucket(-1000, 32), 15);
        assert_eq!(relative_bucket(1000, 32), 31);
    }
}
