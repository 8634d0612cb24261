//! Matrix products, the one place this crate runs unsafe code.
//!
//! - [`matmul`] goes through the `gemm` crate, which takes raw pointers and strides, so the
//!   views here check every extent against their slices before the call.
//! - [`matmul_packed`] multiplies by a weight matrix prepared once ([`Packed`]). On CPUs with
//!   AVX-512F the weights are cut into 32-column panels and our own kernel runs: 12 rows × 32
//!   columns of the output stay in 24 registers while a panel streams through, and no packing
//!   happens per call (gemm repacks its right-hand side every time, which dominates at the
//!   10–128 rows one text has). Elsewhere it falls back to [`matmul`]. The kernel only reads
//!   and writes inside slices whose lengths are asserted before it runs.
#![allow(unsafe_code)]

/// How many threads a product may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// The calling thread only (when the caller already runs one product per core).
    One,
    /// Rayon's pool (one long product, such as a single query).
    All,
}

/// A read-only `rows × cols` matrix view: element `(r, c)` is `data[r·rs + c·cs]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mat<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

/// A writable matrix view, laid out as [`Mat`].
#[derive(Debug)]
pub(crate) struct MatMut<'a> {
    data: &'a mut [f32],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

/// Panics unless every element of the view lies inside a slice of `len` elements.
fn check(len: usize, rows: usize, cols: usize, rs: usize, cs: usize) {
    if rows > 0 && cols > 0 {
        let last = (rows - 1) * rs + (cols - 1) * cs;
        assert!(
            last < len,
            "a {rows}×{cols} view (strides {rs}, {cs}) needs {} elements, the slice has {len}",
            last + 1
        );
    }
}

impl<'a> Mat<'a> {
    /// A contiguous row-major matrix.
    pub(crate) fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self::strided(data, rows, cols, cols, 1)
    }

    /// A matrix with row stride `rs` and column stride `cs`.
    pub(crate) fn strided(data: &'a [f32], rows: usize, cols: usize, rs: usize, cs: usize) -> Self {
        check(data.len(), rows, cols, rs, cs);
        Self {
            data,
            rows,
            cols,
            rs,
            cs,
        }
    }
}

impl<'a> MatMut<'a> {
    /// A contiguous row-major matrix.
    pub(crate) fn new(data: &'a mut [f32], rows: usize, cols: usize) -> Self {
        Self::strided(data, rows, cols, cols, 1)
    }

    /// A matrix with row stride `rs` and column stride `cs`.
    pub(crate) fn strided(
        data: &'a mut [f32],
        rows: usize,
        cols: usize,
        rs: usize,
        cs: usize,
    ) -> Self {
        check(data.len(), rows, cols, rs, cs);
        Self {
            data,
            rows,
            cols,
            rs,
            cs,
        }
    }
}

