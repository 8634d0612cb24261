//! Error results a model receives: `{"isError": true, "error": <code>, "message": ..., ...}`
//! (docs/reference.md, "Errors"). The codes are an enum, so a new one is added in one place.

use serde_json::{Map, Value};

/// The machine-readable code of a [`ToolError`], as docs/reference.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// No such group.
    UnknownGroup,
    /// No such tool (or control).
    UnknownTool,
    /// Malformed control arguments.
    InvalidRequest,
    /// Arguments do not match the tool's schema; nothing ran.
    InvalidArguments,
    /// The tool's own input schema does not compile; nothing ran.
    InvalidSchema,
    /// One entry does not fit the response budget.
    EntryTooLarge,
    /// A tool of a static catalog: nothing runs it.
    NotExecutable,
    /// Its source is down or still connecting; nothing ran.
    Unavailable,
    /// The call ran over its time limit; the outcome is uncertain.
    Timeout,
    /// Over the session's tool-call limit; nothing ran.
    UsageLimit,
    /// The tool or its upstream failed.
    ToolFailed,
    /// The upstream refused the credentials.
    NeedsAuth,
    /// A hook refused the call; nothing ran.
    Denied,
    /// The search method cannot run here.
    SearchUnavailable,
    /// No such skill.
    UnknownSkill,
    /// A CodeAct program raised an exception, did not parse, or tried what the sandbox forbids.
    CodeFailed,
    /// A CodeAct program went past its memory or recursion limit.
    ResourceLimit,
    /// A CodeAct program called a tool its source does not let programs call; nothing ran.
    CodeactDenied,
    /// The caller is over its rate limit; nothing ran.
    RateLimited,
}

impl ErrorCode {
    /// The code as the model reads it, e.g. `unknown_group`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UnknownGroup => "unknown_group",
            Self::UnknownTool => "unknown_tool",
            Self::InvalidRequest => "invalid_request",
            Self::InvalidArguments => "invalid_arguments",
            Self::InvalidSchema => "invalid_schema",
            Self::EntryTooLarge => "entry_too_large",
            Self::NotExecutable => "not_executable",
            Self::Unavailable => "unavailable",
            Self::Timeout => "timeout",
            Self::UsageLimit => "usage_limit",
            Self::ToolFailed => "tool_failed",
            Self::NeedsAuth => "needs_auth",
            Self::Denied => "denied",
            Self::SearchUnavailable => "search_unavailable",
            Self::UnknownSkill => "unknown_skill",
            Self::CodeFailed => "code_failed",
            Self::ResourceLimit => "resource_limit",
            Self::CodeactDenied => "codeact_denied",
            Self::RateLimited => "rate_limited",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool error result. Serialized with `isError`, `error` and `message` first, then the extras.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolError {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// What happened and what to do next.
    pub message: String,
    /// Further fields (`path`, `groups`, `hint`, `upstream`, ...).
    pub extra: Map<String, Value>,
}

impl ToolError {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
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

    /// `unknown_group`.
    pub fn unknown_group(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnknownGroup, message)
    }

    /// `unknown_tool`.
    pub fn unknown_tool(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnknownTool, message)
    }

    /// `invalid_request` for an argument at a JSON pointer `path`.
    pub fn invalid_request(path: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message).with("path", path)
    }

    /// `invalid_arguments` (the violations are added as extras by the caller).
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArguments, message)
    }

    /// `invalid_schema`.
    pub fn invalid_schema(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidSchema, message)
    }

    /// `entry_too_large`.
    pub fn entry_too_large(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::EntryTooLarge, message)
    }

    /// `not_executable`.
    pub fn not_executable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotExecutable, message)
    }

    /// `unavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, message)
    }

    /// `timeout`.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Timeout, message)
    }

    /// `usage_limit`.
    pub fn usage_limit(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UsageLimit, message)
    }

    /// `tool_failed`.
    pub fn tool_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ToolFailed, message)
    }

    /// `needs_auth`.
    pub fn needs_auth(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NeedsAuth, message)
    }

    /// `denied`.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Denied, message)
    }

    /// `search_unavailable`.
    pub fn search_unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::SearchUnavailable, message)
    }

    /// `unknown_skill`.
    pub fn unknown_skill(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnknownSkill, message)
    }

    /// `code_failed`.
    pub fn code_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::CodeFailed, message)
    }

    /// `resource_limit`.
    pub fn resource_limit(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ResourceLimit, message)
    }

    /// `codeact_denied`.
    pub fn codeact_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::CodeactDenied, message)
    }

    /// `rate_limited`.
    pub fn rate_limited(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::RateLimited, message)
    }

    /// The result as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("isError".into(), Value::Bool(true));
        m.insert("error".into(), Value::String(self.code.as_str().into()));
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
