//! A `client_credentials` grant whose client proves itself with a signed JWT instead of a
//! secret (`private_key_jwt`, RFC 7523 §2.2; SEP-1046): a fresh assertion for every token
//! request — `iss` and `sub` the client ID, `aud` the authorization server's issuer, a minute's
//! life, a random `jti` — signed by `jsonwebtoken` with the key from the environment.
//!
//! rmcp has this grant too, behind a feature that brings a second JWT crate and a second
//! crypto library and does not build with the rest of ours; the request itself is a plain
//! form POST (RFC 6749 §4.4), made here.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse};
use serde::Serialize;

use super::OAuthError;
use crate::secrets::expand;

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long an assertion is good for.
const ASSERTION_LIFE: Duration = Duration::from_secs(60);
/// The longest token response read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// A `client_credentials` grant with a client assertion.
pub(crate) struct AssertionGrant {
    client_id: String,
    key: EncodingKey,
    algorithm: Algorithm,
    /// The authorization server's issuer (its token endpoint when it names none).
    audience: String,
    token_endpoint: String,
    scopes: Vec<String>,
    resource: String,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

impl AssertionGrant {
    /// The grant of `client_id` with the key `key_reference` (`${env:NAME}`, a PEM) signing
    /// with `algorithm` (default RS256), at the authorization server of `metadata`, for
    /// `resource`.
    pub(crate) fn new(
        client_id: &str,
        key_reference: &str,
        algorithm: Option<&str>,
        metadata: &AuthorizationMetadata,
        scopes: Vec<String>,
        resource: &str,
    ) -> Result<Self, OAuthError> {
        let algorithm: Algorithm = algorithm
            .unwrap_or("RS256")
            .parse()
            .map_err(|_| OAuthError::Failed("unknown signing_algorithm".to_owned()))?;
        let pem = expand(key_reference).map_err(|e| OAuthError::Failed(e.to_string()))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        // The key's own error could quote it; only its kind is said.
        .map_err(|e| {
            OAuthError::Failed(format!(
                "private_key is not a PEM {algorithm:?} private key ({:?})",
                e.kind()
            ))
        })?;
        Ok(Self {
            client_id: client_id.to_owned(),
            key,
            algorithm,
            audience: metadata
                .issuer
                .clone()
                .unwrap_or_else(|| metadata.token_endpoint.clone()),
            token_endpoint: metadata.token_endpoint.clone(),
            scopes,
            resource: resource.to_owned(),
        })
    }

    /// The client's ID.
    pub(crate) fn client_id(&self) -> &str {
        &self.client_id
    }

    fn assertion(&self) -> Result<String, OAuthError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti).map_err(|e| OAuthError::Failed(e.to_string()))?;
        let claims = Claims {
            iss: &self.client_id,
            sub: &self.client_id,
            aud: &self.audience,
            iat: now,
            exp: now + ASSERTION_LIFE.as_secs(),
            jti: jti.iter().map(|b| format!("{b:02x}")).collect(),
        };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, &self.key).map_err(|e| {
            OAuthError::Failed(format!("signing the client assertion: {:?}", e.kind()))
        })
    }

    /// One token request.
    pub(crate) async fn exchange(&self) -> Result<OAuthTokenResponse, OAuthError> {
        // Finished before any await: the serializer is not `Sync`.
        let body = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials")
                .append_pair("client_assertion_type", ASSERTION_TYPE)
                .append_pair("client_assertion", &self.assertion()?)
                .append_pair("resource", &self.resource);
            if !self.scopes.is_empty() {
                form.append_pair("scope", &self.scopes.join(" "));
            }
            form.finish()
        };
        let answer = super::no_redirect_client()?
            .post(&self.token_endpoint)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                OAuthError::Failed(format!(
                    "cannot reach the token endpoint {}: {}",
                    self.token_endpoint,
                    crate::upstream::cause::root_cause(&e)
                ))
            })?;
        let status = answer.status();
        let body = answer
            .bytes()
            .await
            .map_err(|e| OAuthError::Failed(e.to_string()))?;
        if body.len() > MAX_ANSWER_BYTES {
            return Err(OAuthError::Failed(
                "the token endpoint's answer is over 1 MiB".to_owned(),
            ));
        }
        if !status.is_success() {
            // Its error code and description, never the rest of what it sent.
            let said: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            return Err(OAuthError::Failed(format!(
                "the token endpoint refused the client assertion: HTTP {} {} {}",
                status.as_u16(),
                said["error"].as_str().unwrap_or(""),
                said["error_description"].as_str().unwrap_or("")
            )));
        }
        serde_json::from_slice(&body).map_err(|e| {
            OAuthError::Failed(format!("the token endpoint's answer is not a token: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_not_one_is_refused_without_being_quoted() {
        let metadata = AuthorizationMetadata::default();
        // PATH is set and is no key.
        let path = std::env::var("PATH").expect("PATH");
        for alg in ["RS256", "ES256", "EdDSA"] {
            let e = AssertionGrant::new("gw", "${env:PATH}", Some(alg), &metadata, vec![], "r")
                .err()
                .expect("refused")
                .to_string();
            assert!(e.contains("is not a PEM"), "{e}");
            assert!(!e.contains(&path), "{e}");
        }
    }
}
