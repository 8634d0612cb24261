//! Text rules shared by every search method: words, folding, description summaries; and the
//! one stable text digest (FNV-1a) that cache keys, train/test splits and exported names use.
//!
//! The reference defines *words* as: split a text at camelCase boundaries (acronyms too), case-fold,
//! then take the maximal runs of Unicode letters and digits. Choices where it is silent:
//!
//! - A camelCase boundary sits between a lowercase letter or a digit and an uppercase letter
//!   (`getName` → get | Name, `base64Encode` → base64 | Encode), and before the last capital of
//!   an acronym that is followed by a lowercase letter (`getHTTPServer` → get | HTTP | Server).
//! - Case folding is Unicode lowercasing (`char::to_lowercase`); a character whose lowercase form
//!   is not a letter or digit (the combining dot of `İ`) separates words, as the rule says.
//! - "Letters and digits" are the characters for which `char::is_alphanumeric` holds.

/// Splits `text` into its words (folded), in order, repeats included.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_owned()));
    out
}

/// Calls `f` with every word of `text`, in order, repeats included.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut f);
            prev = Some(c);
            continue;
        }
        if let Some(p) = prev
            && is_camel_boundary(p, c, chars.peek().copied())
        {
            flush(&mut word, &mut f);
        }
        prev = Some(c);
        if c.is_ascii() {
            word.push(c.to_ascii_lowercase());
            continue;
        }
        for folded in c.to_lowercase() {
            if folded.is_alphanumeric() {
                word.push(folded);
            } else {
                flush(&mut word, &mut f);
            }
        }
    }
    flush(&mut word, &mut f);
}

fn flush(word: &mut String, f: &mut impl FnMut(&str)) {
    if !word.is_empty() {
        f(word);
        word.clear();
    }
}

fn is_camel_boundary(prev: char, cur: char, next: Option<char>) -> bool {
    if !prev.is_alphanumeric() || !cur.is_uppercase() {
        return false;
    }
    if prev.is_lowercase() || prev.is_numeric() {
        return true;
    }
    prev.is_uppercase() && next.is_some_and(char::is_lowercase)
}

/// The distinct words of `text`, in first-seen order.
pub fn distinct_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for_each_word(text, |w| {
        if !out.iter().any(|seen| seen == w) {
            out.push(w.to_owned());
        }
    });
    out
}

/// Case-folds a whole text for substring matching (see the module doc).
pub fn fold(text: &str) -> String {
    text.to_lowercase()
}

/// Calls `f` with every maximal run of letters and digits of the folded `text`. A keyword (a
/// word, so letters and digits only) is a substring of the folded text exactly when it is a
/// substring of one of these runs.
pub fn for_each_folded_run(text: &str, mut f: impl FnMut(&str)) {
    let mut run = String::new();
    for c in text.chars() {
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                run.push(c.to_ascii_lowercase());
            } else {
                flush(&mut run, &mut f);
            }
            continue;
        }
        for folded in c.to_lowercase() {
            if folded.is_alphanumeric() {
                run.push(folded);
            } else {
                flush(&mut run, &mut f);
            }
        }
    }
    flush(&mut run, &mut f);
}

/// Longest summary description, in characters, kept whole; longer ones are cut.
pub const SUMMARY_MAX_CHARS: usize = 256;

/// A description as summaries show it: whitespace runs collapsed to one space (and trimmed at
/// both ends), then, when longer than 256 characters, cut to 255 characters plus `…`.
pub fn summary_description(text: &str) -> String {
    let mut collapsed = String::with_capacity(text.len());
    for part in text.split_whitespace() {
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(part);
    }
    if collapsed.chars().count() <= SUMMARY_MAX_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(SUMMARY_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// A stable 64-bit digest of a text: FNV-1a over its bytes (identity, not security). Cache keys
/// of tool vectors, the train/test split of queries and the suffix of exported names use it, so
/// it must never change.
pub fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_and_acronyms() {
        assert_eq!(words("getHTTPServer"), ["get", "http", "server"]);
        assert_eq!(words("customer_name"), ["customer", "name"]);
        assert_eq!(words("base64Encode v2"), ["base64", "encode", "v2"]);
        assert_eq!(words("XMLHttpRequest"), ["xml", "http", "request"]);
        assert_eq!(words("ID"), ["id"]);
        assert_eq!(words("  --a-b  "), ["a", "b"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn unicode_letters_and_digits() {
        assert_eq!(words("Größe-Straße ümlaut"), ["größe", "straße", "ümlaut"]);
        assert_eq!(words("日本語テキスト"), ["日本語テキスト"]);
        assert_eq!(words("ΑθήναΠόλη"), ["αθήνα", "πόλη"]);
        // The combining dot of a lowercased dotted capital I separates words.
        assert_eq!(words("İstanbul"), ["i", "stanbul"]);
    }

    #[test]
    fn distinct_keeps_first_order() {
        assert_eq!(
            distinct_words("Pay the PAY pay bill"),
            ["pay", "the", "bill"]
        );
    }

    #[test]
    fn folded_runs_do_not_split_camel_case() {
        let mut runs = Vec::new();
        for_each_folded_run("getHTTPServer, x_y", |r| runs.push(r.to_owned()));
        assert_eq!(runs, ["gethttpserver", "x", "y"]);
    }

    #[test]
    fn summaries_collapse_and_cut() {
        assert_eq!(summary_description("  a\n\t b  c "), "a b c");
        let exact = "x".repeat(256);
        assert_eq!(summary_description(&exact), exact);
        let long = "é".repeat(257);
        let cut = summary_description(&long);
        assert_eq!(cut.chars().count(), 256);
        assert!(cut.ends_with("é…"));
    }
}
