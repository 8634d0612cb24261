//! W3C trace context through the gateway. A `tools/call` request's `traceparent` — from its
//! `_meta` (SEP-414), else from the HTTP request's `traceparent` header — becomes the parent
//! of the gateway's `tools/call` span; a call sent on to an upstream carries the trace on: in
//! its `_meta` for every upstream and, for an HTTP upstream, in the `traceparent` header too
//! (`TracingClient`). With traces recorded (`[telemetry]`) what is sent on names the
//! gateway's own span as the parent; without, the caller's `traceparent` is passed on as it
//! came, so the trace still joins up across the gateway.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
#[cfg(feature = "otel")]
use opentelemetry::propagation::TextMapPropagator;
#[cfg(feature = "otel")]
use opentelemetry::trace::TraceContextExt;
#[cfg(feature = "otel")]
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestParamsMeta};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
#[cfg(feature = "otel")]
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::wire_fields::{PostResult, WireFields};

/// The header (and `_meta` key) of the W3C trace context.
pub const TRACEPARENT: &str = "traceparent";

tokio::task_local! {
    /// The caller's `traceparent` while its call runs.
    static INCOMING: Option<String>;
}

/// Sets the global propagator to W3C trace context.
#[cfg(feature = "otel")]
pub(crate) fn install_propagator() {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
}

/// `value` when it is a well-formed `traceparent` (version `00`, non-zero ids), else `None`: a
/// malformed one is ignored, never passed on.
pub fn valid_traceparent(value: &str) -> Option<&str> {
    let value = value.trim();
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let ok = parts.len() == 4
        && parts[0] == "00"
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2)
        && parts[1].bytes().any(|b| b != b'0')
        && parts[2].bytes().any(|b| b != b'0')
        && !value.bytes().any(|b| b.is_ascii_uppercase());
    ok.then_some(value)
}

/// The caller's `traceparent`: the request's `_meta` first, else the HTTP header.
pub(crate) fn incoming(meta: Option<&str>, headers: Option<&http::HeaderMap>) -> Option<String> {
    meta.and_then(valid_traceparent)
        .or_else(|| {
            headers?
                .get(TRACEPARENT)
                .and_then(|v| v.to_str().ok())
                .and_then(valid_traceparent)
        })
        .map(str::to_owned)
}

/// Makes `traceparent` the parent of `span` (when traces are recorded; otherwise a no-op).
#[cfg(feature = "otel")]
pub(crate) fn set_parent(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(tp) = traceparent else { return };
    let carrier = HashMap::from([(TRACEPARENT.to_owned(), tp.to_owned())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(cx);
}

/// Without traces in the build, spans have no parent to set.
#[cfg(not(feature = "otel"))]
pub(crate) fn set_parent(_: &tracing::Span, _: Option<&str>) {}

/// Runs `f` with `traceparent` as the caller's, for [`outgoing`]. Without one, `f` runs as it
/// is (outside any scope [`outgoing`] finds nothing either), sparing each of its polls the
/// task-local's swap.
pub(crate) async fn scoped<F: Future>(traceparent: Option<String>, f: F) -> F::Output {
    match traceparent {
        Some(tp) => INCOMING.scope(Some(tp), f).await,
        None => f.await,
    }
}

/// The `traceparent` to send with a call made now: the current span's when traces are
/// recorded, else the caller's as it came (if any).
pub(crate) fn outgoing() -> Option<String> {
    #[cfg(feature = "otel")]
    if let Some(tp) = current_span_traceparent() {
        return Some(tp);
    }
    INCOMING.try_with(Clone::clone).ok().flatten()
}

/// The current span's `traceparent`, when traces are recorded.
#[cfg(feature = "otel")]
fn current_span_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    if cx.span().span_context().is_valid() {
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        return carrier.remove(TRACEPARENT);
    }
    None
}

/// The `traceparent` a message's `_meta` carries (requests with params only).
fn message_traceparent(message: &ClientJsonRpcMessage) -> Option<String> {
    let ClientJsonRpcMessage::Request(r) = message else {
        return None;
    };
    match &r.request {
        ClientRequest::CallToolRequest(c) => c.params.traceparent().map(str::to_owned),
        _ => None,
    }
}

/// reqwest's streamable HTTP client, adding the `traceparent` header to a `tools/call` POST
/// whose `_meta` carries one, and noting in its [`WireFields`] the members of the tools a
/// `tools/list` answer lists that rmcp's `Tool` drops.
#[derive(Debug, Clone)]
pub(crate) struct TracingClient(pub reqwest::Client, pub Arc<WireFields>);

fn with_traceparent(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    if let Some(v) = message_traceparent(message).and_then(|tp| HeaderValue::from_str(&tp).ok()) {
        headers.insert(HeaderName::from_static(TRACEPARENT), v);
    }
    headers
}

fn is_tools_list(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::ListToolsRequest(_)))
}