/// `dst = scale·lhs·rhs`, or `dst += scale·lhs·rhs` when `accumulate`.
///
/// # Panics
/// When the shapes do not agree.
pub(crate) fn matmul(
    dst: MatMut<'_>,
    lhs: Mat<'_>,
    rhs: Mat<'_>,
    scale: f32,
    accumulate: bool,
    threads: Threads,
) {
    assert!(
        dst.rows == lhs.rows && dst.cols == rhs.cols && lhs.cols == rhs.rows,
        "matmul shapes: {}×{} = {}×{} · {}×{}",
        dst.rows,
        dst.cols,
        lhs.rows,
        lhs.cols,
        rhs.rows,
        rhs.cols
    );
    if dst.rows == 0 || dst.cols == 0 {
        return;
    }
    let parallelism = match threads {
        Threads::One => gemm::Parallelism::None,
        Threads::All => gemm::Parallelism::Rayon(0),
    };
    // SAFETY: the three views were checked (`check`) to lie inside their slices for their
    // shapes and strides, the shapes agree (asserted above), `dst` is borrowed mutably so it
    // overlaps neither input, and gemm reads and writes nothing outside those extents.
    unsafe {
        gemm::gemm(
            dst.rows,
            dst.cols,
            lhs.cols,
            dst.data.as_mut_ptr(),
            dst.cs as isize,
            dst.rs as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.cs as isize,
            lhs.rs as isize,
            rhs.data.as_ptr(),
            rhs.cs as isize,
            rhs.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Columns per panel of a packed matrix: two AVX-512 registers of `f32`.
const PANEL: usize = 32;

/// Output rows the kernel keeps in registers: 2·12 accumulators, 2 panel loads and a broadcast
/// fit the 32 AVX-512 registers.
const ROWS: usize = 12;

/// A weight matrix `W` (`[k × n]`) prepared once for many products `x·W`.
///
/// With AVX-512F it is stored as ⌈n/32⌉ panels of 32 columns, each `k` rows of 32 consecutive
/// values (the last panel padded with zeros), the order the kernel reads it in; otherwise it
/// stays row-major for `gemm`.
pub(crate) struct Packed {
    k: usize,
    n: usize,
    data: Vec<f32>,
    panels: bool,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed")
            .field("k", &self.k)
            .field("n", &self.n)
            .field("panels", &self.panels)
            .finish_non_exhaustive()
    }
}

/// Whether this CPU runs the AVX-512 kernel.
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Packed {
    /// Prepares row-major `w` (`[k × n]`) for the best product this CPU has.
    pub(crate) fn new(w: Vec<f32>, k: usize, n: usize) -> Self {
        Self::with_panels(w, k, n, has_avx512())
    }

    /// Prepares `w` for the AVX-512 kernel when `panels` (which needs a CPU with AVX-512F),
    /// for `gemm` otherwise.
    ///
    /// # Panics
    /// When `w` is not `k·n` long, or `panels` is asked on a CPU without AVX-512F.
    pub(crate) fn with_panels(w: Vec<f32>, k: usize, n: usize, panels: bool) -> Self {
        assert_eq!(w.len(), k * n, "a {k}×{n} matrix has {} values", k * n);
        if !panels {
            return Self {
                k,
                n,
                data: w,
                panels,
            };
        }
        assert!(has_avx512(), "the packed kernel needs AVX-512F");
        let mut data = vec![0.0; n.div_ceil(PANEL) * k * PANEL];
        for (i, row) in w.chunks_exact(n.max(1)).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                data[(j / PANEL) * k * PANEL + i * PANEL + j % PANEL] = v;
            }
        }
        Self { k, n, data, panels }
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
    if !w.panels {
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
        Threads::All => rayon::current_num_threads().min(m.div_ceil(ROWS)).max(1),
    };
    if parts == 1 {
        packed_rows(out, x, m, w);
        return;
    }
    // Each thread takes whole rows, so the parts write disjoint slices.
    let per = m.div_ceil(parts);
    use rayon::prelude::*;
    out.par_chunks_mut(per * n)
        .zip(x.par_chunks(per * k))
        .for_each(|(out, x)| packed_rows(out, x, x.len() / k, w));
}

/// The AVX-512 product over all panels of `w` for the `m` rows of `x` (shapes checked by the
/// caller).
fn packed_rows(out: &mut [f32], x: &[f32], m: usize, w: &Packed) {
    #[cfg(target_arch = "x86_64")]
    {
        debug_assert!(w.panels && x.len() == m * w.k && out.len() == m * w.n);
        // SAFETY: `w.panels` is only set after `has_avx512()` returned true (asserted in
        // `Packed::with_panels`), so the CPU runs AVX-512F code.
        unsafe { avx512::rows(out, x, m, w) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (out, x, m, w);
        unreachable!("panels are only built on x86_64");
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps,
        _mm512_maskz_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
    };

    use super::{PANEL, Packed, ROWS};

    /// `out += x·W` for `m` rows, panel by panel, [`ROWS`] rows at a time.
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `w` must be packed in panels, `x` `m·k` long and `out`
    /// `m·n` long.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn rows(out: &mut [f32], x: &[f32], m: usize, w: &Packed) {
        let (k, n) = (w.k, w.n);
        assert!(
            x.len() == m * k && out.len() == m * n && w.data.len() >= n.div_ceil(PANEL) * k * PANEL
        );
        for (p, panel) in w.data.chunks_exact(k * PANEL).enumerate() {
            let col = p * PANEL;
            let width = (n - col).min(PANEL);
            let mut r = 0;
            while r < m {
                let rows = (m - r).min(ROWS);
                let a = &x[r * k..(r + rows) * k];
                // From (r, col) to the end of row r + rows − 1's panel columns.
                let c = &mut out[r * n + col..(r + rows - 1) * n + col + width];
                // SAFETY: AVX-512F as this function requires; `a` holds `rows` rows of `k`,
                // `panel` `k` rows of 32, and `c` reaches column `col + width` of its last row.
                unsafe {
                    match rows {
                        12 => kernel::<12>(a, panel, c, k, n, width),
                        11 => kernel::<11>(a, panel, c, k, n, width),
                        10 => kernel::<10>(a, panel, c, k, n, width),
                        9 => kernel::<9>(a, panel, c, k, n, width),
                        8 => kernel::<8>(a, panel, c, k, n, width),
                        7 => kernel::<7>(a, panel, c, k, n, width),
                        6 => kernel::<6>(a, panel, c, k, n, width),
                        5 => kernel::<5>(a, panel, c, k, n, width),
                        4 => kernel::<4>(a, panel, c, k, n, width),
                        3 => kernel::<3>(a, panel, c, k, n, width),
                        2 => kernel::<2>(a, panel, c, k, n, width),
                        _ => kernel::<1>(a, panel, c, k, n, width),
                    }
                }
                r += rows;
            }
        }
    }

    /// `c[r][0..width] += Σᵢ a[r][i] · panel[i][0..width]` for `R` rows; `c`'s rows are `n`
    /// apart.
    ///
    /// # Safety
    /// AVX-512F; `a.len() == R·k`, `panel.len() == 32·k`, `width ≤ 32` and
    /// `c.len() == (R − 1)·n + width`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn kernel<const R: usize>(
        a: &[f32],
        panel: &[f32],
        c: &mut [f32],
        k: usize,
        n: usize,
        width: usize,
    ) {
        debug_assert!(a.len() == R * k && panel.len() == PANEL * k && width <= PANEL);
        debug_assert!(c.len() == (R - 1) * n + width);
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        let (a, b) = (a.as_ptr(), panel.as_ptr());
        for i in 0..k {
            // SAFETY: i < k, so the panel row i (32 values) and a[r·k + i] lie in the slices.
            unsafe {
                let b0 = _mm512_loadu_ps(b.add(i * PANEL));
                let b1 = _mm512_loadu_ps(b.add(i * PANEL + 16));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let v = _mm512_set1_ps(*a.add(r * k + i));
                    acc[0] = _mm512_fmadd_ps(v, b0, acc[0]);
                    acc[1] = _mm512_fmadd_ps(v, b1, acc[1]);
                }
            }
        }
        let lo = width.min(16);
        let hi = width - lo;
        let (m0, m1) = (mask(lo), mask(hi));
        let c = c.as_mut_ptr();
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: row r's first `width` values end at r·n + width ≤ c.len(); the masks
            // keep loads and stores to those values.
            unsafe {
                let p = c.add(r * n);
                let v0: __m512 = _mm512_maskz_loadu_ps(m0, p);
                _mm512_mask_storeu_ps(p, m0, _mm512_add_ps(v0, acc[0]));
                let v1 = _mm512_maskz_loadu_ps(m1, p.add(16));
                _mm512_mask_storeu_ps(p.add(16), m1, _mm512_add_ps(v1, acc[1]));
            }
        }
    }

    /// The lanes `0..count` of a 16-lane mask (`count ≤ 16`).
    fn mask(count: usize) -> u16 {
        if count >= 16 {
            u16::MAX
        } else {
            (1u16 << count) - 1
        }
    }
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
        let layouts: &[bool] = if has_avx512() {
            &[false, true]
        } else {
            eprintln!("no AVX-512F here: only the gemm layout is checked");
            &[false]
        };
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
            for &panels in layouts {
                let packed = Packed::with_panels(w.clone(), k, n, panels);
                assert_eq!(packed.cols(), n);
                for threads in [Threads::One, Threads::All] {
                    let mut out = start.clone();
                    matmul_packed(&mut out, &x, m, &packed, threads);
                    for (i, (o, e)) in out.iter().zip(&want).enumerate() {
                        assert!(
                            (o - e).abs() <= 1e-4 * (1.0 + e.abs()),
                            "{m}×{k}·{k}×{n} panels={panels} {threads:?}: [{i}] {o} vs {e}"
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
