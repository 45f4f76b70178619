//! The server's half of an HTTP/1.1 message, as hyper's server takes and gives it: a
//! request head parsed in place (only the plain shape; anything else is for hyper), and
//! an answer's framing and head. Used by the front's own loop
//! (`http1::serve`), which owns the connection.

use std::mem::MaybeUninit;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use hyper::body::Body as _;
use hyper::header;
use hyper::{Method, StatusCode, Uri, Version};

use crate::http1::framing::{self, Framing};
use crate::http1::head::{AnswerParts, Headers, Parts, MAX_NAME};
use crate::http1::rules::{self, Refusal};
use crate::http1::token::same_name;

/// The most header lines a head may have (hyper's default).
const MAX_HEADERS: usize = 100;

/// A head as parsed: the request without its body, and the body's length.
// Made once a request and taken apart at once: boxing the request would allocate.
#[allow(clippy::large_enum_variant)]
pub enum Head {
    /// The request's head, its body's length, and the bytes read after its head.
    Plain(Parts, usize, Bytes),
    /// Not all there yet.
    Partial,
    /// Not the plain shape: the connection is hyper's from here.
    Unusual,
    /// A head that must not be served by anyone: it is answered, and the connection
    /// closed.
    Refused(Refusal),
}

/// How far the bytes are HTTP/2's connection preface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preface {
    /// Its request line is there whole.
    Whole,
    /// What is there begins it: more bytes will tell.
    Begun,
    /// They are something else.
    No,
}

/// Whether the bytes begin with HTTP/2's connection preface.
pub fn preface(buf: &[u8]) -> Preface {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";
    let n = buf.len().min(PREFACE.len());
    if buf[..n] != PREFACE[..n] {
        Preface::No
    } else if n == PREFACE.len() {
        Preface::Whole
    } else {
        Preface::Begun
    }
}

/// Parses the head at the start of `buf` and, when it is a plain one, takes it out
/// with what follows it (its body, or some of it, and any pipelined bytes).
pub fn parse_head(buf: &mut BytesMut, max_body: usize) -> Head {
    // Frozen whole first: the path and the header values are slices of it, not copies.
    let all = std::mem::take(buf).freeze();
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_request_with_uninit_headers(
        &mut parsed,
        &all,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return put_back(buf, all, Head::Partial),
        // What httparse refuses, hyper's server (the same parser, configured alike)
        // refuses too: said here at once, whichever byte it was (a bare CR among them).
        Err(httparse::Error::TooManyHeaders) => {
            return put_back(buf, all, Head::Refused(Refusal::TOO_MANY_LINES))
        }
        Err(_) => return put_back(buf, all, Head::Refused(Refusal::MALFORMED)),
    };
    let Ok(uri) = Uri::from_maybe_shared(all.slice_ref(parsed.path.unwrap_or_default().as_bytes()))
    else {
        return put_back(buf, all, Head::Unusual);
    };
    // A head not served here is hyper's, once nothing in it must be refused: its
    // framing is checked whichever line made it unusual (a `Connection: close` before
    // a `Transfer-Encoding` among them).
    let version = if parsed.version == Some(1) {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let named = Method::from_bytes(parsed.method.unwrap_or_default().as_bytes());
    let unusual = || {
        let Ok(method) = &named else {
            return Head::Refused(Refusal::MALFORMED);
        };
        let lines = parsed.headers.iter().map(|h| (h.name.as_bytes(), h.value));
        let refused = rules::head_refusal(version, method, &uri, lines);
        refused.map_or(Head::Unusual, Head::Refused)
    };
    let method = match &named {
        _ if version != Version::HTTP_11 => None,
        Ok(method) if method == Method::HEAD || method == Method::CONNECT => None,
        Ok(method) => Some(method.clone()),
        Err(_) => None,
    };
    let Some(method) = method else {
        let head = unusual();
        return put_back(buf, all, head);
    };
    let mut length = None;
    let mut hosts = 0;
    let mut headers = Headers::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let name = h.name.as_bytes();
        let plain = if name.len() == 4 && same_name(name, b"host") {
            hosts += 1;
            true
        } else if same_name(name, b"content-length") {
            match (length, framing::parse_length(h.value)) {
                (None, Some(n)) if n <= max_body => {
                    length = Some(n);
                    true
                }
                _ => false,
            }
        } else {
            // A body framed by chunks, and the rest of what hyper's server handles.
            !(same_name(name, b"transfer-encoding")
                || same_name(name, b"expect")
                || same_name(name, b"upgrade")
                || same_name(name, b"te")
                || (same_name(name, b"connection")
                    && !h.value.eq_ignore_ascii_case(b"keep-alive"))
                // Longer than `http` takes: hyper's to refuse.
                || name.len() > MAX_NAME)
        };
        if !plain {
            let head = unusual();
            return put_back(buf, all, head);
        }
        // The name as it came (httparse took it only if it is a token): no type made.
        headers.push_read(
            all.slice_ref(name),
            framing::parsed_value(all.slice_ref(h.value)),
        );
    }
    // Its one `Host` and its target held to the rules here, as its lines were read (its
    // framing is one length or none, or it would be hyper's): the front does not read
    // them again.
    if let Some(refusal) = rules::plain_refusal(version, &method, &uri, hosts) {
        drop(headers);
        return put_back(buf, all, Head::Refused(refusal));
    }
    let parts = Parts {
        method,
        uri,
        version,
        headers,
        extensions: Default::default(),
        checked: true,
    };
    Head::Plain(parts, length.unwrap_or(0), all.slice(len..))
}

