//! Sources that log in with OAuth (`auth = "oauth"`): the gateway's side sends the stored
//! access token with every request to the source's URL, refreshes it before it expires and
//! once when the server refuses it (rmcp's `AuthClient`), and writes refreshed tokens back to
//! the source's token file. With no usable token the source needs a login, which only a person
//! can give: `toolsearch auth login` (`login`) runs the authorization flow.

mod bearer;
#[cfg(feature = "jwt")]
mod client_assertion;
mod discovery;
mod enterprise;
pub mod login;
pub mod token_file;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, ClientCredentialsConfig, OAuthClientConfig,
};

pub(crate) use bearer::BearerClient;
use bearer::{Grant, Tokens};

use crate::config::{OAuthConfig, OAuthGrant};
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

/// `http` with the source's tokens. For a person's login: the stored ones, their OAuth client
/// configured from the token file (and the configured secret, from the environment), the
/// authorization server's metadata discovered again; none stored: [`OAuthError::NeedsLogin`],
/// without a request. For `client_credentials`: a grant exchanged now and whenever its token
/// runs out.
pub(super) async fn authorized(
    name: &str,
    url: &str,
    config: &OAuthConfig,
    http: TracingClient,
) -> Result<BearerClient<TracingClient>, OAuthError> {
    super::install_crypto_provider();
    if config.grant != OAuthGrant::AuthorizationCode {
        return without_login(url, config, http).await;
    }
    let file = TokenFile::for_source(name, url)?;
    let saved = file.read()?;
    if saved
        .credentials
        .as_ref()
        .is_none_or(|c| c.token_response.is_none())
    {
        return Err(OAuthError::NeedsLogin);
    }
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(file);
    let metadata = discovery::metadata(&manager, url, None).await?;
    manager.set_metadata(metadata);
    if !manager.initialize_from_store().await? {
        return Err(OAuthError::NeedsLogin);
    }
    if let Some(client) = &saved.client {
        let secret = match (&config.client_id, &config.client_secret) {
            (Some(id), Some(secret)) if *id == client.client_id => Some(expand_secret(secret)?),
            _ => client.client_secret.clone(),
        };
        if let Some(secret) = secret {
            manager.configure_client(
                OAuthClientConfig::new(client.client_id.clone(), client.redirect_uri.clone())
                    .with_client_secret(secret),
            )?;
        }
    }
    Ok(BearerClient::new(http, Tokens::new(manager, None)))
}

/// A `client_credentials` or `enterprise_managed` source: the authorization server found from
/// the source's challenge, the first token asked for now (so that a refused grant is said when
/// the source connects).
async fn without_login(
    url: &str,
    config: &OAuthConfig,
    http: TracingClient,
) -> Result<BearerClient<TracingClient>, OAuthError> {
    let Some(client_id) = &config.client_id else {
        return Err(OAuthError::Failed("the grant needs a client_id".to_owned()));
    };
    let mut manager = AuthorizationManager::new(url).await?;
    let challenge = challenge(url).await?;
    let metadata = discovery::metadata(&manager, url, challenge.as_deref()).await?;
    manager.set_metadata(metadata.clone());
    let grant = match (&config.client_secret, &config.private_key) {
        _ if config.grant == OAuthGrant::EnterpriseManaged => {
            let idp = config.idp.as_ref().ok_or_else(|| {
                OAuthError::Failed("enterprise_managed needs its identity provider".to_owned())
            })?;
            let grant = enterprise::EnterpriseGrant::new(
                idp,
                client_id,
                config.client_secret.as_deref(),
                &metadata,
                config.scopes.clone(),
                url,
            )?;
            Grant::Enterprise(grant, own_store(&mut manager, client_id)?)
        }
        (Some(secret), _) => {
            let grant = ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: expand_secret(secret)?,
                scopes: config.scopes.clone(),
                resource: Some(url.to_owned()),
            };
            manager.configure_client_credentials(&grant)?;
            Grant::Secret(grant)
        }
        #[cfg(feature = "jwt")]
        (None, Some(key)) => {
            let grant = client_assertion::AssertionGrant::new(
                client_id,
                key,
                config.signing_algorithm.as_deref(),
                &metadata,
                config.scopes.clone(),
                url,
            )?;
            Grant::Assertion(grant, own_store(&mut manager, client_id)?)
        }
        _ => {
            return Err(OAuthError::Failed(
                "client_credentials needs client_secret or private_key".to_owned(),
            ));
        }
    };
    grant.exchange(&manager).await?;
    Ok(BearerClient::new(http, Tokens::new(manager, Some(grant))))
}

/// A store of its own for tokens the gateway gets without rmcp's exchanges, where the manager
/// reads them; the manager's client is `client_id`, for its bookkeeping (no refresh token ever
/// comes).
fn own_store(
    manager: &mut AuthorizationManager,
    client_id: &str,
) -> Result<rmcp::transport::auth::InMemoryCredentialStore, OAuthError> {
    let store = rmcp::transport::auth::InMemoryCredentialStore::new();
    manager.set_credential_store(store.clone());
    manager.configure_client_id(client_id)?;
    Ok(store)
}

fn expand_secret(secret: &str) -> Result<String, OAuthError> {
    expand(secret).map_err(|e| OAuthError::Failed(e.to_string()))
}

/// The client of requests that must go where they are sent and nowhere else (token requests,
/// metadata read by hand): it follows no redirect.
pub(crate) fn no_redirect_client() -> Result<reqwest::Client, OAuthError> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    super::install_crypto_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| OAuthError::Failed(e.to_string()))?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

/// The source's `WWW-Authenticate` challenge to an unauthenticated `initialize`, when it
/// answers 401 with one; `None` when it answers otherwise (discovery then starts from the
/// well-known locations).
pub(crate) async fn challenge(url: &str) -> Result<Option<String>, OAuthError> {
    let client = super::http::shared_client().map_err(|e| OAuthError::Failed(e.to_string()))?;
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {},
            "clientInfo": {"name": "toolsearch", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let answer = client
        .post(url)
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .map_err(|e| {
            OAuthError::Failed(format!(
                "cannot reach {url}: {}",
                super::cause::root_cause(&e)
            ))
        })?;
    if answer.status() != http::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(answer
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned))
}
