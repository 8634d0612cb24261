//! Vendor formats: the catalog as the Anthropic Messages API and the OpenAI Responses API
//! take deferred tools, and the search and call answers in their shapes (docs/reference.md, "Vendor formats").
//!
//! `name` gives every tool the name a vendor accepts (its canonical name, or a stable short
//! form), `export` the tools array, `reply` the search request and the answers. The engine
//! routes the calls (`Engine::handle_vendor_in`), so a search runs on the same method and
//! caller policy as `discover_tools`, and a call on the one call path.

mod export;
mod name;
mod reply;

use std::fmt;
use std::str::FromStr;

pub use export::{ExportError, always_loaded, export, loaded, plain};
pub use name::{NAME_MAX, ShortForms, exported_name, fits};
pub use reply::{SearchRequest, call_reply, error_reply, openai_call, search_reply};

/// Name of the search tool in both formats.
pub const SEARCH_TOOL: &str = "tool_search";

/// Tools a search returns when the request gives no `limit`.
pub const DEFAULT_LIMIT: usize = 5;

/// A vendor's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Format {
    /// Anthropic Messages API: `defer_loading` tools, `tool_reference` blocks.
    Anthropic,
    /// OpenAI Responses API: namespaces of deferred functions, a client-executed
    /// `tool_search`.
    Openai,
}

impl Format {
    /// The format's name on the command line and over HTTP.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is neither `anthropic` nor `openai`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}: use anthropic or openai")]
#[non_exhaustive]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "anthropic" => Ok(Self::Anthropic),
            "openai" => Ok(Self::Openai),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}
