//! The client's request on the wire: its framing chosen as hyper's client chooses it,
//! and its request line and headers written in one buffer (the body follows in the
//! same write when it is there: [`super::client`]).

use axum::body::Body;
use hyper::body::Body as _;
use hyper::header;

use crate::http1::head::{Headers, Parts};

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
