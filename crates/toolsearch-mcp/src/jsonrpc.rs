//! JSON-RPC 2.0's answers to malformed input, shared by the stdio and HTTP transports: which
//! error (parse error or invalid request), with which `id`, or no answer at all.

use serde_json::{Value, json};

/// JSON-RPC's parse error code.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request code.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's internal error code.
pub const INTERNAL_ERROR: i64 = -32603;
/// The code the MCP SDKs answer a request naming an unknown session with (server-defined range).
pub const SESSION_NOT_FOUND: i64 = -32001;

/// What to do with a line that is not a message rmcp parses.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Answer this error object (a whole JSON-RPC response).
    Answer(Value),
    /// Say nothing (a notification or a response).
    Ignore(String),
}

pub fn error_response(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The id of a request, when it is one JSON-RPC allows (a string or a number).
fn usable_id(v: &Value) -> Option<Value> {
    match v.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        _ => None,
    }
}

/// Why a message (a line, an HTTP body) that rmcp could not parse is wrong, and what to answer.
pub fn classify(line: &[u8], rmcp_error: &serde_json::Error) -> Verdict {
    let Ok(text) = std::str::from_utf8(line) else {
        return Verdict::Answer(error_response(
            Value::Null,
            PARSE_ERROR,
            "Parse error: the message is not valid UTF-8".into(),
        ));
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Answer(error_response(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: {e}"),
            ));
        }
    };
    let invalid = |id: Value, why: String| {
        Verdict::Answer(error_response(
            id,
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    let Value::Object(obj) = &value else {
        return match value {
            Value::Array(_) => invalid(
                Value::Null,
                "batches are not supported; send one JSON-RPC message per line".into(),
            ),
            _ => invalid(Value::Null, "a JSON-RPC message is a JSON object".into()),
        };
    };
    let has_method = obj.contains_key("method");
    let is_response = !has_method && (obj.contains_key("result") || obj.contains_key("error"));
    if is_response {
        return Verdict::Ignore(format!("malformed response: {rmcp_error}"));
    }
    if has_method && !obj.contains_key("id") {
        return Verdict::Ignore(format!("malformed notification: {rmcp_error}"));
    }
    let id = usable_id(&value);
    let why = if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        "\"jsonrpc\" must be \"2.0\"".to_owned()
    } else if id.is_none() {
        "\"id\" must be a string or a number".to_owned()
    } else if !obj.get("method").is_some_and(Value::is_string) {
        "\"method\" must be a string".to_owned()
    } else if obj
        .get("params")
        .is_some_and(|p| !(p.is_object() || p.is_array()))
    {
        "\"params\" must be an object".to_owned()
    } else {
        rmcp_error.to_string()
    };
    invalid(id.unwrap_or(Value::Null), why)
}

#[cfg(test)]
mod tests {
    use super::*;

    use rmcp::RoleServer;
    use rmcp::service::RxJsonRpcMessage;

    fn verdict(line: &[u8]) -> Verdict {
        let e = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line)
            .expect_err("rmcp refuses it");
        classify(line, &e)
    }

    fn answer(line: &[u8]) -> (Value, i64) {
        match verdict(line) {
            Verdict::Answer(v) => {
                let code = v["error"]["code"].as_i64().expect("code");
                (v["id"].clone(), code)
            }
            Verdict::Ignore(why) => panic!("ignored: {why}"),
        }
    }

    #[test]
    fn malformed_lines_get_the_json_rpc_error_the_specification_gives() {
        assert_eq!(answer(b"{not json"), (Value::Null, PARSE_ERROR));
        assert_eq!(answer(b"\xff\xfe{}"), (Value::Null, PARSE_ERROR));
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(answer(deep.as_bytes()), (Value::Null, PARSE_ERROR));
        assert_eq!(answer(b"[]"), (Value::Null, INVALID_REQUEST));
        assert_eq!(answer(b"42"), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":"x"}"#),
            (json!(7), INVALID_REQUEST)
        );
        assert_eq!(
            answer(br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#),
            (json!("a"), INVALID_REQUEST)
        );
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#),
            (Value::Null, INVALID_REQUEST)
        );
    }

    #[test]
    fn malformed_notifications_and_responses_are_never_answered() {
        assert!(matches!(
            verdict(br#"{"jsonrpc":"2.0","method":"notifications/x","params":"y"}"#),
            Verdict::Ignore(_)
        ));
        assert!(matches!(
            verdict(br#"{"jsonrpc":"2.0","result":5}"#),
            Verdict::Ignore(_)
        ));
    }
}
