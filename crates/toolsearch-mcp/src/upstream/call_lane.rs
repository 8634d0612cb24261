//! A stdio upstream's call lane: a `tools/call` request written straight onto the child's
//! stdin, and its answer taken off the transport as soon as it is read, instead of both going
//! through rmcp's peer channel and client service loop. rmcp still runs the connection and
//! carries everything else on it — the handshake, lists, notifications, pings, the upstream's
//! own requests, shutdown. The request is rmcp's `CallToolRequestParams` in its JSON-RPC
//! envelope (the JSON rmcp's own request would be), the answer decoded by the transport as it
//! decodes every message for rmcp, into rmcp's types.
//!
//! Why: the hand-off from a call's task through rmcp's peer channel to its client loop was the
//! largest part of what a stdio hop cost the gateway (BENCHMARKS.md, "The call lane").
//!
//! - Lane requests carry string ids (`toolsearch-call-N`), which rmcp's numeric ids never
//!   equal; their answers go to the waiting call and never reach rmcp. An answer for a call no
//!   longer waiting (it timed out) is dropped.
//! - A call dropped before its answer (a timeout, a cancel) sends `notifications/cancelled`,
//!   as rmcp's own calls do.
//! - When the child's stdout ends, or the transport is closed or dropped, every waiting call
//!   fails at once with rmcp's `TransportClosed`, and later calls too; a failed write fails as
//!   rmcp's send does.
//! - Only for upstreams on a protocol version with `initialize`: on a later one every request
//!   carries the client's metadata, which rmcp adds (the executor uses rmcp's peer there).

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientJsonRpcMessage, ClientNotification, ErrorData, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RoleClient, ServiceError};
use rmcp::transport::{DynamicTransportError, Transport};
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;

use crate::line_writer::LineWriter;
use crate::stdio::encode_line;

/// What lane requests' ids start with.
const ID_PREFIX: &str = "toolsearch-call-";
/// The reason a dropped call gives in its `notifications/cancelled` (rmcp's words).
const ABANDONED: &str = "request abandoned by the caller";

type Answer = Result<ServerResult, ErrorData>;

#[derive(Debug, Default)]
struct Calls {
    last: u64,
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    closed: bool,
}

/// The calls waiting for an answer on one connection, shared by its transport (which routes
/// the answers) and its lanes.
#[derive(Debug, Default)]
pub(super) struct LaneCalls(Mutex<Calls>);

impl LaneCalls {
    fn lock(&self) -> MutexGuard<'_, Calls> {
        self.0.lock()
    }

    /// Hands `message` to the lane call it answers, or gives it back (anything else is rmcp's).
    pub(super) fn route(&self, message: ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        let (id, answer) = match message {
            JsonRpcMessage::Response(r) => match lane_id(&r.id) {
                Some(id) => (id, Ok(r.result)),
                None => return Some(JsonRpcMessage::Response(r)),
            },
            JsonRpcMessage::Error(e) => match e.id.as_ref().and_then(lane_id) {
                Some(id) => (id, Err(e.error)),
                None => return Some(JsonRpcMessage::Error(e)),
            },
            other => return Some(other),
        };
        match self.lock().waiting.remove(&id) {
            // The call may have been dropped since: then the answer goes with it.
            Some(call) => drop(call.send(answer)),
            None => tracing::debug!(id, "an answer came for a call no longer waiting"),
        }
        None
    }

    /// Fails every waiting call, and every later one, with `TransportClosed`.
    pub(super) fn close(&self) {
        let mut calls = self.lock();
        calls.closed = true;
        calls.waiting.clear();
    }
}

/// The number in a lane request's id (`toolsearch-call-N`, N as written: no sign, no leading
/// zero).
fn lane_id(id: &RequestId) -> Option<u64> {
    let RequestId::String(s) = id else {
        return None;
    };
    let digits = s.strip_prefix(ID_PREFIX)?;
    if digits.starts_with(['0', '+']) {
        return None;
    }
    digits.parse().ok()
}

/// The `tools/call` request line for lane call `id`: the JSON-RPC envelope written directly
/// around `params` as rmcp serializes them — the same JSON as rmcp's own request
/// (`encode_line` of it; with `_meta` its members come in another order), without going
/// through rmcp's serializer for the whole message on every call.
fn encode_call(id: u64, params: &CallToolRequestParams) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":""#);
    line.extend_from_slice(ID_PREFIX.as_bytes());
    line.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    line.extend_from_slice(br#"","method":"tools/call","params":"#);
    serde_json::to_writer(&mut line, params).map_err(std::io::Error::other)?;
    line.extend_from_slice(b"}\n");
    Ok(line)
}

