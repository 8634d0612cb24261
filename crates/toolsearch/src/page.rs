//! Byte-budget pages: `{<head>"<list>":[entries…],"total":N,"next_offset":X}` as compact JSON.
//!
//! Entries are serialized one at a time and added while the *whole* response stays within the
//! budget; the first entry that does not fit starts the next page. The size of a page with `n`
//! entries is computed exactly (including the digits of `next_offset`), and it grows with `n`,
//! so the greedy cut is the longest page that fits.

/// A page that fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The whole response, compact JSON.
    pub json: String,
    /// Entries on the page.
    pub count: usize,
    /// Where the next page starts, when entries remain.
    pub next_offset: Option<usize>,
}

/// The first entry of a page does not fit the budget by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// Bytes the response would need with that one entry.
    pub needed: usize,
}

/// Builds the page of `entries` starting at `offset` (the caller has already skipped to it):
/// at most `limit` entries, `total` before paging, within `budget` bytes. `head` is the JSON
/// text before the list's `[` (e.g. `{"detail":"summary","tools":`).
pub fn fit_page(
    head: &str,
    entries: impl Iterator<Item = String>,
    offset: usize,
    limit: usize,
    total: usize,
    budget: usize,
) -> Result<Page, TooLarge> {
    let total_text = total.to_string();
    // head + "[" + "]" + ,"total": + N + ,"next_offset": + X + "}"
    let fixed =
        head.len() + 2 + ",\"total\":".len() + total_text.len() + ",\"next_offset\":".len() + 1;
    let remaining = total.saturating_sub(offset);
    let mut body = String::new();
    let mut count = 0;
    for entry in entries.take(limit.min(remaining)) {
        let n = count + 1;
        let body_len = body.len() + usize::from(count > 0) + entry.len();
        let next_len = if offset + n < total {
            digits(offset + n)
        } else {
            4
        };
        let size = fixed + body_len + next_len;
        if size > budget {
            if count == 0 {
                return Err(TooLarge { needed: size });
            }
            break;
        }
        if count > 0 {
            body.push(',');
        }
        body.push_str(&entry);
        count = n;
    }
    let next_offset = (offset + count < total).then_some(offset + count);
    let mut json = String::with_capacity(fixed + body.len() + 8);
    json.push_str(head);
    json.push('[');
    json.push_str(&body);
    json.push_str("],\"total\":");
    json.push_str(&total_text);
    json.push_str(",\"next_offset\":");
    match next_offset {
        Some(n) => json.push_str(&n.to_string()),
        None => json.push_str("null"),
    }
    json.push('}');
    Ok(Page {
        json,
        count,
        next_offset,
    })
}

fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HEAD: &str = "{\"items\":";

    fn entries(sizes: &[usize]) -> Vec<String> {
        sizes
            .iter()
            .map(|n| format!("\"{}\"", "x".repeat(*n)))
            .collect()
    }

    #[test]
    fn exact_sizes_and_next_offset() {
        let e = entries(&[1, 1, 1]);
        let p = fit_page(HEAD, e.clone().into_iter(), 0, 10, 3, 1000).expect("fits");
        assert_eq!(
            p.json,
            r#"{"items":["x","x","x"],"total":3,"next_offset":null}"#
        );
        let p = fit_page(HEAD, e.clone().into_iter(), 0, 2, 3, 1000).expect("fits");
        assert_eq!(p.json, r#"{"items":["x","x"],"total":3,"next_offset":2}"#);
        // A budget of exactly the two-entry page's size keeps two entries.
        let two = p.json.len();
        let p = fit_page(HEAD, e.clone().into_iter(), 0, 10, 3, two).expect("fits");
        assert_eq!((p.count, p.next_offset, p.json.len()), (2, Some(2), two));
        let p = fit_page(HEAD, e.clone().into_iter(), 0, 10, 3, two - 1).expect("fits");
        assert_eq!(p.count, 1);
        assert_eq!(
            fit_page(HEAD, e.into_iter(), 0, 10, 3, 20),
            Err(TooLarge { needed: 41 })
        );
    }

    #[test]
    fn past_the_end_is_an_empty_last_page() {
        let p = fit_page(HEAD, std::iter::empty(), 5, 10, 3, 100).expect("fits");
        assert_eq!(p.json, r#"{"items":[],"total":3,"next_offset":null}"#);
    }

    proptest! {
        #[test]
        fn pages_fit_and_chain_without_gap_or_repeat(
            sizes in proptest::collection::vec(0usize..300, 0..40),
            limit in 1usize..12,
            budget in 400usize..2000,
        ) {
            let all = entries(&sizes);
            let total = all.len();
            let mut offset = 0;
            let mut seen = Vec::new();
            loop {
                match fit_page(HEAD, all[offset.min(total)..].iter().cloned(), offset, limit, total, budget) {
                    Ok(p) => {
                        prop_assert!(p.json.len() <= budget);
                        prop_assert!(p.count <= limit);
                        let v: serde_json::Value = serde_json::from_str(&p.json).expect("json");
                        let items = v["items"].as_array().expect("items");
                        prop_assert_eq!(items.len(), p.count);
                        seen.extend(items.iter().cloned());
                        match p.next_offset {
                            Some(n) => { prop_assert_eq!(n, offset + p.count); prop_assert!(p.count > 0); offset = n; }
                            None => { prop_assert_eq!(offset + p.count, total.max(offset)); break; }
                        }
                    }
                    Err(TooLarge { needed }) => {
                        prop_assert!(needed > budget);
                        // Only an entry that cannot fit alone stops the chain.
                        let alone = HEAD.len() + 2 + all[offset].len() + 30;
                        prop_assert!(alone > budget - 30);
                        break;
                    }
                }
            }
            let expected: Vec<serde_json::Value> = all[..seen.len()].iter().map(|s| serde_json::from_str(s).expect("json")).collect();
            prop_assert_eq!(seen, expected);
        }
    }
}
