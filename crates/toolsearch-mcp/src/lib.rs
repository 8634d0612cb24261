#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// Layers, bottom to top; each module imports only the ones above it in this list
// (docs/architecture.md; `crates/toolsearch/tests/layers.rs` checks there is no circle).
//   config                    — the gateway config file (TOML), validated into plain data
//   secrets, convert, jsonrpc — `${env:NAME}` expansion, rmcp ↔ engine types, JSON-RPC errors
//   offered                   — the names upstream resources and prompts are offered under
//   decode, line_writer       — lines into rmcp's messages (the hot ones on a fast path); lines out
//   stdio                     — the line transport: the server's stdin/stdout, a stdio upstream's
//   trace_context             — W3C trace context: from a request, on to upstreams
//   downstream                — the client request a call serves: relays, progress, log level
//   approval, awaiting_input  — asking the person; calls waiting for their client's input
//   upstream                  — one upstream MCP server: connect (stdio, HTTP, legacy SSE), list, call
//   auth                      — who is calling: client tokens and JWTs → the caller's identity
//   audit, metrics, telemetry — the audit log file; Prometheus metrics; OTLP traces
//   recent_calls              — the latest calls in a bounded ring, for the console
//   gateway                   — every source behind one engine, supervised
//   passthrough               — upstream resources and prompts under source-scoped names
//   server                    — the MCP server a client talks to
//   accept, health, scrape    — the accept loop; the probes and `/metrics` over HTTP
//   tool_search               — `POST /v1/tool_search`: a search in a vendor's shape over HTTP
//   console                   — the operator's read-only pages at `/ui/`
//   replica                   — session ids naming their replica (behind a load balancer)
//   json_answer               — an HTTP answer of one message sent as JSON, not as a stream
//   json_errors               — a plain-text HTTP error to a request made a JSON-RPC error
//   session_owners, in_progress — who opened each HTTP session; the ids in progress in each
//   http, metrics_listener    — the HTTP transport the server is served on; the operator's listener

mod accept;
mod approval;
mod audit;
pub mod auth;
mod awaiting_input;
pub mod config;
pub mod console;
mod convert;
pub mod decode;
mod downstream;
pub mod gateway;
pub mod health;
pub mod http;
mod in_progress;
mod json_answer;
mod json_errors;
mod jsonrpc;
mod line_writer;
pub mod metrics;
pub mod metrics_listener;
mod offered;
mod passthrough;
pub mod recent_calls;
pub mod replica;
pub mod scrape;
mod secrets;
mod server;
mod session_owners;
pub mod stdio;
pub mod telemetry;
pub mod tool_search;
pub mod trace_context;
pub mod upstream;
mod wire_fields;

pub use auth::{Authenticator, CallerIdentity};
pub use gateway::{Gateway, GatewayError, GatewayOptions, SourceStatus};
pub use http::{HttpOptions, HttpServer, serve_http};
pub use metrics::Metrics;
pub use metrics_listener::{MetricsListener, serve_metrics_listener};
pub use secrets::MissingSecret;
pub use server::GatewayServer;
pub use stdio::JsonRpcStdio;
pub use upstream::{Upstream, UpstreamError};
