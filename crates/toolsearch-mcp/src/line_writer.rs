//! Writing whole message lines to a pipe in order: at once, while the caller still runs, when
//! nothing is queued and the pipe takes the line; else (a full pipe, an earlier line still
//! going out) from the future returned, after the lines queued before it.
//!
//! rmcp's service loop calls a transport's `send` and runs the future it returns on a task of
//! its own; writing in `send` itself saves that task's scheduling on every message.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker, ready};

use tokio::io::AsyncWrite;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The writing end and what is still to go out on it.
#[derive(Debug)]
struct Pipe<W> {
    /// `None` once closed.
    write: Option<W>,
    /// Bytes not written yet (`buf[at..]`): the rest of a line whose future stopped early is
    /// written before the next line, so lines stay whole.
    buf: Vec<u8>,
    at: usize,
}

impl<W: AsyncWrite + Unpin> Pipe<W> {
    /// Writes out what is buffered, then flushes.
    fn poll_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = ready!(self.poll_out_inner(cx));
        self.buf.clear();
        self.at = 0;
        Poll::Ready(r)
    }

    fn poll_out_inner(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(w) = self.write.as_mut() else {
            return Poll::Ready(Err(closed()));
        };
        while self.at < self.buf.len() {
            match ready!(Pin::new(&mut *w).poll_write(cx, &self.buf[self.at..])) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => self.at += n,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Pin::new(w).poll_flush(cx)
    }

    fn push(&mut self, line: Vec<u8>) {
        if self.buf.is_empty() {
            self.buf = line;
        } else {
            self.buf.extend_from_slice(&line);
        }
    }
}

/// Writes lines to `W`, one after another.
#[derive(Debug)]
pub(crate) struct LineWriter<W> {
    pipe: Arc<Mutex<Pipe<W>>>,
    /// Lines waiting for the writer: while any are, a new line waits its turn.
    queued: Arc<AtomicUsize>,
}

impl<W> Clone for LineWriter<W> {
    fn clone(&self) -> Self {
        Self {
            pipe: self.pipe.clone(),
            queued: self.queued.clone(),
        }
    }
}

/// Counts a waiting line until its future has the writer (or is dropped).
struct Queued(Arc<AtomicUsize>);

impl Queued {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count.clone())
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How a line's writing started.
enum Start<W> {
    /// Written (or failed) at once.
    Done(io::Result<()>),
    /// Partly written: the rest follows, the writer still held.
    Rest(OwnedMutexGuard<Pipe<W>>),
    /// Waits for the lines before it.
    Wait(Queued, Vec<u8>),
}

impl<W> LineWriter<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(write: W) -> Self {
        Self {
            pipe: Arc::new(Mutex::new(Pipe {
                write: Some(write),
                buf: Vec::new(),
                at: 0,
            })),
            queued: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Writes `line` (which ends with its newline): as much as the pipe takes now, the rest
    /// when the returned future runs.
    pub(crate) fn write(
        &self,
        line: Vec<u8>,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static + use<W> {
        let start = self.start(line);
        let pipe = self.pipe.clone();
        async move {
            match start {
                Start::Done(r) => r,
                Start::Rest(mut held) => std::future::poll_fn(|cx| held.poll_out(cx)).await,
                Start::Wait(queued, line) => {
                    let mut held = pipe.lock_owned().await;
                    drop(queued);
                    held.push(line);
                    std::future::poll_fn(|cx| held.poll_out(cx)).await
                }
            }
        }
    }

    fn start(&self, line: Vec<u8>) -> Start<W> {
        if self.queued.load(Ordering::Acquire) > 0 {
            return Start::Wait(Queued::new(&self.queued), line);
        }
        let Ok(mut held) = self.pipe.clone().try_lock_owned() else {
            return Start::Wait(Queued::new(&self.queued), line);
        };
        held.push(line);
        match held.poll_out(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => Start::Done(r),
            Poll::Pending => Start::Rest(held),
        }
    }

    /// Writes out what is left, then drops the writer (a child reading it sees the end of its
    /// input); later writes fail.
    pub(crate) async fn close(&self) -> io::Result<()> {
        let mut held = self.pipe.lock().await;
        let r = match held.write {
            Some(_) => std::future::poll_fn(|cx| held.poll_out(cx)).await,
            None => Ok(()),
        };
        held.write = None;
        r
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the transport is closed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn a_line_the_pipe_takes_is_written_before_its_future_runs() {
        runtime().block_on(async {
            let (w, mut r) = tokio::io::duplex(1024);
            let writer = LineWriter::new(w);
            let pending = writer.write(b"one\n".to_vec());
            let mut buf = [0u8; 4];
            r.read_exact(&mut buf).await.expect("read");
            assert_eq!(&buf, b"one\n");
            pending.await.expect("written");
        });
    }

    #[test]
    fn lines_stay_whole_and_in_order_when_the_pipe_fills() {
        runtime().block_on(async {
            // A pipe of 64 bytes: most lines go out in pieces, from their futures.
            let (w, mut r) = tokio::io::duplex(64);
            let writer = LineWriter::new(w);
            let lines: Vec<Vec<u8>> = (0..200)
                .map(|i| format!("{}{i}\n", "x".repeat(i % 97)).into_bytes())
                .collect();
            let expected: Vec<u8> = lines.concat();
            let futures: Vec<_> = lines.into_iter().map(|l| writer.write(l)).collect();
            let reader = tokio::spawn(async move {
                let mut got = vec![0u8; expected.len()];
                r.read_exact(&mut got).await.expect("read");
                assert_eq!(got, expected);
            });
            for f in futures {
                tokio::spawn(f);
            }
            reader.await.expect("in order");
            writer.close().await.expect("closed");
            assert_eq!(
                writer
                    .write(b"late\n".to_vec())
                    .await
                    .expect_err("closed")
                    .kind(),
                io::ErrorKind::NotConnected
            );
        });
    }

    #[test]
    fn a_dropped_future_does_not_stop_later_lines() {
        runtime().block_on(async {
            let (w, mut r) = tokio::io::duplex(8);
            let writer = LineWriter::new(w);
            drop(writer.write(b"0123456789\n".to_vec())); // partly written, then abandoned
            drop(writer.write(b"next\n".to_vec())); // buffered behind it, then abandoned
            let later = tokio::spawn(writer.write(b"after\n".to_vec()));
            let mut got = [0u8; 22];
            r.read_exact(&mut got).await.expect("read");
            assert_eq!(
                &got, b"0123456789\nnext\nafter\n",
                "lines stay whole, in order"
            );
            later.await.expect("task").expect("written");
        });
    }
}
