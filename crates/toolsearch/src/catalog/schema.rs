//! A tool's JSON Schema kept as compact JSON text. A parsed tree (`serde_json`'s ordered maps)
//! costs several times its text, and most tools of a large catalog are never described or
//! called; the tree is made when one is needed (describing, validating, listing) and dropped.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A JSON Schema object as compact JSON text (key order kept).
#[derive(Clone)]
pub struct Schema(Box<RawValue>);

impl Schema {
    /// The schema of `map`.
    pub fn new(map: &Map<String, Value>) -> Self {
        // A map of JSON values always serializes, and its text is valid JSON.
        let text = serde_json::to_string(map).unwrap_or_else(|_| "{}".to_owned());
        Self(RawValue::from_string(text).unwrap_or_else(|_| empty()))
    }

    /// The schema as a tree.
    pub fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }

    /// The schema as compact JSON text.
    pub fn json(&self) -> &RawValue {
        &self.0
    }
}

fn empty() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("{{}} is valid JSON"))
}

impl From<Map<String, Value>> for Schema {
    fn from(map: Map<String, Value>) -> Self {
        Self::new(&map)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_is_compact_keeps_key_order_and_round_trips() {
        let Value::Object(map) =
            json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {}}})
        else {
            unreachable!()
        };
        let s = Schema::new(&map);
        assert_eq!(
            s.json().get(),
            r#"{"type":"object","properties":{"b":{"type":"string"},"a":{}}}"#
        );
        assert_eq!(s.to_map(), map);
        assert_eq!(serde_json::to_value(&s).expect("json"), Value::Object(map));
    }
}
