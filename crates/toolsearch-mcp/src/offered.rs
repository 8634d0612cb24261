//! The names under which the gateway offers its upstreams' resources and prompts, so that they
//! cannot collide across sources.
//!
//! - A resource `URI` of source `S` is offered as `toolsearch://S/URI` (`S` percent-encoded
//!   where it is not URI-safe); a template `T` as `toolsearch://S/T`.
//! - A prompt `P` of source `S` is offered as the canonical name of (`S`, `P`): every `_` of `S`
//!   becomes `_u`, then `__`, then `P` (`everything` / `simple-prompt` →
//!   `everything__simple-prompt`), the same rule as tool names.

use toolsearch::canonical_name;

const SCHEME: &str = "toolsearch://";

fn encode_source(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for b in source.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI (or URI template) under which source `source` offers `uri`.
pub fn resource_uri(source: &str, uri: &str) -> String {
    format!("{SCHEME}{}/{uri}", encode_source(source))
}

/// The source among `sources` and its own URI, for an offered URI.
pub fn split_resource_uri<'a, 'u>(
    offered: &'u str,
    sources: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, &'u str)> {
    let rest = offered.strip_prefix(SCHEME)?;
    sources.into_iter().find_map(|s| {
        let own = rest
            .strip_prefix(encode_source(s).as_str())?
            .strip_prefix('/')?;
        Some((s, own))
    })
}

/// The name under which source `source` offers prompt `name`.
pub fn prompt_name(source: &str, name: &str) -> String {
    canonical_name(source, name)
}

/// The source among `sources` and its own prompt name, for an offered name.
pub fn split_prompt_name<'a, 'n>(
    offered: &'n str,
    sources: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, &'n str)> {
    sources
        .into_iter()
        .find_map(|s| Some((s, offered.strip_prefix(canonical_name(s, "").as_str())?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris_round_trip_and_never_collide() {
        let sources = ["fs", "fs2", "my src", "a_b"];
        for s in sources {
            for uri in ["file:///etc/hosts", "demo://resource/static/document/1", ""] {
                let offered = resource_uri(s, uri);
                assert!(offered.starts_with(SCHEME), "{offered}");
                assert_eq!(split_resource_uri(&offered, sources), Some((s, uri)));
            }
        }
        assert_eq!(resource_uri("my src", "x"), "toolsearch://my%20src/x");
        // "fs" must not claim "fs2"'s resources.
        assert_eq!(
            split_resource_uri("toolsearch://fs2/x", ["fs", "fs2"]),
            Some(("fs2", "x"))
        );
        assert_eq!(split_resource_uri("file:///x", sources), None);
        assert_eq!(split_resource_uri("toolsearch://other/x", sources), None);
    }

    #[test]
    fn prompt_names_round_trip_and_never_collide() {
        // With plain concatenation "a_" + "_b" and "a" + "__b" would be the same name.
        let sources = ["a", "a_", "everything", "my_tools"];
        for s in sources {
            for p in ["simple-prompt", "_b", "x__y"] {
                let offered = prompt_name(s, p);
                assert_eq!(
                    split_prompt_name(&offered, sources),
                    Some((s, p)),
                    "{offered}"
                );
            }
        }
        assert_eq!(
            prompt_name("everything", "simple-prompt"),
            "everything__simple-prompt"
        );
        assert_ne!(prompt_name("a_", "b"), prompt_name("a", "_b"));
        assert_eq!(split_prompt_name("nobody__x", sources), None);
    }
}
