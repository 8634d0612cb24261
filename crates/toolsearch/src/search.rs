//! Search methods over a [`Directory`](crate::catalog::Directory) snapshot.

pub mod keyword;
pub mod reference;

pub use keyword::{KeywordIndex, Match, Rank, Ranked};

/// Searchable fields, in priority order (DESIGN.md, `discover_tools` rule 4).
pub const FIELDS: [&str; 5] = [
    "name",
    "description",
    "group",
    "parameter name",
    "parameter description",
];

/// Number of relevance buckets: a whole-word and a substring tier per field.
pub const BUCKETS: usize = 2 * FIELDS.len();

/// Human-readable name of a relevance bucket, e.g. "whole word in description".
pub fn bucket_name(bucket: usize) -> String {
    let field = FIELDS[bucket % FIELDS.len()];
    if bucket < FIELDS.len() {
        format!("whole word in {field}")
    } else {
        format!("substring of {field}")
    }
}
