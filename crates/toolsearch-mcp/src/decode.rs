//! Decoding a line into rmcp's message types, with the two messages of every proxied call —
//! a client's `tools/call` and an upstream's tool result — on a fast path.
//!
//! rmcp decodes a message into untagged enums (`ClientRequest`, `ServerResult`) that serde
//! buffers and tries variant by variant: a `tools/call` request is the fourteenth variant of
//! its enum and a tool result the sixteenth, each miss building an error. The fast paths
//! decode those two messages with rmcp's own `Deserialize` impls for the one variant they
//! are, and give up (falling back to rmcp's full decoding) whenever the message could be
//! anything else, so the message reached is always the one rmcp's full decoding gives
//! (tested against it below).

use rmcp::model::{
    CallToolRequest, CallToolResult, ClientRequest, JsonRpcMessage, JsonRpcRequest,
    JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerResult,
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
        // rmcp's own message decoding (its checks of the message's shape included), with the
        // request type fixed: a method other than `tools/call` fails it at once.
        if let Ok(JsonRpcMessage::Request(r)) =
            serde_json::from_slice::<JsonRpcMessage<CallToolRequest, IgnoredAny, IgnoredAny>>(line)
        {
            return Ok(JsonRpcMessage::Request(JsonRpcRequest {
                jsonrpc: r.jsonrpc,
                id: r.id,
                request: ClientRequest::CallToolRequest(r.request),
            }));
        }
        serde_json::from_slice(line)
    }
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
        ];
        for line in lines {
            assert_eq!(fast::<RoleServer>(line), full::<RoleServer>(line), "{line}");
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
