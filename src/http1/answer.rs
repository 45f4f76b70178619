//! The client's half of an HTTP/1.1 answer: its head parsed in place, and how its body
//! is to be read (by length, by chunks, or to the close), as hyper's client takes it;
//! used by the agent's client connection ([`client`](crate::http1::client)).

use std::io;
use std::mem::MaybeUninit;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use hyper::{StatusCode, Version};

use crate::http1::framing::{self, Chunked};
use crate::http1::head::{AnswerParts, Headers, MAX_NAME};
use crate::http1::token::same_name;

/// Whether an answer's connection may be used again after it, and, when it may, how
/// long the agent said it keeps it while idle (`Keep-Alive: timeout=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// It may not: the connection closes with the answer.
    No,
    /// It may, for as long as the agent said, if it said.
    Yes(Option<Duration>),
}

impl Reuse {
    /// Whether the connection may be used again.
    pub fn may(self) -> bool {
        matches!(self, Reuse::Yes(_))
    }
}

/// The most header lines an answer's head may have. hyper takes 100, nginx as many as
/// fit its 4 or 8 KiB `proxy_buffer_size` (some 150 short ones); agents that set many
/// cookies or tracing fields are passed on up to this many, within the head's size.
pub const MAX_LINES: usize = 256;

/// A malformed answer, said as what is wrong with it.
pub(crate) fn broken(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// What an answer's head said.
pub enum Parsed {
    /// The final answer: its head, how its body is read, and whether the connection
    /// may be used again after it.
    Final(AnswerParts, Reading, Reuse),
    /// An interim (1xx) answer, dropped.
    Interim,
}

/// Parses an answer's head at the start of `buf` (taking it out when complete): an
/// error when it is malformed or frames its body in a way that cannot be trusted,
/// `None` while it is not all there.
pub fn parse_answer(buf: &mut BytesMut, head_only: bool) -> io::Result<Option<Parsed>> {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_LINES];
    let mut parsed = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut parsed,
        buf,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
    };
    let status = parsed
        .code
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| broken("invalid status"))?;
    if status.is_informational() {
        if status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(broken("unexpected 101 Switching Protocols"));
        }
        let _ = buf.split_to(len);
        return Ok(Some(Parsed::Interim));
    }
    let version = if parsed.version == Some(0) {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    let reason = parsed
        .reason
        .filter(|r| Some(*r) != status.canonical_reason())
        .map(|r| Bytes::copy_from_slice(r.as_bytes()));
    let mut length: Option<usize> = None;
    let mut chunked = None;
    let mut saw_close = false;
    let mut saw_keep_alive = false;
    let mut keep_for = None;
    // Offsets into the head: the names and values are made slices of it once it is
    // taken out.
    let start = buf.as_ptr() as usize;
    let at = |bytes: &[u8]| (bytes.as_ptr() as usize - start, bytes.len());
    let mut lines = Vec::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        // httparse took the name only if it is a token: no type is made of it.
        let name = h.name.as_bytes();
        if name.len() > MAX_NAME {
            return Err(broken("invalid header name"));
        }
        if same_name(name, b"content-length") {
            let n =
                framing::parse_length(h.value).ok_or_else(|| broken("invalid content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(broken("conflicting content-length"));
            }
            length = Some(n);
        } else if same_name(name, b"transfer-encoding") {
            chunked = Some(framing::ends_chunked(h.value));
        } else if same_name(name, b"connection") {
            saw_close |= framing::has_token(h.value, b"close");
            saw_keep_alive |= framing::has_token(h.value, b"keep-alive");
        } else if name.len() == 10 && same_name(name, b"keep-alive") {
            keep_for = keep_alive_timeout(h.value);
        }
        lines.push((at(name), at(h.value)));
    }
    // Both framings named: the coding wins and the length is dropped (RFC 9112, 6.3), so
    // the client is never told a length the body does not have; and the connection is
    // not used again, as the RFC asks of a proxy.
    let both = chunked.is_some() && length.is_some();
    if chunked.is_some() && version == Version::HTTP_10 {
        // RFC 9112, 6.1: an HTTP/1.0 message with Transfer-Encoding is faulty framing,
        // whatever else it says.
        return Err(broken("an HTTP/1.0 answer with Transfer-Encoding"));
    }
    let head = buf.split_to(len).freeze();
    let mut headers = Headers::with_capacity(lines.len());
    for ((name, n), (value, v)) in lines {
        let name = head.slice(name..name + n);
        if both && same_name(&name, b"content-length") {
            continue;
        }
        headers.push_read(name, framing::parsed_value(head.slice(value..value + v)));
    }
    let reading =
        if head_only || matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED) {
            Reading::Length(0)
        } else {
            match (chunked, length) {
                (Some(true), _) => Reading::Chunked(Chunked::new()),
                // A coding that does not end in chunks: the body runs to the close.
                (Some(false), _) | (None, None) => Reading::ToClose,
                (None, Some(n)) => Reading::Length(n as u64),
            }
        };
    // `close` once said stays said; `keep-alive` only keeps an HTTP/1.0 answer's.
    let close = saw_close || (version == Version::HTTP_10 && !saw_keep_alive) || both;
    let reuse = if close || reading == Reading::ToClose {
        Reuse::No
    } else {
        Reuse::Yes(keep_for)
    };
    let mut answer = AnswerParts {
        status,
        version,
        headers,
        extensions: Default::default(),
    };
    if let Some(reason) = reason {
        if let Ok(reason) = hyper::ext::ReasonPhrase::try_from(reason) {
            answer.extensions.insert(reason);
        }
    }
    Ok(Some(Parsed::Final(answer, reading, reuse)))
}

