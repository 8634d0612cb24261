//! A request whose whole answer is one message, answered as `application/json`.
//!
//! rmcp's streamable HTTP server answers every request of a session as an SSE stream, and some
//! clients (the Python SDK's) stop reading such a stream at the response and so cannot reuse
//! the connection: every call opens a new one. When the client accepts `application/json`,
//! the gateway reads the stream up to its first message: a response or an error — with no
//! notification or request before it — goes out as the JSON body; anything else (progress, a
//! log message, an elicitation first) keeps the stream, replayed from its start, so nothing is
//! lost and the order holds.

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::HeaderValue;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;

use crate::accept::HttpResponse;

/// Whether a request's `Accept` names `application/json` (or any type).
pub(crate) fn accepts_json(headers: &http::HeaderMap) -> bool {
    headers.get_all(ACCEPT).iter().any(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',').any(|t| {
                let t = t.split(';').next().unwrap_or_default().trim();
                t.eq_ignore_ascii_case("application/json") || t == "*/*"
            })
        })
    })
}

/// What the stream's first message is.
enum First {
    /// A response or an error: the whole answer.
    Answer(Bytes),
    /// A notification or a request (or something unreadable): the stream stays a stream.
    Stream,
}

/// The data of every complete event at the front of `text` (removed from it), in order. Events
/// end at a blank line (`\n\n` or `\r\n\r\n`); what follows the last one stays, as bytes, for
/// the next frame to complete.
fn complete_events(text: &mut BytesMut) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let find = |sep: &[u8]| {
            text.windows(sep.len())
                .position(|w| w == sep)
                .map(|i| (i, sep.len()))
        };
        let end = match (find(b"\n\n"), find(b"\r\n\r\n")) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return out,
        };
        let event = text.split_to(end.0 + end.1);
        let event = String::from_utf8_lossy(&event[..end.0]);
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        out.push(data.join("\n"));
    }
}

/// Classifies one event's data; `None` for an event without data (a priming event, a ping).
fn classify(data: &str) -> Option<First> {
    if data.trim().is_empty() {
        return None;
    }
    let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(data) else {
        return Some(First::Stream);
    };
    let answer = !m.contains_key("method") && (m.contains_key("result") || m.contains_key("error"));
    Some(if answer {
        First::Answer(Bytes::from(data.to_owned()))
    } else {
        First::Stream
    })
}

/// `response` as `application/json` when it is an SSE stream whose first message is the whole
/// answer; otherwise the same stream (the frames read so far replayed first). `amend`, when
/// given, may change the answer's `result` (and says whether it did).
pub(crate) async fn prefer_json(
    response: HttpResponse,
    amend: Option<&(dyn Fn(&mut serde_json::Value) -> bool + Sync)>,
) -> HttpResponse {
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if response.status() != http::StatusCode::OK {
        return response;
    }
    if !is_sse {
        return match amend {
            Some(amend) if is_json(&response) => amend_json(response, amend).await,
            _ => response,
        };
    }
    let (mut parts, mut body) = response.into_parts();
    let mut read: Vec<Bytes> = Vec::new();
    let mut text = BytesMut::new();
    let first = loop {
        match body.frame().await {
            None => break First::Stream,
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                text.extend_from_slice(&data);
                read.push(data);
                if let Some(first) = complete_events(&mut text).iter().find_map(|d| classify(d)) {
                    break first;
                }
            }
            Some(Err(never)) => match never {},
        }
    };
    match first {
        First::Answer(mut json) => {
            if let Some(amend) = amend {
                json = amended(json, amend);
            }
            parts
                .headers
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            parts.headers.remove(CONTENT_LENGTH);
            http::Response::from_parts(parts, Full::new(json).map_err(|e| match e {}).boxed())
        }
        First::Stream => {
            let replay = futures_util::stream::iter(read).map(|b| Ok(Frame::data(b)));
            let rest = body.into_data_stream().map(|d| d.map(Frame::data));
            http::Response::from_parts(parts, BodyExt::boxed(StreamBody::new(replay.chain(rest))))
        }
    }
}

fn is_json(response: &HttpResponse) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A JSON answer with its `result` amended.
async fn amend_json(
    response: HttpResponse,
    amend: &(dyn Fn(&mut serde_json::Value) -> bool + Sync),
) -> HttpResponse {
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let json = amended(collected.to_bytes(), amend);
    parts.headers.remove(CONTENT_LENGTH);
    http::Response::from_parts(parts, Full::new(json).map_err(|e| match e {}).boxed())
}

