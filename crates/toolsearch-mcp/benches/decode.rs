//! Decoding the two messages of every proxied call, as the gateway's line transport does
//! ([`LineDecode`]) against rmcp's full decoding of the same line (the peer): a client's
//! `tools/call` request (the envelope of `call_tool`, with a `_meta`) and an upstream's tool
//! result.
//!
//! `cargo bench -p toolsearch-mcp --bench decode`

use divan::{Bencher, black_box};
use rmcp::service::{RoleClient, RoleServer, RxJsonRpcMessage};
use toolsearch_mcp::decode::LineDecode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":417,"method":"tools/call","params":{"name":"call_tool","arguments":{"group":"everything","tool":"echo","arguments":{"message":"benchmark"}},"_meta":{"progressToken":417}}}"#;
const RESULT: &str =
    r#"{"jsonrpc":"2.0","id":417,"result":{"content":[{"type":"text","text":"Echo: benchmark"}]}}"#;

#[divan::bench]
fn request_rmcp(b: Bencher) {
    b.bench(|| {
        serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(black_box(REQUEST)).expect("decodes")
    });
}

#[divan::bench]
fn request_line_decode(b: Bencher) {
    b.bench(|| RoleServer::decode(black_box(REQUEST.as_bytes())).expect("decodes"));
}

#[divan::bench]
fn result_rmcp(b: Bencher) {
    b.bench(|| {
        serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(black_box(RESULT)).expect("decodes")
    });
}

#[divan::bench]
fn result_line_decode(b: Bencher) {
    b.bench(|| RoleClient::decode(black_box(RESULT.as_bytes())).expect("decodes"));
}
