//! A tool's result as MCP's `CallToolResult` carries it.

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ToolError;

/// A tool result as MCP's `CallToolResult` carries it (content blocks as JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallResult {
    /// Content blocks (`{"type": "text", "text": ...}`, images, resources, ...).
    pub content: Vec<Value>,
    /// Structured result, when the tool gives one.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reports an error.
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// Protocol metadata of the result (`_meta`), passed through.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl CallResult {
    /// A result made of one text block.
    pub fn text(text: impl Into<String>, is_error: bool) -> Self {
        Self {
            content: vec![json!({"type": "text", "text": text.into()})],
            structured_content: None,
            is_error,
            meta: None,
        }
    }

    /// A structured result, also given as compact JSON text for clients that read text only.
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![json!({"type": "text", "text": value.to_string()})],
            structured_content: Some(value),
            is_error: false,
            meta: None,
        }
    }

    /// A result from its parts.
    pub fn new(content: Vec<Value>, structured_content: Option<Value>, is_error: bool) -> Self {
        Self {
            content,
            structured_content,
            is_error,
            meta: None,
        }
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: Option<Value>) -> Self {
        self.meta = meta;
        self
    }

    /// The text of the first text block, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.content
            .iter()
            .find(|c| c["type"] == "text")
            .and_then(|c| c["text"].as_str())
    }

    /// A model-facing error result (its JSON as text).
    pub fn from_error(e: &ToolError) -> Self {
        Self::text(e.to_json(), true)
    }
}
