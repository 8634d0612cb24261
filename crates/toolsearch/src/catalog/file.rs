//! The static catalog file (JSON): groups of MCP-shaped tools plus direct tools.
//!
//! Every problem is reported with its location (file, group, tool), all of them at once.
//! Catalog and group objects accept only their documented keys and `x-` extensions; tool
//! objects accept any further key (MCP tools carry `title`, `annotations`, `_meta`, …), which
//! is ignored.

use std::path::Path;

use serde_json::{Map, Value};

use super::{GroupSpec, SourceTools, ToolDef, empty_object_schema};
use crate::problem::Problems;

/// A parsed catalog file.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct CatalogFile {
    /// Groups in file order: spec, instructions, tools.
    pub groups: Vec<(GroupSpec, Vec<String>, Vec<ToolDef>)>,
    /// Top-level (direct) tools.
    pub direct: Vec<ToolDef>,
}

impl CatalogFile {
    /// The file as sources named `source`: one per group entry, plus one for its direct tools.
    /// With `all_direct`, every tool (grouped ones too) is presented direct.
    pub fn into_sources(self, source: &str, all_direct: bool) -> Vec<SourceTools> {
        let mut out = Vec::new();
        let mut direct = Vec::new();
        for (group, instructions, tools) in self.groups {
            if all_direct {
                direct.extend(tools);
            } else {
                out.push(
                    SourceTools::grouped(source, group, tools).with_instructions(instructions),
                );
            }
        }
        direct.extend(self.direct);
        if !direct.is_empty() {
            out.push(SourceTools::direct(source, direct));
        }
        out
    }
}

/// Why a catalog file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogFileError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{file}: not valid JSON: {source}")]
    Json {
        /// The file.
        file: String,
        /// The cause (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The JSON does not describe a catalog.
    #[error("{}", join_problems(.file, .problems))]
    Invalid {
        /// The file.
        file: String,
        /// Every problem, each with its place in the file (empty: the file as a whole).
        problems: Problems,
    },
}

