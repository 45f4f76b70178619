//! How HTTP/1.1 messages are delimited: `Content-Length` values, chunks (written and
//! read), and the `Date` line. Pure functions of bytes, apart from the clock.

use std::time::SystemTime;

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::HeaderValue;

/// The longest chunk-size line (with extensions) read before it is refused.
const MAX_CHUNK_LINE: usize = 4096;

/// The most trailer bytes read (and dropped) after a chunked body.
const MAX_TRAILERS: usize = 64 * 1024;

/// The last chunk of a chunked body, with no trailers.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// How a message's body is delimited on the wire, whichever half writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body (204, 304, an empty body).
    None,
    /// `Content-Length`: exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`: a body whose length is not known, ended by its
    /// last chunk.
    Chunked,
}

/// A `Content-Length` value: digits only, as hyper takes it (a list is refused).
pub fn parse_length(value: &[u8]) -> Option<usize> {
    if value.is_empty() || value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0usize, |n, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(usize::from(digit))
    })
}

/// A header value of a head httparse accepted, its bytes not checked a second time.
pub fn parsed_value(bytes: Bytes) -> HeaderValue {
    // SAFETY: httparse, with its default configuration (no obsolete line folding: the
    // front's and the client's parsers), accepts in a header value only HTAB, SP to `~`
    // and 0x80 to 0xFF, the very bytes `HeaderValue` allows (hyper takes its values the
    // same way); pinned by `what_httparse_accepts_in_a_value_is_a_header_value` below.
    unsafe { HeaderValue::from_maybe_shared_unchecked(bytes) }
}

/// Appends a chunk's size line: its length in hex, then CRLF.
pub fn push_chunk_size(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b"0123456789abcdef"[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
    out.extend_from_slice(b"\r\n");
}

/// Whether a `Transfer-Encoding` value ends in `chunked`.
pub fn ends_chunked(value: &[u8]) -> bool {
    value
        .rsplit(|&b| b == b',')
        .next()
        .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// Whether a `Connection` value holds `token` (`close`, `keep-alive`).
pub fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// The current time as an HTTP date, formatted once a second per thread.
pub fn http_date() -> [u8; 29] {
    thread_local! {
        static CACHED: std::cell::Cell<(u64, [u8; 29])> =
            const { std::cell::Cell::new((u64::MAX, [0; 29])) };
    }
    let now = SystemTime::now();
    let second = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHED.with(|cached| {
        let (at, date) = cached.get();
        if at == second {
            return date;
        }
        let mut formatted = *b"Thu, 01 Jan 1970 00:00:00 GMT";
        let text = httpdate::fmt_http_date(now);
        if text.len() == formatted.len() {
            formatted.copy_from_slice(text.as_bytes());
        }
        cached.set((second, formatted));
        formatted
    })
}

/// Why a chunked body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// A size line that is not hex, too long, overflows, or whose extension holds a
    /// control byte (a bare CR among them).
    #[error("invalid chunk size line")]
    Size,
    /// A chunk's data not followed by CRLF.
    #[error("invalid chunk end")]
    End,
    /// More extension bytes, or trailer bytes or lines, than a body may carry.
    #[error("chunked framing too large")]
    TooLarge,
    /// A trailer line that is not a field.
    #[error("invalid chunked trailer")]
    Trailer,
}

/// The most extension bytes all of a body's size lines may carry together (hyper's
/// bound): a body of one-byte chunks cannot carry its weight again in extensions.
const MAX_EXTENSIONS: usize = 16 * 1024;

/// The most trailer lines read after a chunked body (as many as a head's).
const MAX_TRAILER_LINES: usize = 100;

/// Reads a chunked body out of a buffer as its bytes arrive, bounding what its framing
/// may carry over the whole body (extensions, trailers), not only per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunked {
    part: Part,
    /// Extension bytes read so far.
    extensions: usize,
}

/// Where in a chunked body the reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Before a size line.
    Size,
    /// Inside a chunk's data: this many bytes are left.
    Data(u64),
    /// After a chunk's data: its CRLF.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one (bytes and lines so far).
    Trailers(usize, usize),
    /// The body has ended.
    Done,
}

/// What [`Chunked::step`] found in the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Some of the body's data.
    Data(Bytes),
    /// More bytes are needed.
    More,
    /// The body has ended (its trailers read and dropped).
    Done,
}

impl Default for Chunked {
    fn default() -> Self {
        Self::new()
    }
}

impl Chunked {
    /// A body not begun.
    pub const fn new() -> Self {
        Self {
            part: Part::Size,
            extensions: 0,
        }
    }

    /// Whether the body has ended.
    pub fn is_done(&self) -> bool {
        self.part == Part::Done
    }

