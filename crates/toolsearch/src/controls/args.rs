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
/// `integer` does).
pub(crate) fn opt_uint(obj: &Map<String, Value>, key: &str) -> Result<Option<usize>, ToolError> {
    let bad = || {
        ToolError::invalid_request(
            &pointer(key),
            format!("{key} must be a non-negative integer"),
        )
    };
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
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
