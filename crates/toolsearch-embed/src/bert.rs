//! A BERT encoder's forward pass in plain Rust: matrix products by `matmul` (our AVX-512 or
//! AVX2 kernel over weights packed at load, else the `gemm` crate), everything else
//! (embeddings, layer norm, softmax, GELU, pooling) fused loops over row-major buffers,
//! compiled for AVX2 where the CPU has it.
//!
//! It replaces candle's `BertModel` because it measured faster on the same weights (see
//! `BENCHMARKS.md`, `cargo bench -p toolsearch-peers --bench encoder`): one sequence is encoded
//! at a time, so there is no padding and no attention mask; Q, K and V are one product; the
//! weights are transposed once at load. The outputs match candle's to float rounding
//! (`tests/model.rs` holds vectors candle produced).

use std::collections::HashMap;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::LoadError;
use crate::matmul::{Packed, Threads, matmul_packed};

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
}

/// Reads tensors by name, trying the `bert.` prefix some checkpoints use.
struct Weights<'a> {
    tensors: SafeTensors<'a>,
    names: HashMap<String, String>,
}

impl<'a> Weights<'a> {
    fn new(bytes: &'a [u8]) -> Result<Self, LoadError> {
        let tensors = SafeTensors::deserialize(bytes)
            .map_err(|e| LoadError::new(format!("not a safetensors file: {e}")))?;
        let names = tensors
            .names()
            .into_iter()
            .map(|n| {
                (
                    n.strip_prefix("bert.").unwrap_or(n).to_owned(),
                    n.to_owned(),
                )
            })
            .collect();
        Ok(Self { tensors, names })
    }

    /// The tensor `name` (or its old `gamma`/`beta` spelling) as f32, checked against `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, LoadError> {
        let old = name
            .replace("LayerNorm.weight", "LayerNorm.gamma")
            .replace("LayerNorm.bias", "LayerNorm.beta");
        let full = self
            .names
            .get(name)
            .or_else(|| self.names.get(&old))
            .ok_or_else(|| LoadError::new(format!("no tensor {name}")))?;
        let view = self
            .tensors
            .tensor(full)
            .map_err(|e| LoadError::new(format!("{full}: {e}")))?;
        if view.shape() != shape {
            return Err(LoadError::new(format!(
                "{full}: shape {:?}, expected {shape:?}",
                view.shape()
            )));
        }
        let data = view.data();
        let values = match view.dtype() {
            Dtype::F32 => data
                .as_chunks::<4>()
                .0
                .iter()
                .map(|b| f32::from_le_bytes(*b))
                .collect(),
            Dtype::BF16 => data
                .as_chunks::<2>()
                .0
                .iter()
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes(*b)) << 16))
                .collect(),
            other => {
                return Err(LoadError::new(format!(
                    "{full}: {other:?} weights are not supported (f32 or bf16)"
                )));
            }
        };
        Ok(values)
    }

    fn norm(&self, prefix: &str, n: usize) -> Result<Norm, LoadError> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.LayerNorm.weight"), &[n])?,
            bias: self.get(&format!("{prefix}.LayerNorm.bias"), &[n])?,
        })
    }

    /// Linear layers `names` (PyTorch `[out × in]` each) stacked along their outputs and
    /// transposed to `[in × Σout]`.
    fn linear(&self, names: &[&str], inputs: usize, outputs: usize) -> Result<Linear, LoadError> {
        let total = outputs * names.len();
        let mut weight = vec![0.0; inputs * total];
        let mut bias = Vec::with_capacity(total);
        for (part, name) in names.iter().enumerate() {
            let w = self.get(&format!("{name}.weight"), &[outputs, inputs])?;
            for (o, row) in w.chunks_exact(inputs).enumerate() {
                for (i, &v) in row.iter().enumerate() {
                    weight[i * total + part * outputs + o] = v;
                }
            }
            bias.extend(self.get(&format!("{name}.bias"), &[outputs])?);
        }
        Ok(Linear {
            weight: Packed::new(weight, inputs, total),
            bias,
        })
    }
}

