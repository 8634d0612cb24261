//! `/metrics`: the gateway's metrics for a Prometheus scraper (`GET`, `HEAD`). The Prometheus
//! text format by default; OpenMetrics when the `Accept` header asks for
//! `application/openmetrics-text`, as Prometheus itself does.
//!
//! Metrics name tools. On the MCP listener `/metrics` is therefore behind the same
//! authentication as MCP (any caller who may connect sees every tool when there are no
//! `[[policy]]` rules); with policies, callers may see only part of the catalog, so the MCP
//! listener refuses `/metrics` (`403`) and the metrics are served only on the operator's own
//! listener (`serve --metrics ADDR`, the operations listener).

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use crate::Gateway;
use crate::accept::HttpResponse;
use crate::metrics::{OPENMETRICS_TEXT, PROMETHEUS_TEXT};

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

/// Whether the scraper asked for OpenMetrics.
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|part| {
            let mut params = part.split(';').map(str::trim);
            let is_openmetrics = params
                .next()
                .is_some_and(|t| t.eq_ignore_ascii_case("application/openmetrics-text"));
            // `q=0` means "not this one".
            let refused = params.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            is_openmetrics && !refused
        })
}

/// The answer to a request for [`METRICS_PATH`].
pub(crate) fn answer(method: &Method, headers: &HeaderMap, gateway: &Gateway) -> HttpResponse {
    if method != Method::GET && method != Method::HEAD {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "/metrics answers GET and HEAD\n".to_owned(),
            "text/plain; charset=utf-8",
        );
        r.headers_mut().insert(
            http::header::ALLOW,
            http::HeaderValue::from_static("GET, HEAD"),
        );
        return r;
    }
    let openmetrics = wants_openmetrics(headers);
    // A HEAD gets the headers only: nothing is rendered for it.
    let body = if method == Method::HEAD {
        String::new()
    } else {
        gateway.render_metrics(openmetrics)
    };
    let content_type = if openmetrics {
        OPENMETRICS_TEXT
    } else {
        PROMETHEUS_TEXT
    };
    text(StatusCode::OK, body, content_type)
}

/// `403` on the MCP listener of a gateway with `[[policy]]` rules.
pub(crate) fn refused() -> HttpResponse {
    text(
        StatusCode::FORBIDDEN,
        "/metrics names every tool, and [[policy]] rules hide some tools from some callers: the metrics are served only on the listener of `serve --metrics ADDR`\n".to_owned(),
        "text/plain; charset=utf-8",
    )
}

fn text(status: StatusCode, body: String, content_type: &'static str) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, http::HeaderValue::from_static(v));
        h
    }

    #[test]
    fn openmetrics_only_when_asked_for() {
        assert!(!wants_openmetrics(&HeaderMap::new()));
        assert!(!wants_openmetrics(&accept("text/plain;version=0.0.4")));
        // What Prometheus 2.x sends.
        assert!(wants_openmetrics(&accept(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        )));
        assert!(!wants_openmetrics(&accept(
            "application/openmetrics-text;q=0, text/plain"
        )));
    }
}
