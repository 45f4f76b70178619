//! The server's half of an HTTP/1.1 message, as hyper's server takes and gives it: a
//! request head parsed in place (only the plain shape; anything else is for hyper), and
//! an answer's framing and head. Used by the front's own loop
//! (`transport/front_http1`), which owns the connection.

use std::mem::MaybeUninit;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use hyper::body::Body as _;
use hyper::header;
use hyper::{Method, StatusCode, Uri, Version};

use crate::http1::framing;
use crate::http1::head::{AnswerParts, Headers, Parts, MAX_NAME};

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
}

/// Whether the bytes begin HTTP/2's connection preface (or could, when so few).
pub fn looks_like_http2(buf: &[u8]) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0";
    let n = buf.len().min(PREFACE.len());
    buf[..n] == PREFACE[..n]
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
        Err(_) => return put_back(buf, all, Head::Unusual),
    };
    let method = match parsed.method {
        _ if parsed.version != Some(1) => return put_back(buf, all, Head::Unusual),
        Some("GET") => Method::GET,
        Some("POST") => Method::POST,
        Some("HEAD" | "CONNECT") | None => return put_back(buf, all, Head::Unusual),
        Some(other) => match Method::from_bytes(other.as_bytes()) {
            Ok(method) => method,
            Err(_) => return put_back(buf, all, Head::Unusual),
        },
    };
    let Ok(uri) = Uri::from_maybe_shared(all.slice_ref(parsed.path.unwrap_or_default().as_bytes()))
    else {
        return put_back(buf, all, Head::Unusual);
    };
    let mut length = None;
    let mut headers = Headers::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            match (length, framing::parse_length(h.value)) {
                (None, Some(n)) if n <= max_body => length = Some(n),
                _ => return put_back(buf, all, Head::Unusual),
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"expect")
            || name.eq_ignore_ascii_case(b"upgrade")
            || name.eq_ignore_ascii_case(b"te")
            || (name.eq_ignore_ascii_case(b"connection")
                && !h.value.eq_ignore_ascii_case(b"keep-alive"))
        {
            return put_back(buf, all, Head::Unusual);
        }
        if name.len() > MAX_NAME {
            // Longer than `http` takes: hyper's to refuse.
            return put_back(buf, all, Head::Unusual);
        }
        // The name as it came (httparse took it only if it is a token): no type made.
        headers.push_read(
            all.slice_ref(name),
            framing::parsed_value(all.slice_ref(h.value)),
        );
    }
    let parts = Parts {
        method,
        uri,
        version: Version::HTTP_11,
        headers,
        extensions: Default::default(),
    };
    Head::Plain(parts, length.unwrap_or(0), all.slice(len..))
}

/// Puts the bytes a head was parsed from back, for more to be read or for hyper.
fn put_back(buf: &mut BytesMut, all: Bytes, head: Head) -> Head {
    *buf = all
        .try_into_mut()
        .unwrap_or_else(|all| BytesMut::from(&all[..]));
    head
}

/// How an answer's body is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body (204, 304, or an empty body).
    None,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: chunked`: a body whose length is not known.
    Chunked,
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
        if name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"transfer-encoding")
        {
            // Framed below, from the body.
            continue;
        } else if name.eq_ignore_ascii_case(b"date") {
            dated = true;
        } else if name.eq_ignore_ascii_case(b"connection")
            && framing::has_token(value.as_bytes(), b"close")
        {
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
            parsed("POST / HTTP/1.1\r\nX-Version: 1.0\r\nX-Extensions: u\r\nX-Versions: 2\r\n\r\n")
        else {
            panic!("not plain");
        };
        let names: Vec<_> = request.headers.iter().map(|(n, _)| n).collect();
        assert_eq!(names, [&b"X-Version"[..], b"X-Extensions", b"X-Versions"]);
        assert_eq!(request.headers.get("x-version").unwrap(), "1.0");
        assert_eq!(request.headers.get("x-extensions").unwrap(), "u");
    }

    #[test]
    fn unusual_heads_go_to_hyper() {
        for head in [
            "GET / HTTP/1.0\r\n\r\n",
            "HEAD / HTTP/1.1\r\n\r\n",
            "CONNECT a:1 HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 2048\r\n\r\n",
            "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
            "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
            "GET / HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
            "GET / HTTP/1.1\r\nTE: trailers\r\n\r\n",
            "GET /\u{1} HTTP/1.1\r\n\r\n",
        ] {
            assert!(matches!(parsed(head), Head::Unusual), "{head:?}");
        }
        // A name longer than `http`'s names may be: hyper refuses it.
        let long = format!("GET / HTTP/1.1\r\n{}: 1\r\n\r\n", "x".repeat(MAX_NAME + 1));
        let mut buf = BytesMut::from(long.as_bytes());
        assert!(matches!(parse_head(&mut buf, 1024), Head::Unusual));
        let mut partial = BytesMut::from(&b"GET / HTTP/1.1\r\nHost"[..]);
        assert!(matches!(parse_head(&mut partial, 1024), Head::Partial));
        assert_eq!(&partial[..], b"GET / HTTP/1.1\r\nHost", "put back whole");
        assert!(looks_like_http2(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        assert!(looks_like_http2(b"PR"));
        assert!(!looks_like_http2(b"POST / HTTP/1.1"));
    }
}
