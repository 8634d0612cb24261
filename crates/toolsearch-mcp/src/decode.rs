//! Decoding a line into rmcp's message types, with the two messages of every proxied call —
//! a client's `tools/call` and an upstream's tool result — on a fast path.
//!
//! rmcp decodes a message into untagged enums (`ClientRequest`, `ServerResult`) that serde
//! buffers and tries variant by variant: a `tools/call` request is the fourteenth variant of
//! its enum and a tool result the sixteenth, each miss building an error, and a request is
//! buffered twice more on the way (its flattened request, its flattened `params`). The fast
//! paths decode those two messages into rmcp's own types, each part read once with rmcp's
//! `Deserialize` impls, and give up (falling back to rmcp's full decoding) whenever the
//! message could be anything else, so the message reached is always the one rmcp's full
//! decoding gives (tested against it below).

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, CallToolResult, ClientRequest,
    JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerResult,
};
use rmcp::service::{RoleClient, RoleServer, RxJsonRpcMessage, ServiceRole};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// A role whose incoming lines [`crate::JsonRpcStdio`] decodes.
pub trait LineDecode: ServiceRole {
    /// The message a line carries, as rmcp's full decoding gives it.
    fn decode(line: &[u8]) -> Result<RxJsonRpcMessage<Self>, serde_json::Error>;
}

impl LineDecode for RoleServer {
    /// A client's message; a `tools/call` request on the fast path.
    fn decode(line: &[u8]) -> Result<RxJsonRpcMessage<Self>, serde_json::Error> {
        if let Some(message) = tool_call(line) {
            return Ok(message);
        }
        serde_json::from_slice(line)
    }
}

/// A request line read in one pass, its `params` kept as text. rmcp reads the same line
/// through three layers of buffering (the untagged message, the flattened request, the
/// flattened `params` beside `_meta`); the members are the ones it reads, each with rmcp's own
/// type, others are ignored as rmcp ignores them, and a `result` or `error` member makes the
/// line no request, as rmcp's check of a message's shape does.
#[derive(Deserialize)]
struct CallLine<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(rename = "method")]
    _method: CallToolRequestMethod,
    #[serde(borrow)]
    params: &'a RawValue,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a member is there at all, whatever its value (`null` too).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// A `tools/call` request, when `line` is one; `None` sends the line to rmcp's full decoding
/// (any other message, and every line this reading refuses: a duplicate member, `params` of
/// another shape, a `_meta` that is not an object).
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let call: CallLine = serde_json::from_slice(line).ok()?;
    if call.result.0 || call.error.0 {
        return None;
    }
    let mut params: CallToolRequestParams = serde_json::from_str(call.params.get()).ok()?;
    // rmcp keeps a request's `_meta` in its extensions, not in its params.
    let meta = params.meta.take();
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(request),
    }))
}

impl LineDecode for RoleClient {
    /// An upstream's message; a tool result on the fast path.
    fn decode(line: &[u8]) -> Result<RxJsonRpcMessage<Self>, serde_json::Error> {
        if let Some(message) = tool_result(line) {
            return Ok(message);
        }
        serde_json::from_slice(line)
    }
}

/// A response line with nothing but `jsonrpc`, `id` and `result`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponseLine<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    result: &'a RawValue,
}

/// A tool result, when `line` is a response whose result has only a tool result's members and
/// is one; `None` sends the line to rmcp's full decoding.
fn tool_result(line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
    let response: ResponseLine = serde_json::from_slice(line).ok()?;
    let text = response.result.get();
    if !only_tool_result_members(text) {
        return None;
    }
    let result: CallToolResult = serde_json::from_str(text).ok()?;
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: response.jsonrpc,
        id: response.id,
        result: ServerResult::CallToolResult(result),
    }))
}

