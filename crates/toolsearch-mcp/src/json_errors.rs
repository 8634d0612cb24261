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

/// `response`, an error refusing a request before its body was read (a missing or wrong
/// token), as a JSON-RPC error when the body is a JSON-RPC request: the body is read (at most
/// `limit` bytes) for its id. Anything else keeps the plain answer.
pub(crate) async fn refusing<B>(
    method: &http::Method,
    body: B,
    limit: usize,
    response: HttpResponse,
) -> HttpResponse
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if method != http::Method::POST {
        return response;
    }
    let Ok(collected) = http_body_util::Limited::new(body, limit).collect().await else {
        return response;
    };
    match request_id(&collected.to_bytes()) {
        Some(id) => as_json_rpc(response, &id).await,
        None => response,
    }
}

/// The id of a JSON-RPC request (a message with a method and a non-null id).
fn request_id(body: &[u8]) -> Option<Value> {
    let Value::Object(mut message) = serde_json::from_slice::<Value>(body).ok()? else {
        return None;
    };
    if !message.contains_key("method") {
        return None;
    }
    message.remove("id").filter(|id| !id.is_null())
}

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
    async fn a_refused_request_gets_its_id_back_and_anything_else_the_plain_answer() {
        let refused = || answer(StatusCode::UNAUTHORIZED, None, "a bearer token is required");
        let request = Full::new(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":"r-1","method":"tools/list"}"#,
        ));
        let r = refusing(&http::Method::POST, request, 1024, refused()).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            body_of(r).await,
            json!({"jsonrpc": "2.0", "id": "r-1", "error": {"code": -32600, "message": "a bearer token is required"}})
        );
        for (method, body) in [
            // A notification, a response, no JSON, a body over the limit, a GET.
            (
                http::Method::POST,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
            (
                http::Method::POST,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            ),
            (http::Method::POST, "not json"),
            (
                http::Method::POST,
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"................................"}}"#,
            ),
            (
                http::Method::GET,
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            ),
        ] {
            let r = refusing(
                &method,
                Full::new(Bytes::from_static(body.as_bytes())),
                64,
                refused(),
            )
            .await;
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
            let bytes = r.into_body().collect().await.expect("body").to_bytes();
            assert_eq!(bytes, "a bearer token is required", "{body}");
        }
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
