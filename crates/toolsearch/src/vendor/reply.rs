//! A vendor's search request, and the answers in its shape: `tool_reference` blocks for an
//! Anthropic `tool_result`, a `tool_search_output` item for OpenAI, and a tool's result as
//! `tool_result` content or a `function_call_output` item.

use serde_json::{Map, Value, json};

use super::Format;
use super::export::{deferred_tool, namespace};
use super::name::exported_name;
use crate::catalog::{ToolId, View};
use crate::error::ToolError;
use crate::exec::CallResult;

/// Longest query, in characters (as `discover_tools`).
const QUERY_MAX: usize = 2048;

/// A search request: the query, how many tools, and (OpenAI) the call it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchRequest {
    /// The query, trimmed.
    pub query: String,
    /// How many tools to return.
    pub limit: usize,
    /// The `tool_search_call`'s `call_id` (OpenAI), when given.
    pub call_id: Option<String>,
}

/// The `call_id` and the arguments object of an OpenAI call: `{"call_id", "arguments"}`, the
/// arguments an object or the JSON text of one (as a `function_call` item carries them).
pub fn openai_call(args: &Value) -> Result<(Option<String>, Map<String, Value>), ToolError> {
    let Value::Object(obj) = args else {
        return Err(ToolError::invalid_request(
            "",
            "an OpenAI call takes {\"call_id\": ..., \"arguments\": {...}}",
        ));
    };
    if let Some(k) = obj.keys().find(|k| *k != "call_id" && *k != "arguments") {
        return Err(ToolError::invalid_request(
            &format!("/{k}"),
            format!("unknown key {k:?}: an OpenAI call takes call_id and arguments"),
        ));
    }
    let call_id = match obj.get("call_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(ToolError::invalid_request(
                "/call_id",
                "call_id must be a string",
            ));
        }
    };
    let arguments = match obj.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(text)) => match serde_json::from_str(text) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(ToolError::invalid_request(
                    "/arguments",
                    "arguments must be a JSON object (or the JSON text of one)",
                ));
            }
        },
        Some(_) => {
            return Err(ToolError::invalid_request(
                "/arguments",
                "arguments must be a JSON object (or the JSON text of one)",
            ));
        }
    };
    Ok((call_id, arguments))
}

impl SearchRequest {
    /// Reads a search call: Anthropic's `tool_use` input `{query, limit?}`, or OpenAI's
    /// `{call_id?, arguments: {query, limit?}}`. `limit` is 1..=`max_results`, default
    /// min(5, `max_results`).
    pub fn parse(format: Format, args: &Value, max_results: usize) -> Result<Self, ToolError> {
        let (call_id, input) = match format {
            Format::Anthropic => match args {
                Value::Object(m) => (None, m.clone()),
                _ => {
                    return Err(ToolError::invalid_request(
                        "",
                        "tool_search takes {\"query\": ..., \"limit\"?: ...}",
                    ));
                }
            },
            Format::Openai => openai_call(args)?,
        };
        let at = |k: &str| match format {
            Format::Anthropic => format!("/{k}"),
            Format::Openai => format!("/arguments/{k}"),
        };
        if let Some(k) = input.keys().find(|k| *k != "query" && *k != "limit") {
            return Err(ToolError::invalid_request(
                &at(k),
                format!("unknown key {k:?}: tool_search takes query and limit"),
            ));
        }
        let query = match input.get("query") {
            Some(Value::String(q)) => q.trim(),
            Some(_) => {
                return Err(ToolError::invalid_request(
                    &at("query"),
                    "query must be a string",
                ));
            }
            None => {
                return Err(ToolError::invalid_request(
                    &at("query"),
                    "query is missing: say in a few words what the tool should do",
                ));
            }
        };
        if query.is_empty() {
            return Err(ToolError::invalid_request(
                &at("query"),
                "query is empty: say in a few words what the tool should do",
            ));
        }
        if query.chars().count() > QUERY_MAX {
            return Err(ToolError::invalid_request(
                &at("query"),
                format!("query is longer than {QUERY_MAX} characters"),
            ));
        }
        let limit = match input.get("limit") {
            None | Some(Value::Null) => super::DEFAULT_LIMIT.min(max_results),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 && n as usize <= max_results => n as usize,
                _ => {
                    return Err(ToolError::invalid_request(
                        &at("limit"),
                        format!("limit must be an integer from 1 to {max_results}"),
                    ));
                }
            },
        };
        Ok(Self {
            query: query.to_owned(),
            limit,
            call_id,
        })
    }
}

