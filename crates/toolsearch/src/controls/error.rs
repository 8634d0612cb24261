//! Error results a model receives: `{"isError": true, "error": <code>, "message": ..., ...}`.

use serde_json::{Map, Value};

/// A tool error result. Serialized with `isError`, `error` and `message` first, then the extras.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// Machine-readable code, e.g. `unknown_group`.
    pub code: &'static str,
    /// What happened and what to do next.
    pub message: String,
    /// Further fields (`path`, `groups`, `hint`, `upstream`, ...).
    pub extra: Map<String, Value>,
}

impl ToolError {
    /// An error with a code and a message.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            extra: Map::new(),
        }
    }

    /// Adds a field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// `invalid_request` for an argument at a JSON pointer `path`.
    pub fn invalid_request(path: &str, message: impl Into<String>) -> Self {
        Self::new("invalid_request", message).with("path", path)
    }

    /// The result as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("isError".into(), Value::Bool(true));
        m.insert("error".into(), Value::String(self.code.into()));
        m.insert("message".into(), Value::String(self.message.clone()));
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }

    /// The result as compact JSON.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}
