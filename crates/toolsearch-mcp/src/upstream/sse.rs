//! A legacy HTTP+SSE upstream (protocol 2024-11-05): one long GET whose event stream carries
//! the server's messages; its first event, `endpoint`, names the URL the client POSTs its own
//! messages to. rmcp 3 has no client for it, so this is the transport rmcp's service runs on.
//!
//! The endpoint must be on the stream's own origin (scheme, host and port): the source's
//! headers, its credentials among them, go with every POST and are never sent elsewhere.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use sse_stream::{Sse, SseStream};

use super::cause::{describe, is_unreachable, root_cause};
use super::{CONNECT_TIMEOUT, Running, UpstreamClient, UpstreamError};
use crate::wire_fields::WireFields;

/// Why the event stream could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseOpenError {
    /// The GET was answered with an error status (other than 401/403, which are
    /// [`UpstreamError::Unauthorized`]).
    #[error("GET {url} answered HTTP {status}")]
    Status {
        /// The stream's URL.
        url: String,
        /// The answer's status.
        status: u16,
    },
    /// The answer is not an event stream.
    #[error("GET {url} answered {content_type:?}, not text/event-stream")]
    NotAStream {
        /// The stream's URL.
        url: String,
        /// The answer's content type.
        content_type: String,
    },
    /// The stream ended, or broke, before its `endpoint` event.
    #[error("the event stream ended before it named its message endpoint{0}")]
    NoEndpoint(String),
    /// The `endpoint` event does not hold a URL.
    #[error("the endpoint event holds {0:?}, not a URL")]
    BadEndpoint(String),
    /// The endpoint is on another origin than the stream.
    #[error(
        "the message endpoint {endpoint} is not on the stream's origin {origin}: the source's headers are not sent there"
    )]
    OtherOrigin {
        /// The endpoint the server named.
        endpoint: String,
        /// The stream's origin.
        origin: String,
    },
}

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseSendError {
    /// The message could not be encoded.
    #[error("encoding a message: {0}")]
    Encode(#[source] serde_json::Error),
    /// The POST failed.
    #[error("POST to the message endpoint: {0}")]
    Post(#[source] reqwest::Error),
    /// The POST was answered with an error status.
    #[error("the message endpoint answered HTTP {0}")]
    Status(u16),
}

/// The largest event read from an upstream's stream (rmcp's bound for streamable HTTP): a
/// server that never ends its event cannot make the gateway hold more.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Why the event stream's bytes stopped.
#[derive(Debug, thiserror::Error)]
enum StreamError {
    /// The HTTP body broke.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// An event grew past [`MAX_EVENT_BYTES`].
    #[error("an event of more than {MAX_EVENT_BYTES} bytes")]
    TooLarge,
}

/// Counts the bytes of the event being read; an empty line (`\n`, `\r` or `\r\n` after a line
/// ending) ends it.
#[derive(Default)]
struct EventBound {
    bytes: usize,
    line_empty: bool,
    prev: u8,
}

impl EventBound {
    /// Takes `chunk`; false once the event being read is over the bound.
    fn take(&mut self, chunk: &[u8]) -> bool {
        for &b in chunk {
            match b {
                b'\n' if self.prev == b'\r' => {}
                b'\n' | b'\r' => {
                    if self.line_empty {
                        self.bytes = 0;
                    }
                    self.line_empty = true;
                }
                _ => {
                    self.line_empty = false;
                    self.bytes += 1;
                }
            }
            self.prev = b;
        }
        self.bytes <= MAX_EVENT_BYTES
    }
}

/// The body's bytes, ending with [`StreamError::TooLarge`] when an event outgrows the bound.
fn bounded(
    body: impl futures_util::Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send + 'static,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, StreamError>> + Send + 'static {
    body.scan((EventBound::default(), false), |(bound, over), chunk| {
        let item = if *over {
            None
        } else {
            match chunk {
                Ok(chunk) if bound.take(&chunk) => Some(Ok(chunk)),
                Ok(_) => {
                    *over = true;
                    Some(Err(StreamError::TooLarge))
                }
                Err(e) => Some(Err(StreamError::from(e))),
            }
        };
        std::future::ready(item)
    })
}

/// The transport of one legacy SSE connection.
pub(super) struct SseTransport {
    client: reqwest::Client,
    /// The source's headers, sent with every POST.
    headers: HeaderMap,
    /// Where messages are POSTed.
    endpoint: reqwest::Url,
    /// The server's events after `endpoint`.
    events: BoxStream<'static, Result<Sse, sse_stream::Error>>,
    /// Notes the members of listed tools that rmcp's model drops.
    fields: Arc<WireFields>,
}

/// Opens the event stream at `url` and reads its `endpoint` event.
async fn open(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
    fields: Arc<WireFields>,
) -> Result<SseTransport, UpstreamError> {
    let unreachable = |e: reqwest::Error| UpstreamError::Unreachable {
        url: url.to_owned(),
        cause: root_cause(&e),
    };
    let base = reqwest::Url::parse(url).map_err(|_| SseOpenError::BadEndpoint(url.to_owned()))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(UpstreamError::Unauthorized(format!(
            "GET {url} answered HTTP {}",
            status.as_u16()
        )));
    }
    if !status.is_success() {
        return Err(SseOpenError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
        }
        .into());
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !content_type.starts_with("text/event-stream") {
        return Err(SseOpenError::NotAStream {
            url: url.to_owned(),
            content_type,
        }
        .into());
    }
    let mut events = SseStream::from_bytes_stream(bounded(response.bytes_stream())).boxed();
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                break event.data.unwrap_or_default();
            }
            // Comments and keep-alives before it carry nothing.
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(SseOpenError::NoEndpoint(format!(": {e}")).into()),
            None => return Err(SseOpenError::NoEndpoint(String::new()).into()),
        }
    };
    let endpoint = base
        .join(endpoint.trim())
        .map_err(|_| SseOpenError::BadEndpoint(endpoint.clone()))?;
    if endpoint.origin() != base.origin() {
        return Err(SseOpenError::OtherOrigin {
            endpoint: endpoint.to_string(),
            origin: base.origin().ascii_serialization(),
        }
        .into());
    }
    Ok(SseTransport {
        client,
        headers,
        endpoint,
        events,
        fields,
    })
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseSendError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = serde_json::to_vec(&item).map(|body| {
            self.client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body)
        });
        async move {
            let response = request
                .map_err(SseSendError::Encode)?
                .send()
                .await
                .map_err(SseSendError::Post)?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(SseSendError::Status(status.as_u16()))
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let event = match self.events.next().await? {
                Ok(event) => event,
                Err(e) => {
                    tracing::warn!(endpoint = %self.endpoint, error = %e, "the upstream's event stream broke");
                    return None;
                }
            };
            // An event without a type is a `message` (the SSE default).
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let Some(data) = event.data else { continue };
            self.fields.observe(data.as_bytes());
            match serde_json::from_str(&data) {
                Ok(message) => return Some(message),
                Err(e) => {
                    tracing::warn!(endpoint = %self.endpoint, error = %e, "the upstream sent an event that is not a JSON-RPC message; it is skipped");
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.events = futures_util::stream::empty().boxed();
        Ok(())
    }
}

/// Connects to the legacy SSE server at `url` with `headers` (the `initialize` handshake: a
/// 2024-11-05 server knows no other).
pub(super) async fn connect(
    client: UpstreamClient,
    http: reqwest::Client,
    url: &str,
    headers: &BTreeMap<String, String>,
    fields: &Arc<WireFields>,
) -> Result<Running, UpstreamError> {
    let headers = super::http::header_map(headers)?;
    let started = async {
        let transport = open(http, url, headers, fields.clone()).await?;
        let transport = super::noticed::Noticed::new(transport, client.inflight.clone());
        client
            .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
            .await
            .map_err(|e| {
                if is_unreachable(&e) {
                    UpstreamError::Unreachable {
                        url: url.to_owned(),
                        cause: root_cause(&e),
                    }
                } else {
                    tracing::debug!(url, error = %describe(&e), "legacy SSE initialize failed");
                    UpstreamError::Initialize {
                        source: Box::new(e),
                        stderr: None,
                    }
                }
            })
    };
    tokio::time::timeout(CONNECT_TIMEOUT, started)
        .await
        .map_err(|_| UpstreamError::Timeout(CONNECT_TIMEOUT))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_bounded_and_every_kind_of_empty_line_ends_it() {
        let half = vec![b'x'; MAX_EVENT_BYTES / 2 + 1];
        for ending in [&b"\n\n"[..], b"\r\r", b"\r\n\r\n", b"\n\r\n"] {
            let mut bound = EventBound::default();
            assert!(bound.take(b"data: "));
            assert!(bound.take(&half), "half the bound");
            assert!(bound.take(ending));
            assert!(bound.take(&half), "a new event after {ending:?}");
        }
        // One line ending is not the end of the event; split across chunks it still counts.
        let mut bound = EventBound::default();
        assert!(bound.take(&half));
        assert!(bound.take(b"\r"));
        assert!(
            !bound.take(&[b"\n".as_slice(), &half].concat()),
            "one event, over the bound"
        );
        let mut bound = EventBound::default();
        assert!(bound.take(&half));
        assert!(bound.take(b"\r\n\r"));
        assert!(bound.take(b"\n"));
        assert!(
            bound.take(&half),
            "\\r\\n\\r\\n split across chunks ends the event"
        );
    }
}
