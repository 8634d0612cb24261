//! CPU-specific code, and the one module of this crate with `unsafe`: the call into `gemm`
//! (raw pointers and strides over views whose extents were checked), our AVX-512 and AVX2/FMA
//! panel kernels, and running a piece of work compiled for AVX2 and FMA after checking that
//! the CPU has them. Everything here is exposed through safe functions that check what the
//! unsafe code relies on.
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

/// `dst = scale·lhs·rhs`, or `dst += scale·lhs·rhs` when `accumulate`, by `gemm`.
///
/// # Panics
/// When the shapes do not agree.
pub(crate) fn gemm(
    dst: MatMut<'_>,
    lhs: Mat<'_>,
    rhs: Mat<'_>,
    scale: f32,
    accumulate: bool,
    threads: Threads,
) {
    let (dst, m, n, dst_rs, dst_cs) = (dst.data, dst.rows, dst.cols, dst.rs, dst.cs);
    let (lhs, lhs_rows, k, lhs_rs, lhs_cs) = (lhs.data, lhs.rows, lhs.cols, lhs.rs, lhs.cs);
    let (rhs, rhs_rows, rhs_cols, rhs_rs, rhs_cs) = (rhs.data, rhs.rows, rhs.cols, rhs.rs, rhs.cs);
    assert!(
        m == lhs_rows && n == rhs_cols && k == rhs_rows,
        "matmul shapes: {m}×{n} = {lhs_rows}×{k} · {rhs_rows}×{rhs_cols}"
    );
    if m == 0 || n == 0 {
        return;
    }
    let parallelism = match threads {
        Threads::One => gemm::Parallelism::None,
        Threads::All => gemm::Parallelism::Rayon(0),
    };
    // SAFETY: the three views were checked (`check`, when they were made) to lie inside
    // their slices for their shapes and strides, the shapes agree (asserted above), `dst` is
    // borrowed mutably so it overlaps neither input, and gemm reads and writes nothing outside
    // those extents.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_cs as isize,
            dst_rs as isize,
            accumulate,
            lhs.as_ptr(),
            lhs_cs as isize,
            lhs_rs as isize,
            rhs.as_ptr(),
            rhs_cs as isize,
            rhs_rs as isize,
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
    pub(crate) fn panel(self) -> Option<usize> {
        match self {
            Self::Gemm => None,
            Self::Avx2 => Some(16),
            Self::Avx512 => Some(32),
        }
    }

    /// Output rows one kernel call keeps in registers.
    pub(crate) fn rows(self) -> usize {
        match self {
            Self::Gemm | Self::Avx2 => 6,
            Self::Avx512 => 12,
        }
    }
}
/// Work that is compiled a second time for AVX2 and FMA (see [`run_best`]). Its `run` must be
/// `#[inline(always)]`, and so must what it calls, for that second copy to use the features.
pub(crate) trait FeatureWork {
    /// What the work returns.
    type Output;
    /// Does the work.
    fn run(self) -> Self::Output;
}

/// Runs `work` compiled for AVX2 and FMA when the CPU has them (checked per call), else as
/// compiled for the baseline.
pub(crate) fn run_best<W: FeatureWork>(work: W) -> W::Output {
    #[cfg(target_arch = "x86_64")]
    if Kernel::Avx2.available() {
        // SAFETY: the CPU has AVX2 and FMA, checked just above.
        return unsafe { run_avx2(work) };
    }
    work.run()
}

/// [`FeatureWork::run`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn run_avx2<W: FeatureWork>(work: W) -> W::Output {
    work.run()
}

/// Our kernel over all panels of `w` for the `m` rows of `x` (shapes checked by the caller).
pub(crate) fn packed_rows(
    out: &mut [f32],
    x: &[f32],
    m: usize,
    panels: &[f32],
    k: usize,
    n: usize,
    kernel: Kernel,
) {
    assert!(x.len() == m * k && out.len() == m * n);
    assert!(
        kernel.available(),
        "this CPU cannot run the {kernel:?} kernel"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let w = x86::Panels { data: panels, k, n };
        match kernel {
            // SAFETY: this CPU runs the kernel (asserted above).
            Kernel::Avx512 => unsafe { x86::rows_avx512(out, x, m, &w) },
            // SAFETY: as above.
            Kernel::Avx2 => unsafe { x86::rows_avx2(out, x, m, &w) },
            Kernel::Gemm => unreachable!("gemm matrices are multiplied by gemm"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (out, x, m, panels, k, n);
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

    /// A `k × n` matrix laid out as panels of consecutive columns (see `matmul::Packed`).
    pub(super) struct Panels<'a> {
        pub(super) data: &'a [f32],
        pub(super) k: usize,
        pub(super) n: usize,
    }

    /// Checks the shapes, then runs `kernel(rows, a, panel, c, width)` for every panel and
    /// every block of up to `block` rows: `a` holds the block's rows of `x`, `c` runs from
    /// the block's first output value in the panel's columns to its last row's
    /// `width`-th one.
    fn blocks(
        out: &mut [f32],
        x: &[f32],
        m: usize,
        w: &Panels<'_>,
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
    pub(super) unsafe fn rows_avx512(out: &mut [f32], x: &[f32], m: usize, w: &Panels<'_>) {
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
    pub(super) unsafe fn rows_avx2(out: &mut [f32], x: &[f32], m: usize, w: &Panels<'_>) {
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