/// The `timeout=` of a `Keep-Alive` value, in seconds.
fn keep_alive_timeout(value: &[u8]) -> Option<Duration> {
    value.split(|&b| b == b',').find_map(|param| {
        let (name, seconds) = std::str::from_utf8(param).ok()?.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("timeout")
            .then(|| seconds.trim().parse().ok().map(Duration::from_secs))?
    })
}

/// How the rest of an answer's body is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// This many bytes are left.
    Length(u64),
    /// Chunks.
    Chunked(Chunked),
    /// Until the agent closes the connection.
    ToClose,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (AnswerParts, Reading, bool, BytesMut) {
        let mut buf = BytesMut::from(text.as_bytes());
        match parse_answer(&mut buf, false).unwrap().unwrap() {
            Parsed::Final(head, reading, reuse) => (head, reading, reuse.may(), buf),
            Parsed::Interim => panic!("interim"),
        }
    }

    #[test]
    fn answers_are_framed_as_their_heads_say() {
        let (head, reading, reusable, rest) =
            parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nok");
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.headers.get("x-a").unwrap(), "1");
        assert_eq!((reading, reusable), (Reading::Length(2), true));
        assert_eq!(&rest[..], b"ok");
        let (head, reading, reusable, _) =
            parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n");
        assert_eq!(
            (reading, reusable),
            (Reading::Chunked(Chunked::new()), false)
        );
        assert!(
            head.headers.get("content-length").is_none(),
            "the length is dropped"
        );
        let (_, _, reusable, _) = parse(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
        );
        assert!(!reusable, "close once said stays said");
        let (_, _, reusable, _) =
            parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
        assert!(reusable);
        let (_, reading, reusable, _) = parse("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((reading, reusable), (Reading::ToClose, false));
        let (_, _, reusable, _) =
            parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        assert!(!reusable);
        let (_, _, reusable, _) = parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert!(!reusable);
        let (_, reading, _, _) = parse("HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!(reading, Reading::Length(0));
        let (head, _, _, _) = parse("HTTP/1.1 200 Fine\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(
            head.extensions
                .get::<hyper::ext::ReasonPhrase>()
                .unwrap()
                .as_bytes(),
            b"Fine"
        );
    }

    #[test]
    fn an_agent_s_keep_alive_timeout_is_read() {
        let mut buf = BytesMut::from(
            &b"HTTP/1.1 200 OK\r\nKeep-Alive: max=5, timeout=7\r\nContent-Length: 0\r\n\r\n"[..],
        );
        let Ok(Some(Parsed::Final(_, _, reuse))) = parse_answer(&mut buf, false) else {
            panic!("not a final answer");
        };
        assert_eq!(reuse, Reuse::Yes(Some(Duration::from_secs(7))));
    }

    #[test]
    fn an_answer_of_more_lines_than_hyper_takes_is_read_up_to_its_bound() {
        let lines = |n: usize| {
            format!(
                "HTTP/1.1 200 OK\r\n{}Content-Length: 0\r\n\r\n",
                "X-A: 1\r\n".repeat(n - 1)
            )
        };
        let (head, ..) = parse(&lines(150));
        assert_eq!(head.headers.len(), 150, "nginx passes 150 lines on");
        let mut buf = BytesMut::from(lines(MAX_LINES + 1).as_bytes());
        assert!(parse_answer(&mut buf, false).is_err());
    }

    #[test]
    fn bad_heads_are_errors_and_interim_ones_are_skipped() {
        let mut buf = BytesMut::from(&b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"[..]);
        assert!(matches!(
            parse_answer(&mut buf, false),
            Ok(Some(Parsed::Interim))
        ));
        assert_eq!(&buf[..], b"HTTP/1.1 200 OK\r\n");
        assert!(matches!(parse_answer(&mut buf, false), Ok(None)));
        for bad in [
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
            "NOT HTTP\r\n\r\n",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
        ] {
            let mut buf = BytesMut::from(bad.as_bytes());
            assert!(parse_answer(&mut buf, false).is_err(), "{bad}");
        }
    }
}
