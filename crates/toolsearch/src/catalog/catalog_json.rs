//! A directory written back as a static catalog file (the format [`super::parse_catalog`]
//! reads): each group that has tools, with its description, its sources' instructions and its
//! tools, then the direct tools. Each tool keeps what its source listed it with (`title`, `annotations`, …).

use serde_json::{Map, Value, json};

use super::Directory;

/// `dir` as a catalog file's JSON.
pub fn catalog_json(dir: &Directory) -> Value {
    let groups: Vec<Value> = dir
        .groups()
        .iter()
        // A group without tools (its source unavailable) has nothing to write.
        .filter(|g| !g.tools.is_empty())
        .map(|g| {
            let tools = &dir.tools()[g.tools.start as usize..g.tools.end as usize];
            let mut instructions: Vec<&String> = Vec::new();
            for t in tools {
                for i in t.instructions.iter() {
                    if !instructions.contains(&i) {
                        instructions.push(i);
                    }
                }
            }
            let mut group = json!({"name": g.name, "description": g.description});
            if !instructions.is_empty() {
                group["instructions"] = json!(instructions);
            }
            group["tools"] = tools
                .iter()
                .map(|t| {
                    tool_json(
                        &t.name,
                        &t.description,
                        t.input_schema(),
                        t.output_schema(),
                        t.listed(),
                    )
                })
                .collect();
            group
        })
        .collect();
    let direct: Vec<Value> = dir
        .direct()
        .iter()
        .map(|d| {
            tool_json(
                &d.def.name,
                &d.def.description,
                d.def.input_schema.to_map(),
                d.def.output_schema.as_ref().map(|s| s.to_map()),
                d.def.listed.as_ref().map(|s| s.to_map()),
            )
        })
        .collect();
    json!({"groups": groups, "tools": direct})
}

/// One tool as the catalog file (and MCP's `tools/list`) shapes it.
fn tool_json(
    name: &str,
    description: &str,
    input: Map<String, Value>,
    output: Option<Map<String, Value>>,
    listed: Option<Map<String, Value>>,
) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(name));
    tool.insert("description".into(), json!(description));
    tool.insert("inputSchema".into(), Value::Object(input));
    if let Some(output) = output {
        tool.insert("outputSchema".into(), Value::Object(output));
    }
    for (key, value) in listed.into_iter().flatten() {
        tool.entry(key).or_insert(value);
    }
    Value::Object(tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{GroupSpec, SourceTools, ToolDef, parse_catalog};

    #[test]
    fn a_directory_written_as_a_catalog_reads_back_the_same() {
        let text = r#"{"groups": [{"name": "crm", "description": "Customer records",
            "instructions": ["Use numeric IDs."],
            "tools": [{"name": "find", "description": "Find a customer.",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
                "outputSchema": {"type": "object"}}]}],
            "tools": [{"name": "clock", "description": "The time."}]}"#;
        let file = parse_catalog("c.json", text).expect("valid");
        let dir = Directory::build(file.clone().into_sources("c.json", false)).expect("valid");
        let written = catalog_json(&dir);
        assert_eq!(written["groups"][0]["instructions"][0], "Use numeric IDs.");
        let again = parse_catalog("again.json", &written.to_string()).expect("reads back");
        assert_eq!(again, file);
        // What an MCP server listed a tool with is kept; no instructions, none written.
        let Value::Object(listed) = json!({"title": "Tee", "annotations": {"readOnlyHint": true}})
        else {
            unreachable!("an object")
        };
        let dir = Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("g", "d"),
            vec![ToolDef::new("t", "").with_listed(listed)],
        )])
        .expect("valid");
        let written = catalog_json(&dir);
        assert!(written["groups"][0].get("instructions").is_none());
        assert_eq!(written["groups"][0]["tools"][0]["title"], "Tee");
        assert_eq!(
            written["groups"][0]["tools"][0]["annotations"]["readOnlyHint"],
            true
        );
    }
}
