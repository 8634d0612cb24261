//! Every HTTP error that answers a JSON-RPC request carries a JSON-RPC error: rmcp answers some
//! protocol faults (a missing or unknown session, a wrong `Accept` or `Content-Type`) with a
//! plain-text body, which a client reading JSON-RPC cannot use. Such an answer keeps its status
//! and gets the error object `{"jsonrpc", "id", "error": {"code", "message"}}` with the text as
//! its message.

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use crate::accept::HttpResponse;
use crate::jsonrpc;

/// The longest plain-text error body kept as the message.
const MAX_TEXT: usize = 4096;

/// `response` to the request `id`, its plain-text error body (if it has one) turned into a
/// JSON-RPC error.
pub(crate) async fn as_json_rpc(response: HttpResponse, id: &Value) -> HttpResponse {
    let status = response.status();
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/event-stream"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let mut message = String::from_utf8_lossy(&text[..text.len().min(MAX_TEXT)])
        .trim()
        .to_owned();
    if message.is_empty() {
        message = status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_owned();
    }
    let code = if status == StatusCode::NOT_FOUND && message.contains("Session not found") {
        jsonrpc::SESSION_NOT_FOUND
    } else if status.is_server_error() {
        jsonrpc::INTERNAL_ERROR
    } else {
        jsonrpc::INVALID_REQUEST
    };
    let body = jsonrpc::error_response(id.clone(), code, message).to_string();
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    HttpResponse::from_parts(parts, Full::new(Bytes::from(body)).boxed())
}

#[cfg(test)]
mod tests {
    use http::Response;
    use serde_json::json;

    use super::*;

    fn answer(status: StatusCode, content_type: Option<&str>, body: &'static str) -> HttpResponse {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
        *r.status_mut() = status;
        if let Some(t) = content_type {
            r.headers_mut()
                .insert(http::header::CONTENT_TYPE, t.parse().expect("header"));
        }
        r
    }

    async fn body_of(r: HttpResponse) -> Value {
        let bytes = r.into_body().collect().await.expect("body").to_bytes();
        serde_json::from_slice(&bytes).expect("json")
    }

    #[tokio::test]
    async fn a_plain_text_error_becomes_a_json_rpc_error_with_the_requests_id() {
        let r = as_json_rpc(
            answer(
                StatusCode::NOT_FOUND,
                Some("text/plain"),
                "Not Found: Session not found",
            ),
            &json!(4),
        )
        .await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(r.headers()[http::header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body_of(r).await,
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": "Not Found: Session not found"}})
        );
        let r = as_json_rpc(
            answer(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                "Unsupported Media Type: x",
            ),
            &json!("a"),
        )
        .await;
        let body = body_of(r).await;
        assert_eq!(body["id"], "a");
        assert_eq!(body["error"]["code"], -32600);
        let r = as_json_rpc(answer(StatusCode::BAD_GATEWAY, None, ""), &json!(1)).await;
        let body = body_of(r).await;
        assert_eq!(body["error"]["code"], -32603);
        assert_eq!(body["error"]["message"], "Bad Gateway");
    }

    #[tokio::test]
    async fn success_and_json_answers_pass_unchanged() {
        for r in [
            answer(StatusCode::OK, Some("text/plain"), "fine"),
            answer(
                StatusCode::BAD_REQUEST,
                Some("application/json"),
                "{\"x\":1}",
            ),
        ] {
            let status = r.status();
            let out = as_json_rpc(r, &json!(1)).await;
            assert_eq!(out.status(), status);
            let bytes = out.into_body().collect().await.expect("body").to_bytes();
            assert!(bytes == "fine" || bytes == "{\"x\":1}");
        }
    }
}
