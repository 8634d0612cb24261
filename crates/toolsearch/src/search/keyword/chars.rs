//! The per-character postings that answer one-character keywords: a character most tools
//! contain ("e", "a") is kept as a byte per tool (its field mask, 0 where absent) rather than
//! as a list of 5-byte postings — at 100k MCP-sized tools, 12 MB of lists became 4 MB.

use super::build::Postings;
use crate::catalog::ToolId;

/// A character's hits: its postings, or a field mask per tool.
pub(super) enum CharHits<'a> {
    /// Tools in ascending order, with their field masks.
    Sparse(&'a [ToolId], &'a [u8]),
    /// One field mask per tool (0: absent).
    Dense(&'a [u8]),
}

/// The postings of every character, the frequent ones as a byte per tool.
#[derive(Debug, Default)]
pub(super) struct CharPostings {
    /// The lists of the characters not kept dense (empty for those that are).
    sparse: Postings,
    /// Per character id: its mask per tool, when it is kept dense.
    dense: Vec<Option<Box<[u8]>>>,
}

impl CharPostings {
    /// From every character's posting lists over `tools` tools: a list longer than a fifth of
    /// the tools (where a byte per tool is the smaller) is kept dense.
    pub(super) fn new(lists: &Postings, tools: usize) -> Self {
        let chars = lists.offsets.len().saturating_sub(1);
        let mut dense = Vec::with_capacity(chars);
        let mut sparse = Postings::default();
        sparse.offsets.push(0);
        for c in 0..chars as u32 {
            let (ids, masks) = lists.get(c);
            if ids.len() * 5 > tools {
                let mut bytes = vec![0u8; tools].into_boxed_slice();
                for (&t, &m) in ids.iter().zip(masks) {
                    bytes[t as usize] = m;
                }
                dense.push(Some(bytes));
            } else {
                sparse.extend(ids, masks);
                dense.push(None);
            }
            sparse.offsets.push(sparse.len() as u32);
        }
        Self { sparse, dense }
    }

    /// Character `c`'s hits.
    pub(super) fn get(&self, c: u32) -> CharHits<'_> {
        match &self.dense[c as usize] {
            Some(bytes) => CharHits::Dense(bytes),
            None => {
                let (ids, masks) = self.sparse.get(c);
                CharHits::Sparse(ids, masks)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequent_characters_are_dense_rare_ones_sparse_and_both_give_the_same_hits() {
        // Character 0 in tools 0..8 of 10, character 1 in tool 3 only.
        let mut lists = Postings::default();
        lists.offsets.push(0);
        let common: Vec<ToolId> = (0..8).collect();
        let masks: Vec<u8> = (0..8).map(|t| 1 << (t % 5)).collect();
        lists.extend(&common, &masks);
        lists.offsets.push(lists.len() as u32);
        lists.extend(&[3], &[0b100]);
        lists.offsets.push(lists.len() as u32);
        let chars = CharPostings::new(&lists, 10);
        match chars.get(0) {
            CharHits::Dense(bytes) => {
                assert_eq!(bytes.len(), 10);
                for t in 0..10usize {
                    let want = if t < 8 { 1 << (t % 5) } else { 0 };
                    assert_eq!(bytes[t], want, "tool {t}");
                }
            }
            CharHits::Sparse(..) => panic!("a character in 8 tools of 10 is dense"),
        }
        match chars.get(1) {
            CharHits::Sparse(ids, masks) => assert_eq!((ids, masks), (&[3][..], &[0b100][..])),
            CharHits::Dense(_) => panic!("a character in 1 tool of 10 is sparse"),
        }
    }
}
