//! Settings of the engine, the access rules it applies, and the one range check of a setting,
//! as plain data. The gateway's config file is read into these by `toolsearch-mcp`.

mod access;
mod codeact;
mod range;
mod search_settings;
mod settings;

pub use access::{PolicyRule, RateLimit, glob_problem};
pub use codeact::CodeActSettings;
pub use range::{outside, within};
pub use search_settings::{
    BM25_FIELDS, Bm25Params, EmbeddingSettings, Fusion, HybridParams, SearchMethod,
    default_cache_dir,
};
pub use settings::{ControlNames, Settings};

/// Which model-facing surface is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[expect(
    clippy::exhaustive_enums,
    reason = "closed by the contract (docs/reference.md): callers match every value"
)]
pub enum Surface {
    /// `discover_tools`, `describe_tool`, `call_tool`, `list_tools`, `list_tool_groups`.
    #[default]
    Toolsearch,
    /// `search_proxy_tools`, `call_proxy_tool`.
    Toolproxy,
    /// `search_capabilities`, `invoke_tool`, `get_skill_content`.
    Capabilities,
}

impl Surface {
    /// Parses a config value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "toolsearch" => Some(Self::Toolsearch),
            "toolproxy" => Some(Self::Toolproxy),
            "capabilities" => Some(Self::Capabilities),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Toolsearch => "toolsearch",
            Self::Toolproxy => "toolproxy",
            Self::Capabilities => "capabilities",
        }
    }
}

/// Range of `max_results`.
pub const MAX_RESULTS_RANGE: std::ops::RangeInclusive<usize> = 1..=100;
/// Range of `max_search_bytes`.
pub const MAX_SEARCH_BYTES_RANGE: std::ops::RangeInclusive<usize> = 1024..=32768;
