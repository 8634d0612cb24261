//! `auth` of a `url` source: `"oauth"`, or a table naming the client's identity and scopes for
//! the MCP authorization flow (`toolsearch auth login`).

use serde::Deserialize;
use toolsearch::Problems;

/// `auth` as written: a word or a table, read here so that a mistake in it is named by its
/// path like any other.
pub(super) type RawAuth = toml::Value;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    scopes: Option<Vec<String>>,
    grant: Option<String>,
    private_key: Option<String>,
    signing_algorithm: Option<String>,
    idp_issuer: Option<String>,
    idp_token_endpoint: Option<String>,
    idp_client_id: Option<String>,
    idp_client_secret: Option<String>,
    id_token: Option<String>,
}

/// A source that logs in with OAuth: who the client is, and what it asks for. With neither a
/// `client_id` nor a `client_metadata_url`, the client registers itself (RFC 7591) when the
/// authorization server allows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// That client's secret, as `${env:NAME}`: secrets come only from the environment.
    pub client_secret: Option<String>,
    /// An HTTPS URL of a client ID metadata document: the client's identity when the
    /// authorization server accepts such documents and no `client_id` is given.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for; empty: what the server's challenge or metadata suggests.
    pub scopes: Vec<String>,
    /// How tokens are had.
    pub grant: OAuthGrant,
    /// A `client_credentials` client's private key (PEM, as `${env:NAME}`): it signs a JWT
    /// client assertion (`private_key_jwt`, RFC 7523) instead of sending a secret.
    pub private_key: Option<String>,
    /// The assertion's algorithm: `RS256` (default), `RS384`, `RS512`, `PS256`, `PS384`,
    /// `PS512`, `ES256`, `ES384` or `EdDSA`.
    pub signing_algorithm: Option<String>,
    /// `enterprise_managed`: the enterprise identity provider that vouches for the user.
    pub idp: Option<IdentityProvider>,
}

/// The enterprise identity provider of an `enterprise_managed` source: it exchanges the
/// user's ID token for an identity assertion (ID-JAG) the source's authorization server takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentityProvider {
    /// Its issuer.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client registered with it.
    pub client_id: String,
    /// That client's secret (`${env:NAME}`); none for a public client.
    pub client_secret: Option<String>,
    /// The user's ID token from it (`${env:NAME}`, set by the single sign-on tooling).
    pub id_token: String,
}

/// The algorithms a client assertion may be signed with.
pub const ASSERTION_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// `grant` of an OAuth source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// `"authorization_code"` (the default): a person logs in (`toolsearch auth login`).
    #[default]
    AuthorizationCode,
    /// `"client_credentials"`: the gateway is the client, with its `client_id` and
    /// `client_secret`; it asks for tokens itself, and no person logs in.
    ClientCredentials,
    /// `"enterprise_managed"`: the user's enterprise identity provider vouches for them
    /// (an ID token exchanged for an ID-JAG, redeemed at the source's authorization server:
    /// SEP-990); no login at the source.
    EnterpriseManaged,
}