    /// Takes what it can from `buf`: data, or the framing around it.
    pub fn step(&mut self, buf: &mut BytesMut) -> Result<Step, ChunkError> {
        loop {
            match self.part {
                Part::Done => return Ok(Step::Done),
                Part::Size => {
                    let Some(end) = memchr::memchr(b'\n', buf) else {
                        return if buf.len() > MAX_CHUNK_LINE {
                            Err(ChunkError::Size)
                        } else {
                            Ok(Step::More)
                        };
                    };
                    if end > MAX_CHUNK_LINE {
                        return Err(ChunkError::Size);
                    }
                    let (size, extension) = chunk_size(&buf[..end])?;
                    self.extensions += extension;
                    if self.extensions > MAX_EXTENSIONS {
                        return Err(ChunkError::TooLarge);
                    }
                    buf.advance(end + 1);
                    self.part = if size == 0 {
                        Part::Trailers(0, 0)
                    } else {
                        Part::Data(size)
                    };
                }
                Part::Data(left) => {
                    if buf.is_empty() {
                        return Ok(Step::More);
                    }
                    let n = usize::try_from(left).map_or(buf.len(), |left| left.min(buf.len()));
                    let data = buf.split_to(n).freeze();
                    let left = left - n as u64;
                    self.part = if left == 0 {
                        Part::DataEnd
                    } else {
                        Part::Data(left)
                    };
                    return Ok(Step::Data(data));
                }
                Part::DataEnd => {
                    if buf.len() < 2 {
                        return Ok(Step::More);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(ChunkError::End);
                    }
                    buf.advance(2);
                    self.part = Part::Size;
                }
                Part::Trailers(read, lines) => {
                    let Some(end) = memchr::memchr(b'\n', buf) else {
                        return if read + buf.len() > MAX_TRAILERS {
                            Err(ChunkError::TooLarge)
                        } else {
                            Ok(Step::More)
                        };
                    };
                    let line = buf[..end].strip_suffix(b"\r").ok_or(ChunkError::Trailer)?;
                    if line.is_empty() {
                        buf.advance(end + 1);
                        self.part = Part::Done;
                        continue;
                    }
                    if read + end + 1 > MAX_TRAILERS || lines + 1 > MAX_TRAILER_LINES {
                        return Err(ChunkError::TooLarge);
                    }
                    if !is_field(line) {
                        return Err(ChunkError::Trailer);
                    }
                    buf.advance(end + 1);
                    self.part = Part::Trailers(read + end + 1, lines + 1);
                }
            }
        }
    }
}

