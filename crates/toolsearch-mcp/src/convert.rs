//! Conversions between rmcp's wire types and the engine's.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Tool};
use serde::Deserialize;
use serde_json::{Map, Value};
use toolsearch::{CallResult, Schema, ToolDef, ToolDefinition};

/// An upstream tool as a catalog tool, with `unmodelled`: the members it was listed with that
/// rmcp's `Tool` has no field for (`execution`, ...).
pub fn tool_def(tool: &Tool, unmodelled: Option<Map<String, Value>>) -> ToolDef {
    let mut def = ToolDef::new(
        tool.name.to_string(),
        tool.description.as_deref().unwrap_or_default(),
    );
    // Straight to the schema's text, without a copy of the tree.
    def.input_schema = Schema::new(&tool.input_schema);
    def.output_schema = tool.output_schema.as_deref().map(Schema::new);
    let mut listed = listed_fields(tool);
    listed.extend(unmodelled.unwrap_or_default());
    def.with_listed(listed)
}

/// The fields of an upstream tool beside its name, description and schemas, as it listed them
/// (what rmcp's `Tool` carries: `title`, `annotations`, `icons`, `_meta`).
fn listed_fields(tool: &Tool) -> Map<String, Value> {
    let mut out = Map::new();
    let mut put = |key: &str, value: Result<Value, serde_json::Error>| {
        if let Ok(v) = value {
            out.insert(key.to_owned(), v);
        }
    };
    if let Some(title) = &tool.title {
        put("title", Ok(Value::String(title.clone())));
    }
    if let Some(a) = &tool.annotations {
        put("annotations", serde_json::to_value(a));
    }
    if let Some(icons) = &tool.icons {
        put("icons", serde_json::to_value(icons));
    }
    if let Some(meta) = &tool.meta {
        put("_meta", serde_json::to_value(meta));
    }
    out
}

