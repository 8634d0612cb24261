//! Names: group-name rules, control-name rules and canonical tool names.

/// Longest group name, in characters.
pub const GROUP_NAME_MAX: usize = 32;
/// Longest group description, in characters.
pub const GROUP_DESCRIPTION_MAX: usize = 512;

/// The canonical name of tool `tool` in group `group`: every `_` in the group becomes `_u`,
/// then `__`, then the tool name unchanged. Injective: an escaped group never contains `__`,
/// so the first `__` always ends the group part.
pub fn canonical_name(group: &str, tool: &str) -> String {
    let mut out = String::with_capacity(group.len() + tool.len() + 4);
    for c in group.chars() {
        if c == '_' {
            out.push_str("_u");
        } else {
            out.push(c);
        }
    }
    out.push_str("__");
    out.push_str(tool);
    out
}

/// Why a group name is not valid, or `None` when it is: starts with an ASCII letter, 1–32 ASCII
/// letters, digits, `-` or `_`, and never contains `__`.
pub fn group_name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Some("group name is empty".into()),
        Some(c) if !c.is_ascii_alphabetic() => {
            return Some(format!("group name {name:?} must start with a letter"));
        }
        _ => {}
    }
    if name.chars().count() > GROUP_NAME_MAX {
        return Some(format!(
            "group name {name:?} is longer than {GROUP_NAME_MAX} characters"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Some(format!(
            "group name {name:?} may hold only letters, digits, '-' and '_' (found {bad:?})"
        ));
    }
    if name.contains("__") {
        return Some(format!("group name {name:?} must not contain \"__\""));
    }
    None
}

/// Why a group description is not valid, or `None`: non-blank, at most 512 characters.
pub fn group_description_problem(description: &str) -> Option<String> {
    if description.trim().is_empty() {
        return Some("group description is blank".into());
    }
    let n = description.chars().count();
    if n > GROUP_DESCRIPTION_MAX {
        return Some(format!(
            "group description has {n} characters; at most {GROUP_DESCRIPTION_MAX} are allowed"
        ));
    }
    None
}

/// Whether `name` is a valid control name: `[A-Za-z_][A-Za-z0-9_-]{0,63}`.
pub fn is_valid_control_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

/// Why a local tool name is not valid, or `None`. Names are free text (catalogs such as
/// ToolBench use spaces) but must be non-blank, at most 128 characters, without control
/// characters.
pub fn tool_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("tool name is empty".into());
    }
    if name.chars().count() > 128 {
        return Some("tool name is longer than 128 characters".into());
    }
    if name.chars().any(char::is_control) {
        return Some("tool name contains a control character".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn canonical_examples_from_design() {
        assert_eq!(canonical_name("my_tools", "select"), "my_utools__select");
        assert_eq!(canonical_name("a_", "b"), "a_u__b");
        assert_eq!(canonical_name("a_u", "b"), "a_uu__b");
        assert_eq!(canonical_name("a", "_b"), "a___b");
        assert_eq!(canonical_name("crm", "customer_name"), "crm__customer_name");
    }

    #[test]
    fn group_names() {
        for ok in ["crm", "a", "Billing-2", "my_tools", "a_", &"x".repeat(32)] {
            assert_eq!(group_name_problem(ok), None, "{ok}");
        }
        for bad in ["", "_a", "1a", "a__b", "a b", "é", &"x".repeat(33), "a.b"] {
            assert!(group_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn control_names() {
        assert!(is_valid_control_name("discover_tools"));
        assert!(is_valid_control_name("_x-1"));
        assert!(is_valid_control_name(&format!("a{}", "b".repeat(63))));
        assert!(!is_valid_control_name(&format!("a{}", "b".repeat(64))));
        assert!(!is_valid_control_name("1abc"));
        assert!(!is_valid_control_name("-abc"));
        assert!(!is_valid_control_name("a.b"));
        assert!(!is_valid_control_name(""));
    }

    fn group_name() -> impl Strategy<Value = String> {
        "[A-Za-z][A-Za-z0-9_-]{0,31}".prop_filter("no __", |g| !g.contains("__"))
    }

    proptest! {
        #[test]
        fn canonical_names_are_injective(
            g1 in group_name(), t1 in "[a-z_]{0,6}", g2 in group_name(), t2 in "[a-z_]{0,6}",
        ) {
            let same = canonical_name(&g1, &t1) == canonical_name(&g2, &t2);
            prop_assert_eq!(same, g1 == g2 && t1 == t2);
        }

        #[test]
        fn canonical_names_of_underscore_heavy_groups_are_injective(
            g1 in "[a_u]{1,5}", t1 in "[_u]{0,4}", g2 in "[a_u]{1,5}", t2 in "[_u]{0,4}",
        ) {
            prop_assume!(group_name_problem(&g1).is_none() && group_name_problem(&g2).is_none());
            let same = canonical_name(&g1, &t1) == canonical_name(&g2, &t2);
            prop_assert_eq!(same, g1 == g2 && t1 == t2);
        }
    }
}
