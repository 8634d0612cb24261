//! Health probes of `serve --http`: `/healthz` (the process serves HTTP) and `/readyz` (every
//! source is ready: connected, or a static catalog). Both answer `GET` and `HEAD` without
//! authentication — a load balancer or an orchestrator probes them without a token — so they
//! say nothing of the catalog: no tool or group names, no counts; `/readyz` names only the
//! sources (config names) that are not ready (docs/reference.md, "Operations").
//!
//! Bodies are JSON: `{"status":"ok"}`; `{"status":"ready"}`; with `503`,
//! `{"status":"not_ready","sources":["<name>", …]}`.

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::json;

use crate::Gateway;
use crate::accept::HttpResponse;

/// Liveness: the process serves.
pub const HEALTH_PATH: &str = "/healthz";
/// Readiness: every source is ready.
pub const READY_PATH: &str = "/readyz";

/// The answer to a health probe, or `None` when `path` is not one of the probes.
pub(crate) fn probe(method: &Method, path: &str, gateway: &Gateway) -> Option<HttpResponse> {
    let ready = match path {
        HEALTH_PATH => false,
        READY_PATH => true,
        _ => return None,
    };
    if method != Method::GET && method != Method::HEAD {
        let mut r = respond(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({"error": "method_not_allowed", "message": "probes answer GET and HEAD"}),
            method,
        );
        r.headers_mut().insert(
            http::header::ALLOW,
            http::HeaderValue::from_static("GET, HEAD"),
        );
        return Some(r);
    }
    if !ready {
        return Some(respond(StatusCode::OK, &json!({"status": "ok"}), method));
    }
    let not_ready: Vec<String> = gateway
        .statuses()
        .into_iter()
        .filter(|s| s.status.is_err())
        .map(|s| s.name)
        .collect();
    Some(if not_ready.is_empty() {
        respond(StatusCode::OK, &json!({"status": "ready"}), method)
    } else {
        respond(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "not_ready", "sources": not_ready}),
            method,
        )
    })
}

fn respond(status: StatusCode, body: &serde_json::Value, method: &Method) -> HttpResponse {
    let bytes = if method == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from(format!("{body}\n"))
    };
    let mut r = Response::new(Full::new(bytes).boxed());
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    r
}
