//! How a call ended, as the audit log, the metrics and the HTTP search endpoint tell it apart:
//! it answered, the tool answered an error, or it did not run or finish (with the error's code).

use std::fmt;

use crate::error::ErrorCode;

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Outcome {
    /// It answered (a control's own answer, or the tool's result).
    Ok,
    /// The tool ran and answered an error result (`isError`).
    ToolError,
    /// It did not run or did not finish: the model-facing error's code.
    Error(ErrorCode),
}

impl Outcome {
    /// Its name in records and metric labels: `ok`, `tool_error`, or the error code.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Error(code) => code.as_str(),
        }
    }

    /// Whether the model is told of an error (a tool's error result included).
    pub const fn is_error(self) -> bool {
        !matches!(self, Self::Ok)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_record_labels() {
        assert_eq!(Outcome::Ok.as_str(), "ok");
        assert_eq!(Outcome::ToolError.to_string(), "tool_error");
        assert_eq!(
            Outcome::Error(ErrorCode::RateLimited).as_str(),
            "rate_limited"
        );
        assert!(!Outcome::Ok.is_error());
        assert!(Outcome::ToolError.is_error());
        assert!(Outcome::Error(ErrorCode::Timeout).is_error());
    }
}
