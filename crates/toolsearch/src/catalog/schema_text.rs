//! The searchable text of an input schema: property names and `description` strings.
//!
//! Read from the physical schema tree without resolving `$ref`, as the JSON text is parsed
//! (`streamed`). The walk enters exactly the keywords docs/reference.md lists;
//! `patternProperties` keys are patterns, not names, so they are walked into but not collected
//! as property names. Defaults, examples, enum values and titles are never collected.

#[cfg(test)]
use serde_json::{Map, Value};

mod streamed;

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

/// Property names and description strings found in a schema, in walk order, kept as one string
/// and the end of each piece: a tool has a few of each, and at 100k tools a `String` per piece
/// (24 bytes before its text, one allocation each) cost more than the text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SchemaText {
    /// The property names, then the descriptions, back to back.
    text: Box<str>,
    /// Where each piece ends in `text`.
    ends: Box<[u32]>,
    /// How many of the pieces are property names.
    names: usize,
}

impl SchemaText {
    /// From the property names and the descriptions (pieces beyond 4 GiB of text are dropped).
    pub fn new<'a>(
        property_names: impl IntoIterator<Item = &'a str>,
        descriptions: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut text = String::new();
        let mut ends = Vec::new();
        let mut push = |piece: &str, text: &mut String| -> bool {
            let Ok(end) = u32::try_from(text.len() + piece.len()) else {
                return false;
            };
            text.push_str(piece);
            ends.push(end);
            true
        };
        let names = property_names
            .into_iter()
            .take_while(|p| push(p, &mut text))
            .count();
        for d in descriptions {
            if !push(d, &mut text) {
                break;
            }
        }
        Self {
            text: text.into(),
            ends: ends.into(),
            names,
        }
    }

    /// The property names and descriptions of the schema in `json` (compact or not), read as
    /// the text is parsed, without building its tree. Empty when `json` is not an object.
    pub fn from_json(json: &str) -> Self {
        streamed::schema_text_of_json(json)
    }

    /// Keys of every `properties` map in the tree.
    pub fn property_names(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        (0..self.names).map(|i| self.piece(i))
    }

    /// Every string-valued `description` of a schema node in the tree, the root included.
    pub fn descriptions(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        (self.names..self.ends.len()).map(|i| self.piece(i))
    }

    fn piece(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }
}