impl TracingClient {
    /// One POST of `message` (a tool listing read as it came).
    async fn post_once(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        if is_tools_list(&message)
            && let Some(answer) = crate::wire_fields::post_tools_list(
                &self.0,
                &self.1,
                &uri,
                &message,
                session_id.as_deref(),
                auth_header.as_deref(),
                &headers,
            )
            .await
        {
            return answer;
        }
        self.0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
            .await
    }
}

/// Whether a POST failed with its connection closed or reset before any byte of the answer
/// came (not a connect error, a timeout or a status): what a server's keep-alive close does to
/// a request sent on a pooled connection at that moment.
fn closed_before_answer(error: &StreamableHttpError<reqwest::Error>) -> bool {
    let StreamableHttpError::Client(e) = error else {
        return false;
    };
    if !e.is_request() || e.is_connect() || e.is_timeout() {
        return false;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        if let Some(h) = c.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        cause = c.source();
    }
    false
}

type StreamResult =
    Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>>;

impl StreamableHttpClient for TracingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
        let headers = with_traceparent(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> PostResult {
        let headers = with_traceparent(&message, custom_headers);
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        let headers = with_traceparent(&message, custom_headers);
        let first = self
            .post_once(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                headers.clone(),
                limits,
            )
            .await;
        match first {
            // A kept-alive connection the server had closed (its keep-alive ended as the request
            // went out): the request never reached it, and goes once more on a new connection.
            Err(e) if closed_before_answer(&e) => {
                tracing::debug!(error = %e, "an upstream connection closed before any answer; sending once more");
                self.post_once(uri, message, session_id, auth_header, headers, limits)
                    .await
            }
            answer => answer,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> StreamResult {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> StreamResult {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a POST to a server that `answer`s each connection gives.
    async fn post_to<F, Fut>(answer: F) -> Result<reqwest::Response, reqwest::Error>
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                answer(stream).await;
            }
        });
        reqwest::Client::new()
            .post(format!("http://{address}/"))
            .body("{}")
            .send()
            .await
    }

    #[tokio::test]
    async fn a_connection_closed_before_any_answer_is_told_apart() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Read the request, then close: what a server's keep-alive close does.
        let closed = post_to(|mut s| async move {
            let mut buffer = [0u8; 1024];
            let _ = s.read(&mut buffer).await;
        })
        .await
        .expect_err("no answer");
        assert!(closed_before_answer(&StreamableHttpError::Client(closed)));
        // An answer that started, then broke, is not.
        let started = post_to(|mut s| async move {
            let mut buffer = [0u8; 1024];
            let _ = s.read(&mut buffer).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
                .await;
        })
        .await;
        if let Err(e) = started {
            assert!(!closed_before_answer(&StreamableHttpError::Client(e)));
        }
        // Nobody listening: a connect error, not this.
        let refused = reqwest::Client::new()
            .post("http://127.0.0.1:9/")
            .send()
            .await
            .expect_err("refused");
        assert!(!closed_before_answer(&StreamableHttpError::Client(refused)));
    }

    #[test]
    fn only_well_formed_traceparents_are_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(valid_traceparent(good), Some(good));
        for bad in [
            "",
            "garbage",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(valid_traceparent(bad), None, "{bad}");
        }
        let mut headers = http::HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static(good));
        assert_eq!(incoming(None, Some(&headers)).as_deref(), Some(good));
        assert_eq!(
            incoming(Some("garbage"), Some(&headers)).as_deref(),
            Some(good),
            "a malformed _meta value falls back to the header"
        );
        let other = "00-11111111111111111111111111111111-2222222222222222-00";
        assert_eq!(
            incoming(Some(other), Some(&headers)).as_deref(),
            Some(other)
        );
    }
}