/// Whether a line is a field, `name: value` (RFC 9110, 5.1 and 5.5): a token for its
/// name, and no control byte but HTAB in its value; no obsolete folding.
fn is_field(line: &[u8]) -> bool {
    let Some(colon) = memchr::memchr(b':', line) else {
        return false;
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    !name.is_empty() && name.iter().all(|&b| is_token(b)) && value.iter().all(|&b| is_value(b))
}

/// A byte of a token (RFC 9110, 5.6.2).
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A byte a field's value or a chunk extension may hold: visible ASCII, space, HTAB
/// and obs-text; never a control byte (a bare CR, a NUL).
fn is_value(b: u8) -> bool {
    b == b'\t' || b >= b' ' && b != 0x7f
}

/// A size line's size and how many extension bytes it carries (after any `;`; spaces
/// and tabs allowed after the digits, as hyper allows them).
fn chunk_size(line: &[u8]) -> Result<(u64, usize), ChunkError> {
    let line = line.strip_suffix(b"\r").ok_or(ChunkError::Size)?;
    let (digits, extension) = match memchr::memchr(b';', line) {
        Some(at) => (&line[..at], &line[at..]),
        None => (line, &[][..]),
    };
    if !extension.iter().all(|&b| is_value(b)) {
        return Err(ChunkError::Size);
    }
    let digits = digits.trim_ascii_end();
    if digits.is_empty() || digits.len() > 16 {
        return Err(ChunkError::Size);
    }
    let mut size = 0u64;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(ChunkError::Size),
        };
        size = size.checked_mul(16).ok_or(ChunkError::Size)? + u64::from(d);
    }
    Ok((size, extension.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_httparse_accepts_in_a_value_is_a_header_value() {
        // Each byte at several places in a long value, so that httparse's vector paths
        // (8, 16 and 32 bytes at a time) look at it as well as its byte-by-byte one.
        for byte in 0..=255u8 {
            for at in [0, 7, 15, 31, 40, 63] {
                let mut value = vec![b'a'; 64];
                value[at] = byte;
                let heads = [
                    &b"GET / HTTP/1.1\r\nx: "[..],
                    &b"HTTP/1.1 200 OK\r\nx: "[..],
                ];
                for (i, start) in heads.into_iter().enumerate() {
                    let mut head = start.to_vec();
                    head.extend_from_slice(&value);
                    head.extend_from_slice(b"\r\n\r\n");
                    let mut headers = [httparse::EMPTY_HEADER; 4];
                    let taken = if i == 0 {
                        let mut request = httparse::Request::new(&mut headers);
                        matches!(request.parse(&head), Ok(httparse::Status::Complete(_)))
                            .then(|| request.headers[0].value.to_vec())
                    } else {
                        let mut answer = httparse::Response::new(&mut headers);
                        matches!(answer.parse(&head), Ok(httparse::Status::Complete(_)))
                            .then(|| answer.headers[0].value.to_vec())
                    };
                    if let Some(taken) = taken {
                        assert!(
                            HeaderValue::from_bytes(&taken).is_ok(),
                            "byte {byte:#04x} at {at} is taken by httparse, refused by HeaderValue"
                        );
                    }
                }
            }
        }
    }

    fn read_all(wire: &[u8], pieces: usize) -> Result<Vec<u8>, ChunkError> {
        let mut state = Chunked::new();
        let mut buf = BytesMut::new();
        let mut body = Vec::new();
        for piece in wire.chunks(pieces) {
            buf.extend_from_slice(piece);
            loop {
                match state.step(&mut buf)? {
                    Step::Data(data) => body.extend_from_slice(&data),
                    Step::More => break,
                    Step::Done => return Ok(body),
                }
            }
        }
        Err(ChunkError::End)
    }

    #[test]
    fn chunked_bodies_read_the_same_in_any_pieces() {
        let wire = b"5\r\nhello\r\n1;ext=1\r\n \r\nA  \r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n";
        for pieces in 1..wire.len() {
            assert_eq!(
                read_all(wire, pieces).unwrap(),
                b"hello 0123456789",
                "{pieces}"
            );
        }
    }

    #[test]
    fn bad_chunked_bodies_are_refused() {
        assert_eq!(read_all(b"x\r\n", 8), Err(ChunkError::Size));
        assert_eq!(read_all(b"\r\n", 8), Err(ChunkError::Size));
        assert_eq!(
            read_all(b"11111111111111111\r\n", 64),
            Err(ChunkError::Size)
        );
        assert_eq!(read_all(b"1\r\nab\r\n", 8), Err(ChunkError::End));
        // Extensions: no control byte in one, and a bound over the whole body.
        assert_eq!(
            read_all(b"1;a\rb\r\na\r\n0\r\n\r\n", 64),
            Err(ChunkError::Size)
        );
        assert_eq!(
            read_all(b"1;a\0\r\na\r\n0\r\n\r\n", 64),
            Err(ChunkError::Size)
        );
        let extension = format!(";{}", "e".repeat(1000));
        let many: String = (0..17).map(|_| format!("1{extension}\r\na\r\n")).collect();
        assert_eq!(read_all(many.as_bytes(), 4096), Err(ChunkError::TooLarge));
        let fewer: String = (0..15).map(|_| format!("1{extension}\r\na\r\n")).collect();
        assert_eq!(
            read_all(format!("{fewer}0\r\n\r\n").as_bytes(), 4096)
                .unwrap()
                .len(),
            15
        );
        // Trailers are fields, under a bound of lines.
        for bad in [
            "0\r\nno colon\r\n\r\n",
            "0\r\n: v\r\n\r\n",
            "0\r\nx: a\rb\r\n\r\n",
            "0\r\n x: 1\r\n\r\n",
        ] {
            assert_eq!(
                read_all(bad.as_bytes(), 64),
                Err(ChunkError::Trailer),
                "{bad:?}"
            );
        }
        let lines = format!("0\r\n{}\r\n", "x: 1\r\n".repeat(MAX_TRAILER_LINES + 1));
        assert_eq!(read_all(lines.as_bytes(), 4096), Err(ChunkError::TooLarge));
    }

    #[test]
    fn sizes_lengths_and_tokens() {
        for (n, text) in [(0, "0\r\n"), (10, "a\r\n"), (4096, "1000\r\n")] {
            let mut out = Vec::new();
            push_chunk_size(&mut out, n);
            assert_eq!(out, text.as_bytes());
        }
        assert_eq!(parse_length(b"42"), Some(42));
        assert_eq!(parse_length(b"0"), Some(0));
        assert_eq!(parse_length(b"007"), Some(7));
        assert_eq!(
            parse_length(b"9999999999999999999"),
            usize::try_from(9_999_999_999_999_999_999u64).ok()
        );
        for bad in [
            &b""[..],
            b"+1",
            b"-1",
            b"1,1",
            b" 1",
            b"1a",
            b"/",
            b":",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_length(bad), None, "{bad:?}");
        }
        assert!(ends_chunked(b"gzip, chunked"));
        assert!(!ends_chunked(b"chunked, gzip"));
        assert!(has_token(b"keep-alive, Close", b"close"));
        assert_eq!(http_date().len(), 29);
    }
}
