//! The searchable text of a schema read straight from its JSON text: only the nodes the walk
//! enters are kept (every other value is skipped as it is parsed, and a string without escapes
//! is borrowed from the text, not copied), then walked in the order a walk of the whole tree
//! takes (the tests hold it to that walk, `schema_text`, on every shared set's schemas). At 100k tools, building the whole tree of every
//! schema (a map per node, a string per key and value) cost a tenth of the load.
//!
//! Duplicate keys resolve as serde_json's map resolves them: the last value wins, in the place
//! of the first.

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashMap;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_VALUES, SchemaText};

/// Every keyword the walk enters, maps first, then values, then lists.
fn keyword(key: &str) -> Option<u8> {
    SCHEMA_MAPS
        .iter()
        .chain(SCHEMA_VALUES)
        .chain(SCHEMA_LISTS)
        .position(|k| *k == key)
        .map(|i| i as u8)
}

/// A schema node as far as the walk needs it.
#[derive(Default)]
struct Node<'a> {
    /// Its `description`, when that is a string.
    description: Option<Cow<'a, str>>,
    /// The walked keywords it holds, each once.
    keywords: Vec<(u8, Value<'a>)>,
}

/// A walked keyword's value.
enum Value<'a> {
    /// An object under a keyword whose value is a subschema.
    Schema(Node<'a>),
    /// An object under a keyword whose value maps names to subschemas.
    Named(Named<'a>),
    /// An array: its objects, as subschemas.
    Array(Vec<Node<'a>>),
    /// Anything else: nothing to walk.
    Other,
}

/// An object's members as names → subschemas (`None`: a member that is not an object), in the
/// order of their first appearance.
#[derive(Default)]
struct Named<'a> {
    members: Vec<(Cow<'a, str>, Option<Node<'a>>)>,
    /// Where each name sits in `members`, once there are enough to be worth a map.
    index: Option<FxHashMap<Cow<'a, str>, usize>>,
}

impl<'a> Named<'a> {
    /// Sets `name` (a repeated name keeps its first place and takes the last value).
    fn set(&mut self, name: Cow<'a, str>, node: Option<Node<'a>>) {
        const LINEAR: usize = 16;
        let at = match &self.index {
            Some(index) => index.get(&name).copied(),
            None => self.members.iter().position(|(n, _)| *n == name),
        };
        if let Some(i) = at {
            self.members[i].1 = node;
            return;
        }
        if let Some(index) = &mut self.index {
            index.insert(name.clone(), self.members.len());
        }
        self.members.push((name, node));
        if self.index.is_none() && self.members.len() > LINEAR {
            self.index = Some(
                self.members
                    .iter()
                    .enumerate()
                    .map(|(i, (n, _))| (n.clone(), i))
                    .collect(),
            );
        }
    }
}

impl<'a> Node<'a> {
    /// The value of keyword number `key` (see [`keyword`]).
    fn get(&self, key: usize) -> Option<&Value<'a>> {
        self.keywords
            .iter()
            .find(|(k, _)| usize::from(*k) == key)
            .map(|(_, v)| v)
    }

    fn set(&mut self, key: u8, value: Value<'a>) {
        match self.keywords.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.keywords.push((key, value)),
        }
    }
}

/// A string, borrowed when the text holds it without escapes.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// What a value is read as.
#[derive(Clone, Copy)]
enum Shape {
    /// A `description`: its text when a string, else nothing.
    Description,
    /// A subschema: a node when an object, else nothing.
    Schema,
    /// A walked keyword's value: kept by its shape, as the walk reads it.
    Keyword { named: bool },
}