/// A model-facing definition as an rmcp tool.
pub fn mcp_tool(def: ToolDefinition) -> Tool {
    let schema = match def.input_schema {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut tool = Tool::new(def.name, def.description, Arc::new(schema));
    if let Some(Value::Object(out)) = def.output_schema {
        tool.output_schema = Some(Arc::new(out));
    }
    if let Some(listed) = def.listed {
        tool.title = field(&listed, "title");
        tool.annotations = field(&listed, "annotations");
        tool.icons = field(&listed, "icons");
        tool.meta = field(&listed, "_meta");
    }
    tool
}

/// Field `key` of a tool's listed fields, read as rmcp's type for it (`None` when absent or
/// not of that shape).
fn field<T: serde::de::DeserializeOwned>(listed: &Map<String, Value>, key: &str) -> Option<T> {
    T::deserialize(listed.get(key)?).ok()
}

/// An upstream result as the engine's, field for field (content blocks kept as JSON).
pub fn call_result(result: CallToolResult) -> CallResult {
    let content = result.content.into_iter().map(block_value).collect();
    let meta = result.meta.and_then(|m| serde_json::to_value(m).ok());
    CallResult::new(
        content,
        result.structured_content,
        result.is_error.unwrap_or(false),
    )
    .with_meta(meta)
}

/// A content block as JSON: a plain text block (nearly every block a tool returns) built
/// directly, its text moved; any other through its `Serialize`, which gives the same JSON.
fn block_value(block: ContentBlock) -> Value {
    match block {
        ContentBlock::Text(t) if t.meta.is_none() && t.annotations.is_none() => {
            let mut m = Map::with_capacity(2);
            m.insert("type".to_owned(), Value::String("text".to_owned()));
            m.insert("text".to_owned(), Value::String(t.text));
            Value::Object(m)
        }
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// A content block from JSON: a plain text block read directly, its text moved; any other
/// through its `Deserialize`, which reads the same block.
fn json_block(value: Value) -> Result<ContentBlock, serde_json::Error> {
    match value {
        Value::Object(mut m)
            if m.len() == 2
                && m.get("type").and_then(Value::as_str) == Some("text")
                && m.get("text").is_some_and(Value::is_string) =>
        {
            match m.remove("text") {
                Some(Value::String(text)) => Ok(ContentBlock::text(text)),
                _ => unreachable!("checked to be a string above"),
            }
        }
        other => ContentBlock::deserialize(other),
    }
}

/// The engine's result as rmcp's. It carries `resultType: "complete"`, which protocol
/// 2026-07-28 requires (clients on it reject a result without one); rmcp's server handler
/// removes the field for a client that negotiated an older protocol.
pub fn mcp_result(result: CallResult) -> CallToolResult {
    // Each block read straight from the engine's JSON, moved rather than copied.
    let parts = || -> Result<CallToolResult, serde_json::Error> {
        let content = result
            .content
            .into_iter()
            .map(json_block)
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = CallToolResult::success(content);
        out.structured_content = result.structured_content;
        out.is_error = Some(result.is_error);
        out.meta = result.meta.map(MetaObject::deserialize).transpose()?;
        Ok(out)
    };
    let mut out = parts().unwrap_or_else(|e| {
        CallToolResult::error(vec![ContentBlock::text(format!(
            "the tool's result could not be encoded: {e}"
        ))])
    });
    out.result_type = Some(rmcp::model::ResultType::COMPLETE);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_upstream_tools_listed_fields_survive_the_catalog_and_come_back_out() {
        let wire = json!({
            "name": "get-env",
            "title": "Print Environment Tool",
            "description": "Returns all environment variables",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "title": "Env"},
            "icons": [{"src": "https://example.com/env.png", "mimeType": "image/png"}],
            "_meta": {"vendor/x": 1}
        });
        let upstream: Tool = serde_json::from_value(wire.clone()).expect("rmcp parses it");
        let def = tool_def(&upstream, None);
        let listed = def.listed.as_ref().expect("kept").to_map();
        assert_eq!(
            listed.keys().collect::<Vec<_>>(),
            ["title", "annotations", "icons", "_meta"]
        );
        let mut back = ToolDefinition::new(
            def.name.clone(),
            def.description.clone(),
            Value::Object(def.input_schema.to_map()),
        );
        back.output_schema = def
            .output_schema
            .as_ref()
            .map(|s| Value::Object(s.to_map()));
        back.listed = Some(listed);
        let out = mcp_tool(back);
        assert_eq!(serde_json::to_value(&out).expect("json"), wire);
        // A tool listed with none of them keeps none.
        let bare: Tool =
            serde_json::from_value(json!({"name": "x", "inputSchema": {"type": "object"}}))
                .expect("parses");
        assert_eq!(tool_def(&bare, None).listed, None);
    }

    #[test]
    fn results_round_trip_unchanged() {
        let wire = json!({
            "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
            "structuredContent": {"a": [1, 2]},
            "isError": true,
            "_meta": {"trace": "x"}
        });
        let upstream: CallToolResult =
            serde_json::from_value(wire.clone()).expect("rmcp parses it");
        let ours = call_result(upstream);
        assert_eq!(
            ours.content,
            wire["content"].as_array().expect("array").clone()
        );
        assert_eq!(ours.structured_content, Some(json!({"a": [1, 2]})));
        assert!(ours.is_error);
        let back = serde_json::to_value(mcp_result(ours.clone())).expect("json");
        for key in ["content", "structuredContent", "isError", "_meta"] {
            assert_eq!(back[key], wire[key], "{key}");
        }
        assert_eq!(
            back["resultType"], "complete",
            "protocol 2026-07-28 requires it"
        );
    }

    #[test]
    fn a_result_rmcp_cannot_carry_becomes_an_error_result_and_null_structure_stays() {
        let odd = CallResult::new(vec![json!({"type": "no-such-block"})], None, false);
        let out = mcp_result(odd);
        assert_eq!(out.is_error, Some(true));
        let text = serde_json::to_value(&out.content)
            .expect("json")
            .to_string();
        assert!(text.contains("could not be encoded"), "{text}");

        let null = CallResult::new(vec![], Some(Value::Null), false);
        let back = serde_json::to_value(mcp_result(null)).expect("json");
        assert_eq!(back.get("structuredContent"), Some(&Value::Null));
        assert_eq!(back["isError"], json!(false));
    }

    /// The direct paths for plain text blocks give what rmcp's own `Serialize` and
    /// `Deserialize` give, and every other block takes those.
    #[test]
    fn blocks_convert_as_serde_converts_them() {
        let wire = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "text", "text": ""}),
            json!({"type": "text", "text": "hi", "annotations": {"priority": 0.5}}),
            json!({"type": "text", "text": "hi", "_meta": {"k": 1}}),
            json!({"type": "text", "text": "hi", "extra": 1}),
            json!({"type": "text", "text": 5}),
            json!({"type": "text"}),
            json!({"type": "texts", "text": "hi"}),
            json!({"text": "hi", "kind": "text"}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            json!("text"),
        ];
        for v in wire {
            let ours = json_block(v.clone()).map_err(|e| e.to_string());
            let serde = ContentBlock::deserialize(&v).map_err(|e| e.to_string());
            assert_eq!(ours.is_ok(), serde.is_ok(), "{v}: {ours:?} / {serde:?}");
            if let (Ok(ours), Ok(serde)) = (ours, serde) {
                assert_eq!(ours, serde, "{v}");
                assert_eq!(
                    block_value(serde.clone()),
                    serde_json::to_value(&serde).expect("json"),
                    "{v}"
                );
            }
        }
    }
}
