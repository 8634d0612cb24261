//! Exact names: which documents a query names exactly — its trimmed text equal to a document's
//! name or canonical name, ignoring case. Every method puts such documents first.
//!
//! Kept small because every snapshot builds it at once, whatever its method: a sorted list of
//! `(hash of the folded name, document)`, 8 bytes a name, and a lookup confirms each candidate
//! against the corpus's own names (a map of folded names to documents held the names a second
//! time: 14 MB at 100k tools).

use std::hash::BuildHasher;
use std::ops::Range;

use rustc_hash::FxBuildHasher;

use super::corpus::Corpus;
use crate::catalog::ToolId;
use crate::text::fold;

/// The documents of a corpus by exact name.
#[derive(Debug, Default)]
pub struct ExactNames {
    /// `(hash of a folded name, document)`, sorted; a document whose canonical name folds
    /// differently from its name is listed under both.
    entries: Box<[(u32, ToolId)]>,
}

/// The 32-bit hash of a folded name (a candidate only: each is confirmed).
fn hash(folded: &str) -> u32 {
    let h = FxBuildHasher.hash_one(folded);
    (h ^ (h >> 32)) as u32
}

impl ExactNames {
    /// The exact names of every document of `corpus`.
    pub fn build(corpus: &(impl Corpus + ?Sized)) -> Self {
        let mut entries: Vec<(u32, ToolId)> = crate::parallel::map_ranges(corpus.len(), |ids| {
            let mut part = Vec::with_capacity(ids.len() * 2);
            for id in ids {
                let id = id as ToolId;
                let doc = corpus.doc(id);
                let name = fold(doc.name);
                part.push((hash(&name), id));
                let canonical = fold(doc.canonical);
                if canonical != name {
                    part.push((hash(&canonical), id));
                }
            }
            part
        })
        .concat();
        entries.sort_unstable();
        entries.dedup();
        Self {
            entries: entries.into(),
        }
    }

    /// The documents of `scope` whose name or canonical name equals the trimmed `query`,
    /// ignoring case, ascending.
    pub fn matches(
        &self,
        corpus: &(impl Corpus + ?Sized),
        query: &str,
        scope: Range<ToolId>,
    ) -> Vec<ToolId> {
        let q = fold(query.trim());
        let h = hash(&q);
        let start = self.entries.partition_point(|&(e, _)| e < h);
        let mut out: Vec<ToolId> = self.entries[start..]
            .iter()
            .take_while(|&&(e, _)| e == h)
            .map(|&(_, id)| id)
            .filter(|id| scope.contains(id))
            .filter(|&id| {
                let doc = corpus.doc(id);
                fold(doc.name) == q || fold(doc.canonical) == q
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Directory, GroupSpec, SourceTools, ToolDef};

    fn dir() -> Directory {
        Directory::build(vec![
            SourceTools::grouped(
                "s",
                GroupSpec::new("pay", "Payments"),
                vec![ToolDef::new("Refund", ""), ToolDef::new("charge", "")],
            ),
            SourceTools::grouped(
                "t",
                GroupSpec::new("shop", "Shop"),
                vec![ToolDef::new("refund", "")],
            ),
        ])
        .expect("valid")
    }

    #[test]
    fn a_query_equal_to_a_name_or_canonical_name_ignoring_case_matches() {
        let d = dir();
        let all = 0..d.tools().len() as ToolId;
        let exact = ExactNames::build(&d);
        let refunds = exact.matches(&d, "  REFUND ", all.clone());
        assert_eq!(refunds.len(), 2);
        assert!(
            refunds
                .iter()
                .all(|&t| d.tool(t).name.eq_ignore_ascii_case("refund"))
        );
        let charge = d.tool_id("pay", "charge").expect("tool");
        assert_eq!(exact.matches(&d, "Pay__Charge", all.clone()), vec![charge]);
        assert!(exact.matches(&d, "charg", all.clone()).is_empty());
        assert!(exact.matches(&d, "refund charge", all).is_empty());
    }

    #[test]
    fn only_the_scope_is_searched() {
        let d = dir();
        let exact = ExactNames::build(&d);
        let shop = d.groups()[d.group_index("shop").expect("group") as usize]
            .tools
            .clone();
        let got = exact.matches(&d, "refund", shop.clone());
        assert_eq!(got, vec![shop.start]);
    }
}
