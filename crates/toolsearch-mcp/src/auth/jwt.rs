//! JWTs checked against `[auth.jwt]`: the signature by the key its `kid` names (the JWKS
//! fetched again, at most every 30 s, when a key id is unknown), `iss`, `aud`, `exp` and `nbf`
//! with leeway, and only the listed algorithms (`none` never parses).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::config::{JwksSource, JwtConfig};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;
use tokio::sync::Mutex;
use toolsearch::CALLER_PATH;

use super::{AuthError, AuthSetupError, CallerIdentity};

/// Shortest wait between two JWKS fetches prompted by unknown key ids.
const REFETCH_EVERY: Duration = Duration::from_secs(30);
/// Longest wait for a JWKS document.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The JWKS and how it was last fetched.
struct Keys {
    set: JwkSet,
    fetched: Instant,
}

/// Checks JWTs against `[auth.jwt]`.
pub(super) struct JwtVerifier {
    config: JwtConfig,
    algorithms: Vec<Algorithm>,
    keys: Mutex<Keys>,
    http: Option<reqwest::Client>,
}

fn parse_algorithm(name: &str) -> Option<Algorithm> {
    name.parse::<Algorithm>().ok()
}

impl JwtVerifier {
    pub(super) async fn new(config: &JwtConfig) -> Result<Self, AuthSetupError> {
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

    /// The authorization servers `[auth.jwt]` names (for the protected-resource metadata).
    pub(super) fn authorization_servers(&self) -> &[String] {
        &self.config.authorization_servers
    }

    pub(super) async fn verify(&self, token: &[u8]) -> Result<CallerIdentity, AuthError> {
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
        // Only a claim that is `true` itself (or the string "true") makes an admin.
        let admin = self.config.admin_claim.as_ref().is_some_and(|c| {
            matches!(claims.get(c), Some(Value::Bool(true)))
                || claims.get(c).and_then(Value::as_str) == Some("true")
        });
        Ok(CallerIdentity {
            key,
            context,
            admin,
        })
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
    };
    let set: JwkSet = serde_json::from_str(&text)
        .map_err(|e| AuthSetupError::Jwks(format!("not a JWKS: {e}")))?;
    if set.keys.is_empty() {
        return Err(AuthSetupError::Jwks("the JWKS holds no key".into()));
    }
    Ok(set)
}
