//! The searchable text of an input schema: property names and `description` strings.
//!
//! Read from the physical schema tree without resolving `$ref`. The walk enters exactly the
//! keywords docs/reference.md lists; `patternProperties` keys are patterns, not names, so they are
//! walked into but not collected as property names. Defaults, examples, enum values and titles
//! are never collected.

use serde_json::{Map, Value};

/// Keywords whose value is a map of name → subschema.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is a subschema, or (for `items`, old-style tuples) a list of them.
const SCHEMA_VALUES: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Keywords whose value is a list of subschemas.
const SCHEMA_LISTS: &[&str] = &["prefixItems", "allOf", "anyOf", "oneOf"];

/// Property names and description strings found in a schema, in walk order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SchemaText {
    /// Keys of every `properties` map in the tree.
    pub property_names: Vec<String>,
    /// Every string-valued `description` of a schema node in the tree, the root included.
    pub descriptions: Vec<String>,
}

/// Walks `schema` (iteratively, so no input depth can overflow the stack).
pub fn schema_text(schema: &Map<String, Value>) -> SchemaText {
    let mut out = SchemaText::default();
    let mut stack: Vec<&Map<String, Value>> = vec![schema];
    while let Some(node) = stack.pop() {
        if let Some(Value::String(d)) = node.get("description") {
            out.descriptions.push(d.clone());
        }
        for key in SCHEMA_MAPS {
            if let Some(Value::Object(map)) = node.get(*key) {
                for (name, sub) in map {
                    if *key == "properties" {
                        out.property_names.push(name.clone());
                    }
                    if let Value::Object(sub) = sub {
                        stack.push(sub);
                    }
                }
            }
        }
        for key in SCHEMA_VALUES {
            match node.get(*key) {
                Some(Value::Object(sub)) => stack.push(sub),
                Some(Value::Array(list)) if *key == "items" => push_all(&mut stack, list),
                _ => {}
            }
        }
        for key in SCHEMA_LISTS {
            if let Some(Value::Array(list)) = node.get(*key) {
                push_all(&mut stack, list);
            }
        }
    }
    out
}

fn push_all<'a>(stack: &mut Vec<&'a Map<String, Value>>, list: &'a [Value]) {
    for v in list {
        if let Value::Object(sub) = v {
            stack.push(sub);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn walk(v: Value) -> SchemaText {
        let Value::Object(m) = v else {
            panic!("object")
        };
        let mut t = schema_text(&m);
        t.property_names.sort();
        t.descriptions.sort();
        t
    }

    #[test]
    fn walks_every_listed_keyword_and_nothing_else() {
        let t = walk(json!({
            "description": "root",
            "properties": {
                "a": {"description": "pa", "default": "dflt", "examples": ["ex"], "enum": ["en"],
                      "title": "ttl", "items": {"properties": {"inner": {}}}},
                "b": {"anyOf": [{"description": "any"}], "$ref": "#/$defs/x"}
            },
            "patternProperties": {"^x-": {"description": "pat"}},
            "$defs": {"x": {"properties": {"defd": {}}}},
            "definitions": {"y": {"description": "old defs"}},
            "dependentSchemas": {"a": {"description": "dep"}},
            "prefixItems": [{"description": "prefix"}],
            "additionalProperties": {"description": "addl"},
            "allOf": [{"description": "all"}], "oneOf": [{"description": "one"}],
            "not": {"description": "not"},
            "if": {"description": "if"}, "then": {"description": "then"}, "else": {"description": "else"},
            "contains": {"description": "contains"}, "propertyNames": {"description": "pn"},
            "unevaluatedProperties": {"description": "up"}, "unevaluatedItems": {"description": "ui"},
            "items": [{"description": "tuple"}],
            "x-other": {"description": "never"},
            "default": {"description": "never"}
        }));
        assert_eq!(t.property_names, ["a", "b", "defd", "inner"]);
        assert_eq!(
            t.descriptions,
            [
                "addl", "all", "any", "contains", "dep", "else", "if", "not", "old defs", "one",
                "pa", "pat", "pn", "prefix", "root", "then", "tuple", "ui", "up"
            ]
        );
    }

    #[test]
    fn refs_are_not_resolved_and_deep_trees_are_walked() {
        let t = walk(json!({"$ref": "#/$defs/a", "$defs": {}}));
        assert!(t.property_names.is_empty() && t.descriptions.is_empty());
        let mut deep = json!({"description": "leaf"});
        for _ in 0..200 {
            deep = json!({"not": deep});
        }
        assert_eq!(walk(deep).descriptions, ["leaf"]);
    }
}