/// Writes the answer to a refused request: its status, `connection: close`, and the
/// sentence that says why.
pub fn write_refusal(out: &mut Vec<u8>, refusal: Refusal) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(refusal.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(refusal.status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n");
    out.extend_from_slice(b"content-length: ");
    out.extend_from_slice(itoa::Buffer::new().format(refusal.why.len()).as_bytes());
    out.extend_from_slice(b"\r\ndate: ");
    out.extend_from_slice(&framing::http_date());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(refusal.why.as_bytes());
}

/// Puts the bytes a head was parsed from back, for more to be read or for hyper.
fn put_back(buf: &mut BytesMut, all: Bytes, head: Head) -> Head {
    *buf = all
        .try_into_mut()
        .unwrap_or_else(|all| BytesMut::from(&all[..]));
    head
}

/// The answer's framing, as hyper's server chooses it: the body's own exact length
/// first, then a `Content-Length` the answer carries, then chunks.
pub fn answer_framing(parts: &AnswerParts, body: &Body) -> Framing {
    if parts.status.is_informational() {
        // Answered as an empty 500 (below).
        return Framing::Length(0);
    }
    if matches!(
        parts.status,
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
    ) {
        return Framing::None;
    }
    if body.is_end_stream() {
        return Framing::Length(0);
    }
    if let Some(n) = body.size_hint().exact() {
        return Framing::Length(n);
    }
    match parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| framing::parse_length(v.as_bytes()))
    {
        Some(n) => Framing::Length(n as u64),
        None => Framing::Chunked,
    }
}