impl Bert {
    /// Builds the encoder `config` describes from safetensors `bytes`.
    pub(crate) fn load(config: &BertConfig, bytes: &[u8]) -> Result<Self, LoadError> {
        if let Some(t) = config.model_type.as_deref()
            && t != "bert"
        {
            return Err(LoadError::new(format!(
                "model_type {t:?}: only BERT models are supported"
            )));
        }
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
        let token_types = w
            .names
            .get("embeddings.token_type_embeddings.weight")
            .and_then(|n| w.tensors.tensor(n).ok())
            .map_or(1, |t| t.shape().first().copied().unwrap_or(1));
        let mut token_type = w.get("embeddings.token_type_embeddings.weight", &[token_types, h])?;
        token_type.truncate(h);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let i = config.intermediate_size;
            layers.push(Layer {
                qkv: w.linear(
                    &[
                        &format!("{p}.attention.self.query"),
                        &format!("{p}.attention.self.key"),
                        &format!("{p}.attention.self.value"),
                    ],
                    h,
                    h,
                )?,
                attention_out: w.linear(&[&format!("{p}.attention.output.dense")], h, h)?,
                attention_norm: w.norm(&format!("{p}.attention.output"), h)?,
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
        })
    }

    /// The last hidden layer for the token `ids` of one sequence, `[ids.len() × hidden]`
    /// row-major. `threads` splits the matrix products.
    ///
    /// On x86-64 CPUs with AVX2 and FMA the pass is compiled a second time for them, so the
    /// loops outside the matrix products (attention, softmax, GELU, layer norms) run 8 lanes
    /// wide instead of SSE2's 4; the CPU is checked once per call.
    pub(crate) fn forward(&self, ids: &[u32], threads: Threads) -> Result<Vec<f32>, String> {
        #[cfg(target_arch = "x86_64")]
        if crate::matmul::Kernel::Avx2.available() {
            // SAFETY: the CPU has AVX2 and FMA (what the AVX2 kernel needs), checked just above.
            #[allow(unsafe_code)]
            return unsafe { self.forward_avx2(ids, threads) };
        }
        self.forward_any(ids, threads)
    }

    /// [`forward_any`](Self::forward_any) compiled for AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn forward_avx2(&self, ids: &[u32], threads: Threads) -> Result<Vec<f32>, String> {
        self.forward_any(ids, threads)
    }

    /// The pass itself; it and the loops it calls are inlined into each caller, so they are
    /// compiled for that caller's CPU features.
    #[inline(always)]
    fn forward_any(&self, ids: &[u32], threads: Threads) -> Result<Vec<f32>, String> {
        let n = ids.len();
        let h = self.hidden;
        if n > self.max_positions {
            return Err(format!(
                "{n} tokens, more than the model's {} positions",
                self.max_positions
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
            let pos = &self.positions[t * h..(t + 1) * h];
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
        for layer in &self.layers {
            linear(&x, n, &layer.qkv, &mut qkv, false, threads);
            attention(&qkv, n, h, self.heads, &mut scores, &mut keys, &mut context);
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
}

/// Multi-head self-attention over the `[n × 3h]` rows of Q, K and V (no mask: one sequence,
/// unpadded): `context` gets each head's `softmax(Q_h K_hᵀ / √d) V_h` side by side. Plain loops:
/// per head the products are tiny (`d` is 32 for MiniLM), where a GEMM call costs more than it
/// computes. Each head's keys are first copied out transposed (`keys`, `[d × n]`), so that
/// both inner loops run along contiguous rows and vectorise; every score still sums its `d`
/// products in order.
#[inline(always)]
fn attention(
    qkv: &[f32],
    n: usize,
    h: usize,
    heads: usize,
    scores: &mut [f32],
    keys: &mut [f32],
    context: &mut [f32],
) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    context.fill(0.0);
    for head in 0..heads {
        let (q0, k0, v0) = (head * d, h + head * d, 2 * h + head * d);
        for (j, row) in qkv.chunks_exact(3 * h).enumerate() {
            for (c, &k) in row[k0..k0 + d].iter().enumerate() {
                keys[c * n + j] = k;
            }
        }
        for i in 0..n {
            let q = &qkv[i * 3 * h + q0..][..d];
            let row = &mut scores[i * n..(i + 1) * n];
            row.fill(0.0);
            for (&qc, kc) in q.iter().zip(keys.chunks_exact(n)) {
                row.iter_mut().zip(kc).for_each(|(s, k)| *s += qc * k);
            }
            row.iter_mut().for_each(|s| *s *= scale);
            softmax(row);
            let out = &mut context[i * h + q0..][..d];
            for (j, &p) in row.iter().enumerate() {
                let v = &qkv[j * 3 * h + v0..][..d];
                out.iter_mut().zip(v).for_each(|(o, v)| *o += p * v);
            }
        }
    }
}

/// `out = x·W + b` for `n` rows, or `out += x·W + b` when `accumulate` (a residual).
#[inline(always)]
fn linear(x: &[f32], n: usize, l: &Linear, out: &mut [f32], accumulate: bool, threads: Threads) {
    for row in out.chunks_exact_mut(l.weight.cols()) {
        if accumulate {
            row.iter_mut().zip(&l.bias).for_each(|(o, b)| *o += b);
        } else {
            row.copy_from_slice(&l.bias);
        }
    }
    matmul_packed(out, x, n, &l.weight, threads);
}

#[inline(always)]
fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let h = norm.weight.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * inv * w + b;
        }
    }
}

