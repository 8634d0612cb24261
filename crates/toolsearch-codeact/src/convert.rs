//! Values across the sandbox boundary: JSON into Python objects (inputs, host replies) and
//! Python objects into JSON (results, host call arguments).
//!
//! Into JSON: `None`, booleans, numbers, strings, lists and dicts map as `json.dumps` maps
//! them (tuples and sets become arrays; dict keys that are numbers, booleans or `None` become
//! their JSON text; a non-finite float becomes `null`; an integer too large for 64 bits
//! becomes its decimal string). Anything else — bytes, dates, functions, objects — becomes its
//! Python `repr()` as a string. Nesting deeper than [`MAX_DEPTH`] is an error.

use monty_types::{DictPairs, MontyObject};
use num_bigint::BigInt;
use serde_json::{Map, Number, Value};

/// Deepest nesting converted into JSON.
pub(crate) const MAX_DEPTH: usize = 128;

/// A JSON value as a Python object.
pub(crate) fn to_python(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                MontyObject::Int(i)
            } else if let Some(u) = n.as_u64() {
                MontyObject::BigInt(BigInt::from(u))
            } else {
                MontyObject::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => MontyObject::List(items.iter().map(to_python).collect()),
        Value::Object(map) => dict(map),
    }
}

/// A JSON object as a Python dict with string keys.
pub(crate) fn dict(map: &Map<String, Value>) -> MontyObject {
    let pairs: Vec<(MontyObject, MontyObject)> = map
        .iter()
        .map(|(k, v)| (MontyObject::String(k.clone()), to_python(v)))
        .collect();
    MontyObject::Dict(DictPairs::from(pairs))
}

/// Why a Python value has no JSON form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooDeep;

/// A Python value as JSON.
pub(crate) fn to_json(obj: &MontyObject) -> Result<Value, TooDeep> {
    to_json_at(obj, 0)
}

fn to_json_at(obj: &MontyObject, depth: usize) -> Result<Value, TooDeep> {
    if depth > MAX_DEPTH {
        return Err(TooDeep);
    }
    let seq = |items: &[MontyObject]| -> Result<Value, TooDeep> {
        items
            .iter()
            .map(|i| to_json_at(i, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    };
    Ok(match obj {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => Value::from(*i),
        MontyObject::BigInt(b) => match i64::try_from(b) {
            Ok(i) => Value::from(i),
            Err(_) => match u64::try_from(b) {
                Ok(u) => Value::from(u),
                Err(_) => Value::String(b.to_string()),
            },
        },
        MontyObject::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items)
        | MontyObject::Tuple(items)
        | MontyObject::Set(items)
        | MontyObject::FrozenSet(items) => seq(items)?,
        MontyObject::NamedTuple { values, .. } => seq(values)?,
        MontyObject::Dict(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs.iter() {
                map.insert(key_text(k), to_json_at(v, depth + 1)?);
            }
            Value::Object(map)
        }
        other => Value::String(other.py_repr()),
    })
}

/// A dict key as a JSON object key (as `json.dumps` writes it where it can).
fn key_text(key: &MontyObject) -> String {
    match key {
        MontyObject::String(s) => s.clone(),
        MontyObject::None => "null".to_owned(),
        MontyObject::Bool(b) => b.to_string(),
        MontyObject::Int(i) => i.to_string(),
        MontyObject::BigInt(b) => b.to_string(),
        MontyObject::Float(f) => {
            Number::from_f64(*f).map_or_else(|| "NaN".to_owned(), |n| n.to_string())
        }
        other => other.py_repr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_python_values() {
        let v = json!({"a": [1, 2.5, "x", null, true], "b": {"c": 18446744073709551615u64}});
        assert_eq!(to_json(&to_python(&v)), Ok(v));
    }

    #[test]
    fn python_only_values_take_their_json_form() {
        let obj = MontyObject::Dict(DictPairs::from(vec![
            (
                MontyObject::Int(1),
                MontyObject::Tuple(vec![MontyObject::Bool(false)]),
            ),
            (MontyObject::None, MontyObject::Float(f64::INFINITY)),
            (
                MontyObject::String("big".into()),
                MontyObject::BigInt(BigInt::from(u64::MAX) * 10),
            ),
            (
                MontyObject::String("b".into()),
                MontyObject::Bytes(b"hi".to_vec()),
            ),
        ]));
        assert_eq!(
            to_json(&obj),
            Ok(json!({"1": [false], "null": null, "big": "184467440737095516150", "b": "b'hi'"}))
        );
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let mut v = MontyObject::None;
        for _ in 0..=MAX_DEPTH {
            v = MontyObject::List(vec![v]);
        }
        assert_eq!(to_json(&v), Err(TooDeep));
        let MontyObject::List(mut inner) = v else {
            unreachable!()
        };
        assert!(to_json(&inner.remove(0)).is_ok());
    }
}