fn join_problems(file: &str, problems: &Problems) -> String {
    problems
        .iter()
        .map(|p| format!("{file}: {p}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads and parses a catalog file.
///
/// The fast pass borrows the tools' schemas from the text rather than copying them.
pub fn load_catalog_file(path: &Path) -> Result<CatalogFile, CatalogFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| CatalogFileError::Io {
        file: file.clone(),
        source,
    })?;
    parse_catalog(&file, &text)
}

/// Parses catalog JSON; `file` names it in errors.
///
/// A fast typed pass reads a regular catalog (tool schemas kept as raw JSON and parsed into maps
/// on all cores); anything it does not accept is read again by the thorough pass, which reports
/// every problem with its location.
pub fn parse_catalog(file: &str, text: &str) -> Result<CatalogFile, CatalogFileError> {
    if let Some(catalog) = fast::parse(text) {
        return Ok(catalog);
    }
    parse_thorough(file, text)
}

/// The thorough pass: walks the JSON value and reports every problem.
fn parse_thorough(file: &str, text: &str) -> Result<CatalogFile, CatalogFileError> {
    let mut value: Value = serde_json::from_str(text).map_err(|source| CatalogFileError::Json {
        file: file.to_owned(),
        source,
    })?;
    let mut p = Problems::new();
    let catalog = read_catalog(&mut value, &mut p);
    p.or_ok(catalog)
        .map_err(|problems| CatalogFileError::Invalid {
            file: file.to_owned(),
            problems,
        })
}

/// The fast path: serde structs, strict where the thorough pass is strict.
mod fast {
    use std::marker::PhantomData;

    use serde::de::value::MapAccessDeserializer;
    use serde::de::{MapAccess, Visitor};
    use serde::{Deserialize, Deserializer};
    use serde_json::value::RawValue;
    use serde_json::{Map, Value};

    /// A struct read only from a JSON object (derived impls also take arrays).
    struct MapOnly<T>(T);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct ObjectVisitor<T>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
                type Value = T;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                    T::deserialize(MapAccessDeserializer::new(map))
                }
            }
            d.deserialize_map(ObjectVisitor(PhantomData)).map(MapOnly)
        }
    }

    use super::{CatalogFile, GroupSpec, ToolDef, empty_object_schema};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Catalog<'a> {
        #[serde(default, borrow)]
        groups: Option<Vec<MapOnly<Group<'a>>>>,
        #[serde(default, borrow)]
        tools: Option<Vec<MapOnly<Tool<'a>>>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Group<'a> {
        name: String,
        description: String,
        #[serde(default)]
        instructions: Option<Vec<String>>,
        #[serde(default, borrow)]
        tools: Option<Vec<MapOnly<Tool<'a>>>>,
    }

    /// Schemas are borrowed from the catalog text (not copied) until they are parsed.
    #[derive(Deserialize)]
    struct Tool<'a> {
        name: String,
        #[serde(default)]
        description: Option<String>,
        #[serde(default, borrow, rename = "inputSchema")]
        input_schema: Option<&'a RawValue>,
        #[serde(default, borrow, rename = "outputSchema")]
        output_schema: Option<&'a RawValue>,
        #[serde(default, rename = "x-toolsearch-external")]
        external: bool,
    }

    /// A schema: absent or `null` is `None`, an object is `Some`, anything else is irregular.
    fn schema(raw: Option<&RawValue>) -> Result<Option<Map<String, Value>>, ()> {
        let Some(raw) = raw else { return Ok(None) };
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Null) => Ok(None),
            Ok(Value::Object(m)) => Ok(Some(m)),
            _ => Err(()),
        }
    }

    fn tool(MapOnly(t): MapOnly<Tool<'_>>) -> Result<ToolDef, ()> {
        let input = schema(t.input_schema)?.unwrap_or_else(empty_object_schema);
        let mut def = ToolDef::new(t.name, t.description.unwrap_or_default())
            .with_input_schema(input)
            .with_external(t.external);
        if let Some(o) = schema(t.output_schema)? {
            def = def.with_output_schema(o);
        }
        Ok(def)
    }

    pub(super) fn parse(text: &str) -> Option<CatalogFile> {
        let MapOnly(c): MapOnly<Catalog<'_>> = serde_json::from_str(text).ok()?;
        convert(c)
    }

    fn convert(c: Catalog<'_>) -> Option<CatalogFile> {
        // Flatten every tool (grouped ones first), convert on all cores, then regroup.
        let groups = c.groups.unwrap_or_default();
        let mut sizes = Vec::with_capacity(groups.len());
        let mut specs = Vec::with_capacity(groups.len());
        let mut raw_tools = Vec::new();
        for MapOnly(g) in groups {
            let tools = g.tools.unwrap_or_default();
            sizes.push(tools.len());
            raw_tools.extend(tools);
            specs.push((
                GroupSpec::new(g.name, g.description),
                g.instructions.unwrap_or_default(),
            ));
        }
        let direct_raw = c.tools.unwrap_or_default();
        let grouped_count = raw_tools.len();
        raw_tools.extend(direct_raw);
        let mut tools = crate::parallel::map_owned(raw_tools, tool).into_iter();
        let mut out = CatalogFile::default();
        for ((spec, instructions), n) in specs.into_iter().zip(sizes) {
            let list: Result<Vec<ToolDef>, ()> = tools.by_ref().take(n).collect();
            out.groups.push((spec, instructions, list.ok()?));
        }
        debug_assert!(out.groups.iter().map(|g| g.2.len()).sum::<usize>() == grouped_count);
        out.direct = tools.collect::<Result<Vec<_>, ()>>().ok()?;
        Some(out)
    }
}

/// A problem at `loc` for each key of `obj` not in `known` (an `x-` key is an extension).
fn unknown_keys(p: &mut Problems, loc: &str, obj: &Map<String, Value>, known: &[&str]) {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) && !key.starts_with("x-") {
            p.add(
                loc,
                format!(
                    "unknown key {key:?} (expected one of: {})",
                    known.join(", ")
                ),
            );
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn read_catalog(value: &mut Value, p: &mut Problems) -> CatalogFile {
    let mut out = CatalogFile::default();
    let Value::Object(root) = value else {
        p.add(
            "",
            format!("a catalog is a JSON object, not {}", type_name(value)),
        );
        return out;
    };
    unknown_keys(p, "", root, &["groups", "tools"]);
    for (i, g) in array_at(root, "groups", "", p).iter_mut().enumerate() {
        if let Some(group) = read_group(i, g, p) {
            out.groups.push(group);
        }
    }
    for (i, t) in array_at(root, "tools", "", p).iter_mut().enumerate() {
        if let Some(tool) = read_tool(&format!("tools[{i}]"), t, p) {
            out.direct.push(tool);
        }
    }
    out
}

fn array_at<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
    loc: &str,
    p: &mut Problems,
) -> &'a mut [Value] {
    match obj.get_mut(key) {
        None | Some(Value::Null) => &mut [],
        Some(Value::Array(a)) => a,
        Some(other) => {
            p.add(
                loc,
                format!("{key:?} must be an array, not {}", type_name(other)),
            );
            &mut []
        }
    }
}

