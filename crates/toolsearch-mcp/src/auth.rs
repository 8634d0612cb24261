//! Who is calling the HTTP gateway: a bearer token of a `[[client]]` (compared in constant
//! time) or a JWT checked against the `[auth.jwt]` JWKS (signature by the key its `kid` names,
//! `iss`, `aud`, `exp`, `nbf` with leeway, only the listed algorithms — `none` never parses).
//! A caller becomes a [`CallerIdentity`]: the trusted context of its session (`identity.client`
//! and a client's claims; a JWT's claims as `identity.<claim>`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;
use tokio::sync::Mutex;
use toolsearch::config::{AccessConfig, JwksSource, JwtConfig};
use toolsearch::dispatch::CALLER_PATH;
use toolsearch::policy::CLIENT_PATH;

use crate::secrets::{MissingSecret, expand};

/// The client name `TOOLSEARCH_HTTP_TOKEN`'s caller gets.
pub const DEFAULT_CLIENT: &str = "default";
/// Shortest wait between two JWKS fetches prompted by unknown key ids.
const REFETCH_EVERY: Duration = Duration::from_secs(30);
/// Longest wait for a JWKS document.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// An authenticated caller: who it is (for sessions and rate limits) and its trusted context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerIdentity {
    /// A stable name: the client's, or `jwt:<iss>#<sub>`.
    pub key: String,
    /// Context values: `identity.client`, `identity.<claim>`, and `caller.id` (the key).
    pub context: BTreeMap<String, String>,
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
                },
            });
        }
        if let Some(t) = token.filter(|t| !t.is_empty()) {
            clients.push(Client {
                token: t.into_bytes(),
                identity: CallerIdentity {
                    key: DEFAULT_CLIENT.to_owned(),
                    context: BTreeMap::from([
                        (CLIENT_PATH.to_owned(), DEFAULT_CLIENT.to_owned()),
                        (CALLER_PATH.to_owned(), DEFAULT_CLIENT.to_owned()),
                    ]),
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
            .map(|j| j.config.authorization_servers.clone())
            .unwrap_or_default()
    }
}

/// The JWKS and how it was last fetched.
struct Keys {
    set: JwkSet,
    fetched: Instant,
}

/// Checks JWTs against `[auth.jwt]`.
struct JwtVerifier {
    config: JwtConfig,
    algorithms: Vec<Algorithm>,
    keys: Mutex<Keys>,
    http: Option<reqwest::Client>,
}

fn parse_algorithm(name: &str) -> Option<Algorithm> {
    name.parse::<Algorithm>().ok()
}

impl JwtVerifier {
    async fn new(config: &JwtConfig) -> Result<Self, AuthSetupError> {
        let algorithms: Vec<Algorithm> = config
            .algorithms
            .iter()
            .filter_map(|a| parse_algorithm(a))
            .collect();
        let http = match &config.jwks {
            JwksSource::Url(_) => {
                crate::upstream::install_crypto_provider();
                Some(
                    reqwest::Client::builder()
                        .timeout(FETCH_TIMEOUT)
                        .build()
                        .map_err(|e| AuthSetupError::Jwks(e.to_string()))?,
                )
            }
            _ => None,
        };
        let set = fetch(&config.jwks, http.as_ref()).await?;
        Ok(Self {
            config: config.clone(),
            algorithms,
            keys: Mutex::new(Keys {
                set,
                fetched: Instant::now(),
            }),
            http,
        })
    }

    async fn verify(&self, token: &[u8]) -> Result<CallerIdentity, AuthError> {
        let token =
            std::str::from_utf8(token).map_err(|_| AuthError::Invalid("not text".into()))?;
        let header = decode_header(token).map_err(|e| AuthError::Invalid(e.to_string()))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(AuthError::Invalid(format!(
                "algorithm {:?} is not allowed",
                header.alg
            )));
        }
        let key = self.key(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = self.algorithms.clone();
        validation.leeway = self.config.leeway_s;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = decode::<serde_json::Map<String, Value>>(token, &key, &validation)
            .map_err(|e| AuthError::Invalid(e.to_string()))?;
        let claims = data.claims;
        let mut context = BTreeMap::new();
        for (k, v) in &claims {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            context.insert(format!("identity.{k}"), text);
        }
        let sub = claims.get("sub").and_then(Value::as_str).unwrap_or("");
        let key = format!("jwt:{}#{sub}", self.config.issuer);
        context.insert(CALLER_PATH.to_owned(), key.clone());
        Ok(CallerIdentity { key, context })
    }

    /// The key `kid` names (or the only key, without a `kid`); an unknown `kid` fetches the
    /// JWKS again, at most every [`REFETCH_EVERY`].
    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, AuthError> {
        let mut keys = self.keys.lock().await;
        if let Some(k) = pick(&keys.set, kid) {
            return k;
        }
        if keys.fetched.elapsed() >= REFETCH_EVERY {
            keys.fetched = Instant::now();
            match fetch(&self.config.jwks, self.http.as_ref()).await {
                Ok(set) => keys.set = set,
                Err(e) => tracing::warn!(error = %e, "fetching the JWKS again failed"),
            }
            if let Some(k) = pick(&keys.set, kid) {
                return k;
            }
        }
        Err(AuthError::Invalid(
            "no key of the JWKS signs this token".into(),
        ))
    }
}

fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Result<DecodingKey, AuthError>> {
    let jwk = match kid {
        Some(kid) => set.find(kid)?,
        None if set.keys.len() == 1 => &set.keys[0],
        None => return None,
    };
    Some(DecodingKey::from_jwk(jwk).map_err(|e| AuthError::Invalid(e.to_string())))
}

async fn fetch(
    source: &JwksSource,
    http: Option<&reqwest::Client>,
) -> Result<JwkSet, AuthSetupError> {
    let text = match (source, http) {
        (JwksSource::File(path), _) => std::fs::read_to_string(path)
            .map_err(|e| AuthSetupError::Jwks(format!("{}: {e}", path.display())))?,
        (JwksSource::Url(url), Some(client)) => {
            let r = client
                .get(url)
                .send()
                .await
                .and_then(|r| r.error_for_status())
                .map_err(|e| {
                    AuthSetupError::Jwks(format!("{url}: {}", crate::upstream::describe(&e)))
                })?;
            r.text()
                .await
                .map_err(|e| AuthSetupError::Jwks(format!("{url}: {e}")))?
        }
        (JwksSource::Url(url), None) => {
            return Err(AuthSetupError::Jwks(format!("{url}: no HTTP client")));
        }
        _ => return Err(AuthSetupError::Jwks("an unknown key source".into())),
    };
    let set: JwkSet = serde_json::from_str(&text)
        .map_err(|e| AuthSetupError::Jwks(format!("not a JWKS: {e}")))?;
    if set.keys.is_empty() {
        return Err(AuthSetupError::Jwks("the JWKS holds no key".into()));
    }
    Ok(set)
}
