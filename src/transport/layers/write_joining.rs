//! Small writes joined: h2 writes an answer's frames (headers, data, trailers) one by
//! one and then flushes. Unjoined, a small answer costs two or three system calls;
//! through tokio's `BufWriter` it leaves in one, at the flush. A write as large as the
//! buffer goes straight through.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, BufWriter, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How many bytes wait for the flush: an Execute, Classify or Complete answer is well
/// under this; ListSpecs answers of a large registry are written through.
pub const JOIN_UP_TO: usize = 4096;

/// An accepted TCP connection whose small writes wait for the next flush.
pub struct JoinedWrites(BufWriter<TcpStream>);

impl JoinedWrites {
    /// Wraps an accepted connection.
    pub fn new(stream: TcpStream) -> Self {
        Self(BufWriter::with_capacity(JOIN_UP_TO, stream))
    }
}

impl AsyncRead for JoinedWrites {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for JoinedWrites {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    /// Reported as not vectored, on purpose: h2 then copies a data frame of up to 1 KiB
    /// into its own write buffer (256 bytes when vectored), so a small answer reaches
    /// the `BufWriter` as one write instead of a chain of slices (callgrind: about 200
    /// instructions a call fewer).
    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl Connected for JoinedWrites {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.0.get_ref().connect_info()
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
    async fn small_writes_wait_for_the_flush_and_keep_their_order() {
        let (mut io, mut peer) = pair().await;
        io.write_all(b"head").await.unwrap();
        io.write_all(b"ers").await.unwrap();
        assert_eq!(io.0.buffer(), b"headers", "small writes are held, not sent");

        let large = vec![7u8; 3 * JOIN_UP_TO];
        io.write_all(&large).await.unwrap();
        assert!(io.0.buffer().is_empty(), "a large write goes through");

        io.write_all(b"trailers").await.unwrap();
        io.flush().await.unwrap();
        assert!(io.0.buffer().is_empty(), "flush sends what is held");
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
