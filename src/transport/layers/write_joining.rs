//! Small writes joined: h2 writes an answer's frames (headers, data, trailers) one by
//! one and then flushes. Unjoined, a small answer costs two or three system calls;
//! joined, it leaves in one. Writes up to [`JOIN_UP_TO`] wait for the next write or
//! flush; a larger one takes what waits along in one vectored write.
//!
//! Hand-made rather than tokio's `BufWriter`, which was measured in its place
//! (`scripts/callgrind.sh`, same build otherwise): with `BufWriter` every call cost
//! more, 550 instructions on the floor (Health/Check), 700 on Classify, 900 on Execute,
//! and a write larger than its buffer goes out as two system calls (what it holds,
//! then the new bytes) where this makes one vectored write.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How many bytes may wait: an Execute, Classify or Complete answer is well under this.
pub const JOIN_UP_TO: usize = 4096;

/// An accepted TCP connection whose small writes wait for the next write or flush.
pub struct JoinedWrites {
    inner: TcpStream,
    /// Small writes not sent yet: they go out with the next write or flush.
    pending: Vec<u8>,
}

impl JoinedWrites {
    /// Wraps an accepted connection.
    pub fn new(inner: TcpStream) -> Self {
        Self {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes the pending bytes.
    fn send_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while !self.pending.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..written);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for JoinedWrites {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for JoinedWrites {
    /// A write that fits in the pending bytes joins them and is reported written; a
    /// larger one goes out with them in one vectored write.
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.pending.len() + buf.len() <= JOIN_UP_TO {
            this.pending.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        }
        while !this.pending.is_empty() {
            let slices = [
                std::io::IoSlice::new(&this.pending),
                std::io::IoSlice::new(buf),
            ];
            let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, &slices))?;
            if written == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            let from_pending = written.min(this.pending.len());
            this.pending.drain(..from_pending);
            if written > from_pending {
                return Poll::Ready(Ok(written - from_pending));
            }
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    /// Reported as not vectored, on purpose: h2 then copies a data frame of up to
    /// 1 KiB into its write buffer (256 bytes when vectored), so an answer's headers,
    /// data and trailers are one write, which `poll_write` joins with the next.
    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.send_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.send_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Connected for JoinedWrites {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connected pair: our side joined, and the peer.
    async fn pair() -> (JoinedWrites, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap());
        let (peer, accepted) = tokio::join!(peer, listener.accept());
        (JoinedWrites::new(accepted.unwrap().0), peer.unwrap())
    }

    #[tokio::test]
    async fn small_writes_wait_for_the_next_write_or_flush_and_keep_their_order() {
        let (mut io, mut peer) = pair().await;
        io.write_all(b"head").await.unwrap();
        io.write_all(b"ers").await.unwrap();
        assert_eq!(io.pending, b"headers", "small writes are held, not sent");

        let large = vec![7u8; 3 * JOIN_UP_TO];
        io.write_all(&large).await.unwrap();
        assert!(
            io.pending.is_empty(),
            "a large write takes the held bytes along"
        );

        io.write_all(b"trailers").await.unwrap();
        io.flush().await.unwrap();
        assert!(io.pending.is_empty(), "flush sends what is held");
        io.shutdown().await.unwrap();
        drop(io);

        let mut received = Vec::new();
        peer.read_to_end(&mut received).await.unwrap();
        let mut expected = b"headers".to_vec();
        expected.extend_from_slice(&large);
        expected.extend_from_slice(b"trailers");
        assert_eq!(received, expected);
    }

    #[tokio::test]
    async fn shutdown_sends_held_bytes_first() {
        let (mut io, mut peer) = pair().await;
        io.write_all(b"last words").await.unwrap();
        io.shutdown().await.unwrap();
        let mut received = Vec::new();
        peer.read_to_end(&mut received).await.unwrap();
        assert_eq!(received, b"last words");
    }
}
