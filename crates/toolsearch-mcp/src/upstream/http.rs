//! A streamable HTTP upstream: static headers (secrets expanded, each checked and named when
//! invalid), the newest protocol when the server speaks it, else the `initialize` handshake —
//! also when its answer to `server/discover` is of no use.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::{ClientLifecycleMode, ClientServiceExt};

use super::cause::{describe, is_unreachable, root_cause};
use super::oauth::{self, OAuthError};
use super::{CONNECT_TIMEOUT, Running, UpstreamClient, UpstreamError};
use crate::config::{OAuthConfig, OAuthGrant};
use crate::secrets::expand;
use crate::trace_context::TracingClient;
use crate::wire_fields::WireFields;

/// Installs rustls' ring provider once (reqwest is built without a default provider); call it
/// before building a `reqwest::Client` yourself.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// How long a pooled connection to an HTTP upstream is kept unused: under the keep-alive of the
/// common servers (Node's and uvicorn's 5 s), so that the gateway lets a connection go before
/// the server closes it under a request.
const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(4);

/// The HTTP client of every upstream connection: one connection pool and one TLS setup (its
/// root certificates) for all of them. Each session's own connection to a source with context
/// headers used to build its own, ~0.1 MB apiece; what differs between connections (the
/// session id, the source's and the session's headers) goes with each request anyway.
pub(super) fn shared_client() -> Result<reqwest::Client, UpstreamError> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_idle_timeout(POOL_IDLE)
        .redirect(reqwest::redirect::Policy::custom(same_origin_only))
        .build()
        .map_err(UpstreamError::HttpClient)?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

/// At most this many redirects are followed (reqwest's own default).
const MAX_REDIRECTS: usize = 10;

/// Follows a redirect only within the origin it comes from. Every request to an upstream
/// carries the source's headers (an API key, a tenant's context), and the HTTP client strips
/// only the headers it knows to be credentials when a redirect leaves the origin: a redirect
/// to another origin is therefore not followed, and the upstream's 3xx answer is the error
/// the call reports.
fn same_origin_only(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let leaves = attempt
        .previous()
        .last()
        .is_some_and(|from| from.origin() != attempt.url().origin());
    if leaves {
        tracing::warn!(
            to = %attempt.url().origin().ascii_serialization(),
            "an upstream redirected to another origin; not followed (its headers stay with it)"
        );
        attempt.stop()
    } else if attempt.previous().len() > MAX_REDIRECTS {
        attempt.error("too many redirects")
    } else {
        attempt.follow()
    }
}

/// A source's headers, each `${env:}` expanded and checked as HTTP: a bad one is named by its
/// header (the HTTP client's own error says only "builder error"; a value may be a secret and
/// is never shown).
pub(super) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, UpstreamError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let value = expand(value)?;
        let header_value =
            HeaderValue::from_str(&value).map_err(|_| UpstreamError::Header(name.clone()))?;
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| UpstreamError::Header(name.clone()))?;
        map.insert(header_name, header_value);
    }
    Ok(map)
}

/// The endpoint's transport config: `url`, the source's headers (a bearer `Authorization`
/// as rmcp's auth header).
fn config(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, UpstreamError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let mut custom = HashMap::new();
    for (name, value) in &header_map(headers)? {
        if name == http::header::AUTHORIZATION
            && let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        custom.insert(name.clone(), value.clone());
    }
    config.custom_headers = custom;
    Ok(config)
}

/// Who the source is and how it authenticates: its name (for its token file), URL, headers
/// and, for an OAuth source, its OAuth settings.
#[derive(Clone, Copy)]
pub(super) struct Endpoint<'a> {
    pub(super) name: &'a str,
    pub(super) url: &'a str,
    pub(super) headers: &'a BTreeMap<String, String>,
    pub(super) oauth: Option<&'a OAuthConfig>,
}

/// Connects to `url` with `headers` (the source's own, plus a session's context headers).
///
/// The newest protocol when the server speaks it (one `server/discover` probe; rmcp falls back
/// to `initialize` when the server answers it as a legacy server does). An answer to the probe
/// that is of no use — an error rmcp does not read as "legacy", an empty or malformed result —
/// gets one more try with the `initialize` handshake on a new connection, whose answer names
/// the newest version the server accepts; only when that fails too is the source down (with
/// both reasons). A server that cannot be reached, refuses our credentials or does not answer
/// in time is not tried again here.
pub(super) async fn connect(
    client: UpstreamClient,
    endpoint: Endpoint<'_>,
    fields: &Arc<WireFields>,
) -> Result<Running, UpstreamError> {
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::LATEST],
        legacy_version: None,
    };
    let discovered = handshake(client.clone(), endpoint, fields, lifecycle).await;
    let Err(UpstreamError::Initialize { source, .. }) = discovered else {
        return discovered;
    };
    tracing::debug!(url = endpoint.url, error = %describe(&*source), "server/discover gave no usable answer; trying initialize");
    handshake(client, endpoint, fields, ClientLifecycleMode::Initialize)
        .await
        .map_err(|fallback| match fallback {
            UpstreamError::Initialize { source: second, .. } => UpstreamError::Handshake {
                discover: describe(&*source),
                initialize: describe(&*second),
            },
            other => other,
        })
}

