//! The encoder's operations outside the weight products' kernels: attention over one
//! sequence, linear layers, layer norm, softmax, GELU. Each is `#[inline(always)]`, so it is
//! compiled into both copies of the forward pass (baseline and AVX2).

use super::{Linear, Norm};
use crate::matmul::{Threads, matmul_packed};

/// Multi-head self-attention over the `[n × 3h]` rows of Q, K and V (no mask: one sequence,
/// unpadded): `context` gets each head's `softmax(Q_h K_hᵀ / √d + B_h) V_h` side by side, `B` the
/// `[heads × n × n]` position `bias` when there is one (MPNet's), else zero. Plain loops:
/// per head the products are tiny (`d` is 32 for MiniLM), where a GEMM call costs more than it
/// computes. Each head's keys are first copied out transposed (`keys`, `[d × n]`), so that
/// both inner loops run along contiguous rows and vectorise; every score still sums its `d`
/// products in order.
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the pass's buffers, passed in so they are allocated once per sequence"
)]
pub(super) fn attention(
    qkv: &[f32],
    n: usize,
    h: usize,
    heads: usize,
    bias: Option<&[f32]>,
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
            if let Some(bias) = bias {
                let b = &bias[(head * n + i) * n..][..n];
                row.iter_mut().zip(b).for_each(|(s, b)| *s += b);
            }
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
pub(super) fn linear(
    x: &[f32],
    n: usize,
    l: &Linear,
    out: &mut [f32],
    accumulate: bool,
    threads: Threads,
) {
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
pub(super) fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
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
pub(super) fn softmax(row: &mut [f32]) {
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
pub(super) fn exp_neg(x: f32) -> f32 {
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
pub(super) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
pub(super) fn gelu_tanh(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // √(2/π)
    0.5 * x * (1.0 + (C * (x + 0.044_715 * x * x * x)).tanh())
}

/// The error function in single precision: a rational approximation on [-4, 4] (beyond it
/// erf is ±1 in f32), branch-free so the GELU loop vectorises (plain `*` and `+`: `mul_add`
/// is a libm call on CPUs not known at compile time to have FMA). Error below 1e-6.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
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
