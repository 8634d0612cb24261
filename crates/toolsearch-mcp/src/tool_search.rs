//! `POST /v1/tool_search` on the HTTP listener: a search answered in a vendor's shape, for
//! agents that call the model APIs directly (docs/reference.md, "Vendor formats"). Behind the same authentication
//! as MCP; the caller's identity picks its policy and rate limit, as for its MCP calls.
//!
//! Body: `{"format": "anthropic"|"openai", "query": "...", "limit"?: n, "call_id"?: "..."}`.
//! `200` with Anthropic's `tool_result` content or OpenAI's `tool_search_output` item; `400`
//! with an `invalid_request` error object for a malformed body; `429` (with `Retry-After`)
//! over the rate limit; `503` when the search cannot run; `405` for other methods.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};
use toolsearch::Session;
use toolsearch::vendor::{Format, SEARCH_TOOL};
use toolsearch::{ErrorCode, Outcome, ToolError};

use crate::Gateway;
use crate::accept::HttpResponse;
use crate::auth::CallerIdentity;

/// Where the search is served.
pub const TOOL_SEARCH_PATH: &str = "/v1/tool_search";

/// Largest body read (a query is at most 2048 characters).
const MAX_BODY: usize = 64 * 1024;

fn json_response(status: StatusCode, body: &Value) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn bad_request(path: &str, message: impl Into<String>) -> HttpResponse {
    json_response(
        StatusCode::BAD_REQUEST,
        &ToolError::invalid_request(path, message).to_value(),
    )
}

/// The engine's arguments for the format, from the body's members.
fn arguments(format: Format, body: &Map<String, Value>) -> Value {
    let mut input = Map::new();
    for key in ["query", "limit"] {
        if let Some(v) = body.get(key) {
            input.insert(key.to_owned(), v.clone());
        }
    }
    match format {
        Format::Anthropic => Value::Object(input),
        Format::Openai => {
            json!({"call_id": body.get("call_id").cloned().unwrap_or(Value::Null), "arguments": input})
        }
    }
}

/// Answers one request to [`TOOL_SEARCH_PATH`].
pub(crate) async fn answer(
    parts: &http::request::Parts,
    body: Incoming,
    gateway: &Gateway,
) -> HttpResponse {
    if parts.method != Method::POST {
        let mut r = json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &ToolError::invalid_request("", "POST a JSON search request").to_value(),
        );
        r.headers_mut()
            .insert(http::header::ALLOW, http::HeaderValue::from_static("POST"));
        return r;
    }
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => {
            return bad_request(
                "",
                format!("the body must be JSON of at most {MAX_BODY} bytes"),
            );
        }
    };
    let body: Map<String, Value> = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => m,
        _ => {
            return bad_request(
                "",
                "the body must be a JSON object: {\"format\", \"query\", \"limit\"?, \"call_id\"?}",
            );
        }
    };
    if let Some(k) = body
        .keys()
        .find(|k| !["format", "query", "limit", "call_id"].contains(&k.as_str()))
    {
        return bad_request(
            &format!("/{k}"),
            format!("unknown member {k:?}: a search takes format, query, limit and call_id"),
        );
    }
    let format = match body
        .get("format")
        .and_then(Value::as_str)
        .map(str::parse::<Format>)
    {
        Some(Ok(f)) => f,
        _ => return bad_request("/format", "format must be \"anthropic\" or \"openai\""),
    };
    if format == Format::Anthropic && body.contains_key("call_id") {
        return bad_request("/call_id", "call_id is for the openai format");
    }
    let session = Arc::new(match parts.extensions.get::<CallerIdentity>() {
        Some(i) => Session::with_context(i.context.clone()),
        None => Session::new(),
    });
    let reply = gateway
        .engine()
        .handle_vendor_in(&session, format, SEARCH_TOOL, arguments(format, &body))
        .await;
    let Some(error) = reply.error else {
        return json_response(StatusCode::OK, &reply.value);
    };
    let status = match reply.outcome {
        Outcome::Error(ErrorCode::InvalidRequest) => StatusCode::BAD_REQUEST,
        Outcome::Error(ErrorCode::RateLimited) => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut r = json_response(status, &error);
    if let Some(ms) = error["retry_after_ms"].as_u64() {
        let secs = ms.div_ceil(1000).max(1).to_string();
        if let Ok(v) = http::HeaderValue::from_str(&secs) {
            r.headers_mut().insert(http::header::RETRY_AFTER, v);
        }
    }
    r
}