/// Whether `text` is a JSON object whose member names are all a tool result's. An object with
/// no others cannot be any of the results `ServerResult` tries before `CallToolResult`: each
/// of those needs a member of its own (`tools`, `task`, `action`, ...).
fn only_tool_result_members(text: &str) -> bool {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Members {
        #[serde(rename = "resultType", default)]
        _result_type: Option<IgnoredAny>,
        #[serde(rename = "content", default)]
        _content: Option<IgnoredAny>,
        #[serde(rename = "structuredContent", default)]
        _structured_content: Option<IgnoredAny>,
        #[serde(rename = "isError", default)]
        _is_error: Option<IgnoredAny>,
        #[serde(rename = "_meta", default)]
        _meta: Option<IgnoredAny>,
    }
    serde_json::from_str::<Members>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// rmcp's full decoding of a line, as JSON (its message types have no `PartialEq`).
    fn full<R: ServiceRole>(line: &str) -> Option<Value> {
        serde_json::from_str::<RxJsonRpcMessage<R>>(line)
            .ok()
            .map(|m| serde_json::to_value(m).expect("json"))
    }

    fn fast<R: LineDecode>(line: &str) -> Option<Value> {
        R::decode(line.as_bytes())
            .ok()
            .map(|m| serde_json::to_value(m).expect("json"))
    }

    fn variant_of_client(line: &str) -> String {
        match RoleServer::decode(line.as_bytes()).expect("decodes") {
            JsonRpcMessage::Request(r) => match r.request {
                ClientRequest::CallToolRequest(_) => "call".into(),
                ClientRequest::CustomRequest(_) => "custom".into(),
                other => format!("{other:?}").chars().take(20).collect(),
            },
            _ => "not a request".into(),
        }
    }

    #[test]
    fn a_tool_call_request_decodes_as_rmcp_decodes_it() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"group":"g","tool":"t","arguments":{"n":1.5,"big":18446744073709551615,"s":"\u00e9\n","a":[null,true,{}]}}}}"#,
            r#"{"jsonrpc":"2.0","id":"x-7","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":3,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#,
            r#"{"params":{"arguments":{},"name":"e","requestState":"s","inputResponses":{}},"method":"tools/call","id":9,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"e"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
            // Lines the fast reading refuses or must read as rmcp does.
            r#"{"jsonrpc":"2.0","id":6,"method":"tools\/call","params":{"name":"e\u0301","_meta":null,"extra":[1]},"other":{"x":1}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"e","_meta":"not an object"}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":["e"]}"#,
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"e","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"e","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"1.0","id":13,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"e"},"id":15}"#,
            r#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"e"},"error":null}"#,
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"e"},"result":null}"#,
        ];
        for line in lines {
            assert_eq!(fast::<RoleServer>(line), full::<RoleServer>(line), "{line}");
        }
        // The fast reading is taken for the calls a client sends, and left for the rest.
        for (i, line) in lines.iter().enumerate() {
            let taken = tool_call(line.as_bytes()).is_some();
            assert_eq!(taken, [0, 1, 2, 8, 13].contains(&i), "{line}");
        }
        assert_eq!(variant_of_client(lines[0]), "call");
        assert_eq!(variant_of_client(lines[1]), "call");
        // A known method with params of the wrong shape stays a custom request, as in rmcp.
        assert_eq!(variant_of_client(lines[4]), "custom");
        // `_meta` reaches the request's extensions, where rmcp's handler looks for it.
        let JsonRpcMessage::Request(r) = RoleServer::decode(lines[1].as_bytes()).expect("ok")
        else {
            panic!("a request")
        };
        let ClientRequest::CallToolRequest(call) = r.request else {
            panic!("a call")
        };
        let meta = call
            .extensions
            .get::<rmcp::model::RequestMetaObject>()
            .expect("meta");
        assert_eq!(meta.0.0["progressToken"], json!(3));
        assert!(call.params.meta.is_none(), "as rmcp leaves it");
        // And the same on rmcp's full decoding.
        let Ok(JsonRpcMessage::Request(r)) =
            serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(lines[1])
        else {
            panic!("a request")
        };
        let ClientRequest::CallToolRequest(call) = r.request else {
            panic!("a call")
        };
        assert!(call.params.meta.is_none());
        assert!(
            call.extensions
                .get::<rmcp::model::RequestMetaObject>()
                .is_some()
        );
    }

    #[test]
    fn a_tool_result_decodes_as_rmcp_decodes_it_and_nothing_else_becomes_one() {
        let members = [
            ("content", json!([{"type": "text", "text": "hi"}])),
            ("structuredContent", json!({"a": [1, 2.5, null]})),
            ("isError", json!(true)),
            ("_meta", json!({"k": "v"})),
            ("resultType", json!("complete")),
        ];
        // Every combination of a tool result's members.
        for mask in 0u32..(1 << members.len()) {
            let mut result = serde_json::Map::new();
            for (i, (k, v)) in members.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    result.insert((*k).to_owned(), v.clone());
                }
            }
            let line = json!({"jsonrpc": "2.0", "id": 4, "result": result}).to_string();
            assert_eq!(
                fast::<RoleClient>(&line),
                full::<RoleClient>(&line),
                "{line}"
            );
            let is_tool_result = matches!(
                serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&line),
                Ok(JsonRpcMessage::Response(JsonRpcResponse {
                    result: ServerResult::CallToolResult(_),
                    ..
                }))
            );
            assert_eq!(
                tool_result(line.as_bytes()).is_some(),
                is_tool_result,
                "{line}"
            );
        }
        let others = [
            // Other results, some with a tool result's members beside their own.
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "task": {"taskId": "t", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": null}}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "action": "accept"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "incomplete", "content": []}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": "not a list"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}, "error": {"code": 1, "message": "m"}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}),
            json!({"jsonrpc": "1.0", "id": 1, "result": {"content": []}}),
        ];
        for line in others {
            let line = line.to_string();
            assert_eq!(
                fast::<RoleClient>(&line),
                full::<RoleClient>(&line),
                "{line}"
            );
            assert!(
                tool_result(line.as_bytes()).is_none(),
                "not taken for a tool result: {line}"
            );
        }
        let line =
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Echo: x"}]}}"#;
        assert!(
            tool_result(line.as_bytes()).is_some(),
            "the fast path is taken"
        );
    }
}