#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    row.iter_mut().for_each(|v| *v = exp_neg(*v - max));
    // Eight running sums, so the reduction vectorises too.
    let mut lanes = [0.0f32; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        lanes.iter_mut().zip(c).for_each(|(l, v)| *l += v);
    }
    let sum = lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>();
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

/// `eˣ` for `x ≤ 0` (softmax after subtracting the row maximum), branch-free so the loop
/// vectorises (`f32::exp` is a libm call per value): `x = k·ln 2 + r` with `|r| ≤ ln 2 / 2`,
/// `eʳ` by Cephes' `expf` polynomial, `2ᵏ` through the exponent bits. Within 2 ulp of
/// `f32::exp`; below `e⁻⁸⁷` (under 2⁻¹²⁵) it returns `e⁻⁸⁷`, which a softmax sum cannot tell
/// from 0.
#[inline(always)]
fn exp_neg(x: f32) -> f32 {
    // 1.5·2²³: adding and subtracting it rounds to the nearest integer without a libm call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 0.0);
    let k = (x * std::f32::consts::LOG2_E + ROUND) - ROUND;
    // ln 2 in two parts, so that x − k·ln 2 loses nothing.
    let r = x - k * 0.693_359_4 - k * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_65;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    e * f32::from_bits(((k as i32 + 127) as u32) << 23)
}

#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // √(2/π)
    0.5 * x * (1.0 + (C * (x + 0.044_715 * x * x * x)).tanh())
}

/// The error function in single precision: a rational approximation on [-4, 4] (beyond it
/// erf is ±1 in f32), branch-free so the GELU loop vectorises (plain `*` and `+`: `mul_add`
/// is a libm call on CPUs not known at compile time to have FMA). Error below 1e-6.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906_3e-4;
    p = p * x2 + -2.954_6e-3;
    p = p * x2 + -1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329e-3;
    q = q * x2 + -1.426_474e-2;
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_reference_values() {
        // math.erf in CPython (double precision).
        let cases: [(f32, f64); 9] = [
            (0.0, 0.0),
            (0.1, 0.112_462_916),
            (0.5, 0.520_499_878),
            (1.0, 0.842_700_793),
            (2.0, 0.995_322_265),
            (-0.3, -0.328_626_759),
            (3.5, 0.999_999_257),
            (9.0, 1.0),
            (-9.0, -1.0),
        ];
        for (x, want) in cases {
            let got = f64::from(erf(x));
            assert!((got - want).abs() < 1e-6, "erf({x}) = {got}, want {want}");
        }
    }

    #[test]
    fn exp_neg_matches_the_libm_exp() {
        let mut x = 0.0f32;
        while x > -87.0 {
            let (got, want) = (exp_neg(x), x.exp());
            assert!(
                (got - want).abs() <= 2.5e-7 * want,
                "e^{x}: {got} vs {want}"
            );
            x -= 0.013_7;
        }
        assert_eq!(exp_neg(0.0), 1.0);
        assert!(exp_neg(-1000.0) < 1e-37 && exp_neg(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        let mut row = [1.0, 3.0, 2.0, -50.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row[1] > row[2] && row[2] > row[0] && row[3] < 1e-20);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let norm = Norm {
            weight: vec![2.0; 4],
            bias: vec![1.0; 4],
        };
        let mut x = [1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut x, &norm, 0.0);
        // (x - 2.5) / √1.25 · 2 + 1
        let want = [-1.683_281_6, 0.105_572_81, 1.894_427_2, 3.683_281_6];
        for (g, w) in x.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{x:?}");
        }
    }
}
