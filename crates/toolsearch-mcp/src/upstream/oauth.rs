//! Sources that log in with OAuth (`auth = "oauth"`): the gateway's side sends the stored
//! access token with every request to the source's URL, refreshes it before it expires and
//! once when the server refuses it (rmcp's `AuthClient`), and writes refreshed tokens back to
//! the source's token file. With no usable token the source needs a login, which only a person
//! can give: `toolsearch auth login` (`login`) runs the authorization flow.

pub mod login;
pub mod token_file;

use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, OAuthClientConfig};

use crate::config::OAuthConfig;
use crate::secrets::expand;
use crate::trace_context::TracingClient;

pub use token_file::{Saved, SavedClient, Standing, TokenFile, state_dir};
pub use toolsearch::login_hint;

/// Why an OAuth source cannot be used now.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// No token, or none that works any more (expired without a refresh token, revoked,
    /// issued for another URL or authorization server).
    #[error("needs login")]
    NeedsLogin,
    /// The token file, discovery or the authorization server failed.
    #[error("OAuth: {0}")]
    Failed(String),
}

impl From<AuthError> for OAuthError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
                Self::NeedsLogin
            }
            other => Self::Failed(other.to_string()),
        }
    }
}

/// `http` with the source's stored tokens: their OAuth client configured from the token file
/// (and the configured secret, from the environment), the authorization server's metadata
/// discovered again. No stored token: [`OAuthError::NeedsLogin`], without a request.
pub(super) async fn authorized(
    name: &str,
    url: &str,
    config: &OAuthConfig,
    http: TracingClient,
) -> Result<AuthClient<TracingClient>, OAuthError> {
    let file = TokenFile::for_source(name, url)?;
    let saved = file.read()?;
    if saved
        .credentials
        .as_ref()
        .is_none_or(|c| c.token_response.is_none())
    {
        return Err(OAuthError::NeedsLogin);
    }
    super::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(file);
    if !manager.initialize_from_store().await? {
        return Err(OAuthError::NeedsLogin);
    }
    if let Some(client) = &saved.client {
        let secret = match (&config.client_id, &config.client_secret) {
            (Some(id), Some(secret)) if *id == client.client_id => {
                Some(expand(secret).map_err(|e| OAuthError::Failed(e.to_string()))?)
            }
            _ => client.client_secret.clone(),
        };
        if let Some(secret) = secret {
            manager.configure_client(
                OAuthClientConfig::new(client.client_id.clone(), client.redirect_uri.clone())
                    .with_client_secret(secret),
            )?;
        }
    }
    Ok(AuthClient::new(http, manager))
}
