//! One body writer for both halves of the hop (the front's answers, the requests it
//! forwards): a body's frames written after its head as they come, what is ready in one
//! write, chunk-framed or held to its declared length. A body is ended exactly at its
//! length: one that runs over is cut there, one that ends early is said to be short,
//! and either way its connection is not used again (as hyper's `Encoder` and
//! pingora's `BodyWriter` hold a body to its framing).

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use hyper::body::Body as _;
use tokio::net::TcpStream;

use crate::http1::framing::{self, Framing};
use crate::http1::socket;

/// How the writing of a body ended.
#[derive(Debug)]
pub enum Written {
    /// Whole, as its framing said.
    Whole,
    /// It had more than its length: cut there.
    Over,
    /// It ended before its length.
    Short,
    /// The body itself failed part way (what came before went).
    Failed(axum::Error),
    /// The other end went away while the body was awaited.
    Gone,
}

impl Written {
    /// Whether the body went as its framing said, so that its connection may be used
    /// again.
    pub fn is_whole(&self) -> bool {
        matches!(self, Written::Whole)
    }
}

/// Writes `body` after `out` (its head, and whatever is copied after it) on `tcp`, as
/// `framing` says (`None`: `out` alone), each write waiting at most `within` for the other end. What the
/// body has at once goes in the same write as the head; while it has nothing, `watch`
/// is polled too, and its readiness (the other end gone) ends the writing.
pub async fn write_body(
    tcp: &TcpStream,
    mut out: Vec<u8>,
    body: &mut Body,
    framing: Framing,
    within: Option<Duration>,
    mut watch: impl FnMut(&mut Context<'_>) -> Poll<()>,
) -> io::Result<Written> {
    let chunked = framing == Framing::Chunked;
    let mut left = match framing {
        Framing::None => {
            socket::write_all_within(tcp, &out, within).await?;
            return Ok(Written::Whole);
        }
        Framing::Length(n) => n,
        Framing::Chunked => u64::MAX,
    };
    let written = loop {
        let frame = match poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                // Not there yet: what is ready goes now, and the other end is watched
                // while the rest comes.
                if !out.is_empty() {
                    socket::write_all_within(tcp, &out, within).await?;
                    out.clear();
                }
                let next = poll_fn(|cx| {
                    if let Poll::Ready(frame) = Pin::new(&mut *body).poll_frame(cx) {
                        return Poll::Ready(Some(frame));
                    }
                    watch(cx).map(|()| None)
                })
                .await;
                match next {
                    Some(frame) => frame,
                    None => break Written::Gone,
                }
            }
        };
        let data = match frame {
            None => break Written::Whole,
            Some(Err(e)) => break Written::Failed(e),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) if !data.is_empty() => data,
                // Trailers (HTTP/1.1 bodies here carry none), or nothing.
                _ => continue,
            },
        };
        if data.len() as u64 > left {
            // Longer than its length: cut there, so that the other end never reads
            // this body's bytes as the next message's.
            let allowed = &data[..usize::try_from(left).unwrap_or(data.len())];
            socket::put_data(tcp, &mut out, allowed, chunked, within).await?;
            break Written::Over;
        }
        left -= data.len() as u64;
        socket::put_data(tcp, &mut out, &data, chunked, within).await?;
        if body.is_end_stream() {
            break Written::Whole;
        }
    };
    let written = match written {
        Written::Whole if chunked => {
            out.extend_from_slice(framing::LAST_CHUNK);
            Written::Whole
        }
        Written::Whole if left > 0 => Written::Short,
        other => other,
    };
    if !out.is_empty() && !matches!(written, Written::Gone) {
        socket::write_all_within(tcp, &out, within).await?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    use bytes::Bytes;
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    use tokio::io::AsyncReadExt as _;
    use tokio::net::TcpListener;

    /// Writes `parts` as a body framed by `framing`; what the other end read, and
    /// how the writing ended.
    async fn written(parts: &[&'static str], framing: Framing) -> (Vec<u8>, Written) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let reader = tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut read = Vec::new();
            tcp.read_to_end(&mut read).await.unwrap();
            read
        });
        let tcp = TcpStream::connect(address).await.unwrap();
        let frames = parts
            .iter()
            .map(|p| {
                Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(p.as_bytes())))
            })
            .collect::<Vec<_>>();
        let mut body = Body::new(StreamBody::new(tokio_stream::iter(frames)));
        let out = b"HEAD\r\n".to_vec();
        let ended = write_body(&tcp, out, &mut body, framing, None, |_| Poll::Pending)
            .await
            .unwrap();
        drop(tcp);
        (reader.await.unwrap(), ended)
    }

    #[tokio::test]
    async fn a_body_is_held_to_its_length() {
        let (read, ended) = written(&["he", "llo"], Framing::Length(5)).await;
        assert_eq!((&read[..], ended.is_whole()), (&b"HEAD\r\nhello"[..], true));
        let (read, ended) = written(&["he", "llo!"], Framing::Length(5)).await;
        assert_eq!(read, b"HEAD\r\nhello", "cut at its length");
        assert!(matches!(ended, Written::Over));
        let (read, ended) = written(&["he"], Framing::Length(5)).await;
        assert_eq!(read, b"HEAD\r\nhe");
        assert!(matches!(ended, Written::Short));
    }

    #[tokio::test]
    async fn a_chunked_body_ends_with_its_last_chunk() {
        let (read, ended) = written(&["he", "", "llo"], Framing::Chunked).await;
        assert_eq!(read, b"HEAD\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n");
        assert!(ended.is_whole());
    }
}
