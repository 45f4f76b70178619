//! The client's request on the wire: its framing chosen as hyper's client chooses it,
//! its request line and headers written in one buffer, and its body after them (in the
//! same write when it is there). [`super::client`] watches for the answer meanwhile.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::Poll;

use axum::body::Body;
use hyper::body::Body as _;
use hyper::header;
use tokio::net::TcpStream;

use crate::http1::framing;
use crate::http1::head::{Headers, Parts};
use crate::http1::socket;

/// How a request's body goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body: the headers as the caller gave them.
    Empty,
    /// `Content-Length`: the caller's (`None`), or the body's own.
    Length(Option<u64>),
    /// Chunks: a body of no known length, with no `Content-Length`.
    Chunked,
}

/// The request's framing, as hyper's client chooses it.
pub fn request_framing(headers: &Headers, body: &Body) -> Framing {
    if body.is_end_stream() {
        Framing::Empty
    } else if headers.contains_key(header::CONTENT_LENGTH) {
        Framing::Length(None)
    } else if let Some(n) = body.size_hint().exact() {
        Framing::Length(Some(n))
    } else {
        Framing::Chunked
    }
}

/// The request line and headers, with the framing header the body needs.
pub fn write_request_head(out: &mut Vec<u8>, parts: &Parts, framing: Framing) {
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b' ');
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in parts.headers.iter() {
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            continue;
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        Framing::Length(Some(n)) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        _ => {}
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes a request: `out` (its head, and what of its body is copied after it), then
/// its body's frames as they come.
pub async fn write_request(
    tcp: &TcpStream,
    mut out: Vec<u8>,
    mut body: Body,
    framing: Framing,
) -> io::Result<()> {
    if framing != Framing::Empty {
        write_body(tcp, &mut out, &mut body, framing == Framing::Chunked).await?;
    }
    if !out.is_empty() {
        socket::write_all(tcp, &out).await?;
    }
    Ok(())
}

/// Writes the request's body after its head (in `out`): what is there at once goes in
/// the same write; the rest as it comes.
async fn write_body(
    tcp: &TcpStream,
    out: &mut Vec<u8>,
    body: &mut Body,
    chunked: bool,
) -> io::Result<()> {
    loop {
        let frame = match poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                if !out.is_empty() {
                    socket::write_all(tcp, out).await?;
                    out.clear();
                }
                poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
            }
        };
        match frame {
            None => break,
            Some(Err(e)) => return Err(io::Error::other(e)),
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if data.is_empty() {
                    continue;
                }
                socket::put_data(tcp, out, &data, chunked, None).await?;
                if body.is_end_stream() {
                    break;
                }
            }
        }
    }
    if chunked {
        out.extend_from_slice(framing::LAST_CHUNK);
    }
    Ok(())
}