/// The answer `json` with its `result` amended (as it was when `amend` leaves it alone).
fn amended(json: Bytes, amend: &(dyn Fn(&mut serde_json::Value) -> bool + Sync)) -> Bytes {
    let Ok(mut answer) = serde_json::from_slice::<serde_json::Value>(&json) else {
        return json;
    };
    let changed = answer.get_mut("result").is_some_and(amend);
    if changed {
        Bytes::from(answer.to_string())
    } else {
        json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(chunks: &[&'static str]) -> HttpResponse {
        let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = chunks
            .iter()
            .map(|c| Ok(Frame::data(Bytes::from_static(c.as_bytes()))))
            .collect();
        let frames = futures_util::stream::iter(frames);
        http::Response::builder()
            .header(CONTENT_TYPE, "text/event-stream")
            .header("mcp-session-id", "s1")
            .body(BodyExt::boxed(StreamBody::new(frames)))
            .expect("response")
    }

    async fn body_of(r: HttpResponse) -> String {
        let bytes = r.into_body().collect().await.expect("body").to_bytes();
        String::from_utf8(bytes.to_vec()).expect("utf-8")
    }

    #[tokio::test]
    async fn a_lone_response_after_a_priming_event_becomes_json() {
        let r = prefer_json(
            sse(&[
                "id: 0\nretry: 3000\ndata:\n\n",
                "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",",
                "\"id\":7,\"result\":{}}\n\n",
            ]),
            None,
        )
        .await;
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(r.headers()["mcp-session-id"], "s1");
        assert_eq!(body_of(r).await, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
    }

    #[tokio::test]
    async fn an_amended_answer_goes_out_amended_and_an_untouched_one_byte_for_byte() {
        let mark = |result: &mut serde_json::Value| {
            let tools = result.get_mut("tools").and_then(|t| t.as_array_mut());
            tools
                .and_then(|t| t.first_mut()?.as_object_mut())
                .is_some_and(|t| {
                    t.insert(
                        "execution".into(),
                        serde_json::json!({"taskSupport": "forbidden"}),
                    );
                    true
                })
        };
        let amend: &(dyn Fn(&mut serde_json::Value) -> bool + Sync) = &mark;
        let listing =
            "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"a\"}]}}\n\n";
        let r = prefer_json(sse(&[listing]), Some(amend)).await;
        let body: serde_json::Value = serde_json::from_str(&body_of(r).await).expect("json");
        assert_eq!(
            body["result"]["tools"][0]["execution"]["taskSupport"],
            "forbidden"
        );
        // Nothing to amend: the answer as rmcp wrote it.
        let empty = "data: {\"jsonrpc\":\"2.0\", \"id\":2,\"result\":{\"tools\":[]}}\n\n";
        let r = prefer_json(sse(&[empty]), Some(amend)).await;
        assert_eq!(
            body_of(r).await,
            "{\"jsonrpc\":\"2.0\", \"id\":2,\"result\":{\"tools\":[]}}"
        );
    }

    #[tokio::test]
    async fn a_notification_first_keeps_the_whole_stream_in_order() {
        let chunks = [
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}\n\n",
        ];
        let r = prefer_json(sse(&chunks), None).await;
        assert_eq!(r.headers()[CONTENT_TYPE], "text/event-stream");
        assert_eq!(body_of(r).await, chunks.concat());
    }

    #[tokio::test]
    async fn other_answers_pass_unchanged() {
        let plain = http::Response::builder()
            .header(CONTENT_TYPE, "application/json")
            .body(
                Full::new(Bytes::from_static(b"{}"))
                    .map_err(|e| match e {})
                    .boxed(),
            )
            .expect("response");
        let r = prefer_json(plain, None).await;
        assert_eq!(body_of(r).await, "{}");
        // A stream that ends without a message stays what it was.
        let r = prefer_json(sse(&[": ping\n\n"]), None).await;
        assert_eq!(r.headers()[CONTENT_TYPE], "text/event-stream");
        assert_eq!(body_of(r).await, ": ping\n\n");
    }

    #[test]
    fn accept_headers() {
        let h = |v: &'static str| {
            let mut m = http::HeaderMap::new();
            m.insert(ACCEPT, HeaderValue::from_static(v));
            m
        };
        assert!(accepts_json(&h("application/json, text/event-stream")));
        assert!(accepts_json(&h(
            "text/event-stream;q=1, Application/JSON;q=0.5"
        )));
        assert!(!accepts_json(&h("text/event-stream")));
        assert!(!accepts_json(&http::HeaderMap::new()));
    }
}