/// A search's answer: Anthropic's `tool_result` content (`tool_reference` blocks, or one text
/// block when nothing matched), or OpenAI's `tool_search_output` item (the matching functions
/// in their groups' namespaces, groups in the order of their best tool).
pub fn search_reply(format: Format, view: View<'_>, req: &SearchRequest, hits: &[ToolId]) -> Value {
    match format {
        Format::Anthropic if hits.is_empty() => json!([{
            "type": "text",
            "text": format!("No tool matched {:?}. Search again with other words.", req.query),
        }]),
        Format::Anthropic => Value::Array(
            hits.iter()
                .map(|&id| {
                    json!({
                        "type": "tool_reference",
                        "tool_name": exported_name(&view.dir().tool(id).canonical),
                    })
                })
                .collect(),
        ),
        Format::Openai => {
            let mut groups: Vec<(u32, Vec<Value>)> = Vec::new();
            for &id in hits {
                let g = view.dir().tool(id).group;
                let f = deferred_tool(format, view, id);
                match groups.iter_mut().find(|(h, _)| *h == g) {
                    Some((_, tools)) => tools.push(f),
                    None => groups.push((g, vec![f])),
                }
            }
            let tools: Vec<Value> = groups
                .into_iter()
                .map(|(g, tools)| namespace(view, g, tools))
                .collect();
            let mut item = Map::new();
            item.insert("type".into(), "tool_search_output".into());
            if let Some(id) = &req.call_id {
                item.insert("call_id".into(), id.as_str().into());
            }
            item.insert("execution".into(), "client".into());
            item.insert("tools".into(), Value::Array(tools));
            Value::Object(item)
        }
    }
}

/// One MCP content block as Anthropic `tool_result` content: text and images as they are,
/// anything else as its JSON in a text block.
fn anthropic_block(block: &Value) -> Value {
    match block["type"].as_str() {
        Some("text") => json!({"type": "text", "text": block["text"].as_str().unwrap_or("")}),
        Some("image") => json!({
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": block["mimeType"].as_str().unwrap_or("image/png"),
                "data": block["data"].as_str().unwrap_or(""),
            }
        }),
        _ => json!({"type": "text", "text": block.to_string()}),
    }
}

/// One MCP content block as an OpenAI output content item.
fn openai_item(block: &Value) -> Value {
    match block["type"].as_str() {
        Some("text") => json!({"type": "input_text", "text": block["text"].as_str().unwrap_or("")}),
        Some("image") => json!({
            "type": "input_image",
            "image_url": format!(
                "data:{};base64,{}",
                block["mimeType"].as_str().unwrap_or("image/png"),
                block["data"].as_str().unwrap_or("")
            ),
        }),
        _ => json!({"type": "input_text", "text": block.to_string()}),
    }
}

/// A tool's result in the format's shape: Anthropic `tool_result` content, or an OpenAI
/// `function_call_output` item (its `output` the text when every block is text, else the
/// items). A result with structured content and no blocks gives that JSON as text.
pub fn call_reply(format: Format, result: &CallResult, call_id: Option<&str>) -> Value {
    let fallback;
    let blocks: &[Value] = match (&result.content[..], &result.structured_content) {
        ([], Some(s)) => {
            fallback = [json!({"type": "text", "text": s.to_string()})];
            &fallback
        }
        (blocks, _) => blocks,
    };
    match format {
        Format::Anthropic => Value::Array(blocks.iter().map(anthropic_block).collect()),
        Format::Openai => {
            let output = if blocks.iter().all(|b| b["type"] == "text") {
                let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
                Value::String(texts.join("\n"))
            } else {
                Value::Array(blocks.iter().map(openai_item).collect())
            };
            json!({
                "type": "function_call_output",
                "call_id": call_id.unwrap_or_default(),
                "output": output,
            })
        }
    }
}