/// Writes the answer's status line and headers; says whether the connection may stay
/// open after it.
pub fn write_head(out: &mut Vec<u8>, parts: &AnswerParts, shape: Framing, drained: bool) -> bool {
    // hyper answers a 1xx from a service as a failure; so does this loop.
    let status = if parts.status.is_informational() {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        parts.status
    };
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    match parts.extensions.get::<hyper::ext::ReasonPhrase>() {
        Some(reason) if status == parts.status => out.extend_from_slice(reason.as_bytes()),
        _ => out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes()),
    }
    out.extend_from_slice(b"\r\n");
    let mut keep = !drained && status == parts.status;
    let mut dated = false;
    let mut closes = false;
    // hyper's failure for a 1xx carries no header of the service's; nor does this one.
    let headers = (status == parts.status).then_some(&parts.headers);
    for (name, value) in headers.into_iter().flat_map(Headers::iter) {
        if same_name(name, b"content-length") || same_name(name, b"transfer-encoding") {
            // Framed below, from the body.
            continue;
        } else if same_name(name, b"date") {
            dated = true;
        } else if same_name(name, b"connection") && framing::has_token(value.as_bytes(), b"close") {
            closes = true;
            keep = false;
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if drained && !closes {
        out.extend_from_slice(b"connection: close\r\n");
    }
    match shape {
        Framing::Length(n) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        Framing::None => {}
    }
    if !dated {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(&framing::http_date());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Head {
        let mut buf = BytesMut::from(text.as_bytes());
        parse_head(&mut buf, 1024)
    }

    #[test]
    fn a_plain_post_is_taken_with_its_headers_and_length() {
        let Head::Plain(request, length, rest) = parsed(
            "POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2\r\n\r\nhello",
        ) else {
            panic!("not plain");
        };
        assert_eq!(length, 5);
        assert_eq!(&rest[..], b"hello");
        assert_eq!(request.method, Method::POST);
        assert_eq!(request.uri.path(), "/a");
        assert_eq!(request.uri.query(), Some("b=c"));
        assert_eq!(request.headers.get_all("x-a").count(), 2);
        assert_eq!(request.headers.get("host").unwrap(), "x");
    }

    #[test]
    fn header_names_are_taken_in_any_case() {
        let Head::Plain(request, ..) =
            parsed("POST / HTTP/1.1\r\nX-Version: 1.0\r\nX-Extensions: u\r\nX-Versions: 2\r\nHost: h\r\n\r\n")
        else {
            panic!("not plain");
        };
        let names: Vec<_> = request.headers.iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [&b"X-Version"[..], b"X-Extensions", b"X-Versions", b"Host"]
        );
        assert_eq!(request.headers.get("x-version").unwrap(), "1.0");
        assert_eq!(request.headers.get("x-extensions").unwrap(), "u");
    }

    #[test]
    fn unusual_heads_go_to_hyper() {
        for head in [
            "GET / HTTP/1.0\r\n\r\n",
            "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n",
            "CONNECT a:1 HTTP/1.1\r\nHost: h\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2048\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\nTE: trailers\r\n\r\n",
        ] {
            assert!(matches!(parsed(head), Head::Unusual), "{head:?}");
        }
        // Refused here, not handed on: what no server may read, and framings that can
        // be read more than one way.
        for (head, status) in [
            ("GET /\u{1} HTTP/1.1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
            ("GET any-target HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 400),
            ("POST /x HTTP/1.1\rHost: h\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
            (
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                400,
            ),
        ] {
            let Head::Refused(refusal) = parsed(head) else {
                panic!("{head:?} not refused");
            };
            assert_eq!(refusal.status.as_u16(), status, "{head:?}");
        }
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "a: 1\r\n".repeat(MAX_HEADERS + 1)
        );
        let Head::Refused(refusal) = parsed(&many) else {
            panic!("too many lines taken");
        };
        assert_eq!(refusal.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        // A name longer than `http`'s names may be: hyper refuses it.
        let long = format!(
            "GET / HTTP/1.1\r\nHost: h\r\n{}: 1\r\n\r\n",
            "x".repeat(MAX_NAME + 1)
        );
        let mut buf = BytesMut::from(long.as_bytes());
        assert!(matches!(parse_head(&mut buf, 1024), Head::Unusual));
        let mut partial = BytesMut::from(&b"GET / HTTP/1.1\r\nHost"[..]);
        assert!(matches!(parse_head(&mut partial, 1024), Head::Partial));
        assert_eq!(&partial[..], b"GET / HTTP/1.1\r\nHost", "put back whole");
        assert_eq!(preface(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Preface::Whole);
        assert_eq!(preface(b"PR"), Preface::Begun);
        assert_eq!(preface(b"POST / HTTP/1.1"), Preface::No);
    }
}
