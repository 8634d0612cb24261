//! Matrix products, the one place this crate runs unsafe code.
//!
//! - [`matmul`] goes through the `gemm` crate, which takes raw pointers and strides, so the
//!   views here check every extent against their slices before the call.
//! - [`matmul_packed`] multiplies by a weight matrix prepared once ([`Packed`]). On x86-64 CPUs
//!   with AVX-512F (or AVX2 and FMA) the weights are cut into 32- (16-) column panels and our
//!   own kernel runs: 12 (6) rows × one panel of the output stay in registers while the panel
//!   streams through, and nothing is repacked per call (gemm repacks its right-hand side every
//!   time, which dominates at the 10–128 rows one text has). Elsewhere it falls back to
//!   [`matmul`]. The kernels only read and write inside slices whose lengths are asserted
//!   before they run.
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

/// Which product a [`Packed`] matrix is laid out for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Row-major, multiplied by `gemm` (any CPU).
    Gemm,
    /// 16-column panels for our AVX2/FMA kernel (6 rows × 16 columns in 12 registers).
    Avx2,
    /// 32-column panels for our AVX-512F kernel (12 rows × 32 columns in 24 registers).
    Avx512,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn best() -> Self {
        [Self::Avx512, Self::Avx2]
            .into_iter()
            .find(|k| k.available())
            .unwrap_or(Self::Gemm)
    }

    /// Whether this CPU runs the kernel.
    pub(crate) fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Self::Gemm => true,
                Self::Avx2 => has!("avx2") && has!("fma"),
                Self::Avx512 => has!("avx512f"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Self::Gemm
        }
    }

    /// Columns per panel (`None`: row-major).
    fn panel(self) -> Option<usize> {
        match self {
            Self::Gemm => None,
            Self::Avx2 => Some(16),
            Self::Avx512 => Some(32),
        }
    }

    /// Output rows one kernel call keeps in registers.
    fn rows(self) -> usize {
        match self {
            Self::Gemm | Self::Avx2 => 6,
            Self::Avx512 => 12,
        }
    }
}

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

/// Our kernel over all panels of `w` for the `m` rows of `x` (shapes checked by the caller).
fn packed_rows(out: &mut [f32], x: &[f32], m: usize, w: &Packed) {
    debug_assert!(x.len() == m * w.k && out.len() == m * w.n);
    #[cfg(target_arch = "x86_64")]
    match w.kernel {
        // SAFETY: `Packed::for_kernel` asserted that this CPU runs the kernel.
        Kernel::Avx512 => unsafe { x86::rows_avx512(out, x, m, w) },
        // SAFETY: as above.
        Kernel::Avx2 => unsafe { x86::rows_avx2(out, x, m, w) },
        Kernel::Gemm => unreachable!("gemm matrices are multiplied by gemm"),
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (out, x, m, w);
        unreachable!("panels are only built on x86_64");
    }
}

