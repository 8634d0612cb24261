//! Who may call the served gateway and what each caller may see and do: `[[client]]`,
//! `[auth.jwt]`, `[[policy]]`, `[approval]`, `[limits] rate` and `[audit]`, as plain data. The
//! MCP crate checks tokens with it; the engine applies policies, approvals, rate limits and
//! the audit log.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// One `[[client]]`: a caller known by a bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Its name (`identity.client`).
    pub name: String,
    /// Its token as written: a `${env:NAME}` reference, expanded when the gateway starts.
    pub token: String,
    /// Its claims (`identity.<claim>`).
    pub claims: BTreeMap<String, String>,
}

/// Where the JWT signing keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksSource {
    /// An HTTPS URL (plain HTTP only for a loopback host), fetched at start and again on an
    /// unknown key id.
    Url(String),
    /// A JWKS file (relative to the config's folder).
    File(PathBuf),
}

/// `[auth.jwt]`: JWT bearer tokens checked against a JWKS.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The signing keys.
    pub jwks: JwksSource,
    /// The required `iss`.
    pub issuer: String,
    /// The required `aud`.
    pub audience: String,
    /// Allowed algorithms (`RS256`, `ES256`, …; never `none`).
    pub algorithms: Vec<String>,
    /// Clock leeway for `exp` and `nbf`, in seconds.
    pub leeway_s: u64,
    /// The authorization servers named in the protected-resource metadata.
    pub authorization_servers: Vec<String>,
}

/// The algorithms `[auth.jwt] algorithms` may name: public-key signatures only (a shared
/// secret has no place in a JWKS anyone may read; `none` is never accepted).
pub const JWT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

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

/// Callers and what they may do. Empty by default: no caller authentication beyond the
/// optional `TOOLSEARCH_HTTP_TOKEN`, every caller sees every tool.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct AccessConfig {
    /// `[[client]]` entries.
    pub clients: Vec<ClientConfig>,
    /// `[auth.jwt]`.
    pub jwt: Option<JwtConfig>,
    /// `[[policy]]` rules; none: every caller sees every tool.
    pub policies: Vec<PolicyRule>,
    /// `[approval] tools`: globs of tools the person is asked about before they run.
    pub approval: Vec<String>,
    /// `[limits] rate`.
    pub rate: Option<RateLimit>,
    /// `[audit] file`.
    pub audit_file: Option<PathBuf>,
}

impl AccessConfig {
    /// Whether callers must authenticate (clients or JWTs are configured).
    pub fn authenticates(&self) -> bool {
        !self.clients.is_empty() || self.jwt.is_some()
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
