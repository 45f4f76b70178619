//! A socket read without asking it twice, and a body's frames written beside what
//! goes before them. A read that comes back short has emptied the socket's queue, so
//! its readiness is cleared then and there: the next wait goes straight to epoll, where
//! it would otherwise first make one more `recvfrom` only to be told EAGAIN (twice a
//! request on the proxy hop, before this).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest, ReadBuf};
use tokio::net::TcpStream;

use crate::http1::framing;

/// A body frame larger than this is written on its own rather than copied beside the
/// head.
pub const COPY_AT_MOST: usize = 16 * 1024;

/// Reads what `tcp` has into `buf`'s spare room (reserve first): the bytes read, 0 at
/// the end of the stream, `WouldBlock` when there was nothing after all.
pub fn read_into(tcp: &TcpStream, buf: &mut BytesMut) -> io::Result<usize> {
    let room = buf.capacity() - buf.len();
    let mut read = 0;
    // The read is made inside `try_io`, so that what is cleared is the readiness seen
    // before it: an event that comes after the read has a newer tick and stays.
    let result = tcp.try_io(Interest::READABLE, || {
        read = tcp.try_read_buf(buf)?;
        if read > 0 && read < room {
            Err(io::Error::from(io::ErrorKind::WouldBlock))
        } else {
            Ok(read)
        }
    });
    match result {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock && read > 0 => Ok(read),
        other => other,
    }
}

/// Whether `tcp`, between requests, has been closed by its other end or sent bytes
/// nobody asked for. No system call unless the socket has had an event since its
/// last read was cleared.
pub fn closed_while_idle(tcp: &TcpStream) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    if tcp.poll_read_ready(&mut cx).is_pending() {
        return false;
    }
    let mut byte = [0u8; 1];
    !matches!(tcp.try_read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// Writes all of `bytes` to `tcp`, waiting for room as needed. It takes the socket
/// shared, so that its answer can be read while a request is still being written.
pub async fn write_all(tcp: &TcpStream, bytes: &[u8]) -> io::Result<()> {
    write_all_within(tcp, bytes, None).await
}

/// [`write_all`], failing with `TimedOut` when the other end takes none of the bytes
/// for `within` (nginx's `send_timeout`): a client that stops reading does not hold
/// its answer, and the connection, for ever. The timer is made only when a write has to
/// wait, which a socket with room never does. Polled by hand rather than with a
/// readiness future and a `select!`: this future is part of every connection's state
/// while its answer streams, and stays a few words.
pub async fn write_all_within(
    tcp: &TcpStream,
    mut bytes: &[u8],
    within: Option<Duration>,
) -> io::Result<()> {
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        while !bytes.is_empty() {
            match tcp.try_write(bytes) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    bytes = &bytes[n..];
                    // Some were taken: the other end reads, and the wait starts again.
                    timer = None;
                }
                // No room: the readiness `try_write` cleared is waited for (or is back).
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => match tcp.poll_write_ready(cx) {
                    Poll::Ready(Ok(())) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {
                        if let Some(within) = within {
                            let timer =
                                timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(within)));
                            if std::future::Future::poll(timer.as_mut(), cx).is_ready() {
                                return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
                            }
                        }
                        return Poll::Pending;
                    }
                },
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    })
    .await
}

/// Ends a connection after an answer that closes it: its sending side is shut, then
/// what the client still sends is read and dropped for a short while (nginx's lingering
/// close). A socket closed with unread bytes resets the connection, and the reset can
/// reach the client before it has read the answer.
pub async fn linger(tcp: &mut TcpStream) {
    /// How long the client's bytes are read and dropped at the most.
    const LINGER: Duration = Duration::from_secs(2);
    /// How many of them are read at the most.
    const AT_MOST: usize = 1 << 20;
    if tcp.shutdown().await.is_err() {
        return;
    }
    let mut scratch = vec![0u8; 16 * 1024];
    let mut dropped = 0;
    let _ = tokio::time::timeout(LINGER, async {
        while dropped < AT_MOST {
            match tcp.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => dropped += n,
            }
        }
    })
    .await;
}

/// Puts one data frame of a body after what `out` holds (chunk-framed when `chunked`):
/// a small one is copied there, to go in the same write as the rest; a large one is
/// written now, after `out`, each write waiting at most `within`.
pub async fn put_data(
    tcp: &TcpStream,
    out: &mut Vec<u8>,
    data: &[u8],
    chunked: bool,
    within: Option<Duration>,
) -> io::Result<()> {
    if chunked {
        framing::push_chunk_size(out, data.len());
    }
    if data.len() <= COPY_AT_MOST {
        out.extend_from_slice(data);
    } else {
        write_all_within(tcp, out, within).await?;
        out.clear();
        write_all_within(tcp, data, within).await?;
    }
    if chunked {
        out.extend_from_slice(b"\r\n");
    }
    Ok(())
}

/// A connection with the bytes already read from it put back in front, for hyper.
pub struct Prefixed {
    read: Bytes,
    io: TcpStream,
}

impl Prefixed {
    /// `io`, with `read` (already read from it) to be read first.
    pub fn new(read: Bytes, io: TcpStream) -> Self {
        Self { read, io }
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.read.is_empty() {
            let n = self.read.len().min(buf.remaining());
            buf.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
