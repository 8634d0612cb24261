//! The members of an upstream's listed tools that rmcp's `Tool` type has no field for (such as
//! `execution`), read off the wire as a `tools/list` answer arrives, before rmcp decodes it
//! and drops them; the upstream's tools then keep them in the catalog.
//!
//! A transport hands every message it reads to [`WireFields::observe`]; only an answer holding
//! both `"tools"` and `"inputSchema"` is parsed again, so other messages cost two substring
//! searches.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use memchr::memmem;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{StreamableHttpError, StreamableHttpPostResponse};
use serde::Deserialize;
use serde_json::{Map, Value};

/// What a POST through rmcp's streamable HTTP client comes to.
pub(crate) type PostResult =
    Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// The members rmcp's `Tool` carries itself.
const MODELLED: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
];

/// One connection's unmodelled tool members, by tool name, from the answers read so far.
#[derive(Debug, Default)]
pub(crate) struct WireFields {
    by_tool: Mutex<HashMap<String, Map<String, Value>>>,
}

/// A `tools/list` answer, as far as it is read here.
#[derive(Deserialize)]
struct Answer {
    result: Page,
}

#[derive(Deserialize)]
struct Page {
    tools: Vec<Map<String, Value>>,
}

impl WireFields {
    fn map(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Map<String, Value>>> {
        self.by_tool.lock()
    }

    /// Reads `message` (one JSON-RPC message as received): when it answers `tools/list`, notes
    /// each listed tool's unmodelled members (a tool listed without any loses what it had).
    pub(crate) fn observe(&self, message: &[u8]) {
        // Searchers built once: a message read on every call costs two searches, no set-up.
        static INPUT_SCHEMA: LazyLock<memmem::Finder<'static>> =
            LazyLock::new(|| memmem::Finder::new(b"\"inputSchema\""));
        static TOOLS: LazyLock<memmem::Finder<'static>> =
            LazyLock::new(|| memmem::Finder::new(b"\"tools\""));
        if INPUT_SCHEMA.find(message).is_none() || TOOLS.find(message).is_none() {
            return;
        }
        let Ok(answer) = serde_json::from_slice::<Answer>(message) else {
            return;
        };
        let mut map = self.map();
        for tool in answer.result.tools {
            let Some(Value::String(name)) = tool.get("name").cloned() else {
                continue;
            };
            let extra = unmodelled(&tool);
            if extra.is_empty() {
                map.remove(&name);
            } else {
                map.insert(name, extra);
            }
        }
    }

    /// The unmodelled members `tool` was last listed with.
    pub(crate) fn of(&self, tool: &str) -> Option<Map<String, Value>> {
        self.map().get(tool).cloned()
    }

    /// Forgets every tool's (before the connection's tools are listed anew).
    pub(crate) fn clear(&self) {
        self.map().clear();
    }
}

/// Sends `tools/list` (`message`) to a streamable HTTP upstream as rmcp's reqwest client does,
/// reading the answer's bytes into `fields` before rmcp decodes it. `None` when the answer is
/// anything but a `200` with JSON or an event stream: the caller then sends it again through
/// rmcp's client, which reads every other answer (a listing asks nothing of the server).
pub(crate) async fn post_tools_list(
    client: &reqwest::Client,
    fields: &Arc<WireFields>,
    uri: &str,
    message: &ClientJsonRpcMessage,
    session_id: Option<&str>,
    auth_token: Option<&str>,
    headers: &HashMap<http::HeaderName, http::HeaderValue>,
) -> Option<PostResult> {
    use futures_util::StreamExt;
    use reqwest::header::{ACCEPT, CONTENT_TYPE};

    let mut request = client
        .post(uri)
        .header(ACCEPT, "text/event-stream, application/json");
    if let Some(token) = auth_token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(id) = session_id {
        request = request.header("mcp-session-id", id);
    }
    let response = request.json(message).send().await.ok()?;
    if response.status() != reqwest::StatusCode::OK {
        return None;
    }
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("application/json") {
        let body = response.bytes().await.ok()?;
        fields.observe(&body);
        let parsed = serde_json::from_slice(&body).ok()?;
        return Some(Ok(StreamableHttpPostResponse::Json(parsed, session)));
    }
    if !content_type.starts_with("text/event-stream") {
        return None;
    }
    let fields = fields.clone();
    let events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream()).map(move |e| {
        if let Ok(event) = &e
            && let Some(data) = &event.data
        {
            fields.observe(data.as_bytes());
        }
        e
    });
    Some(Ok(StreamableHttpPostResponse::Sse(events.boxed(), session)))
}

/// The members of a tool's listed fields that rmcp's `Tool` has no field for.
pub(crate) fn unmodelled(listed: &Map<String, Value>) -> Map<String, Value> {
    listed
        .iter()
        .filter(|(k, _)| !MODELLED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Puts each tool's unmodelled members, as `members_of` gives them by tool name, back into
/// `listing` (a `tools/list` result as JSON); whether any was.
pub(crate) fn restore(
    listing: &mut Value,
    members_of: impl Fn(&str) -> Option<Map<String, Value>>,
) -> bool {
    let Some(Value::Array(tools)) = listing.get_mut("tools") else {
        return false;
    };
    let mut any = false;
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        let Some(members) = tool
            .get("name")
            .and_then(Value::as_str)
            .and_then(&members_of)
        else {
            continue;
        };
        for (k, v) in members {
            tool.entry(k).or_insert(v);
            any = true;
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).expect("json")
    }

    #[test]
    fn a_tools_list_answer_leaves_each_tools_unmodelled_members() {
        let fields = WireFields::default();
        fields.observe(&line(json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
            {"name": "a", "inputSchema": {"type": "object"}, "title": "A",
             "execution": {"taskSupport": "optional"}, "x-vendor": 1},
            {"name": "b", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
        ]}})));
        assert_eq!(
            fields.of("a"),
            Some(
                json!({"execution": {"taskSupport": "optional"}, "x-vendor": 1})
                    .as_object()
                    .expect("an object")
                    .clone()
            )
        );
        assert_eq!(fields.of("b"), None);

        // Listed again without it, a tool loses it; other messages change nothing.
        fields.observe(&line(json!({"jsonrpc": "2.0", "id": 4, "result": {"content": [
            {"type": "text", "text": "{\"tools\": [{\"name\": \"b\", \"inputSchema\": {}, \"execution\": {}}]}"}
        ]}})));
        assert_eq!(fields.of("b"), None);
        fields.observe(&line(
            json!({"jsonrpc": "2.0", "id": 5, "result": {"tools": [
                {"name": "a", "inputSchema": {"type": "object"}},
            ]}}),
        ));
        assert_eq!(fields.of("a"), None);
        fields.observe(b"not json \"tools\" \"inputSchema\"");
    }
}
