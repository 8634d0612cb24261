//! The one check of a config number against its range: the problem is at the key and names the
//! value and the range (`search.bm25.k1: 12 is outside 0..=10`). A value that is not a number
//! (NaN) is outside every range.

use std::fmt::Display;
use std::ops::RangeInclusive;

use crate::problem::{Problem, Problems};

/// `None` when `value` lies in `range`; else the problem at `key`.
pub fn outside<T: PartialOrd + Display>(
    key: &str,
    value: T,
    range: &RangeInclusive<T>,
) -> Option<Problem> {
    (!range.contains(&value)).then(|| {
        Problem::new(
            key,
            format!("{value} is outside {}..={}", range.start(), range.end()),
        )
    })
}

/// `value`, when given, as a `u64` when it lies in `range` (ranges start at 0 or above); else
/// its problem goes to `problems` and the answer is `None`.
pub fn within(
    key: &str,
    value: Option<i64>,
    range: RangeInclusive<i64>,
    problems: &mut Problems,
) -> Option<u64> {
    let n = value?;
    match outside(key, n, &range) {
        None => u64::try_from(n).ok(),
        Some(problem) => {
            problems.push(problem);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_problem_names_key_value_and_range() {
        assert_eq!(outside("a.b", 3, &(1..=5)), None);
        assert_eq!(outside("a.b", 1, &(1..=5)), None);
        assert_eq!(outside("a.b", 5, &(1..=5)), None);
        assert_eq!(
            outside("a.b", 6, &(1..=5))
                .map(|p| p.to_string())
                .as_deref(),
            Some("a.b: 6 is outside 1..=5")
        );
        assert_eq!(
            outside("k1", 12.0, &(0.0..=10.0))
                .map(|p| p.to_string())
                .as_deref(),
            Some("k1: 12 is outside 0..=10")
        );
        assert!(outside("k1", f64::NAN, &(0.0..=10.0)).is_some());
        assert!(outside("k1", f64::INFINITY, &(0.0..=10.0)).is_some());
        assert_eq!(
            outside("m", -1.5, &(-1.0..=1.0))
                .map(|p| p.to_string())
                .as_deref(),
            Some("m: -1.5 is outside -1..=1")
        );
    }
}