fn read_group(
    i: usize,
    g: &mut Value,
    p: &mut Problems,
) -> Option<(GroupSpec, Vec<String>, Vec<ToolDef>)> {
    let kind = type_name(g);
    let Value::Object(obj) = g else {
        p.add(
            format!("groups[{i}]"),
            format!("a group is an object, not {kind}"),
        );
        return None;
    };
    let name = obj.get("name").and_then(Value::as_str);
    let loc = match name {
        Some(n) => format!("groups[{i}] ({n:?})"),
        None => format!("groups[{i}]"),
    };
    unknown_keys(
        p,
        &loc,
        obj,
        &["name", "description", "instructions", "tools"],
    );
    let name = required_string(obj, "name", &loc, p);
    let description = required_string(obj, "description", &loc, p);
    let mut instructions = Vec::new();
    match obj.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (j, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => instructions.push(s.clone()),
                    other => p.add(
                        &loc,
                        format!(
                            "instructions[{j}] must be a string, not {}",
                            type_name(other)
                        ),
                    ),
                }
            }
        }
        Some(other) => p.add(
            &loc,
            format!(
                "\"instructions\" must be an array of strings, not {}",
                type_name(other)
            ),
        ),
    }
    let mut tools = Vec::new();
    for (j, t) in array_at(obj, "tools", &loc, p).iter_mut().enumerate() {
        if let Some(tool) = read_tool(&format!("{loc}: tools[{j}]"), t, p) {
            tools.push(tool);
        }
    }
    Some((GroupSpec::new(name?, description?), instructions, tools))
}

fn required_string(
    obj: &Map<String, Value>,
    key: &str,
    loc: &str,
    p: &mut Problems,
) -> Option<String> {
    match obj.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        None => {
            p.add(loc, format!("missing {key:?}"));
            None
        }
        Some(other) => {
            p.add(
                loc,
                format!("{key:?} must be a string, not {}", type_name(other)),
            );
            None
        }
    }
}

/// The key that marks a tool the host runs (see [`ToolDef::external`]).
const EXTERNAL_KEY: &str = "x-toolsearch-external";

fn read_tool(loc: &str, t: &mut Value, p: &mut Problems) -> Option<ToolDef> {
    let kind = type_name(t);
    let Value::Object(obj) = t else {
        p.add(loc, format!("a tool is an object, not {kind}"));
        return None;
    };
    let loc = match obj.get("name").and_then(Value::as_str) {
        Some(n) => format!("{loc} ({n:?})"),
        None => loc.to_owned(),
    };
    let before = p.len();
    let name = required_string(obj, "name", &loc, p);
    let description = match obj.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            p.add(
                &loc,
                format!("\"description\" must be a string, not {}", type_name(other)),
            );
            String::new()
        }
    };
    let input = schema_at(obj, "inputSchema", &loc, p).unwrap_or_else(empty_object_schema);
    let output = schema_at(obj, "outputSchema", &loc, p);
    let external = match obj.get(EXTERNAL_KEY) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            p.add(
                &loc,
                format!(
                    "{EXTERNAL_KEY:?} must be true or false, not {}",
                    type_name(other)
                ),
            );
            false
        }
    };
    let name = name?;
    if p.len() != before {
        return None;
    }
    let mut def = ToolDef::new(name, description)
        .with_input_schema(input)
        .with_external(external);
    if let Some(o) = output {
        def = def.with_output_schema(o);
    }
    Some(def)
}

