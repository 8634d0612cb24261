//! `toolsearch auth login`: the MCP authorization flow for one source, run by a person.
//!
//! The source's 401 and its `WWW-Authenticate` challenge → its protected resource metadata
//! (RFC 9728) → its authorization server's metadata (RFC 8414 / OpenID Connect) → the client's
//! identity: a configured `client_id`, else a client ID metadata document when the server
//! accepts them, else dynamic registration (RFC 7591) → the authorization code with PKCE
//! (S256) and the `resource` indicator (RFC 8707), received on a redirect to a listener bound
//! to loopback that answers one callback and closes → the tokens, stored in the source's token
//! file. Discovery, PKCE, the code exchange and the `state` bookkeeping are rmcp's.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};
use tokio::sync::mpsc;

use super::{Saved, SavedClient, TokenFile};
use crate::config::OAuthConfig;
use crate::secrets::{constant_time_eq, expand};

/// The path of the loopback redirect.
const CALLBACK_PATH: &str = "/callback";

/// How long a login waits for the browser's redirect by default.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a login did not end with stored tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The source or its authorization server failed a step (named in the message).
    #[error("{0}")]
    Flow(String),
    /// The authorization server sent the browser back with an error.
    #[error("the authorization server refused: {0}")]
    Refused(String),
    /// No callback came in time.
    #[error("no answer from the browser within {0:?}; run the login again")]
    Timeout(Duration),
    /// The loopback listener could not be opened.
    #[error("cannot listen for the redirect on loopback: {0}")]
    Listen(std::io::Error),
}

impl From<AuthError> for LoginError {
    fn from(e: AuthError) -> Self {
        Self::Flow(e.to_string())
    }
}

/// What a login stored.
#[derive(Debug, Clone)]
pub struct LoggedIn {
    /// The token file.
    pub file: std::path::PathBuf,
    /// The client ID it logged in as.
    pub client_id: String,
    /// The scopes granted (as the authorization server said, else as asked).
    pub scopes: Vec<String>,
}

/// Runs the flow for source `name` at `url`: `show` gets the URL a person opens in a browser
/// (once, before the wait); the tokens are stored in `file` once the redirect brings the code.
pub async fn login(
    name: &str,
    url: &str,
    config: &OAuthConfig,
    file: TokenFile,
    timeout: Duration,
    show: impl FnOnce(&str),
) -> Result<LoggedIn, LoginError> {
    super::super::install_crypto_provider();
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(LoginError::Listen)?;
    let port = listener.local_addr().map_err(LoginError::Listen)?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    let step_up = file.read()?.step_up;
    // A challenge asking for more scope than the last login got comes first.
    let challenge = match step_up {
        Some(c) => Some(c),
        None => super::challenge(url)
            .await
            .map_err(|e| LoginError::Flow(e.to_string()))?,
    };
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(file.clone());
    let metadata = super::discovery::metadata(&manager, url, challenge.as_deref())
        .await
        .map_err(|e| LoginError::Flow(e.to_string()))?;
    let cimd_accepted = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let registration = metadata.registration_endpoint.is_some();
    manager.set_metadata(metadata);

    let mut request =
        AuthorizationRequest::new(redirect_uri.clone()).with_client_name("toolsearch");
    if !config.scopes.is_empty() {
        request = request.with_scopes(config.scopes.clone());
    }
    let mut issued_secret = None;
    if let Some(id) = &config.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &config.client_secret {
            let secret = expand(secret).map_err(|e| LoginError::Flow(e.to_string()))?;
            request = request.with_client_secret(secret);
        }
    } else if let Some(document) = config
        .client_metadata_url
        .as_ref()
        .filter(|_| cimd_accepted)
    {
        request = request.with_client_metadata_url(document.clone());
    } else if registration {
        // Registered here rather than inside rmcp's session, so that a secret the server
        // issues is kept for refreshing the tokens later.
        let scopes = if config.scopes.is_empty() {
            manager.select_scopes(None, &[])
        } else {
            config.scopes.clone()
        };
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client("toolsearch", &redirect_uri, &scope_refs)
            .await
            .map_err(|e| LoginError::Flow(format!("registering the client failed: {e}")))?;
        request = request.with_preregistered_client(registered.client_id.clone());
        if let Some(secret) = registered.client_secret {
            request = request.with_client_secret(secret.clone());
            issued_secret = Some(secret);
        }
    } else {
        return Err(LoginError::Flow(format!(
            "the authorization server of {name} accepts neither registration nor a client metadata document here; give auth = {{ client_id = \"...\" }} (a client registered with it){}",
            if config.client_metadata_url.is_some() {
                " — it does not accept client metadata documents"
            } else {
                ""
            }
        )));
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| LoginError::Flow(e.to_string()))?;
    let auth_url = session.get_authorization_url().to_owned();
    let state = query_value(&auth_url, "state")
        .ok_or_else(|| LoginError::Flow("the authorization URL carries no state".to_owned()))?;

    show(&auth_url);
    let callback = tokio::time::timeout(timeout, one_callback(listener, &state))
        .await
        .map_err(|_| LoginError::Timeout(timeout))??;
    session
        .handle_callback_with_issuer(&callback.code, &state, callback.issuer.as_deref())
        .await?;

    let (client_id, _) = session.get_credentials().await?;
    let mut saved: Saved = file.read()?;
    saved.step_up = None;
    saved.client = Some(SavedClient {
        client_id: client_id.clone(),
        client_secret: issued_secret,
        redirect_uri,
    });
    file.write(&saved)?;
    let scopes = saved
        .credentials
        .as_ref()
        .map(|c| c.granted_scopes.clone())
        .unwrap_or_default();
    Ok(LoggedIn {
        file: file.path().to_owned(),
        client_id,
        scopes,
    })
}

