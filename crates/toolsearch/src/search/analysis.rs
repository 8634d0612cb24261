//! Text analysis of BM25: the reference's words (camelCase split, case folding), English stop
//! words dropped, then the Snowball English stemmer (`rust-stemmers`).

use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::text::for_each_word;

/// English stop words: function words that carry no topic (a short list, since tool text is
/// terse and words like "get", "list" or "new" do matter).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "also",
    "please",
    "want",
    "need",
    "like",
    "let",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
];

fn is_stop_word(word: &str) -> bool {
    static SET: OnceLock<rustc_hash::FxHashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
        .contains(word)
}

/// The most stems a thread remembers; past it the memory starts afresh.
const STEMS_KEPT: usize = 1 << 16;

thread_local! {
    static STEMMER: rust_stemmers::Stemmer =
        rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    /// Each word this thread has stemmed, and its stem.
    static STEMS: RefCell<FxHashMap<Box<str>, Box<str>>> = RefCell::default();
}

/// Calls `f` with every index term of `text`: its words minus stop words, stemmed.
///
/// Each thread remembers the stems of the words it has seen (the Snowball stemmer was a third
/// of the BM25 build's time, and a catalog repeats its words): a word is stemmed once per
/// thread, until 65,536 words have been seen.
pub fn analyze(text: &str, mut f: impl FnMut(&str)) {
    STEMMER.with(|stemmer| {
        STEMS.with(|stems| {
            // A call made from inside `f` stems without the memory.
            let mut stems = stems.try_borrow_mut().ok();
            for_each_word(text, |w| {
                if is_stop_word(w) {
                    return;
                }
                let Some(stems) = stems.as_mut() else {
                    f(&stemmer.stem(w));
                    return;
                };
                if let Some(stem) = stems.get(w) {
                    f(stem);
                    return;
                }
                let stem: Box<str> = stemmer.stem(w).into();
                f(&stem);
                if stems.len() >= STEMS_KEPT {
                    stems.clear();
                }
                stems.insert(w.into(), stem);
            });
        });
    });
}

/// The index terms of `text`, in order.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyze(text, |t| out.push(t.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_stem_is_the_stemmers() {
        let text = "Reading files, read file; the FILES were read";
        let first = terms(text);
        assert_eq!(first, ["read", "file", "read", "file", "file", "read"]);
        // The second time every stem comes from the thread's memory.
        assert_eq!(terms(text), first);
    }

    #[test]
    fn a_call_from_inside_the_callback_stems_without_the_memory() {
        let mut inner = Vec::new();
        analyze("searching repositories", |outer| {
            analyze(outer, |t| inner.push(t.to_owned()));
        });
        assert_eq!(inner, ["search", "repositori"]);
    }

    #[test]
    fn the_memory_starts_afresh_when_full() {
        // Distinct words of letters only: `i` written in base 26, then "ing".
        let word = |mut i: usize| {
            let mut w = String::new();
            loop {
                w.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
                if i == 0 {
                    break;
                }
            }
            w + "ing"
        };
        for i in 0..STEMS_KEPT + 10 {
            let w = word(i);
            let direct = STEMMER.with(|s| s.stem(&w).into_owned());
            if !is_stop_word(&w) {
                assert_eq!(terms(&w), [direct]);
            }
            assert!(STEMS.with(|s| s.borrow().len()) <= STEMS_KEPT);
        }
        assert!(STEMS.with(|s| s.borrow().len()) < 100);
    }
}
