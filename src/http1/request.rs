//! The client's request on the wire: its framing chosen as hyper's client chooses it,
//! its request line and headers written in one buffer, and its body after them (in the
//! same write when it is there). [`super::client`] watches for the answer meanwhile.

use std::io;
use std::task::Poll;

use axum::body::Body;
use hyper::body::Body as _;
use hyper::header;
use tokio::net::TcpStream;

use crate::http1::body::{write_body, Delimited, Written};
use crate::http1::framing;
use crate::http1::head::{Headers, Parts};
use crate::http1::socket;

/// How a request's body goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body: the headers as the caller gave them.
    Empty,
    /// `Content-Length`: the caller's (`declared`), or the body's own; the body is held
    /// to it.
    Length {
        /// The length.
        length: u64,
        /// Whether the caller's own `Content-Length` line says it.
        declared: bool,
    },
    /// Chunks: a body of no known length, with no `Content-Length`.
    Chunked,
}

/// The request's framing, as hyper's client chooses it.
pub fn request_framing(headers: &Headers, body: &Body) -> Framing {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| framing::parse_length(v.as_bytes()));
    if body.is_end_stream() {
        Framing::Empty
    } else if let Some(length) = declared {
        Framing::Length {
            length: length as u64,
            declared: true,
        }
    } else if let Some(length) = body.size_hint().exact() {
        Framing::Length {
            length,
            declared: false,
        }
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
    let own_length = !matches!(framing, Framing::Length { declared: true, .. });
    for (name, value) in parts.headers.iter() {
        // The framing lines are the body's own, written below (a caller's length that
        // is not the one the body is held to never goes).
        if name.eq_ignore_ascii_case(b"transfer-encoding")
            || (own_length
                && framing != Framing::Empty
                && name.eq_ignore_ascii_case(b"content-length"))
        {
            continue;
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        Framing::Length {
            length,
            declared: false,
        } => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(itoa::Buffer::new().format(length).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        _ => {}
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes a request: `out` (its head, and what of its body is copied after it), then
/// its body's frames as they come, held to its framing: a body that runs over or ends
/// short of its length fails the request (its connection is not used again).
pub async fn write_request(
    tcp: &TcpStream,
    out: Vec<u8>,
    mut body: Body,
    framing: Framing,
) -> io::Result<()> {
    let delimited = match framing {
        Framing::Empty => return socket::write_all(tcp, &out).await,
        Framing::Length { length, .. } => Delimited::Length(length),
        Framing::Chunked => Delimited::Chunked,
    };
    match write_body(tcp, out, &mut body, delimited, None, |_| Poll::Pending).await? {
        Written::Whole => Ok(()),
        Written::Over => Err(broken("the request body is longer than its Content-Length")),
        Written::Short => Err(broken("the request body ended before its Content-Length")),
        Written::Failed(e) => Err(io::Error::other(e)),
        Written::Gone => unreachable!("nothing is watched while a request is written"),
    }
}

fn broken(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}