/// The kernels. Each keeps `R` output rows × one panel in registers while the panel streams
/// through once, then adds them to `out` with masked loads and stores (the last panel may be
/// narrower than its registers).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256, __m256i, __m512, _mm256_add_ps, _mm256_cmpgt_epi32, _mm256_fmadd_ps,
        _mm256_loadu_ps, _mm256_maskload_ps, _mm256_maskstore_ps, _mm256_set1_epi32,
        _mm256_set1_ps, _mm256_setr_epi32, _mm256_setzero_ps, _mm512_add_ps, _mm512_fmadd_ps,
        _mm512_loadu_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_set1_ps,
        _mm512_setzero_ps,
    };

    use super::Packed;

    /// Checks the shapes, then runs `kernel(rows, a, panel, c, width)` for every panel and
    /// every block of up to `block` rows: `a` holds the block's rows of `x`, `c` runs from
    /// the block's first output value in the panel's columns to its last row's
    /// `width`-th one.
    fn blocks(
        out: &mut [f32],
        x: &[f32],
        m: usize,
        w: &Packed,
        panel_width: usize,
        block: usize,
        mut kernel: impl FnMut(usize, &[f32], &[f32], &mut [f32], usize),
    ) {
        let (k, n) = (w.k, w.n);
        assert!(x.len() == m * k && out.len() == m * n);
        assert!(w.data.len() == n.div_ceil(panel_width) * k * panel_width);
        for (p, panel) in w.data.chunks_exact(k * panel_width).enumerate() {
            let col = p * panel_width;
            let width = (n - col).min(panel_width);
            let mut r = 0;
            while r < m {
                let rows = (m - r).min(block);
                let a = &x[r * k..(r + rows) * k];
                let c = &mut out[r * n + col..(r + rows - 1) * n + col + width];
                kernel(rows, a, panel, c, width);
                r += rows;
            }
        }
    }

    /// `out += x·W` with the AVX-512 kernel, 12 rows at a time.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and `w` be packed for it.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn rows_avx512(out: &mut [f32], x: &[f32], m: usize, w: &Packed) {
        let (k, n) = (w.k, w.n);
        blocks(out, x, m, w, 32, 12, |rows, a, b, c, width| {
            // SAFETY: AVX-512F as this function requires; `blocks` hands `rows` rows of `a`,
            // a `k × 32` panel and a `c` reaching column `width` of its last row.
            unsafe {
                match rows {
                    12 => k512::<12>(a, b, c, k, n, width),
                    11 => k512::<11>(a, b, c, k, n, width),
                    10 => k512::<10>(a, b, c, k, n, width),
                    9 => k512::<9>(a, b, c, k, n, width),
                    8 => k512::<8>(a, b, c, k, n, width),
                    7 => k512::<7>(a, b, c, k, n, width),
                    6 => k512::<6>(a, b, c, k, n, width),
                    5 => k512::<5>(a, b, c, k, n, width),
                    4 => k512::<4>(a, b, c, k, n, width),
                    3 => k512::<3>(a, b, c, k, n, width),
                    2 => k512::<2>(a, b, c, k, n, width),
                    _ => k512::<1>(a, b, c, k, n, width),
                }
            }
        });
    }

    /// `out += x·W` with the AVX2 kernel, 6 rows at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA and `w` be packed for them.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn rows_avx2(out: &mut [f32], x: &[f32], m: usize, w: &Packed) {
        let (k, n) = (w.k, w.n);
        blocks(out, x, m, w, 16, 6, |rows, a, b, c, width| {
            // SAFETY: AVX2 and FMA as this function requires; `blocks` hands `rows` rows of
            // `a`, a `k × 16` panel and a `c` reaching column `width` of its last row.
            unsafe {
                match rows {
                    6 => k256::<6>(a, b, c, k, n, width),
                    5 => k256::<5>(a, b, c, k, n, width),
                    4 => k256::<4>(a, b, c, k, n, width),
                    3 => k256::<3>(a, b, c, k, n, width),
                    2 => k256::<2>(a, b, c, k, n, width),
                    _ => k256::<1>(a, b, c, k, n, width),
                }
            }
        });
    }

    /// Defines a kernel `$name::<R>(a, panel, c, k, n, width)`:
    /// `c[r][0..width] += Σᵢ a[r][i] · panel[i][0..width]` for `R` rows, `c`'s rows `n` apart,
    /// on panels of two `$lanes`-lane registers; `$add_to(p, width, v0, v1)` adds the two
    /// registers to the first `width` values at `p`.
    ///
    /// Safety of the kernel: the CPU has `$feature`; `a.len() == R·k`,
    /// `panel.len() == 2·$lanes·k`, `width ≤ 2·$lanes` and `c.len() == (R − 1)·n + width`.
    macro_rules! panel_kernel {
        ($name:ident, $feature:literal, $lanes:literal, $zero:ident, $load:ident, $splat:ident,
         $fmadd:ident, $add_to:ident) => {
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn $name<const R: usize>(
                a: &[f32],
                panel: &[f32],
                c: &mut [f32],
                k: usize,
                n: usize,
                width: usize,
            ) {
                const P: usize = 2 * $lanes;
                debug_assert!(a.len() == R * k && panel.len() == P * k && width <= P);
                debug_assert!(c.len() == (R - 1) * n + width);
                let mut acc = [[$zero(); 2]; R];
                let (a, b) = (a.as_ptr(), panel.as_ptr());
                for i in 0..k {
                    // SAFETY: i < k, so panel row i (P values) and a[r·k + i] lie in the
                    // slices.
                    unsafe {
                        let b0 = $load(b.add(i * P));
                        let b1 = $load(b.add(i * P + $lanes));
                        for (r, acc) in acc.iter_mut().enumerate() {
                            let v = $splat(*a.add(r * k + i));
                            acc[0] = $fmadd(v, b0, acc[0]);
                            acc[1] = $fmadd(v, b1, acc[1]);
                        }
                    }
                }
                let c = c.as_mut_ptr();
                for (r, acc) in acc.iter().enumerate() {
                    // SAFETY: row r's first `width` values end at r·n + width ≤ c.len(), and
                    // `$add_to` touches only those.
                    unsafe { $add_to(c.add(r * n), width, acc[0], acc[1]) }
                }
            }
        };
    }

    panel_kernel!(
        k512,
        "avx512f",
        16,
        _mm512_setzero_ps,
        _mm512_loadu_ps,
        _mm512_set1_ps,
        _mm512_fmadd_ps,
        add_to_512
    );
    panel_kernel!(
        k256,
        "avx2,fma",
        8,
        _mm256_setzero_ps,
        _mm256_loadu_ps,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        add_to_256
    );

    /// Adds `v0` and `v1` (32 lanes) to the first `width` values at `p`, through masks.
    ///
    /// # Safety
    /// AVX-512F; `p` valid for reads and writes of `width` values.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn add_to_512(p: *mut f32, width: usize, v0: __m512, v1: __m512) {
        let lo = width.min(16);
        let (m0, m1) = (mask16(lo), mask16(width - lo));
        // SAFETY: the masks keep every access to the first `width` values.
        unsafe {
            let c0 = _mm512_maskz_loadu_ps(m0, p);
            _mm512_mask_storeu_ps(p, m0, _mm512_add_ps(c0, v0));
            let c1 = _mm512_maskz_loadu_ps(m1, p.add(16));
            _mm512_mask_storeu_ps(p.add(16), m1, _mm512_add_ps(c1, v1));
        }
    }

    /// Adds `v0` and `v1` (16 lanes) to the first `width` values at `p`, through masks.
    ///
    /// # Safety
    /// AVX2; `p` valid for reads and writes of `width` values.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn add_to_256(p: *mut f32, width: usize, v0: __m256, v1: __m256) {
        let lo = width.min(8);
        let (m0, m1) = (mask8(lo), mask8(width - lo));
        // SAFETY: the masks keep every access to the first `width` values.
        unsafe {
            let c0 = _mm256_maskload_ps(p, m0);
            _mm256_maskstore_ps(p, m0, _mm256_add_ps(c0, v0));
            let c1 = _mm256_maskload_ps(p.add(8), m1);
            _mm256_maskstore_ps(p.add(8), m1, _mm256_add_ps(c1, v1));
        }
    }

    /// The lanes `0..count` of a 16-lane mask (`count ≤ 16`).
    fn mask16(count: usize) -> u16 {
        if count >= 16 {
            u16::MAX
        } else {
            (1u16 << count) - 1
        }
    }

    /// The lanes `0..count` of an 8-lane mask (`count ≤ 8`): all ones where the lane index is
    /// below `count`.
    #[target_feature(enable = "avx2")]
    fn mask8(count: usize) -> __m256i {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(count as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
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
