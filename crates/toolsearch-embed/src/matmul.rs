//! Matrix products through the `gemm` crate, the one place this crate runs unsafe code:
//! `gemm` takes raw pointers and strides, so the views here check every extent against their
//! slices before the call.
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

    #[test]
    #[should_panic(expected = "needs")]
    fn a_view_past_its_slice_is_refused() {
        let data = [0.0; 5];
        let _ = Mat::new(&data, 2, 3);
    }
}
