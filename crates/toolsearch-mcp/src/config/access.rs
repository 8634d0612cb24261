//! Who may call the served gateway and what each caller may see and do: `[[client]]`,
//! `[auth.jwt]`, `[[policy]]`, `[approval]`, `[limits] rate` and `[audit]`, as plain data. The
//! gateway checks tokens with it; the engine applies the policies, approvals, rate limit and
//! audit log it names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use toolsearch::{PolicyRule, RateLimit};

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
    /// It may open the console (`admin = true`).
    pub admin: bool,
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
    /// The claim that, when `true`, lets a token's caller open the console.
    pub admin_claim: Option<String>,
}

/// The algorithms `[auth.jwt] algorithms` may name: public-key signatures only (a shared
/// secret has no place in a JWKS anyone may read; `none` is never accepted).
pub const JWT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

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