/// Walks `schema` (iteratively, so no input depth can overflow the stack): the reference that
/// [`SchemaText::from_json`] is tested against.
#[cfg(test)]
pub fn schema_text(schema: &Map<String, Value>) -> SchemaText {
    let mut names: Vec<&str> = Vec::new();
    let mut descriptions: Vec<&str> = Vec::new();
    let mut stack: Vec<&Map<String, Value>> = vec![schema];
    while let Some(node) = stack.pop() {
        if let Some(Value::String(d)) = node.get("description") {
            descriptions.push(d);
        }
        for key in SCHEMA_MAPS {
            if let Some(Value::Object(map)) = node.get(*key) {
                for (name, sub) in map {
                    if *key == "properties" {
                        names.push(name);
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
    SchemaText::new(names, descriptions)
}

#[cfg(test)]
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

    /// The property names and the descriptions, each sorted.
    fn walk(v: Value) -> (Vec<String>, Vec<String>) {
        let Value::Object(m) = v else {
            panic!("object")
        };
        let t = schema_text(&m);
        let mut names: Vec<String> = t.property_names().map(str::to_owned).collect();
        let mut descriptions: Vec<String> = t.descriptions().map(str::to_owned).collect();
        names.sort();
        descriptions.sort();
        (names, descriptions)
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
        assert_eq!(t.0, ["a", "b", "defd", "inner"]);
        assert_eq!(
            t.1,
            [
                "addl", "all", "any", "contains", "dep", "else", "if", "not", "old defs", "one",
                "pa", "pat", "pn", "prefix", "root", "then", "tuple", "ui", "up"
            ]
        );
    }

    #[test]
    fn refs_are_not_resolved_and_deep_trees_are_walked() {
        let t = walk(json!({"$ref": "#/$defs/a", "$defs": {}}));
        assert!(t.0.is_empty() && t.1.is_empty());
        let mut deep = json!({"description": "leaf"});
        for _ in 0..200 {
            deep = json!({"not": deep});
        }
        assert_eq!(walk(deep).1, ["leaf"]);
    }

    /// Both readers on `v`: the pieces of each, in order (not sorted: order is part of the
    /// text a dense encoder reads).
    fn both(v: &Value) -> (SchemaText, SchemaText) {
        let tree = match v {
            Value::Object(m) => schema_text(m),
            _ => SchemaText::default(),
        };
        (tree, SchemaText::from_json(&v.to_string()))
    }

    #[test]
    fn the_text_read_as_parsed_is_the_trees_in_the_same_order() {
        for v in [
            json!({"description": "root", "properties": {"z": {"description": "zd"}, "a": {"items": [{"description": "t0"}, 3, {"properties": {"in": {}}}]}},
                   "$defs": {"d": {"anyOf": [{"description": "any"}, true]}}, "not": {"description": "not"},
                   "default": {"description": "never"}, "enum": [{"description": "never"}], "examples": [[{"properties": {"never": {}}}]]}),
            json!({"properties": {"a": 1, "b": null, "c": "s", "d": [], "e": {"description": 7}}, "items": "x", "allOf": {"description": "not a list"}, "prefixItems": [[{"description": "nested list"}]]}),
            json!({"description": ["not", "text"], "properties": [], "not": [], "if": {"then": {"description": "deep"}}}),
            json!({"description": "escaped \"quote\" and \u{e9}", "properties": {"caf\u{e9}": {}, "tab\tname": {}}}),
            json!({}),
            json!([{"description": "an array is no schema"}]),
            json!("text"),
        ] {
            let (tree, read) = both(&v);
            assert_eq!(read, tree, "{v}");
        }
        // Repeated keys: the last value wins, in the place of the first (serde_json's map).
        let text = r#"{"properties": {"a": {"description": "first"}, "b": {}, "a": {"description": "last"}},
                       "description": "one", "description": 2, "not": {"description": "n1"}, "not": {"description": "n2"}}"#;
        let tree: Map<String, Value> = serde_json::from_str(text).expect("json");
        let read = SchemaText::from_json(text);
        assert_eq!(read, schema_text(&tree));
        assert_eq!(read.property_names().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(read.descriptions().collect::<Vec<_>>(), ["n2", "last"]);
        // Many members (past the linear look-up) with a repeat far apart.
        let mut many: Vec<String> = (0..40)
            .map(|i| format!("\"p{i}\": {{\"description\": \"d{i}\"}}"))
            .collect();
        many.push("\"p3\": {\"description\": \"again\"}".to_owned());
        let text = format!("{{\"properties\": {{{}}}}}", many.join(", "));
        let tree: Map<String, Value> = serde_json::from_str(&text).expect("json");
        assert_eq!(SchemaText::from_json(&text), schema_text(&tree));
        assert!(
            SchemaText::from_json(&text)
                .descriptions()
                .any(|d| d == "again")
        );
        // Not JSON, or not one value: nothing.
        for bad in ["", "{", "{} {}", "nul"] {
            assert_eq!(SchemaText::from_json(bad), SchemaText::default(), "{bad:?}");
        }
    }

    #[test]
    fn the_text_read_as_parsed_agrees_on_every_shared_sets_schemas() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");
        let Ok(sets) = std::fs::read_dir(dir) else {
            // The shared data may be skipped outside CI (see `TOOLSEARCH_SKIP_SHARED_DATA`).
            assert_eq!(
                std::env::var("TOOLSEARCH_SKIP_SHARED_DATA").as_deref(),
                Ok("1"),
                "{dir} is missing"
            );
            return;
        };
        let mut schemas = 0;
        for set in sets {
            let path = set.expect("entry").path().join("catalog.json");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let catalog: Value = serde_json::from_str(&text).expect("a catalog is JSON");
            let groups = catalog["groups"].as_array().into_iter().flatten();
            for tool in groups.flat_map(|g| g["tools"].as_array().into_iter().flatten()) {
                let schema = &tool["inputSchema"];
                let (tree, read) = both(schema);
                assert_eq!(read, tree, "{}: {}", path.display(), tool["name"]);
                schemas += 1;
            }
        }
        assert!(schemas > 8_000, "{schemas} schemas read");
    }

    #[test]
    fn pieces_keep_their_order_and_bounds() {
        let t = SchemaText::new(["b", "", "aé"], ["x y", ""]);
        assert_eq!(t.property_names().collect::<Vec<_>>(), ["b", "", "aé"]);
        assert_eq!(t.descriptions().collect::<Vec<_>>(), ["x y", ""]);
        assert_eq!(t.property_names().len(), 3);
        let empty = SchemaText::default();
        assert_eq!(empty.property_names().len() + empty.descriptions().len(), 0);
        let only = SchemaText::new([], ["d"]);
        assert_eq!(only.property_names().count(), 0);
        assert_eq!(only.descriptions().collect::<Vec<_>>(), ["d"]);
    }
}
