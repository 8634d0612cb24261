//! Strict reading of control arguments: known keys only, typed, with JSON-pointer paths.

use serde_json::{Map, Value};

use crate::error::ToolError;

/// The argument object (`null` counts as `{}`), rejecting keys outside `allowed`.
pub(crate) fn object<'a>(
    control: &str,
    arguments: &'a Value,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, ToolError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let obj = match arguments {
        Value::Object(m) => m,
        Value::Null => EMPTY.get_or_init(Map::new),
        _ => {
            return Err(ToolError::invalid_request(
                "",
                format!("{control} takes a JSON object of arguments"),
            ));
        }
    };
    if let Some(bad) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ToolError::invalid_request(
            &pointer(bad),
            format!(
                "{control} has no argument {bad:?}; its arguments are: {}",
                allowed.join(", ")
            ),
        ));
    }
    Ok(obj)
}

/// A JSON pointer to a top-level key.
pub(crate) fn pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// An optional string (`null` = absent).
pub(crate) fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, ToolError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::invalid_request(
            &pointer(key),
            format!("{key} must be a string"),
        )),
    }
}

/// A required string.
pub(crate) fn req_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ToolError> {
    opt_str(obj, key)?
        .ok_or_else(|| ToolError::invalid_request(&pointer(key), format!("{key} is required")))
}

/// An optional non-negative integer (`null` = absent; `5.0` counts as 5, as JSON Schema's
/// `integer` does; a string of ASCII digits such as `"2"`, which models often send, counts as
/// that integer — no other string does).
pub(crate) fn opt_uint(obj: &Map<String, Value>, key: &str) -> Result<Option<usize>, ToolError> {
    let bad = || {
        ToolError::invalid_request(
            &pointer(key),
            format!("{key} must be a non-negative integer"),
        )
    };
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => digits(s)
            .map(|u| Some(usize::try_from(u).unwrap_or(usize::MAX)))
            .ok_or_else(bad),
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                return Ok(Some(usize::try_from(u).unwrap_or(usize::MAX)));
            }
            match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => {
                    Ok(Some(f as usize))
                }
                _ => Err(bad()),
            }
        }
        Some(_) => Err(bad()),
    }
}

/// The integer a string of ASCII digits spells (`"2"` → 2); `None` for anything else (empty,
/// a sign, spaces, a fraction, an exponent, or too large for a `u64`).
pub(crate) fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A JSON object given as its text (`"{\"a\": 1}"`), as models sometimes send an envelope's
/// arguments: the object it parses to, or `None` when it is not one.
pub(crate) fn object_text(s: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(s) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_strings_of_ascii_digits_are_integers() {
        assert_eq!(digits("2"), Some(2));
        assert_eq!(digits("0010"), Some(10));
        for bad in [
            "",
            " 2",
            "2 ",
            "+2",
            "-2",
            "2.0",
            "1e3",
            "٣",
            "99999999999999999999999",
        ] {
            assert_eq!(digits(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_an_objects_text_is_an_object() {
        assert_eq!(
            object_text(r#"{"a": 1}"#),
            Some(json!({"a": 1}).as_object().cloned().unwrap_or_default())
        );
        for bad in ["[1]", "1", "\"{}\"", "{", "null", ""] {
            assert_eq!(object_text(bad), None, "{bad:?}");
        }
    }
}
