//! The gateway's line transport: newline-delimited JSON-RPC on the process's standard streams
//! (rmcp's non-blocking pipes) and on a stdio upstream's pipes, answering malformed input as
//! JSON-RPC 2.0 requires instead of dropping it (rmcp's own line transport ignores unparsable
//! lines). The messages of every proxied call are decoded on a fast path ([`crate::decode`])
//! and lines are written as soon as they are sent (`line_writer`).
//!
//! | input | answer |
//! |---|---|
//! | not UTF-8, not JSON, nested deeper than the parser allows | `-32700` parse error, `id: null` |
//! | a line longer than [`MAX_LINE_BYTES`] (discarded without buffering it) | `-32600`, `id: null` |
//! | JSON that is no JSON-RPC message (a batch, a scalar, a bad `method` or `params`) | `-32600`, with the request's `id` when it has a usable one, else `null` |
//! | a malformed notification (no `id`) or response | nothing (JSON-RPC never answers those), logged |
//!
//! A request of a known MCP method whose params have the wrong shape reaches the server as a
//! custom request, which [`crate::GatewayServer`] answers `-32602`.

use std::marker::PhantomData;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use crate::decode::LineDecode;
use crate::line_writer::LineWriter;
use crate::wire_fields::WireFields;

/// Longest message line read (16 MiB); a longer one is answered `-32600` and skipped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A line transport over a reader and a writer: the gateway's server transport (by default
/// over stdin and stdout), or, with `Role` [`rmcp::RoleClient`], a stdio upstream's.
#[derive(Debug)]
pub struct JsonRpcStdio<R, W, Role = RoleServer> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// An oversized line is being skipped up to its newline.
    discarding: bool,
    max_line: usize,
    write: LineWriter<W>,
    /// Where the unmodelled members of listed tools go (an upstream's transport).
    fields: Option<Arc<WireFields>>,
    role: PhantomData<fn() -> Role>,
}

impl JsonRpcStdio<rmcp::transport::io::StdioReader, rmcp::transport::io::StdioWriter> {
    /// Over the process's stdin and stdout (non-blocking pipes where they are FIFOs).
    #[allow(clippy::new_without_default)] // it takes the process's standard streams
    pub fn new() -> Self {
        let (r, w) = rmcp::transport::stdio_pipes();
        Self::with_io(r, w)
    }
}

use crate::jsonrpc::{INVALID_REQUEST, Verdict, classify, error_response};

enum LineRead {
    Line,
    Oversized,
    Eof,
    Failed(std::io::Error),
}

impl<R, W, Role> JsonRpcStdio<R, W, Role>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Over any reader and writer (an upstream's pipes; tests use in-memory ones).
    pub fn with_io(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            max_line: MAX_LINE_BYTES,
            write: LineWriter::new(write),
            fields: None,
            role: PhantomData,
        }
    }

    /// The writer its messages go out on (shared: lines from every clone stay whole and in
    /// order).
    pub(crate) fn writer(&self) -> LineWriter<W> {
        self.write.clone()
    }

    /// Notes the unmodelled members of the tools listed in the messages it reads in `fields`.
    pub(crate) fn with_wire_fields(mut self, fields: Arc<WireFields>) -> Self {
        self.fields = Some(fields);
        self
    }

    /// Sets the longest line read (default [`MAX_LINE_BYTES`]).
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.max_line = max;
        self
    }

    /// Reads one line into `self.line`, never holding more than `max_line` bytes of it.
    /// Cancel-safe: `fill_buf` consumes nothing when dropped, and the copy and the `consume`
    /// after it happen without an await between them; a partial line stays in `self.line`.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let buf = match self.read.fill_buf().await {
                Ok(b) => b,
                Err(e) => return LineRead::Failed(e),
            };
            if buf.is_empty() {
                return LineRead::Eof;
            }
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            let used = chunk.len() + usize::from(done);
            if !self.discarding {
                if self.line.len() + chunk.len() > self.max_line {
                    self.discarding = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.read.consume(used);
            if done {
                return if std::mem::take(&mut self.discarding) {
                    LineRead::Oversized
                } else {
                    LineRead::Line
                };
            }
        }
    }

    /// Writes `value` as one line, finished from a task of its own (so a cancelled `receive`
    /// never leaves half a line on the wire).
    fn answer(&self, value: Value) {
        let mut bytes = value.to_string().into_bytes();
        bytes.push(b'\n');
        let written = self.write.write(bytes);
        tokio::spawn(async move {
            if let Err(e) = written.await {
                tracing::debug!(error = %e, "could not answer a malformed message");
            }
        });
    }
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A message as one line of JSON, newline included.
pub(crate) fn encode_line(message: &impl serde::Serialize) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

impl<R, W, Role> Transport<Role> for JsonRpcStdio<R, W, Role>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
    Role: LineDecode,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<Role>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Encoded and (when the pipe takes it) written now; the future finishes the rest.
        let written = encode_line(&item).map(|line| self.write.write(line));
        async move { written?.await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<Role>> {
        loop {
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized => {
                    tracing::warn!(
                        max = self.max_line,
                        "a message line over the limit was discarded"
                    );
                    self.answer(error_response(
                        Value::Null,
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: the message is longer than {} bytes",
                            self.max_line
                        ),
                    ));
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Failed(e) => {
                    tracing::error!(error = %e, "reading stdin failed");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\r").unwrap_or(&line);
            let text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Some(fields) = &self.fields {
                fields.observe(text);
            }
            match Role::decode(text) {
                Ok(message) => return Some(message),
                Err(e) => match classify(text, &e) {
                    Verdict::Answer(response) => {
                        tracing::debug!(%response, "malformed message answered");
                        self.answer(response);
                    }
                    Verdict::Ignore(why) => tracing::debug!(%why, "malformed message ignored"),
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.close().await
    }
}
