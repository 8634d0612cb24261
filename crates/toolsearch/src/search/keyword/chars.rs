//! The per-character postings that answer one-character keywords, made from the tokens'
//! postings once those are laid out (not paired per tool while tokenizing, which held 12 MB of
//! pairs at the build's peak at 100k MCP-sized tools). A character most tools contain ("e",
//! "a") is kept as a byte per tool (its field mask, 0 where absent) rather than as a list of
//! 5-byte postings: 12 MB of lists became 4 MB.

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
    /// From the tokens' postings over `tools` tools and each token's distinct characters (of
    /// `chars`): a tool holds a character where one of its tokens does, in those tokens'
    /// fields. A character in more than a fifth of the tools (where a byte per tool is the
    /// smaller) is kept dense.
    pub(super) fn from_tokens(
        tokens: &Postings,
        token_chars: &[Vec<u32>],
        chars: usize,
        tools: usize,
    ) -> Self {
        let mut tokens_of: Vec<Vec<u32>> = vec![Vec::new(); chars];
        for (t, cs) in token_chars.iter().enumerate() {
            for &c in cs {
                tokens_of[c as usize].push(t as u32);
            }
        }
        let mut masks = vec![0u8; tools];
        let mut touched: Vec<ToolId> = Vec::new();
        let mut dense = Vec::with_capacity(chars);
        let mut sparse = Postings::default();
        sparse.offsets.push(0);
        for of in &tokens_of {
            for &t in of {
                let (ids, fields) = tokens.get(t);
                for (&id, &f) in ids.iter().zip(fields) {
                    let m = &mut masks[id as usize];
                    if *m == 0 {
                        touched.push(id);
                    }
                    *m |= f;
                }
            }
            if touched.len() * 5 > tools {
                dense.push(Some(masks.clone().into_boxed_slice()));
            } else {
                touched.sort_unstable();
                let fields: Vec<u8> = touched.iter().map(|&id| masks[id as usize]).collect();
                sparse.extend(&touched, &fields);
                dense.push(None);
            }
            sparse.offsets.push(sparse.len() as u32);
            for &id in &touched {
                masks[id as usize] = 0;
            }
            touched.clear();
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
    fn a_tool_holds_the_characters_of_its_tokens_frequent_ones_dense_rare_ones_sparse() {
        // Token 0 "ab" in tools 0..8 of 10 (field bit by tool), token 1 "bz" in tool 3 only.
        let mut tokens = Postings::default();
        tokens.offsets.push(0);
        let common: Vec<ToolId> = (0..8).collect();
        let masks: Vec<u8> = (0..8).map(|t| 1 << (t % 5)).collect();
        tokens.extend(&common, &masks);
        tokens.offsets.push(tokens.len() as u32);
        tokens.extend(&[3], &[0b1_0000]);
        tokens.offsets.push(tokens.len() as u32);
        // Characters: a 0, b 1, z 2.
        let chars = CharPostings::from_tokens(&tokens, &[vec![0, 1], vec![1, 2]], 3, 10);
        for c in [0, 1] {
            let CharHits::Dense(bytes) = chars.get(c) else {
                panic!("character {c} is in 8 tools of 10: dense");
            };
            assert_eq!(bytes.len(), 10);
            for (t, &got) in bytes.iter().enumerate() {
                let mut want = if t < 8 { 1 << (t % 5) } else { 0 };
                if c == 1 && t == 3 {
                    want |= 0b1_0000;
                }
                assert_eq!(got, want, "character {c}, tool {t}");
            }
        }
        match chars.get(2) {
            CharHits::Sparse(ids, masks) => assert_eq!((ids, masks), (&[3][..], &[0b1_0000][..])),
            CharHits::Dense(_) => panic!("a character in 1 tool of 10 is sparse"),
        }
    }
}