/// What the redirect brought.
struct Callback {
    code: String,
    issuer: Option<String>,
}

/// Serves the loopback redirect until one request to [`CALLBACK_PATH`] carries this login's
/// `state`, then stops listening. A callback with another `state` is refused and the wait
/// goes on (it is not this login's); one with this `state` and an `error` ends the login.
async fn one_callback(
    listener: tokio::net::TcpListener,
    state: &str,
) -> Result<Callback, LoginError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<HashMap<String, String>>();
    let expected = state.to_owned();
    let accept = async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let tx = tx.clone();
            let expected = expected.clone();
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let answer = answer(&req, &expected, &tx);
                async move { Ok::<_, Infallible>(answer) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    };
    let params = tokio::select! {
        () = accept => unreachable!("the accept loop never ends"),
        p = rx.recv() => p,
    };
    // The listener is dropped here: nothing more is accepted.
    let params = params.ok_or_else(|| LoginError::Flow("the redirect listener stopped".into()))?;
    if let Some(error) = params.get("error") {
        let description = params
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(LoginError::Refused(format!("{error}{description}")));
    }
    let code = params
        .get("code")
        .cloned()
        .ok_or_else(|| LoginError::Flow("the redirect carried no code".into()))?;
    Ok(Callback {
        code,
        issuer: params.get("iss").cloned(),
    })
}

/// The answer to one request on the redirect listener; a callback for this login is passed on.
fn answer(
    req: &Request<Incoming>,
    expected: &str,
    tx: &mpsc::UnboundedSender<HashMap<String, String>>,
) -> Response<Full<Bytes>> {
    let page = |status: StatusCode, text: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *r.status_mut() = status;
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    if req.uri().path() != CALLBACK_PATH {
        return page(StatusCode::NOT_FOUND, "not found\n");
    }
    let params: HashMap<String, String> = req
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let matches = params
        .get("state")
        .is_some_and(|s| constant_time_eq(s.as_bytes(), expected.as_bytes()));
    if !matches {
        return page(
            StatusCode::BAD_REQUEST,
            "This redirect is not for the login toolsearch is waiting for (its state does not match).\n",
        );
    }
    let failed = params.contains_key("error");
    let _ = tx.send(params);
    if failed {
        page(
            StatusCode::OK,
            "The authorization server refused the login; toolsearch says why. You can close this window.\n",
        )
    } else {
        page(
            StatusCode::OK,
            "toolsearch is logged in. You can close this window.\n",
        )
    }
}

/// `name`'s value in `url`'s query.
fn query_value(url: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, path: &str) -> Option<(u16, String)> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        let status = text.split(' ').nth(1)?.parse().ok()?;
        Some((status, text))
    }

    #[tokio::test]
    async fn the_redirect_listener_takes_one_callback_with_its_state_then_closes() {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let waiting = tokio::spawn(async move { one_callback(listener, "the-state").await });
        // Another login's redirect (or a forged one) is refused, and the wait goes on.
        let (status, text) = get(port, "/callback?code=stolen&state=other")
            .await
            .expect("answer");
        assert_eq!(status, 400, "{text}");
        let (status, _) = get(port, "/favicon.ico").await.expect("answer");
        assert_eq!(status, 404);
        let (status, text) = get(
            port,
            "/callback?code=the-code&state=the-state&iss=https%3A%2F%2Fas",
        )
        .await
        .expect("answer");
        assert_eq!(status, 200, "{text}");
        let callback = waiting.await.expect("joined").expect("callback");
        assert_eq!(callback.code, "the-code");
        assert_eq!(callback.issuer.as_deref(), Some("https://as"));
        // Nothing listens any more.
        assert!(
            get(port, "/callback?code=x&state=the-state")
                .await
                .is_none()
        );
    }

    #[tokio::test]
    async fn an_authorization_server_refusal_ends_the_wait_with_its_reason() {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let waiting = tokio::spawn(async move { one_callback(listener, "s").await });
        let (status, _) = get(
            port,
            "/callback?error=access_denied&error_description=the%20user%20said%20no&state=s",
        )
        .await
        .expect("answer");
        assert_eq!(status, 200);
        let e = waiting
            .await
            .expect("joined")
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("access_denied: the user said no"), "{e}");
    }
}
