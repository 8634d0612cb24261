//! `${env:NAME}` references in config values, resolved from the environment at connect time.
//! Values never appear in errors or logs; only the variable's name does.

/// A reference that cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {0} is not set (referenced as ${{env:{0}}})")]
pub struct MissingSecret(pub String);

/// Replaces every `${env:NAME}` in `value` with the variable's value.
pub fn expand(value: &str) -> Result<String, MissingSecret> {
    expand_with(value, |name| std::env::var(name).ok())
}

/// [`expand`] with a custom lookup (for tests).
pub fn expand_with(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, MissingSecret> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${env:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 6..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        out.push_str(&lookup(name).ok_or_else(|| MissingSecret(name.to_owned()))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether two secrets are equal, in time that does not depend on where they first differ
/// (their lengths may show).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_and_names_only_the_variable() {
        let env = |n: &str| (n == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(
            expand_with("Bearer ${env:TOKEN}", env),
            Ok("Bearer s3cret".into())
        );
        assert_eq!(expand_with("plain", env), Ok("plain".into()));
        let err = expand_with("${env:NOPE}", env).expect_err("missing");
        assert!(err.to_string().contains("NOPE") && !err.to_string().contains("s3cret"));
    }
}
