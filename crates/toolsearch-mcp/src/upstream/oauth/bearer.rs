//! The HTTP client of an OAuth source: every request carries the source's access token, taken
//! from rmcp's `AuthorizationManager` (which refreshes it shortly before it expires); a request
//! the server answers `401` gets one renewed token and goes once more. The token is renewed by
//! the refresh token, or, for a grant without a person (`client_credentials`,
//! `enterprise_managed`), by a new exchange. With no token the request goes without one, and
//! the server's challenge comes back as rmcp's `AuthRequired`.
//!
//! rmcp's own `AuthClient` does the same for the authorization code grant, but renews only
//! with a refresh token, which the grants without a person never get; one client serves every
//! grant, and one renewal at a time runs for a source (the others wait and take its token).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

/// A `client_credentials` grant, asked again when its token runs out.
pub(crate) enum Grant {
    /// With a client secret (rmcp's exchange).
    Secret(ClientCredentialsConfig),
    /// With a signed client assertion; its tokens are kept in `store`, the manager's.
    #[cfg(feature = "jwt")]
    Assertion(
        super::client_assertion::AssertionGrant,
        rmcp::transport::auth::InMemoryCredentialStore,
    ),
    /// Enterprise-managed: the identity provider's assertion redeemed; tokens as above.
    Enterprise(
        super::enterprise::EnterpriseGrant,
        rmcp::transport::auth::InMemoryCredentialStore,
    ),
}

impl Grant {
    /// A new token for the grant, stored where the manager reads it.
    pub(crate) async fn exchange(
        &self,
        manager: &AuthorizationManager,
    ) -> Result<String, AuthError> {
        use oauth2::TokenResponse as _;
        match self {
            Self::Secret(config) => manager
                .exchange_client_credentials(config)
                .await
                .map(|t| t.access_token().secret().clone()),
            #[cfg(feature = "jwt")]
            Self::Assertion(grant, store) => {
                let answer = grant
                    .exchange()
                    .await
                    .map_err(|e| AuthError::ClientCredentialsError(e.to_string()))?;
                keep(store, grant.client_id(), answer).await
            }
            Self::Enterprise(grant, store) => {
                let answer = grant
                    .exchange()
                    .await
                    .map_err(|e| AuthError::ClientCredentialsError(e.to_string()))?;
                keep(store, grant.client_id(), answer).await
            }
        }
    }
}

/// Stores a token answer where the manager reads it; its access token.
async fn keep(
    store: &rmcp::transport::auth::InMemoryCredentialStore,
    client_id: &str,
    answer: rmcp::transport::auth::OAuthTokenResponse,
) -> Result<String, AuthError> {
    use oauth2::TokenResponse as _;
    use rmcp::transport::auth::{CredentialStore as _, StoredCredentials};
    let token = answer.access_token().secret().clone();
    let scopes = answer
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    store
        .save(StoredCredentials::new(
            client_id.to_owned(),
            Some(answer),
            scopes,
            Some(now),
        ))
        .await?;
    Ok(token)
}

/// Where a source's tokens come from.
pub(crate) struct Tokens {
    manager: AuthorizationManager,
    /// A `client_credentials` source: its grant, exchanged again when the token runs out.
    grant: Option<Grant>,
    /// One renewal at a time.
    renewing: tokio::sync::Mutex<()>,
}

impl Tokens {
    pub(crate) fn new(manager: AuthorizationManager, grant: Option<Grant>) -> Self {
        Self {
            manager,
            grant,
            renewing: tokio::sync::Mutex::new(()),
        }
    }

    /// The token to send: the stored one (refreshed when it is about to expire); for a
    /// `client_credentials` source without one, a new exchange. `None`: there is none.
    async fn current(&self) -> Result<Option<String>, AuthError> {
        match self.manager.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired) => match &self.grant {
                Some(_) => self.renew(None).await,
                None => Ok(None),
            },
            Err(e) => Err(e),
        }
    }

    /// A token other than `refused`: a new exchange for a `client_credentials` source, else
    /// the refresh token's; `None` when there is none to be had without a person.
    async fn renew(&self, refused: Option<&str>) -> Result<Option<String>, AuthError> {
        let _one = self.renewing.lock().await;
        // Renewed by another request meanwhile.
        if let Some(refused) = refused
            && let Ok(token) = self.manager.get_access_token().await
            && token != refused
        {
            return Ok(Some(token));
        }
        let renewed = match &self.grant {
            Some(grant) => grant.exchange(&self.manager).await,
            None => self.manager.refresh_token().await.map(|answer| {
                use oauth2::TokenResponse as _;
                answer.access_token().secret().clone()
            }),
        };
        match renewed {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// `C` with the source's tokens.
#[derive(Clone)]
pub(crate) struct BearerClient<C> {
    inner: C,
    tokens: Arc<Tokens>,
}

impl<C> BearerClient<C> {
    pub(crate) fn new(inner: C, tokens: Tokens) -> Self {
        Self {
            inner,
            tokens: Arc::new(tokens),
        }
    }
}

impl<C: StreamableHttpClient + Sync> BearerClient<C> {
    /// Runs `call` with the current token; after a `401`, once more with a renewed one.
    async fn with_token<T, F, Fut>(&self, call: F) -> Result<T, StreamableHttpError<C::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<C::Error>>>,
    {
        let token = self.tokens.current().await?;
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                match self.tokens.renew(token.as_deref()).await? {
                    Some(fresh) if Some(&fresh) != token.as_ref() => call(Some(fresh)).await,
                    _ => Err(StreamableHttpError::AuthRequired(challenge)),
                }
            }
            answer => answer,
        }
    }
}

type PostResult<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type StreamResult<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for BearerClient<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult<C::Error> {
        self.with_token(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> PostResult<C::Error> {
        self.with_token(|token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult<C::Error> {
        self.with_token(|token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        self.with_token(|token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> StreamResult<C::Error> {
        self.with_token(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> StreamResult<C::Error> {
        self.with_token(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