/// One connection attempt with `lifecycle`: with the stored OAuth tokens for an OAuth source.
async fn handshake(
    client: UpstreamClient,
    endpoint: Endpoint<'_>,
    fields: &Arc<WireFields>,
    lifecycle: ClientLifecycleMode,
) -> Result<Running, UpstreamError> {
    install_crypto_provider();
    let config = config(endpoint.url, endpoint.headers)?;
    let http = TracingClient(shared_client()?, fields.clone());
    match endpoint.oauth {
        None => {
            let transport = StreamableHttpClientTransport::with_client(http, config);
            attempt(client, endpoint, transport, lifecycle).await
        }
        Some(oauth) => {
            let http = oauth::authorized(endpoint.name, endpoint.url, oauth, http).await?;
            let transport = StreamableHttpClientTransport::with_client(http, config);
            attempt(client, endpoint, transport, lifecycle)
                .await
                .map_err(|e| match e {
                    // The server refused the stored token, and refreshing it did not help.
                    UpstreamError::Unauthorized(_)
                        if oauth.grant == OAuthGrant::AuthorizationCode =>
                    {
                        OAuthError::NeedsLogin.into()
                    }
                    other => other,
                })
        }
    }
}

async fn attempt<C>(
    client: UpstreamClient,
    endpoint: Endpoint<'_>,
    transport: StreamableHttpClientTransport<C>,
    lifecycle: ClientLifecycleMode,
) -> Result<Running, UpstreamError>
where
    C: StreamableHttpClient + Send + Sync + Clone + 'static,
{
    let transport = super::noticed::Noticed::new(transport, client.inflight.clone());
    tokio::time::timeout(
        CONNECT_TIMEOUT,
        client.serve_with_lifecycle(transport, lifecycle),
    )
    .await
    .map_err(|_| UpstreamError::Timeout(CONNECT_TIMEOUT))?
    .map_err(|e| {
        if e.auth_challenge().is_some() {
            UpstreamError::Unauthorized(describe(&e))
        } else if is_unreachable(&e) {
            UpstreamError::Unreachable {
                url: endpoint.url.to_owned(),
                cause: root_cause(&e),
            }
        } else {
            UpstreamError::Initialize {
                source: Box::new(e),
                stderr: None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A server that answers every request with `answer(its own address)` and keeps what
    /// each request said (its head).
    async fn server(
        answer: impl Fn(&str, &str) -> String + Send + Sync + 'static,
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = format!("http://{}", listener.local_addr().expect("address"));
        let heard: Arc<Mutex<Vec<String>>> = Arc::default();
        let (me, log) = (address.clone(), heard.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = vec![0u8; 8192];
                let n = stream.read(&mut buffer).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buffer[..n]).into_owned();
                let reply = answer(&me, &head);
                log.lock().expect("lock").push(head);
                let _ = stream.write_all(reply.as_bytes()).await;
            }
        });
        (address, heard)
    }

    fn redirect_to(location: &str) -> String {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
    }

    const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";

    /// A source's headers never follow a redirect to another origin; within the origin the
    /// redirect is followed as before.
    #[tokio::test]
    async fn a_redirect_to_another_origin_is_not_followed() {
        let (elsewhere, heard_elsewhere) = server(|_, _| OK.to_owned()).await;
        let target = format!("{elsewhere}/mcp");
        let (upstream, heard) = server(move |me, head| {
            if head.starts_with("POST /moved ") {
                redirect_to(&format!("{me}/mcp"))
            } else if head.starts_with("POST /mcp ") {
                OK.to_owned()
            } else {
                redirect_to(&target)
            }
        })
        .await;
        let client = shared_client().expect("client");
        let secret = "s3cr3t-api-key";
        let away = client
            .post(format!("{upstream}/leave"))
            .header("x-api-key", secret)
            .body("{}")
            .send()
            .await
            .expect("an answer");
        assert_eq!(away.status(), 307, "the redirect is the answer");
        assert!(
            heard_elsewhere.lock().expect("lock").is_empty(),
            "the other origin heard nothing"
        );
        let within = client
            .post(format!("{upstream}/moved"))
            .header("x-api-key", secret)
            .body("{}")
            .send()
            .await
            .expect("an answer");
        assert_eq!(within.status(), 200);
        let heard = heard.lock().expect("lock").clone();
        assert_eq!(heard.len(), 3, "{heard:?}");
        assert!(
            heard[2].starts_with("POST /mcp ") && heard[2].contains(secret),
            "followed within the origin, headers and all: {:?}",
            heard[2]
        );
    }
}
