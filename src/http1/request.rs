//! The client's request on the wire: its framing chosen as hyper's client chooses it,
//! its request line and headers written in one buffer, and its body after them (in the
//! same write when it is there). [`super::client`] watches for the answer meanwhile.

use std::io;
use std::task::Poll;

use axum::body::Body;
use hyper::body::Body as _;
use hyper::header;
use tokio::net::TcpStream;

use crate::http1::body::{write_body, Written};
use crate::http1::framing::{self, Framing};
use crate::http1::head::{Headers, Parts};
use crate::http1::token::same_name;

/// The request's framing: none for an empty body, the body's own length when it knows
/// it (the front's bodies are held to theirs), else the caller's `Content-Length`, else
/// chunks.
pub fn request_framing(headers: &Headers, body: &Body) -> Framing {
    if body.is_end_stream() {
        Framing::None
    } else if let Some(length) = body.size_hint().exact() {
        Framing::Length(length)
    } else if let Some(length) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| framing::parse_length(v.as_bytes()))
    {
        Framing::Length(length as u64)
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
    // The caller's length line goes as it came when it is the body's framing; any other
    // is left out, and the framing's own written below (a length the body is not held to
    // never goes).
    let mut length_said = false;
    for (name, value) in parts.headers.iter() {
        if same_name(name, b"transfer-encoding") {
            continue;
        }
        if same_name(name, b"content-length") {
            let said = framing::parse_length(value.as_bytes()).map(|n| n as u64);
            match framing {
                Framing::None => {}
                Framing::Length(n) if !length_said && said == Some(n) => length_said = true,
                _ => continue,
            }
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        Framing::Length(length) if !length_said => {
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
    match write_body(tcp, out, &mut body, framing, None, |_| Poll::Pending).await? {
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
