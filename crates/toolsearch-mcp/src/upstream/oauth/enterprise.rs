//! Enterprise-managed authorization (SEP-990): the user's enterprise identity provider
//! vouches for them. Their ID token (from the environment, where single sign-on tooling puts
//! it) is exchanged at the provider for an identity assertion (ID-JAG, RFC 8693 token
//! exchange), which the source's authorization server redeems for an access token (RFC 7523
//! JWT bearer grant). Both exchanges, and the checks of the assertion's bindings, are rmcp's.

use std::collections::HashSet;

use oauth2::basic::BasicTokenType;
use oauth2::{ClientSecret, StandardTokenResponse};
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{
    AuthorizationMetadata, OAuthTokenResponse, VendorExtraTokenFields, default_oauth_http_client,
};

use super::OAuthError;
use crate::config::IdentityProvider;
use crate::secrets::expand;

/// An enterprise-managed grant: the identity provider, the source's authorization server
/// and the client registered with each.
pub(crate) struct EnterpriseGrant {
    idp: IdentityProvider,
    client_id: String,
    client_secret: Option<String>,
    issuer: String,
    token_endpoint: String,
    resource: String,
    scopes: Vec<String>,
}

impl EnterpriseGrant {
    /// The grant of `client_id` (with `client_secret`, `${env:NAME}`) at the authorization
    /// server of `metadata`, vouched for by `idp`, for `resource`.
    pub(crate) fn new(
        idp: &IdentityProvider,
        client_id: &str,
        client_secret: Option<&str>,
        metadata: &AuthorizationMetadata,
        scopes: Vec<String>,
        resource: &str,
    ) -> Result<Self, OAuthError> {
        let issuer = metadata.issuer.clone().ok_or_else(|| {
            OAuthError::Failed(
                "the authorization server's metadata names no issuer, which an identity assertion needs"
                    .to_owned(),
            )
        })?;
        Ok(Self {
            idp: idp.clone(),
            client_id: client_id.to_owned(),
            client_secret: client_secret.map(str::to_owned),
            issuer,
            token_endpoint: metadata.token_endpoint.clone(),
            resource: resource.to_owned(),
            scopes,
        })
    }

    /// The client's ID at the source's authorization server.
    pub(crate) fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Both exchanges, the ID token read from the environment now.
    pub(crate) async fn exchange(&self) -> Result<OAuthTokenResponse, OAuthError> {
        let secret = |reference: &str| {
            expand(reference)
                .map(ClientSecret::new)
                .map_err(|e| OAuthError::Failed(e.to_string()))
        };
        let mut idp = EmaAuthorizationServer::new(
            &self.idp.issuer,
            &self.idp.token_endpoint,
            &self.idp.client_id,
        );
        if let Some(s) = &self.idp.client_secret {
            idp = idp
                .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(secret(s)?));
        }
        let mut resource_as =
            EmaAuthorizationServer::new(&self.issuer, &self.token_endpoint, &self.client_id);
        if let Some(s) = &self.client_secret {
            resource_as = resource_as
                .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(secret(s)?));
        }
        let id_token = expand(&self.idp.id_token).map_err(|e| OAuthError::Failed(e.to_string()))?;
        let http = default_oauth_http_client().map_err(|e| OAuthError::Failed(e.to_string()))?;
        let token =
            EmaExchangeRequest::new_with_id_token(idp, resource_as, &self.resource, &id_token)
                .with_scopes(self.scopes.clone())
                .exchange(&http, &http)
                .await
                .map_err(|e| {
                    OAuthError::Failed(format!("enterprise-managed authorization: {e}"))
                })?;
        let mut answer = StandardTokenResponse::new(
            token.access_token,
            BasicTokenType::Bearer,
            VendorExtraTokenFields::default(),
        );
        answer.set_expires_in(token.expires_in.as_ref());
        let scopes: HashSet<String> = token.scopes;
        if !scopes.is_empty() {
            answer.set_scopes(Some(scopes.into_iter().map(oauth2::Scope::new).collect()));
        }
        Ok(answer)
    }
}
