//! A build without JWT verification (the `jwt` cargo feature off): a config with `[auth.jwt]`
//! is refused when the gateway starts, so no verifier ever exists.

use crate::config::JwtConfig;

use super::{AuthError, AuthSetupError, CallerIdentity};

/// No verifier can be made in this build.
pub(super) enum JwtVerifier {}

impl JwtVerifier {
    pub(super) async fn new(_: &JwtConfig) -> Result<Self, AuthSetupError> {
        Err(AuthSetupError::Jwks(
            "this toolsearch was built without JWT verification (cargo feature jwt): remove \
             [auth.jwt], or rebuild with the feature"
                .into(),
        ))
    }

    pub(super) fn authorization_servers(&self) -> &[String] {
        match *self {}
    }

    pub(super) async fn verify(&self, _: &[u8]) -> Result<CallerIdentity, AuthError> {
        match *self {}
    }
}