/// Validates `auth`, reporting every problem under `at.auth`.
pub(super) fn validate_auth(at: &str, raw: RawAuth, problems: &mut Problems) -> OAuthConfig {
    let at = format!("{at}.auth");
    let raw: RawOAuth = match raw {
        toml::Value::String(w) if w == "oauth" => return OAuthConfig::default(),
        toml::Value::Table(t) => match toml::Value::Table(t).try_into() {
            Ok(t) => t,
            Err(e) => {
                problems.add(at, e.message().to_owned());
                return OAuthConfig::default();
            }
        },
        other => {
            let written = match &other {
                toml::Value::String(w) => format!("{w:?}"),
                v => v.type_str().to_owned(),
            };
            problems.add(
                at,
                format!("{written} is not \"oauth\" or a table such as {{ client_id = \"...\" }}"),
            );
            return OAuthConfig::default();
        }
    };
    if let Some(id) = &raw.client_id
        && id.trim().is_empty()
    {
        problems.add(format!("{at}.client_id"), "empty");
    }
    if let Some(secret) = &raw.client_secret {
        if raw.client_id.is_none() {
            problems.add(
                format!("{at}.client_secret"),
                "a secret belongs to a client_id; give client_id too",
            );
        }
        if !is_env_reference(secret) {
            problems.add(
                format!("{at}.client_secret"),
                "secrets come from the environment: write \"${env:NAME}\"",
            );
        }
    }
    if let Some(url) = &raw.client_metadata_url {
        let https_with_path = url
            .strip_prefix("https://")
            .and_then(|rest| rest.split_once('/'))
            .is_some_and(|(host, path)| !host.is_empty() && !path.is_empty());
        if !https_with_path {
            problems.add(
                format!("{at}.client_metadata_url"),
                format!("{url:?} must be an https:// URL with a path"),
            );
        }
    }
    let grant = match raw.grant.as_deref() {
        None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
        Some("client_credentials") => {
            if raw.client_id.is_none() || raw.client_secret.is_some() == raw.private_key.is_some() {
                problems.add(
                    format!("{at}.grant"),
                    "client_credentials needs client_id and one of client_secret, private_key",
                );
            }
            if raw.client_metadata_url.is_some() {
                problems.add(
                    format!("{at}.client_metadata_url"),
                    "not used with client_credentials",
                );
            }
            OAuthGrant::ClientCredentials
        }
        Some("enterprise_managed") => {
            if raw.client_id.is_none() {
                problems.add(format!("{at}.grant"), "enterprise_managed needs client_id");
            }
            for (key, present) in [
                ("idp_issuer", raw.idp_issuer.is_some()),
                ("idp_token_endpoint", raw.idp_token_endpoint.is_some()),
                ("idp_client_id", raw.idp_client_id.is_some()),
                ("id_token", raw.id_token.is_some()),
            ] {
                if !present {
                    problems.add(
                        format!("{at}.{key}"),
                        "missing (enterprise_managed needs it)",
                    );
                }
            }
            OAuthGrant::EnterpriseManaged
        }
        Some(other) => {
            problems.add(
                format!("{at}.grant"),
                format!(
                    "{other:?} is not one of authorization_code, client_credentials, enterprise_managed"
                ),
            );
            OAuthGrant::AuthorizationCode
        }
    };
    for (key, value) in [
        ("idp_client_secret", &raw.idp_client_secret),
        ("id_token", &raw.id_token),
    ] {
        if let Some(v) = value
            && !is_env_reference(v)
        {
            problems.add(
                format!("{at}.{key}"),
                "secrets come from the environment: write \"${env:NAME}\"",
            );
        }
    }
    let idp_keys = [
        raw.idp_issuer.is_some(),
        raw.idp_token_endpoint.is_some(),
        raw.idp_client_id.is_some(),
        raw.idp_client_secret.is_some(),
        raw.id_token.is_some(),
    ];
    if grant != OAuthGrant::EnterpriseManaged && idp_keys.contains(&true) {
        problems.add(
            at.clone(),
            "idp_* and id_token are only for grant = \"enterprise_managed\"",
        );
    }
    let idp = match (
        grant,
        raw.idp_issuer,
        raw.idp_token_endpoint,
        raw.idp_client_id,
        raw.id_token,
    ) {
        (
            OAuthGrant::EnterpriseManaged,
            Some(issuer),
            Some(token_endpoint),
            Some(client_id),
            Some(id_token),
        ) => Some(IdentityProvider {
            issuer,
            token_endpoint,
            client_id,
            client_secret: raw.idp_client_secret,
            id_token,
        }),
        _ => None,
    };
    if let Some(key) = &raw.private_key {
        if grant != OAuthGrant::ClientCredentials {
            problems.add(
                format!("{at}.private_key"),
                "only with grant = \"client_credentials\"",
            );
        }
        if !is_env_reference(key) {
            problems.add(
                format!("{at}.private_key"),
                "secrets come from the environment: write \"${env:NAME}\"",
            );
        }
        if !cfg!(feature = "jwt") {
            problems.add(
                format!("{at}.private_key"),
                "this build has no JWT support (the jwt feature)",
            );
        }
    }
    if let Some(alg) = &raw.signing_algorithm {
        if raw.private_key.is_none() {
            problems.add(format!("{at}.signing_algorithm"), "only with private_key");
        }
        if !ASSERTION_ALGORITHMS.contains(&alg.as_str()) {
            problems.add(
                format!("{at}.signing_algorithm"),
                format!("{alg:?} is not one of {}", ASSERTION_ALGORITHMS.join(", ")),
            );
        }
    }
    let scopes = raw.scopes.unwrap_or_default();
    for s in &scopes {
        if s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || c == '"' || c == '\\')
        {
            problems.add(format!("{at}.scopes"), format!("{s:?} is not a scope"));
        }
    }
    OAuthConfig {
        client_id: raw.client_id,
        client_secret: raw.client_secret,
        client_metadata_url: raw.client_metadata_url,
        scopes,
        grant,
        private_key: raw.private_key,
        signing_algorithm: raw.signing_algorithm,
        idp,
    }
}

/// `${env:NAME}` and nothing else.
fn is_env_reference(value: &str) -> bool {
    value
        .strip_prefix("${env:")
        .and_then(|v| v.strip_suffix('}'))
        .is_some_and(super::source::is_env_name)
}
