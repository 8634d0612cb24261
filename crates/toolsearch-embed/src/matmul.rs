//! Matrix products over checked views (the unsafe code they end in is in `cpu`).
//!
//! - [`matmul`] goes through the `gemm` crate, which takes raw pointers and strides, so the
//!   views here check every extent against their slices when they are made.
//! - [`matmul_packed`] multiplies by a weight matrix prepared once ([`Packed`]). On x86-64 CPUs
//!   with AVX-512F (or AVX2 and FMA) the weights are cut into 32- (16-) column panels and our
//!   own kernel runs: 12 (6) rows × one panel of the output stay in registers while the panel
//!   streams through, and nothing is repacked per call (gemm repacks its right-hand side every
//!   time, which dominates at the 10–128 rows one text has). Elsewhere it falls back to
//!   [`matmul`]. The kernels only read and write inside slices whose lengths are asserted
//!   before they run.

use crate::cpu::{self, Kernel};
pub(crate) use crate::cpu::{Mat, MatMut, Threads};

/// `dst = scale·lhs·rhs`, or `dst += scale·lhs·rhs` when `accumulate` (by `gemm`).
pub(crate) use crate::cpu::gemm as matmul;

/// A weight matrix `W` (`[k × n]`) prepared once for many products `x·W`.
///
/// For our kernels it is stored as ⌈n/p⌉ panels of `p` columns (32 for AVX-512, 16 for AVX2),
/// each `k` rows of `p` consecutive values (the last panel padded with zeros), the order the
/// kernel reads it in; for `gemm` it stays row-major.
pub(crate) struct Packed {
    k: usize,
    n: usize,
    data: Vec<f32>,
    kernel: Kernel,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed")
            .field("k", &self.k)
            .field("n", &self.n)
            .field("kernel", &self.kernel)
            .finish_non_exhaustive()
    }
}

impl Packed {
    /// Prepares row-major `w` (`[k × n]`) for the best kernel this CPU has.
    pub(crate) fn new(w: Vec<f32>, k: usize, n: usize) -> Self {
        Self::for_kernel(w, k, n, Kernel::best())
    }

    /// Prepares row-major `w` (`[k × n]`) for `kernel`.
    ///
    /// # Panics
    /// When `w` is not `k·n` long, or this CPU cannot run `kernel`.
    pub(crate) fn for_kernel(w: Vec<f32>, k: usize, n: usize, kernel: Kernel) -> Self {
        assert_eq!(w.len(), k * n, "a {k}×{n} matrix has {} values", k * n);
        assert!(
            kernel.available(),
            "this CPU cannot run the {kernel:?} kernel"
        );
        let Some(p) = kernel.panel() else {
            return Self {
                k,
                n,
                data: w,
                kernel,
            };
        };
        let mut data = vec![0.0; n.div_ceil(p) * k * p];
        for (i, row) in w.chunks_exact(n.max(1)).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                data[(j / p) * k * p + i * p + j % p] = v;
            }
        }
        Self { k, n, data, kernel }
    }

    /// Columns of `W` (the outputs of `x·W`).
    pub(crate) fn cols(&self) -> usize {
        self.n
    }
}

/// `out += x·W` for `m` rows: `x` is `[m × k]` and `out` `[m × n]`, both row-major.
///
/// # Panics
/// When `x` or `out` does not have `m` rows of the right width.
pub(crate) fn matmul_packed(out: &mut [f32], x: &[f32], m: usize, w: &Packed, threads: Threads) {
    let (k, n) = (w.k, w.n);
    assert_eq!(x.len(), m * k, "x must be {m}×{k}");
    assert_eq!(out.len(), m * n, "out must be {m}×{n}");
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    if w.kernel == Kernel::Gemm {
        matmul(
            MatMut::new(out, m, n),
            Mat::new(x, m, k),
            Mat::new(&w.data, k, n),
            1.0,
            true,
            threads,
        );
        return;
    }
    let parts = match threads {
        Threads::One => 1,
        Threads::All => rayon::current_num_threads()
            .min(m.div_ceil(w.kernel.rows()))
            .max(1),
    };
    if parts == 1 {
        cpu::packed_rows(out, x, m, &w.data, w.k, w.n, w.kernel);
        return;
    }
    // Each thread takes whole rows, so the parts write disjoint slices.
    let per = m.div_ceil(parts);
    use rayon::prelude::*;
    out.par_chunks_mut(per * n)
        .zip(x.par_chunks(per * k))
        .for_each(|(out, x)| cpu::packed_rows(out, x, x.len() / k, &w.data, k, n, w.kernel));
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_match_the_naive_loop_for_strided_views() {
        // lhs 2×3, rhs 3×2 given transposed (column stride 3).
        let lhs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let rhs_t = [7.0, 9.0, 11.0, 8.0, 10.0, 12.0];
        let mut dst = [1.0; 4];
        matmul(
            MatMut::new(&mut dst, 2, 2),
            Mat::new(&lhs, 2, 3),
            Mat::strided(&rhs_t, 3, 2, 1, 3),
            2.0,
            true,
            Threads::One,
        );
        // [[58, 64], [139, 154]] · 2 + 1
        assert_eq!(dst, [117.0, 129.0, 279.0, 309.0]);
    }

    fn naive(x: &[f32], w: &[f32], m: usize, k: usize, n: usize, out: &mut [f32]) {
        for r in 0..m {
            for j in 0..n {
                out[r * n + j] += (0..k).map(|i| x[r * k + i] * w[i * n + j]).sum::<f32>();
            }
        }
    }

    /// Deterministic values in −1..1.
    fn values(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn packed_products_match_the_naive_loop_at_every_edge() {
        let kernels: Vec<Kernel> = [Kernel::Gemm, Kernel::Avx2, Kernel::Avx512]
            .into_iter()
            .filter(|k| k.available())
            .collect();
        eprintln!("kernels this CPU runs: {kernels:?}");
        // Rows around the 12-row block, columns around the 32-column panel, odd depths.
        for &(m, k, n) in &[
            (1, 1, 1),
            (1, 384, 1536),
            (5, 7, 33),
            (12, 16, 32),
            (13, 31, 63),
            (25, 64, 65),
            (60, 384, 1152),
            (0, 4, 4),
            (3, 0, 5),
        ] {
            let x = values(m * k, 1);
            let w = values(k * n, 2);
            let start = values(m * n, 3);
            let mut want = start.clone();
            naive(&x, &w, m, k, n, &mut want);
            for &kernel in &kernels {
                let packed = Packed::for_kernel(w.clone(), k, n, kernel);
                assert_eq!(packed.cols(), n);
                for threads in [Threads::One, Threads::All] {
                    let mut out = start.clone();
                    matmul_packed(&mut out, &x, m, &packed, threads);
                    for (i, (o, e)) in out.iter().zip(&want).enumerate() {
                        assert!(
                            (o - e).abs() <= 1e-4 * (1.0 + e.abs()),
                            "{m}×{k}·{k}×{n} {kernel:?} {threads:?}: [{i}] {o} vs {e}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "out must be")]
    fn a_packed_product_with_a_short_output_is_refused() {
        let w = Packed::new(vec![1.0; 6], 2, 3);
        let mut out = [0.0; 5];
        matmul_packed(&mut out, &[1.0; 4], 2, &w, Threads::One);
    }

    #[test]
    #[should_panic(expected = "needs")]
    fn a_view_past_its_slice_is_refused() {
        let data = [0.0; 5];
        let _ = Mat::new(&data, 2, 3);
    }
}
