//! The access rules the engine applies to callers: `[[policy]]` rules and the `[limits] rate`
//! token bucket, as plain data, and the check of a tool glob.

use std::collections::BTreeMap;

/// One `[[policy]]`: which callers it applies to, and the tools it allows and denies.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyRule {
    /// `match.client`: the caller's client name (`identity.client`).
    pub client: Option<String>,
    /// `match.claims`: context paths (`identity.tenant_id`) and the values they must have.
    pub claims: BTreeMap<String, String>,
    /// Globs over `group/tool` (a direct tool: its name) this rule allows.
    pub allow: Vec<String>,
    /// Globs this rule denies (a deny of any matching rule wins).
    pub deny: Vec<String>,
}

impl PolicyRule {
    /// A rule allowing `allow` and denying `deny` for every caller.
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> Self {
        Self {
            client: None,
            claims: BTreeMap::new(),
            allow,
            deny,
        }
    }

    /// Applies the rule only to callers with this client name (when given) and these context
    /// values.
    pub fn with_match(mut self, client: Option<String>, claims: BTreeMap<String, String>) -> Self {
        self.client = client;
        self.claims = claims;
        self
    }

    /// A rule for callers with this client name.
    pub fn for_client(client: &str, allow: &[&str], deny: &[&str]) -> Self {
        Self {
            client: Some(client.to_owned()),
            claims: BTreeMap::new(),
            allow: allow.iter().map(|s| (*s).to_owned()).collect(),
            deny: deny.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// A rule for every caller.
    pub fn for_everyone(allow: &[&str], deny: &[&str]) -> Self {
        Self {
            client: None,
            ..Self::for_client("", allow, deny)
        }
    }

    /// Requires a context value (`identity.tenant_id` = `acme`) as well.
    pub fn with_claim(mut self, path: &str, value: &str) -> Self {
        self.claims.insert(path.to_owned(), value.to_owned());
        self
    }
}

/// `[limits] rate`: a token bucket per caller.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RateLimit {
    /// Calls per minute the bucket refills.
    pub calls_per_minute: f64,
    /// Calls that may come at once.
    pub burst: u32,
}

impl RateLimit {
    /// A limit of `calls_per_minute` with bursts of `burst`.
    pub fn new(calls_per_minute: f64, burst: u32) -> Self {
        Self {
            calls_per_minute,
            burst,
        }
    }
}

/// Whether `glob` is a glob this project understands (`*` any run of characters, `?` one
/// character, `[...]` a class): the reason when it is not.
pub fn glob_problem(glob: &str) -> Option<String> {
    if glob.trim().is_empty() {
        return Some("an empty glob matches nothing".to_owned());
    }
    globset::Glob::new(glob).err().map(|e| e.to_string())
}
