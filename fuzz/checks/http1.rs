//! What the HTTP/1.1 fuzz targets check, shared with `tests/fuzz_seeds.rs`, which
//! replays each target's seeds (`fuzz/seeds/<target>/`) in every test run: whatever
//! bytes arrive, the parsers answer without panicking and keep their promises.

use a2a_commands::http1::answer::{parse_answer, Parsed, Reading};
use a2a_commands::http1::framing::{ChunkError, Chunked, Step};
use a2a_commands::http1::rules::head_refusal;
use a2a_commands::http1::server::{self, parse_head, Head};
use bytes::BytesMut;

/// The largest body the head parser is told it may take.
const MAX_BODY: usize = 1024;

/// A request head: taken whole with its length within the bound, or put back whole for
/// more bytes, for hyper, or for a refusal with an error status.
pub fn head(data: &[u8]) {
    let _ = server::preface(data);
    let mut buf = BytesMut::from(data);
    match parse_head(&mut buf, MAX_BODY) {
        Head::Plain(parts, length, rest) => {
            assert!(length <= MAX_BODY, "a length over the bound was taken");
            assert!(
                data.ends_with(&rest),
                "what follows the head is the input's tail"
            );
            assert!(buf.is_empty());
            for (name, _) in parts.headers.iter() {
                for unusual in ["transfer-encoding", "expect", "upgrade", "te"] {
                    assert!(
                        !name.eq_ignore_ascii_case(unusual.as_bytes()),
                        "{unusual} taken as plain"
                    );
                }
            }
            let lines = parts.headers.iter().map(|(n, v)| (n, v.as_bytes()));
            let _ = head_refusal(parts.version, &parts.method, &parts.uri, lines);
        }
        Head::Refused(refusal) => {
            assert!(refusal.status.is_client_error() || refusal.status.is_server_error());
            assert_eq!(&buf[..], data, "a refused head is put back whole");
        }
        Head::Partial | Head::Unusual => assert_eq!(&buf[..], data, "put back whole"),
    }
}

/// A chunked body (after the first byte, which says how the rest is cut into reads):
/// read the same whether it comes at once or in pieces, never longer than its wire.
pub fn chunked(data: &[u8]) {
    let Some((&piece, wire)) = data.split_first() else {
        return;
    };
    let whole = read_chunked(wire, wire.len().max(1));
    let pieces = read_chunked(wire, usize::from(piece).max(1));
    assert_eq!(whole, pieces, "read differently in pieces of {piece}");
    if let Ok((body, _)) = whole {
        assert!(body.len() <= wire.len());
    }
}

fn read_chunked(wire: &[u8], pieces: usize) -> Result<(Vec<u8>, bool), ChunkError> {
    let mut state = Chunked::new();
    let mut buf = BytesMut::new();
    let mut body = Vec::new();
    for piece in wire.chunks(pieces) {
        buf.extend_from_slice(piece);
        loop {
            match state.step(&mut buf)? {
                Step::Data(data) => body.extend_from_slice(&data),
                Step::More => break,
                Step::Done => return Ok((body, true)),
            }
        }
    }
    Ok((body, false))
}

/// An agent's answer head: a final answer says how its body is read, and one read to
/// the close is never kept for another request; an answer not all there is left whole.
pub fn answer(data: &[u8]) {
    for head_only in [false, true] {
        let mut buf = BytesMut::from(data);
        match parse_answer(&mut buf, head_only) {
            Ok(Some(Parsed::Final(parts, reading, reuse))) => {
                assert!(!parts.status.is_informational());
                assert!(data.ends_with(&buf[..]));
                if reading == Reading::ToClose {
                    assert!(
                        !reuse.may(),
                        "a body read to the close leaves no connection"
                    );
                }
                if head_only {
                    assert_eq!(reading, Reading::Length(0));
                }
                let lengths = parts.headers.get_all("content-length").count();
                if matches!(reading, Reading::Chunked(_)) {
                    assert_eq!(lengths, 0, "a chunked answer passed on with a length");
                }
            }
            Ok(Some(Parsed::Interim)) => assert!(data.ends_with(&buf[..])),
            Ok(None) => assert_eq!(&buf[..], data, "a partial answer is left whole"),
            Err(_) => {}
        }
    }
}