/// `toolsearch-call-N` as a request id.
fn request_id(n: u64) -> RequestId {
    RequestId::String(format!("{ID_PREFIX}{n}").into())
}

/// Calls `tools/call` on one connection's child, writing to `W` (its stdin).
#[derive(Debug)]
pub(super) struct CallLane<W> {
    calls: Arc<LaneCalls>,
    writer: LineWriter<W>,
}

impl<W> Clone for CallLane<W> {
    fn clone(&self) -> Self {
        Self {
            calls: self.calls.clone(),
            writer: self.writer.clone(),
        }
    }
}

/// While a lane call waits: dropped before its answer, it stops waiting and tells the upstream.
struct Waiting<'a, W: AsyncWrite + Send + Unpin + 'static> {
    lane: &'a CallLane<W>,
    id: Option<u64>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Drop for Waiting<'_, W> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        if self.lane.calls.lock().waiting.remove(&id).is_none() {
            return; // answered, or the connection closed
        }
        let cancel = ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(
            CancelledNotification::new(CancelledNotificationParam::new(
                Some(request_id(id)),
                Some(ABANDONED.to_owned()),
            )),
        ));
        let Ok(line) = encode_line(&cancel) else {
            return;
        };
        // Written now when the pipe takes it; the rest (if any) from a task.
        let written = self.lane.writer.write(line);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = written.await {
                    tracing::debug!(error = %e, "could not send notifications/cancelled");
                }
            });
        }
    }
}

impl<W> CallLane<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(super) fn new(calls: Arc<LaneCalls>, writer: LineWriter<W>) -> Self {
        Self { calls, writer }
    }

    /// One `tools/call`: the result as rmcp's `Peer::call_tool` gives it, or its error.
    /// `T` is the transport the lane writes beside (named in a failed write's error).
    pub(super) async fn call_tool<T: Transport<RoleClient, Error = std::io::Error> + 'static>(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, ServiceError> {
        let (id, answer) = {
            let mut calls = self.calls.lock();
            if calls.closed {
                return Err(ServiceError::TransportClosed);
            }
            calls.last += 1;
            let id = calls.last;
            let (tx, rx) = oneshot::channel();
            calls.waiting.insert(id, tx);
            (id, rx)
        };
        let mut waiting = Waiting {
            lane: self,
            id: Some(id),
        };
        let sent = match encode_call(id, &params) {
            Ok(line) => self.writer.write(line).await,
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            self.calls.lock().waiting.remove(&id);
            waiting.id = None;
            return Err(ServiceError::TransportSend(DynamicTransportError::new::<
                T,
                RoleClient,
            >(e)));
        }
        let answer = answer.await;
        waiting.id = None;
        match answer {
            Err(_) => Err(ServiceError::TransportClosed),
            Ok(Err(error)) => Err(ServiceError::McpError(error)),
            Ok(Ok(result)) => call_result(result),
        }
    }
}

