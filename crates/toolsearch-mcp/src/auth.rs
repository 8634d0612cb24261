//! Who is calling the HTTP gateway: a bearer token of a `[[client]]` (compared in constant
//! time) or a JWT checked against the `[auth.jwt]` JWKS (signature by the key its `kid` names,
//! `iss`, `aud`, `exp`, `nbf` with leeway, only the listed algorithms — `none` never parses).
//! A caller becomes a [`CallerIdentity`]: the trusted context of its session (`identity.client`
//! and a client's claims; a JWT's claims as `identity.<claim>`).

use std::collections::BTreeMap;

use crate::config::AccessConfig;
use toolsearch::{CALLER_PATH, CLIENT_PATH};

#[cfg(feature = "jwt")]
use self::jwt::JwtVerifier;
#[cfg(not(feature = "jwt"))]
use self::no_jwt::JwtVerifier;
use crate::secrets::{MissingSecret, constant_time_eq, expand};

#[cfg(feature = "jwt")]
mod jwt;
#[cfg(not(feature = "jwt"))]
mod no_jwt;

/// The token of an `Authorization: Bearer <token>` header; the scheme matches in any case.
pub(crate) fn bearer_token(header: &[u8]) -> Option<&[u8]> {
    let space = header.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = header.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// The client name `TOOLSEARCH_HTTP_TOKEN`'s caller gets.
pub const DEFAULT_CLIENT: &str = "default";

/// An authenticated caller: who it is (for sessions and rate limits) and its trusted context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerIdentity {
    /// A stable name: the client's, or `jwt:<iss>#<sub>`.
    pub key: String,
    /// Context values: `identity.client`, `identity.<claim>`, and `caller.id` (the key).
    pub context: BTreeMap<String, String>,
    /// It may open the console: a `[[client]]` with `admin = true`, a JWT whose
    /// `[auth.jwt] admin_claim` is `true`, or `TOOLSEARCH_HTTP_TOKEN`'s caller when that token
    /// is the only credential.
    pub admin: bool,
}

/// Why a request was not authenticated (never says which token was tried).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("a bearer token is required")]
    Missing,
    /// The token is no client's and not a valid JWT.
    #[error("the bearer token is not valid: {0}")]
    Invalid(String),
}

/// Why the authenticator could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSetupError {
    /// A client's token is an unset environment variable.
    #[error("client {client:?}: {source}")]
    Secret {
        /// The client.
        client: String,
        /// The variable.
        #[source]
        source: MissingSecret,
    },
    /// The JWKS could not be read or fetched, or holds no usable key.
    #[error("auth.jwt.jwks: {0}")]
    Jwks(String),
}

struct Client {
    token: Vec<u8>,
    identity: CallerIdentity,
}

/// Checks bearer tokens: clients first, then JWTs.
pub struct Authenticator {
    clients: Vec<Client>,
    jwt: Option<JwtVerifier>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens are never shown.
        f.debug_struct("Authenticator")
            .field("clients", &self.clients.len())
            .field("jwt", &self.jwt.is_some())
            .finish()
    }
}

impl Authenticator {
    /// The authenticator `access` configures, plus `TOOLSEARCH_HTTP_TOKEN`'s `token` as the
    /// client `default`; `None` when no caller needs to authenticate.
    pub async fn new(
        access: &AccessConfig,
        token: Option<String>,
    ) -> Result<Option<Self>, AuthSetupError> {
        let mut clients = Vec::new();
        for c in &access.clients {
            let token = expand(&c.token).map_err(|source| AuthSetupError::Secret {
                client: c.name.clone(),
                source,
            })?;
            let mut context: BTreeMap<String, String> = c
                .claims
                .iter()
                .map(|(k, v)| (format!("identity.{k}"), v.clone()))
                .collect();
            context.insert(CLIENT_PATH.to_owned(), c.name.clone());
            context.insert(CALLER_PATH.to_owned(), c.name.clone());
            clients.push(Client {
                token: token.into_bytes(),
                identity: CallerIdentity {
                    key: c.name.clone(),
                    context,
                    admin: c.admin,
                },
            });
        }
        // The environment's token alone is the operator's: its caller may open the console.
        let only_credential = access.clients.is_empty() && access.jwt.is_none();
        if let Some(t) = token.filter(|t| !t.is_empty()) {
            clients.push(Client {
                token: t.into_bytes(),
                identity: CallerIdentity {
                    key: DEFAULT_CLIENT.to_owned(),
                    context: BTreeMap::from([
                        (CLIENT_PATH.to_owned(), DEFAULT_CLIENT.to_owned()),
                        (CALLER_PATH.to_owned(), DEFAULT_CLIENT.to_owned()),
                    ]),
                    admin: only_credential,
                },
            });
        }
        let jwt = match &access.jwt {
            Some(j) => Some(JwtVerifier::new(j).await?),
            None => None,
        };
        if clients.is_empty() && jwt.is_none() {
            return Ok(None);
        }
        Ok(Some(Self { clients, jwt }))
    }

    /// The caller a bearer token (the header's value after `Bearer `) names.
    pub async fn authenticate(&self, token: Option<&[u8]>) -> Result<CallerIdentity, AuthError> {
        let token = token.ok_or(AuthError::Missing)?;
        // Every client's token is compared, whichever matches, so timing tells nothing.
        let mut found = None;
        for c in &self.clients {
            if constant_time_eq(token, &c.token) && found.is_none() {
                found = Some(c.identity.clone());
            }
        }
        if let Some(identity) = found {
            return Ok(identity);
        }
        match &self.jwt {
            Some(v) => v.verify(token).await,
            None => Err(AuthError::Invalid("no client has this token".into())),
        }
    }

    /// The authorization servers to name in the protected-resource metadata.
    pub fn authorization_servers(&self) -> Vec<String> {
        self.jwt
            .as_ref()
            .map(|j| j.authorization_servers().to_vec())
            .unwrap_or_default()
    }
}