fn schema_at(
    obj: &mut Map<String, Value>,
    key: &str,
    loc: &str,
    p: &mut Problems,
) -> Option<Map<String, Value>> {
    match obj.get_mut(key) {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(std::mem::take(m)),
        Some(other) => {
            p.add(
                loc,
                format!(
                    "{key:?} must be a JSON Schema object, not {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_design_example() {
        let c = parse_catalog(
            "c.json",
            r#"{"groups":[{"name":"crm","description":"Customer records",
                "instructions":["Use numeric IDs."],
                "tools":[{"name":"customer_name","description":"Look up.","title":"ignored",
                          "inputSchema":{"type":"object","properties":{"customer_id":{"type":"integer"}}},
                          "outputSchema":{"type":"object"}},
                         {"name":"bare"}]}],
                "tools":[{"name":"now","description":"time"}]}"#,
        )
        .expect("valid");
        let (g, instr, tools) = &c.groups[0];
        assert_eq!(
            (g.name.as_str(), instr.as_slice()),
            ("crm", &["Use numeric IDs.".to_owned()][..])
        );
        assert_eq!(tools[1].input_schema.to_map(), empty_object_schema());
        assert!(tools[0].output_schema.is_some());
        assert_eq!(c.direct[0].name, "now");
        let sources = c.into_sources("file", false);
        assert_eq!(sources.len(), 2);
    }

    #[test]
    fn reports_every_problem_with_its_location() {
        let err = parse_catalog(
            "bad.json",
            r#"{"groups":[{"name":"crm","tools":[{"name":"a","inputSchema":[]},{"description":"x"},3]},
                          {"name":5,"description":"d","extra":1}],
                "tools":{}, "other":1, "x-ok": true}"#,
        )
        .expect_err("invalid");
        let CatalogFileError::Invalid { problems, .. } = &err else {
            panic!("{err}")
        };
        let text = err.to_string();
        assert_eq!(problems.len(), 8, "{text}");
        for needle in [
            "bad.json: unknown key \"other\"",
            "bad.json: \"tools\" must be an array, not an object",
            "groups[0] (\"crm\"): missing \"description\"",
            "groups[0] (\"crm\"): tools[0] (\"a\"): \"inputSchema\" must be a JSON Schema object, not an array",
            "groups[0] (\"crm\"): tools[1]: missing \"name\"",
            "groups[0] (\"crm\"): tools[2]: a tool is an object, not a number",
            "groups[1]: \"name\" must be a string, not a number",
            "groups[1]: unknown key \"extra\"",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in {text}");
        }
    }

    #[test]
    fn fast_and_thorough_paths_agree() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/toolbench-stable/catalog.json"
        );
        // The shared data may be skipped outside CI (see `TOOLSEARCH_SKIP_SHARED_DATA`).
        let toolbench = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(_) if std::env::var("TOOLSEARCH_SKIP_SHARED_DATA").as_deref() == Ok("1") => {
                eprintln!("skipped the ToolBench catalog: {path} is missing");
                "{}".to_owned()
            }
            Err(e) => panic!("{path}: {e}"),
        };
        let valid = [
            r#"{"groups":[{"name":"g","description":"d","instructions":["i"],"tools":[{"name":"t","description":null,"inputSchema":null,"outputSchema":{"type":"object"},"title":"x"}]}],"tools":[{"name":"d"}]}"#,
            r#"{}"#,
            r#"{"groups":null,"tools":null}"#,
            toolbench.as_str(),
        ];
        for text in valid {
            let fast = fast::parse(text).expect("fast path takes a regular catalog");
            let thorough = parse_thorough("x", text).expect("valid");
            assert_eq!(fast, thorough);
        }
        // Irregular input is left to the thorough pass (which reports or accepts it).
        for text in [
            "[]",
            r#"{"groups":[["g","d"]]}"#,
            r#"{"groups":[{"name":"g","description":"d","tools":[["t"]]}]}"#,
            r#"{"groups":[{"name":"g","description":"d","tools":[{"name":"t","inputSchema":[]}]}]}"#,
            r#"{"x-note":1,"groups":[]}"#,
            r#"{"groups":[{"name":"g","description":"d","x-k":1}]}"#,
        ] {
            assert!(fast::parse(text).is_none(), "{text}");
        }
        assert!(parse_catalog("x", r#"{"x-note":1,"groups":[]}"#).is_ok());
        assert!(parse_catalog("x", r#"{"groups":[["g","d"]]}"#).is_err());
    }

    #[test]
    fn syntax_errors_name_the_file_and_line() {
        let err = parse_catalog("x.json", "{\n  \"groups\": [,]\n}").expect_err("bad json");
        let text = err.to_string();
        assert!(
            text.starts_with("x.json: not valid JSON") && text.contains("line 2"),
            "{text}"
        );
        assert!(parse_catalog("x.json", "[]").is_err());
    }
}