/// A `tools/call` answer as rmcp's `Peer::call_tool` reads it: a tool result; a result with
/// no content (empty, a task's acknowledgement, only `_meta`) as an empty tool result; else
/// an unexpected response.
fn call_result(result: ServerResult) -> Result<CallToolResult, ServiceError> {
    let mut empty = CallToolResult::default();
    empty.result_type = None;
    match result {
        ServerResult::CallToolResult(r) => return Ok(r),
        ServerResult::EmptyResult(_) => {}
        ServerResult::TaskAckResult(ack) => {
            empty.result_type = Some(ack.result_type);
            empty.meta = ack.meta;
        }
        ServerResult::CustomResult(custom) => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct MetaOnly {
                #[serde(rename = "_meta")]
                meta: rmcp::model::MetaObject,
            }
            let MetaOnly { meta } =
                serde_json::from_value(custom.0).map_err(|_| ServiceError::UnexpectedResponse)?;
            empty.meta = Some(meta);
        }
        _ => return Err(ServiceError::UnexpectedResponse),
    }
    Ok(empty)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::model::{CallToolRequest, ClientRequest};
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

    use super::*;
    use crate::stdio::JsonRpcStdio;

    type Io = JsonRpcStdio<DuplexStream, DuplexStream, RoleClient>;
    type Lane = CallLane<DuplexStream>;

    /// A lane writing into an in-memory pipe, and the pipe's reading end.
    fn lane() -> (Lane, Arc<LaneCalls>, BufReader<DuplexStream>) {
        let (w, r) = tokio::io::duplex(1 << 16);
        let calls = Arc::new(LaneCalls::default());
        (
            CallLane::new(calls.clone(), LineWriter::new(w)),
            calls,
            BufReader::new(r),
        )
    }

    async fn next_line(r: &mut BufReader<DuplexStream>) -> Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(5), r.read_line(&mut line))
            .await
            .expect("a line in time")
            .expect("read");
        serde_json::from_str(&line).expect("one JSON line")
    }

    fn params() -> CallToolRequestParams {
        CallToolRequestParams::new("echo").with_arguments(
            json!({"message": "hi"})
                .as_object()
                .cloned()
                .expect("object"),
        )
    }

    /// A call of `echo` on `lane`, running on a task of its own.
    fn spawn_call(lane: &Lane) -> tokio::task::JoinHandle<Result<CallToolResult, ServiceError>> {
        let lane = lane.clone();
        tokio::spawn(async move { lane.call_tool::<Io>(params()).await })
    }

    fn message(v: Value) -> ServerJsonRpcMessage {
        serde_json::from_value(v).expect("a server message")
    }

    #[tokio::test]
    async fn a_call_is_written_with_a_lane_id_and_answered_by_its_response() {
        let (lane, calls, mut r) = lane();
        let call = spawn_call(&lane);
        let request = next_line(&mut r).await;
        assert_eq!(
            request,
            json!({"jsonrpc": "2.0", "id": "toolsearch-call-1", "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"message": "hi"}}})
        );
        // The line is rmcp's own request, read back as rmcp reads one.
        let ClientJsonRpcMessage::Request(read) =
            serde_json::from_value::<ClientJsonRpcMessage>(request).expect("rmcp reads it")
        else {
            panic!("not a request");
        };
        assert!(matches!(read.request, ClientRequest::CallToolRequest(_)));

        // rmcp's own traffic on the same connection passes through untouched.
        let rmcps = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}});
        let passed = calls
            .route(message(rmcps.clone()))
            .expect("not a lane answer");
        assert_eq!(serde_json::to_value(&passed).expect("json"), rmcps);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        assert!(calls.route(message(note)).is_some());
        assert!(!call.is_finished(), "rmcp's answer is not the call's");

        let answer = json!({"jsonrpc": "2.0", "id": "toolsearch-call-1",
                            "result": {"content": [{"type": "text", "text": "hi"}]}});
        assert!(calls.route(message(answer)).is_none(), "taken by the lane");
        let result = call.await.expect("task").expect("answered");
        assert_eq!(
            serde_json::to_value(&result).expect("json")["content"][0]["text"],
            "hi"
        );
        assert!(calls.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn an_error_answer_is_rmcps_mcp_error() {
        let (lane, calls, mut r) = lane();
        let call = spawn_call(&lane);
        let id = next_line(&mut r).await["id"].clone();
        let error = json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32602, "message": "Unknown tool: echo"}});
        assert!(calls.route(message(error)).is_none());
        match call.await.expect("task") {
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code.0, -32602);
                assert_eq!(e.message, "Unknown tool: echo");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_dropped_call_cancels_and_its_late_answer_is_dropped() {
        let (lane, calls, mut r) = lane();
        let call = spawn_call(&lane);
        let id = next_line(&mut r).await["id"].clone();
        call.abort();
        assert!(call.await.expect_err("aborted").is_cancelled());
        let cancel = next_line(&mut r).await;
        assert_eq!(
            cancel,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": id, "reason": "request abandoned by the caller"}})
        );
        let late = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
        assert!(calls.route(message(late)).is_none(), "not handed to rmcp");
        assert!(calls.lock().waiting.is_empty());
        // The next call gets a fresh id and its own answer.
        let next = spawn_call(&lane);
        assert_eq!(next_line(&mut r).await["id"], "toolsearch-call-2");
        let answer =
            json!({"jsonrpc": "2.0", "id": "toolsearch-call-2", "result": {"content": []}});
        assert!(calls.route(message(answer)).is_none());
        assert!(next.await.expect("task").is_ok());
    }

    #[tokio::test]
    async fn closing_fails_waiting_calls_and_later_ones_at_once() {
        let (lane, calls, mut r) = lane();
        let call = spawn_call(&lane);
        next_line(&mut r).await;
        calls.close();
        assert!(matches!(
            call.await.expect("task"),
            Err(ServiceError::TransportClosed)
        ));
        assert!(matches!(
            lane.call_tool::<Io>(params()).await,
            Err(ServiceError::TransportClosed)
        ));
    }

    #[tokio::test]
    async fn a_write_that_fails_is_rmcps_send_error() {
        let (lane, calls, r) = lane();
        drop(r); // the child's stdin is gone
        match lane.call_tool::<Io>(params()).await {
            Err(ServiceError::TransportSend(e)) => {
                let io = e
                    .error
                    .downcast_ref::<std::io::Error>()
                    .expect("an io error");
                assert_eq!(io.kind(), std::io::ErrorKind::BrokenPipe);
            }
            other => panic!("{other:?}"),
        }
        assert!(calls.lock().waiting.is_empty(), "nothing left waiting");
    }

    #[test]
    fn a_call_line_is_the_line_rmcps_request_would_be() {
        let traced = {
            let mut p = params();
            rmcp::model::RequestParamsMeta::set_traceparent(
                &mut p,
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            );
            p
        };
        let escaped = CallToolRequestParams::new("quote \" and \\ and é").with_arguments(
            json!({"nested": {"a": [1, 2.5, null, "x\ny"]}, "b": true})
                .as_object()
                .cloned()
                .expect("object"),
        );
        let no_arguments = CallToolRequestParams::new("ping");
        for (id, p) in [
            (1, params()),
            (42, traced),
            (u64::MAX, escaped),
            (7, no_arguments),
        ] {
            let rmcps = ClientJsonRpcMessage::request(
                ClientRequest::CallToolRequest(CallToolRequest::new(p.clone())),
                request_id(id),
            );
            let ours = encode_call(id, &p).expect("encoded");
            assert_eq!(ours.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
            assert!(ours.ends_with(b"}\n"));
            let read = |line: &[u8]| serde_json::from_slice::<Value>(line).expect("json");
            assert_eq!(read(&ours), read(&encode_line(&rmcps).expect("encoded")));
        }
    }

    #[test]
    fn only_the_lanes_own_ids_are_its_answers() {
        let s = |s: &str| RequestId::String(s.into());
        assert_eq!(lane_id(&s("toolsearch-call-1")), Some(1));
        assert_eq!(lane_id(&s("toolsearch-call-4096")), Some(4096));
        for other in [
            "toolsearch-call-",
            "toolsearch-call-01",
            "toolsearch-call-+1",
            "toolsearch-call--1",
            "toolsearch-call-1x",
            "toolsearch-call-18446744073709551616",
            "Toolsearch-call-1",
            "1",
        ] {
            assert_eq!(lane_id(&s(other)), None, "{other}");
        }
        assert_eq!(lane_id(&RequestId::Number(1)), None);
    }

    /// rmcp's `Peer::call_tool`, over an in-memory pipe to a server that answers `initialize`
    /// and then each call with `answer`.
    async fn rmcps_reading(answer: Value) -> Result<Value, String> {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (server_r, mut server_w) = tokio::io::split(server_io);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut lines = BufReader::new(server_r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let request: Value = serde_json::from_str(&line).expect("json");
                let Some(id) = request.get("id") else {
                    continue;
                };
                let result = match request["method"].as_str() {
                    Some("initialize") => json!({"protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "1"}}),
                    _ => answer.clone(),
                };
                let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string() + "\n";
                if server_w.write_all(line.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
        let (r, w) = tokio::io::split(client_io);
        let client = rmcp::ServiceExt::serve((), (r, w))
            .await
            .expect("initialize");
        let read = client.peer().call_tool(params()).await;
        let _ = client.cancel().await;
        read.map(|r| serde_json::to_value(r).expect("json"))
            .map_err(|e| format!("{e:?}"))
    }

    #[tokio::test]
    async fn answers_read_as_rmcps_call_tool_reads_them() {
        for answer in [
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
            json!({"content": [], "structuredContent": {"a": 1}}),
            json!({}),
            json!({"_meta": {"k": 1}}),
            json!({"resultType": "complete"}),
            json!({"resultType": "complete", "_meta": {"k": 1}}),
            json!({"tools": []}),
            json!({"_meta": {}, "other": 1}),
            json!({"other": 1}),
        ] {
            let ours = serde_json::from_value::<ServerResult>(answer.clone())
                .map_err(|e| e.to_string())
                .and_then(|r| {
                    call_result(r)
                        .map(|r| serde_json::to_value(r).expect("json"))
                        .map_err(|e| format!("{e:?}"))
                });
            assert_eq!(ours, rmcps_reading(answer.clone()).await, "{answer}");
        }
    }
}
