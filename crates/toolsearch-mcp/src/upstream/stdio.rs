//! A stdio upstream: the child process in its own process group (closing the connection, or
//! the gateway shutting down on a signal, ends it and everything it started), its stderr read
//! line by line — each line logged (`info`, source named) and the last ones kept, so an upstream
//! that dies while starting is reported with what it said.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use rmcp::ServiceExt;
use tokio::io::AsyncBufReadExt;

use super::child::ChildTransport;
use super::{CONNECT_TIMEOUT, Running, StdioLane, Upstream, UpstreamClient, UpstreamError};
use crate::config::DEFAULT_INHERITED_ENV;
use crate::secrets::expand;

/// Lines of a stdio upstream's stderr kept for error messages.
const STDERR_LINES: usize = 8;
/// Longest stderr line kept (longer ones are cut).
const STDERR_LINE_BYTES: usize = 400;

/// The last lines a stdio child wrote to stderr.
#[derive(Debug, Default)]
pub(super) struct StderrTail(parking_lot::Mutex<VecDeque<String>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let mut cut = line.trim_end().to_owned();
        if cut.len() > STDERR_LINE_BYTES {
            let mut end = STDERR_LINE_BYTES;
            while !cut.is_char_boundary(end) {
                end -= 1;
            }
            cut.truncate(end);
            cut.push('…');
        }
        if cut.is_empty() {
            return;
        }
        let mut q = self.0.lock();
        if q.len() == STDERR_LINES {
            q.pop_front();
        }
        q.push_back(cut);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().iter().cloned().collect()
    }

    fn clear(&self) {
        self.0.lock().clear();
    }
}

/// `; its stderr ended with: …` (or that it wrote nothing), for error messages.
pub(super) fn stderr_tail(lines: &[String]) -> String {
    if lines.is_empty() {
        "; it wrote nothing to stderr".to_owned()
    } else {
        format!("; its stderr ended with: {}", lines.join(" | "))
    }
}

/// What a child's environment is made of: the gateway's [`DEFAULT_INHERITED_ENV`] and the
/// source's `inherit_env`, as the gateway has them, then the source's own `env` (its
/// `${env:NAME}` references expanded). Nothing else of the gateway's environment.
pub(super) struct ChildEnv<'a> {
    pub(super) inherit: &'a [String],
    pub(super) set: &'a BTreeMap<String, String>,
}

impl ChildEnv<'_> {
    /// The variables, in the order they are set (a later one wins).
    fn vars(&self) -> Result<Vec<(String, std::ffi::OsString)>, crate::secrets::MissingSecret> {
        let inherited = DEFAULT_INHERITED_ENV
            .iter()
            .copied()
            .chain(self.inherit.iter().map(String::as_str))
            .filter_map(|name| std::env::var_os(name).map(|v| (name.to_owned(), v)));
        let mut out: Vec<_> = inherited.collect();
        for (k, v) in self.set {
            out.push((k.clone(), expand(v)?.into()));
        }
        Ok(out)
    }
}

/// Starts `command` and runs the MCP handshake over its stdio: the running client and, when
/// the protocol version agreed has `initialize`, the connection's call lane.
pub(super) async fn connect(
    upstream: &Upstream,
    client: UpstreamClient,
    command: &str,
    args: &[String],
    env: ChildEnv<'_>,
    cwd: Option<&PathBuf>,
) -> Result<(Running, Option<StdioLane>), UpstreamError> {
    let program = expand(command)?;
    let mut cmd = tokio::process::Command::new(&program);
    for a in args {
        cmd.arg(expand(a)?);
    }
    cmd.env_clear();
    cmd.envs(env.vars()?);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Its own process group: closing the connection ends the child and whatever it started
    // (`npx` runs the server as a grandchild), and a terminal's Ctrl-C reaches the gateway,
    // which closes it in order.
    let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    wrapped.command_mut().stderr(std::process::Stdio::piped());
    let (transport, stderr) = ChildTransport::spawn(wrapped, upstream.wire_fields.clone())
        .map_err(|source| UpstreamError::Spawn {
            command: program.clone(),
            source,
        })?;
    *upstream.pid.lock() = transport.id();
    upstream.stderr.clear();
    let reader = stderr.map(|stderr| {
        let tail = upstream.stderr.clone();
        let name = upstream.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(source = %name, line = %line, "upstream stderr");
                tail.push(&line);
            }
        })
    });
    let lane = transport.call_lane();
    let transport = super::noticed::Noticed::new(transport, client.inflight.clone());
    match tokio::time::timeout(CONNECT_TIMEOUT, client.serve(transport)).await {
        Err(_) => Err(UpstreamError::Timeout(CONNECT_TIMEOUT)),
        Ok(Ok(running)) => {
            // A later version's requests each carry the client's metadata: rmcp adds it.
            let lane = running
                .peer()
                .peer_info()
                .is_some_and(|info| info.protocol_version.has_initialize())
                .then_some(lane);
            Ok((running, lane))
        }
        Ok(Err(e)) => {
            // The child's stdout closed: give its stderr a moment to drain.
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
            }
            let stderr = upstream.stderr.lines();
            Err(match &e {
                rmcp::service::ClientInitializeError::ConnectionClosed(_) => {
                    UpstreamError::Exited(stderr)
                }
                _ => UpstreamError::Initialize {
                    source: Box::new(e),
                    stderr: Some(stderr),
                },
            })
        }
    }
}
