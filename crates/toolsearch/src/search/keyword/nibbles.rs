//! A dense keyword's buckets, half a byte per tool.
//!
//! A bucket is 0..=9 (whole word or substring, in one of five fields), so four bits hold it
//! and 15 says "no hit": a keyword hitting most of a 100k-tool catalog takes 50 KB rather than
//! 100 KB, which lets the index merge twice as many keywords ahead, and the cache hold twice
//! as many, in the same memory.

use std::ops::Range;

use super::accumulate::NONE;

/// The empty nibble.
const ABSENT: u8 = 0xF;

/// One bucket (or none) per tool, two tools per byte (the even tool in the low half).
#[derive(Debug)]
pub(super) struct Nibbles(Box<[u8]>);

impl Nibbles {
    /// Packs one byte per tool, each a bucket below 15 or [`NONE`].
    pub(super) fn pack(buckets: &[u8]) -> Self {
        let half = |b: u8| if b == NONE { ABSENT } else { b };
        let bytes = buckets
            .chunks(2)
            .map(|pair| half(pair[0]) | (pair.get(1).map_or(ABSENT, |&b| half(b)) << 4))
            .collect();
        Self(bytes)
    }

    /// Bytes held.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// Tool `t`'s bucket, or [`NONE`].
    pub(super) fn get(&self, t: usize) -> u8 {
        let b = (self.0[t / 2] >> ((t % 2) * 4)) & ABSENT;
        if b == ABSENT { NONE } else { b }
    }

    /// Adds one to `coverage[t]` for every tool `t` of `tools` that has a bucket (`coverage`
    /// is indexed by tool).
    pub(super) fn count_into(&self, coverage: &mut [u16], tools: Range<usize>) {
        let (mut lo, hi) = (tools.start, tools.end);
        if lo % 2 == 1 && lo < hi {
            coverage[lo] += u16::from(self.get(lo) != NONE);
            lo += 1;
        }
        let even_end = lo.max(hi & !1);
        let bytes = &self.0[lo / 2..even_end / 2];
        let pairs = &mut coverage[lo..lo + bytes.len() * 2];
        for (i, &b) in bytes.iter().enumerate() {
            pairs[2 * i] += u16::from(b & ABSENT != ABSENT);
            pairs[2 * i + 1] += u16::from(b >> 4 != ABSENT);
        }
        if even_end < hi {
            coverage[even_end] += u16::from(self.get(even_end) != NONE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip_and_count_in_any_range() {
        let buckets: Vec<u8> = (0..23u8)
            .map(|t| if t % 3 == 0 { NONE } else { t % 10 })
            .collect();
        let packed = Nibbles::pack(&buckets);
        assert_eq!(packed.len(), 12);
        for (t, &b) in buckets.iter().enumerate() {
            assert_eq!(packed.get(t), b, "tool {t}");
        }
        for lo in 0..buckets.len() {
            for hi in lo..=buckets.len() {
                let mut coverage = vec![7u16; buckets.len()];
                packed.count_into(&mut coverage, lo..hi);
                for (t, &c) in coverage.iter().enumerate() {
                    let hit = (lo..hi).contains(&t) && buckets[t] != NONE;
                    assert_eq!(c, 7 + u16::from(hit), "tool {t} in {lo}..{hi}");
                }
            }
        }
    }
}
