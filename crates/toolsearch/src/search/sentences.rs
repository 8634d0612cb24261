//! The sentences of a query, for semantic search to embed one by one.
//!
//! A question that needs several tools ("Find me flights to Paris. Also, what's the weather
//! there? And convert 200 dollars to euros.") is one vector when embedded whole: the average of
//! its facets, near none of them, and cut at the model's longest input. Each sentence embedded
//! on its own is near its own tool; a tool's similarity to the query is then its best with the
//! whole question or any sentence ([`super::semantic::QueryVectors`]). Measured in
//! BENCHMARKS.md ("Multi-tool questions: each sentence embedded too").

/// How many words a sentence needs to be embedded on its own: shorter ones ("Thanks!",
/// "Hi there.") name no task.
pub const MIN_WORDS: usize = 3;

/// Most sentences embedded for one query: a pasted page of text costs at most this many more
/// runs of the model (of the shared sets' questions, one has more: nine).
pub const MAX_SENTENCES: usize = 8;

/// The sentences of `query` worth embedding on their own, trimmed, in order: the text is cut
/// after `.`, `?`, `!` or `;` followed by white space (so "3.5", "e.g.x" and "v1.2" stay
/// whole), and parts of fewer than [`MIN_WORDS`] words are left out; the first
/// [`MAX_SENTENCES`] are kept. Empty unless two or more are left: a one-sentence query is its
/// own only sentence.
pub fn sentences(query: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = query.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends = matches!(c, '.' | '?' | '!' | ';')
            && chars.peek().is_none_or(|(_, next)| next.is_whitespace());
        if ends {
            let end = i + c.len_utf8();
            keep(&query[start..end], &mut out);
            start = end;
        }
    }
    keep(&query[start..], &mut out);
    if out.len() < 2 {
        out.clear();
    }
    out.truncate(MAX_SENTENCES);
    out
}

fn keep<'a>(part: &'a str, out: &mut Vec<&'a str>) {
    let part = part.trim();
    if part.split_whitespace().nth(MIN_WORDS - 1).is_some() {
        out.push(part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_of_several_sentences_is_cut_after_each() {
        assert_eq!(
            sentences(
                "I'm planning a trip to Paris. Can you find flights there? Also convert 200 dollars to euros!  Thanks!"
            ),
            [
                "I'm planning a trip to Paris.",
                "Can you find flights there?",
                "Also convert 200 dollars to euros!",
            ]
        );
        assert_eq!(
            sentences("get the weather in Oslo; then book a table nearby"),
            ["get the weather in Oslo;", "then book a table nearby"]
        );
    }

    #[test]
    fn a_point_inside_a_word_or_number_cuts_nothing() {
        assert!(sentences("convert 3.5 kg to pounds with api v1.2 please").is_empty());
        assert_eq!(
            sentences("Rate it 4.5 out of five. Then post the review online."),
            ["Rate it 4.5 out of five.", "Then post the review online."]
        );
    }

    #[test]
    fn a_long_text_gives_its_first_sentences_only() {
        let text = (1..=20)
            .map(|i| format!("Task number {i} here."))
            .collect::<Vec<_>>()
            .join(" ");
        let got = sentences(&text);
        assert_eq!(got.len(), MAX_SENTENCES);
        assert_eq!(
            (got[0], got[7]),
            ("Task number 1 here.", "Task number 8 here.")
        );
    }

    #[test]
    fn one_sentence_or_short_ones_give_none() {
        assert!(sentences("Can you recommend a good book to read?").is_empty());
        assert!(sentences("Hi. Find a good book to read.").is_empty());
        assert!(sentences("").is_empty());
        assert!(sentences("...?!").is_empty());
        assert!(sentences("Ünïcödé wörds hère. Ånd möre wörds hère…").len() == 2);
    }
}