/// A model-facing error in the format's shape: Anthropic `tool_result` content (one text
/// block, the error's JSON), or an OpenAI `function_call_output` carrying it.
pub fn error_reply(format: Format, error: &ToolError, call_id: Option<&str>) -> Value {
    call_reply(format, &CallResult::from_error(error), call_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_requests_are_checked() {
        let ok = SearchRequest::parse(Format::Anthropic, &json!({"query": " refund "}), 10)
            .expect("valid");
        assert_eq!(
            (ok.query.as_str(), ok.limit, ok.call_id),
            ("refund", 5, None)
        );
        let ok = SearchRequest::parse(Format::Anthropic, &json!({"query": "x", "limit": 2}), 3)
            .expect("valid");
        assert_eq!(ok.limit, 2);
        assert_eq!(
            SearchRequest::parse(Format::Anthropic, &json!({"query": "x"}), 3)
                .expect("valid")
                .limit,
            3
        );
        let ok = SearchRequest::parse(
            Format::Openai,
            &json!({"call_id": "c1", "arguments": "{\"query\": \"refund\"}"}),
            10,
        )
        .expect("valid");
        assert_eq!(
            (ok.query.as_str(), ok.call_id.as_deref()),
            ("refund", Some("c1"))
        );
        for (format, bad, path) in [
            (Format::Anthropic, json!({"query": ""}), "/query"),
            (Format::Anthropic, json!({}), "/query"),
            (Format::Anthropic, json!({"query": 3}), "/query"),
            (
                Format::Anthropic,
                json!({"query": "x", "limit": 0}),
                "/limit",
            ),
            (
                Format::Anthropic,
                json!({"query": "x", "limit": 11}),
                "/limit",
            ),
            (Format::Anthropic, json!({"query": "x", "k": 1}), "/k"),
            (
                Format::Anthropic,
                json!({"query": "x".repeat(2049)}),
                "/query",
            ),
            (
                Format::Openai,
                json!({"arguments": {"query": "x", "limit": "2"}}),
                "/arguments/limit",
            ),
            (
                Format::Openai,
                json!({"arguments": "not json"}),
                "/arguments",
            ),
            (
                Format::Openai,
                json!({"call_id": 1, "arguments": {"query": "x"}}),
                "/call_id",
            ),
            (Format::Openai, json!({"query": "x"}), "/query"),
        ] {
            let e = SearchRequest::parse(format, &bad, 10).expect_err("fails");
            assert_eq!(e.code, crate::ErrorCode::InvalidRequest, "{bad}");
            assert_eq!(e.to_value()["path"], path, "{bad}");
        }
    }

    #[test]
    fn results_take_each_vendors_shape() {
        let r = CallResult::text("42", false);
        assert_eq!(
            call_reply(Format::Anthropic, &r, None),
            json!([{"type": "text", "text": "42"}])
        );
        assert_eq!(
            call_reply(Format::Openai, &r, Some("c9")),
            json!({"type": "function_call_output", "call_id": "c9", "output": "42"})
        );
        let img = CallResult::new(
            vec![
                json!({"type": "text", "text": "a chart"}),
                json!({"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}),
            ],
            None,
            false,
        );
        assert_eq!(
            call_reply(Format::Anthropic, &img, None)[1],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}})
        );
        assert_eq!(
            call_reply(Format::Openai, &img, Some("c"))["output"][1],
            json!({"type": "input_image", "image_url": "data:image/jpeg;base64,AAAA"})
        );
        let structured = CallResult::new(vec![], Some(json!({"n": 1})), false);
        assert_eq!(
            call_reply(Format::Openai, &structured, Some("c"))["output"],
            "{\"n\":1}"
        );
    }
}
