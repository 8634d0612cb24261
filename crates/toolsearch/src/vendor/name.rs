//! Names a vendor accepts. Both APIs take tool names of 1–64 ASCII letters, digits, `_` and
//! `-` (Anthropic allows up to 128 in places; the narrower rule serves both). A canonical name
//! that fits is exported as it is; one that does not gets a stable short form:
//!
//! 1. every character other than `A–Z a–z 0–9 _ -` becomes `_`;
//! 2. the result is cut to its first 55 characters;
//! 3. `_` and eight lowercase hex digits follow: the low 32 bits of the 64-bit FNV-1a hash of
//!    the canonical name's UTF-8 bytes.
//!
//! `crm__get.v1/customer` → `crm__get_v1_customer_<8 hex>`. The short form depends on the
//! canonical name alone, so it stays the same across exports, reloads and replicas.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use crate::catalog::{Directory, ToolId};
use crate::text::fnv1a;

/// Longest name either vendor accepts, in characters.
pub const NAME_MAX: usize = 64;

/// Characters of the canonical name a short form keeps.
const KEPT: usize = NAME_MAX - 9;

/// Whether `name` satisfies both vendors' name rules.
pub fn fits(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name a vendor sees for the tool with this canonical name.
pub fn exported_name(canonical: &str) -> Cow<'_, str> {
    if fits(canonical) {
        return Cow::Borrowed(canonical);
    }
    let mut out: String = canonical
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(KEPT)
        .collect();
    out.push_str(&format!("_{:08x}", fnv1a(canonical) as u32));
    Cow::Owned(out)
}

/// The short forms of a directory's tools whose canonical names do not fit, mapped back.
#[derive(Debug, Default)]
pub struct ShortForms {
    map: FxHashMap<String, ToolId>,
}

impl ShortForms {
    /// The short forms of `dir`'s grouped tools.
    pub fn build(dir: &Directory) -> Self {
        let map = dir
            .tools()
            .iter()
            .enumerate()
            .filter(|(_, t)| !fits(&t.canonical))
            .map(|(id, t)| (exported_name(&t.canonical).into_owned(), id as ToolId))
            .collect();
        Self { map }
    }

    /// The tool exported as `name`: a short form, else the tool of that canonical name.
    pub fn resolve(&self, dir: &Directory, name: &str) -> Option<ToolId> {
        if !fits(name) {
            return None;
        }
        self.map
            .get(name)
            .copied()
            .or_else(|| dir.tool_by_canonical(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{GroupSpec, SourceTools, ToolDef};

    #[test]
    fn names_that_fit_are_kept() {
        assert!(fits("crm__customer_name"));
        assert!(fits("a-b_C9"));
        assert_eq!(exported_name("crm__customer_name"), "crm__customer_name");
        assert!(!fits(""));
        assert!(!fits("crm__get.v1"));
        assert!(!fits("crm__/v1/nutrition"));
        assert!(!fits("crm__caf\u{e9}"));
        assert!(!fits(&"x".repeat(65)));
        assert!(fits(&"x".repeat(64)));
    }

    #[test]
    fn a_short_form_is_stable_and_fits() {
        let long = format!("g__{}", "very_long_tool_name_".repeat(5));
        for canonical in [
            "crm__get.v1/customer",
            "g__caf\u{e9} au lait",
            long.as_str(),
        ] {
            let short = exported_name(canonical);
            assert!(fits(&short), "{short}");
            assert_eq!(short, exported_name(canonical), "deterministic");
            let hex = &short[short.len() - 8..];
            assert_eq!(
                u32::from_str_radix(hex, 16).expect("valid"),
                fnv1a(canonical) as u32
            );
        }
        assert_eq!(
            exported_name("crm__get.v1/customer"),
            format!(
                "crm__get_v1_customer_{:08x}",
                fnv1a("crm__get.v1/customer") as u32
            )
        );
        // Two names that sanitise alike still differ.
        assert_ne!(exported_name("g__a.b"), exported_name("g__a/b"));
        assert_eq!(exported_name(&long).len(), NAME_MAX);
    }

    #[test]
    fn short_forms_map_back_to_their_tools() {
        let dir = Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("web", "Web tools"),
            vec![
                ToolDef::new("/v1/nutrition", "Nutrition facts"),
                ToolDef::new("fetch", "Fetch a page"),
            ],
        )])
        .expect("valid");
        let forms = ShortForms::build(&dir);
        let nutrition = dir.tool_id("web", "/v1/nutrition").expect("valid");
        let fetch = dir.tool_id("web", "fetch").expect("valid");
        let short = exported_name("web__/v1/nutrition").into_owned();
        assert_eq!(forms.resolve(&dir, &short), Some(nutrition));
        assert_eq!(forms.resolve(&dir, "web__fetch"), Some(fetch));
        // The canonical name that does not fit is not a vendor name.
        assert_eq!(forms.resolve(&dir, "web__/v1/nutrition"), None);
        assert_eq!(forms.resolve(&dir, "web__nothing"), None);
    }
}