/// The value read as `Shape` says.
enum Read<'a> {
    Text(Cow<'a, str>),
    Node(Node<'a>),
    Value(Value<'a>),
    Nothing,
}

impl<'de> DeserializeSeed<'de> for Shape {
    type Value = Read<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shape {
    type Value = Read<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(match self {
            Shape::Description => Read::Text(Cow::Borrowed(v)),
            Shape::Keyword { .. } => Read::Value(Value::Other),
            Shape::Schema => Read::Nothing,
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(match self {
            Shape::Description => Read::Text(Cow::Owned(v.to_owned())),
            Shape::Keyword { .. } => Read::Value(Value::Other),
            Shape::Schema => Read::Nothing,
        })
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(match self {
            Shape::Description => Read::Text(Cow::Owned(v)),
            Shape::Keyword { .. } => Read::Value(Value::Other),
            Shape::Schema => Read::Nothing,
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Shape::Keyword { .. } = self else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(self.scalar());
        };
        let mut nodes = Vec::new();
        while let Some(read) = seq.next_element_seed(Shape::Schema)? {
            if let Read::Node(node) = read {
                nodes.push(node);
            }
        }
        Ok(Read::Value(Value::Array(nodes)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match self {
            Shape::Description => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Read::Nothing)
            }
            Shape::Schema => Ok(Read::Node(node(map)?)),
            Shape::Keyword { named: true } => {
                let mut named = Named::default();
                while let Some(name) = map.next_key_seed(Text)? {
                    let sub = match map.next_value_seed(Shape::Schema)? {
                        Read::Node(n) => Some(n),
                        _ => None,
                    };
                    named.set(name, sub);
                }
                Ok(Read::Value(Value::Named(named)))
            }
            Shape::Keyword { named: false } => Ok(Read::Value(Value::Schema(node(map)?))),
        }
    }
}

impl Shape {
    /// What a scalar reads as.
    fn scalar<'a>(self) -> Read<'a> {
        match self {
            Shape::Keyword { .. } => Read::Value(Value::Other),
            _ => Read::Nothing,
        }
    }
}

/// Reads the members of an object as a schema node.
fn node<'de, A: MapAccess<'de>>(mut map: A) -> Result<Node<'de>, A::Error> {
    let mut node = Node::default();
    while let Some(key) = map.next_key_seed(Text)? {
        if key == "description" {
            node.description = match map.next_value_seed(Shape::Description)? {
                Read::Text(t) => Some(t),
                _ => None,
            };
            continue;
        }
        let Some(k) = keyword(&key) else {
            map.next_value::<IgnoredAny>()?;
            continue;
        };
        let named = (k as usize) < SCHEMA_MAPS.len();
        if let Read::Value(v) = map.next_value_seed(Shape::Keyword { named })? {
            node.set(k, v);
        }
    }
    Ok(node)
}

/// The property names and descriptions of the schema in `json` (empty when it is not a JSON
/// object, or nests deeper than the JSON reader allows).
pub(super) fn schema_text_of_json(json: &str) -> SchemaText {
    let mut de = serde_json::Deserializer::from_str(json);
    let Ok(Read::Node(root)) = Shape::Schema.deserialize(&mut de) else {
        return SchemaText::default();
    };
    if de.end().is_err() {
        return SchemaText::default();
    }
    let mut names: Vec<&str> = Vec::new();
    let mut descriptions: Vec<&str> = Vec::new();
    let mut stack: Vec<&Node<'_>> = vec![&root];
    while let Some(node) = stack.pop() {
        if let Some(d) = &node.description {
            descriptions.push(d);
        }
        // A keyword's number is its place in the three lists, one after the other.
        for (k, key) in SCHEMA_MAPS.iter().enumerate() {
            if let Some(Value::Named(named)) = node.get(k) {
                for (name, sub) in &named.members {
                    if *key == "properties" {
                        names.push(name);
                    }
                    if let Some(sub) = sub {
                        stack.push(sub);
                    }
                }
            }
        }
        for (k, key) in SCHEMA_VALUES.iter().enumerate() {
            match node.get(SCHEMA_MAPS.len() + k) {
                Some(Value::Schema(sub)) => stack.push(sub),
                Some(Value::Array(list)) if *key == "items" => stack.extend(list),
                _ => {}
            }
        }
        for k in 0..SCHEMA_LISTS.len() {
            if let Some(Value::Array(list)) = node.get(SCHEMA_MAPS.len() + SCHEMA_VALUES.len() + k)
            {
                stack.extend(list);
            }
        }
    }
    SchemaText::new(names, descriptions)
}
