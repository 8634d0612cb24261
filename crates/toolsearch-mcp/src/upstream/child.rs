//! A stdio upstream's child process on the gateway's own line transport
//! ([`crate::JsonRpcStdio`] in the client role: its tool results decoded on the fast path,
//! requests written as they are sent). The child is ended as rmcp's `TokioChildProcess` ends
//! it: closing the transport closes the child's stdin and gives it [`EXIT_GRACE`] to exit,
//! then a `SIGTERM`, then a kill; dropping the transport kills it. Answers to its
//! [call lane](super::call_lane) are taken off as they are read, and the lane's waiting calls
//! fail when the child's stdout ends or the transport closes.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::call_lane::{CallLane, LaneCalls};
use crate::stdio::JsonRpcStdio;
use crate::wire_fields::WireFields;

/// How long a child whose stdin was closed has to exit, before a `SIGTERM` and again before a
/// kill (rmcp's own figure).
pub(super) const EXIT_GRACE: Duration = if cfg!(test) {
    // The unit tests below wait through every grace.
    Duration::from_millis(300)
} else {
    Duration::from_secs(3)
};

/// Kills the child when dropped, unless it was already ended.
struct ChildGuard(Option<Box<dyn ChildWrapper>>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        // The signal goes now: a task spawned to kill it would not run when the runtime is
        // itself ending (a one-shot command returning while the child was still starting).
        if let Err(e) = child.start_kill() {
            tracing::warn!(error = %e, "could not kill an upstream's process");
            return;
        }
        // Then it is reaped, leaving no zombie while the gateway runs on.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = child.wait().await;
            });
        }
    }
}

/// Fails the lane's waiting calls when the transport goes.
struct LaneGuard(Arc<LaneCalls>);

impl Drop for LaneGuard {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A child process and the line transport over its stdin and stdout.
pub(super) struct ChildTransport {
    io: JsonRpcStdio<ChildStdout, ChildStdin, RoleClient>,
    child: ChildGuard,
    lane: LaneGuard,
}

impl ChildTransport {
    /// Starts `command` with piped stdin and stdout (its stderr as the command says), returning
    /// the transport and the child's stderr when piped.
    /// The unmodelled members of the tools it lists go to `fields`.
    pub(super) fn spawn(
        mut command: CommandWrap,
        fields: Arc<WireFields>,
    ) -> std::io::Result<(Self, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.stdin().take();
        let stdout = child.stdout().take();
        let stderr = child.stderr().take();
        let guard = ChildGuard(Some(child));
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(std::io::Error::other(
                "the child's stdin or stdout is not piped",
            ));
        };
        Ok((
            Self {
                io: JsonRpcStdio::with_io(stdout, stdin).with_wire_fields(fields),
                child: guard,
                lane: LaneGuard(Arc::default()),
            },
            stderr,
        ))
    }

    /// A lane for `tools/call` on this connection (see [`super::call_lane`]).
    pub(super) fn call_lane(&self) -> CallLane<ChildStdin> {
        CallLane::new(self.lane.0.clone(), self.io.writer())
    }

    /// The child's process id (while it runs).
    pub(super) fn id(&self) -> Option<u32> {
        self.child.0.as_ref().and_then(|c| c.id())
    }

    /// Closes its stdin, then ends it: it exits by itself within [`EXIT_GRACE`], or after a
    /// `SIGTERM` within as long again, or is killed.
    async fn shut_down(&mut self) -> std::io::Result<()> {
        self.lane.0.close();
        if self.child.0.is_none() {
            return Ok(());
        }
        // A child that stopped reading while a line is pending would hold the close: it gets
        // the same grace as the exit, then the signals.
        match tokio::time::timeout(EXIT_GRACE, self.io.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "closing an upstream's stdin"),
            Err(_) => tracing::debug!("closing an upstream's stdin timed out"),
        }
        let Some(child) = self.child.0.as_mut() else {
            return Ok(());
        };
        if exits_within(child.as_mut(), EXIT_GRACE).await {
            self.child.0 = None;
            return Ok(());
        }
        #[cfg(unix)]
        match child.signal(libc::SIGTERM) {
            Ok(()) if exits_within(child.as_mut(), EXIT_GRACE).await => {
                self.child.0 = None;
                return Ok(());
            }
            Ok(()) => {}
            Err(e) => tracing::debug!(error = %e, "sending SIGTERM to an upstream"),
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child.0 = None;
        killed
    }
}

/// Whether the child exits within `grace`.
async fn exits_within(child: &mut dyn ChildWrapper, grace: Duration) -> bool {
    matches!(tokio::time::timeout(grace, child.wait()).await, Ok(Ok(_)))
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.io.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        // Cancel-safe: a message is either still unread or routed before the next await.
        loop {
            let Some(message) = self.io.receive().await else {
                self.lane.0.close();
                return None;
            };
            if let Some(message) = self.lane.0.route(message) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.shut_down().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    /// A child that never reads its stdin and ignores SIGTERM, with a line it cannot take
    /// pending: closing still ends within the graces (it is killed), instead of waiting on
    /// the write for ever.
    #[tokio::test]
    async fn a_child_that_stops_reading_is_still_ended() {
        let mut command = CommandWrap::with_new("sh", |c| {
            c.args(["-c", "trap '' TERM; sleep 60"]);
        });
        command.command_mut().stderr(Stdio::null());
        let (mut transport, _) = ChildTransport::spawn(command, Arc::default()).expect("spawn sh");
        let pid = transport.id().expect("running");
        let blob = "x".repeat(1 << 20);
        let line: TxJsonRpcMessage<RoleClient> = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "arguments": {"blob": blob}}
        }))
        .expect("a tools/call request");
        // The pipe takes 64 KiB of the megabyte; the rest waits on a reader that never comes.
        let pending = tokio::spawn(transport.send(line));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        let closed = tokio::time::timeout(Duration::from_secs(10), transport.shut_down()).await;
        assert!(closed.is_ok(), "closing waited on the pending write");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(transport.id().is_none(), "the child is ended");
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "));
        assert!(!alive, "the child was killed and reaped");
        pending.abort();
    }
}
