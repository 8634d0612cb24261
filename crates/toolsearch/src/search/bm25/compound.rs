//! Compound tool names split into the catalog's own words: `/v1/airquality` also indexes
//! "air" and "quality" when both are words of the catalog, so a question saying "air quality"
//! finds it. No dictionary is shipped: the vocabulary is every word of every field but the
//! names (descriptions, parameters, groups), and only a name word that is not itself such a
//! word is split — "season" stays whole, "getemail" becomes "get" + "email".
//!
//! Measured on the shared sets with descriptions cut to one line and names rewritten as
//! `/v1/<name without separators>` (BENCHMARKS.md, "Compound names").

use rustc_hash::FxHashSet;

use crate::search::corpus::Corpus;
use crate::text::for_each_word;

/// A part is at least this many characters (so "season" is not "se" + "ason").
const MIN_PART: usize = 3;
/// Longer words are left whole (the split is quadratic in the word's length).
const MAX_WORD: usize = 64;

/// The words a compound name may be split into.
#[derive(Debug, Default)]
pub(crate) struct Compounds {
    words: FxHashSet<Box<str>>,
}

impl Compounds {
    /// The vocabulary of `corpus`: the words of every field but the tools' names.
    pub(crate) fn build(corpus: &(impl Corpus + ?Sized)) -> Self {
        let parts = crate::parallel::map_ranges(corpus.len(), |ids| {
            let mut words: FxHashSet<Box<str>> = FxHashSet::default();
            for id in ids {
                let doc = corpus.doc(id as u32);
                add_words(&mut words, doc.description);
                for text in doc.param_names().chain(doc.param_descriptions()) {
                    add_words(&mut words, text);
                }
            }
            words
        });
        let mut words = FxHashSet::default();
        for part in parts {
            if words.is_empty() {
                words = part;
            } else {
                words.extend(part);
            }
        }
        for g in 0..corpus.group_count() as u32 {
            add_words(&mut words, corpus.group_name(g));
            add_words(&mut words, corpus.group_description(g));
        }
        Self { words }
    }

    /// The parts of `word` (a folded word of a name) when it is a compound: not a word of the
    /// vocabulary itself, and exactly covered by the fewest vocabulary words (or digit runs) of
    /// at least three characters, two or more of them. Ties go to the earliest split.
    pub(crate) fn split<'w>(&self, word: &'w str) -> Option<Vec<&'w str>> {
        let n = word.len();
        if !(2 * MIN_PART..=MAX_WORD).contains(&n)
            || !word.bytes().all(|b| b.is_ascii_alphanumeric())
            || self.words.contains(word)
        {
            return None;
        }
        let known = |p: &str| self.words.contains(p) || p.bytes().all(|b| b.is_ascii_digit());
        // best[j]: (parts, start of the last part) of the best cover of word[..j].
        let mut best: Vec<Option<(u32, usize)>> = vec![None; n + 1];
        best[0] = Some((0, 0));
        for i in 0..n {
            let Some((parts, _)) = best[i] else { continue };
            for j in i + MIN_PART..=n {
                if known(&word[i..j]) && best[j].is_none_or(|(p, _)| parts + 1 < p) {
                    best[j] = Some((parts + 1, i));
                }
            }
        }
        let (parts, _) = best[n]?;
        if parts < 2 {
            return None;
        }
        let mut out = Vec::with_capacity(parts as usize);
        let mut end = n;
        while end > 0 {
            let (_, start) = best[end]?;
            out.push(&word[start..end]);
            end = start;
        }
        out.reverse();
        Some(out)
    }
}

/// Adds the words of `text` to `words` (allocating only for new ones).
fn add_words(words: &mut FxHashSet<Box<str>>, text: &str) {
    for_each_word(text, |w| {
        if !words.contains(w) {
            words.insert(w.into());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary(words: &[&str]) -> Compounds {
        Compounds {
            words: words.iter().map(|w| (*w).into()).collect(),
        }
    }

    #[test]
    fn splits_into_the_fewest_catalog_words() {
        let c = vocabulary(&["air", "quality", "get", "email", "address", "emailaddress"]);
        assert_eq!(c.split("airquality"), Some(vec!["air", "quality"]));
        assert_eq!(
            c.split("getemailaddress"),
            Some(vec!["get", "emailaddress"])
        );
        assert_eq!(c.split("getemail2024"), Some(vec!["get", "email", "2024"]));
    }

    #[test]
    fn leaves_words_parts_and_non_covers_whole() {
        let c = vocabulary(&["sea", "son", "season", "air", "qual", "ity"]);
        // A word of the vocabulary is not a compound.
        assert_eq!(c.split("season"), None);
        // Parts shorter than three characters are not allowed ("ity" is, "qu" is not).
        assert_eq!(c.split("airquity"), None);
        assert_eq!(c.split("airqualxity"), None);
        assert_eq!(c.split("airqualit"), None);
        // Too short to hold two parts, non-ASCII, a single part.
        assert_eq!(c.split("seas"), None);
        assert_eq!(c.split("airqualité"), None);
        assert_eq!(c.split("airair"), Some(vec!["air", "air"]));
        assert_eq!(vocabulary(&[]).split("airquality"), None);
    }
}
