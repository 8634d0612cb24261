//! Where a source's authorization server is, and what it says of itself: rmcp's discovery
//! (the challenge's or the well-known protected resource metadata, RFC 9728, then the
//! authorization server's metadata, RFC 8414 / OpenID Connect), with one allowance for servers
//! of protocol 2025-03-26, where the MCP server's own origin was the authorization base URL.
//!
//! rmcp refuses metadata whose `issuer` is not the one its location implies (RFC 8414 §3.3):
//! a client that took it could be sent to another server's authorization server (a mix-up).
//! Some 2025-03-26 servers publish their authorization server's metadata at their origin's
//! root under an issuer with a path on that same origin. That one case is accepted: both the
//! document and the issuer it names are on the origin of the MCP server itself, the server the
//! tokens are for, so no other party is involved. Anything else stays refused.

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};
use url::Url;

use super::OAuthError;

/// The authorization server's metadata for the source at `url`, discovery seeded by its
/// `challenge` when it gave one.
pub(crate) async fn metadata(
    manager: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) => same_origin(url, &expected_issuer, &received_issuer)
            .await
            .ok_or_else(|| {
                OAuthError::Failed(format!(
                    "the authorization server's metadata names the issuer {received_issuer}, not {expected_issuer} where it is published; refused (RFC 8414 §3.3)"
                ))
            }),
        Err(e) => Err(e.into()),
    }
}

/// The metadata at the root of the MCP server's origin, when that is where rmcp read it
/// (`expected` is the origin itself) and the issuer it names (`received`) is on that origin.
async fn same_origin(url: &str, expected: &str, received: &str) -> Option<AuthorizationMetadata> {
    let server = Url::parse(url).ok()?;
    let origin = server.origin();
    let expected_url = Url::parse(expected).ok()?;
    let received_url = Url::parse(received).ok()?;
    let at_root = expected_url.path().trim_end_matches('/').is_empty();
    if !at_root || expected_url.origin() != origin || received_url.origin() != origin {
        return None;
    }
    let location = format!(
        "{}/.well-known/oauth-authorization-server",
        origin.ascii_serialization()
    );
    let answer = super::no_redirect_client()
        .ok()?
        .get(&location)
        .send()
        .await
        .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let metadata: AuthorizationMetadata =
        serde_json::from_slice(&answer.bytes().await.ok()?).ok()?;
    // The same document rmcp read, not one that changed in between.
    (metadata.issuer.as_deref() == Some(received)).then(|| {
        tracing::info!(
            issuer = received,
            "the authorization server's metadata at the MCP server's origin names an issuer with a path on that origin (protocol 2025-03-26); accepted"
        );
        metadata
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_mcp_servers_own_origin_is_allowed_another_issuer() {
        // Another origin, for the document or for the issuer it names: refused without a
        // request (nothing listens at these ports).
        for (expected, received) in [
            ("http://127.0.0.1:9/", "http://127.0.0.1:9/oauth"),
            ("http://127.0.0.1:1/", "http://evil.example/oauth"),
            ("http://127.0.0.1:1/tenant", "http://127.0.0.1:1/oauth"),
        ] {
            assert!(
                same_origin("http://127.0.0.1:1/mcp", expected, received)
                    .await
                    .is_none(),
                "{expected} {received}"
            );
        }
    }
}
