//! A protobuf writer for answers encoded straight from borrowed values.
//!
//! prost encodes a message it owns: answering Classify, Execute or Complete that way
//! means first copying every string of the rules' output into generated structs, then
//! measuring each nested message once per level above it, then freeing it all. The
//! writer takes `&str`s where they already are and writes each field once, in field
//! order, with prost's rules for what is left out (proto3 defaults), so the bytes are
//! the ones prost would write for the same values; the answers' tests compare them. An
//! answer is written after room for gRPC's message prefix ([`Answer`]), so that framing
//! it copies nothing.

/// Wire type of varint fields.
const VARINT: u32 = 0;
/// Wire type of length-delimited fields (strings, bytes, messages).
const LENGTH_DELIMITED: u32 = 2;

/// Writes one protobuf message, field by field, into a growing buffer.
#[derive(Debug, Default)]
pub struct ProtoWriter {
    buf: Vec<u8>,
    /// Where the message starts in `buf`: after room for gRPC's prefix, or at 0.
    start: usize,
}

impl ProtoWriter {
    /// A writer whose buffer starts with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
            start: 0,
        }
    }

    /// The message written.
    pub fn into_vec(mut self) -> Vec<u8> {
        self.buf.drain(..self.start);
        self.buf
    }

    /// A writer of an [`Answer`] of about `capacity` bytes: its bytes start after room
    /// for gRPC's prefix.
    pub fn answer(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(GRPC_PREFIX + capacity);
        buf.extend_from_slice(&[0; GRPC_PREFIX]);
        Self {
            buf,
            start: GRPC_PREFIX,
        }
    }

    /// The message written, as an [`Answer`] (with no copy when the writer was made by
    /// [`ProtoWriter::answer`]).
    pub fn into_answer(mut self) -> Answer {
        if self.start == 0 {
            self.buf.splice(0..0, [0; GRPC_PREFIX]);
        }
        Answer(self.buf)
    }

    /// Appends `value` as a varint, a byte at a time: keys and lengths are one or two
    /// bytes, for which a copy call would cost more than the bytes.
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    /// Appends a length-delimited field's key and its length.
    fn key_and_length(&mut self, tag: u32, len: usize) {
        self.varint(u64::from((tag << 3) | LENGTH_DELIMITED));
        self.varint(len as u64);
    }

    fn key(&mut self, tag: u32, wire_type: u32) {
        self.varint(u64::from((tag << 3) | wire_type));
    }

    /// A `string` field; left out when empty, as proto3 does.
    pub fn string(&mut self, tag: u32, value: &str) {
        if !value.is_empty() {
            self.present_string(tag, value);
        }
    }

    /// A `string` field made of `parts` in a row, without joining them first; left out
    /// when empty.
    pub fn string_of(&mut self, tag: u32, parts: &[&str]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len == 0 {
            return;
        }
        self.key_and_length(tag, len);
        for part in parts {
            self.bytes(part.as_bytes());
        }
    }

    /// An `optional string` field: written when present, even empty.
    pub fn optional_string(&mut self, tag: u32, value: Option<&str>) {
        if let Some(value) = value {
            self.present_string(tag, value);
        }
    }

    fn present_string(&mut self, tag: u32, value: &str) {
        self.key_and_length(tag, value.len());
        self.bytes(value.as_bytes());
    }

    /// Appends `bytes`; one byte (the `/` and the space around a completed name) is
    /// pushed, for which a copy call would cost more than the byte.
    fn bytes(&mut self, bytes: &[u8]) {
        match bytes {
            [byte] => self.buf.push(*byte),
            _ => self.buf.extend_from_slice(bytes),
        }
    }

    /// A `uint64` or `uint32` field; left out when zero.
    pub fn uint(&mut self, tag: u32, value: u64) {
        if value != 0 {
            self.key(tag, VARINT);
            self.varint(value);
        }
    }

    /// An `int64`, `int32` or enum field; left out when zero. Negative values take ten
    /// bytes, sign-extended, as the wire format says for both.
    pub fn int(&mut self, tag: u32, value: i64) {
        self.uint(tag, value as u64);
    }

    /// A `bool` field; left out when false.
    pub fn bool(&mut self, tag: u32, value: bool) {
        self.uint(tag, u64::from(value));
    }

    /// A message field, always written (a present message, even empty): `body` writes
    /// its fields. Its length is known only afterwards, so one byte is kept for it and
    /// the body moved up in the rare case that the length needs more.
    pub fn message(&mut self, tag: u32, body: impl FnOnce(&mut Self)) {
        self.key(tag, LENGTH_DELIMITED);
        let at = self.buf.len();
        self.buf.push(0);
        body(self);
        let len = self.buf.len() - at - 1;
        if len < 0x80 {
            self.buf[at] = len as u8;
            return;
        }
        // Move the body up by the bytes the length needs beyond the one kept.
        let mut prefix = [0u8; 10];
        let width = put_varint(&mut prefix, len as u64);
        self.buf.resize(self.buf.len() + width - 1, 0);
        self.buf.copy_within(at + 1..at + 1 + len, at + width);
        self.buf[at..at + width].copy_from_slice(&prefix[..width]);
    }
}

/// Writes `value` as a varint at the start of `out`; returns how many bytes it took.
/// The bytes gRPC puts before each message: a compressed flag and a 4-byte length.
pub const GRPC_PREFIX: usize = 5;

/// An encoded answer with room before it for gRPC's message prefix, so that it is framed
/// where it was written, with no copy ([`Answer::framed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer(Vec<u8>);

impl Answer {
    /// The message's protobuf bytes.
    pub fn message(&self) -> &[u8] {
        &self.0[GRPC_PREFIX..]
    }

    /// The message as one gRPC message, its prefix (not compressed, its length) before
    /// it; `None` when it is longer than a gRPC message can say.
    pub fn framed(mut self) -> Option<bytes::Bytes> {
        let length = u32::try_from(self.0.len() - GRPC_PREFIX).ok()?;
        self.0[0] = 0;
        self.0[1..GRPC_PREFIX].copy_from_slice(&length.to_be_bytes());
        Some(self.0.into())
    }
}

fn put_varint(out: &mut [u8], mut value: u64) -> usize {
    let mut n = 0;
    while value >= 0x80 {
        out[n] = (value as u8) | 0x80;
        value >>= 7;
        n += 1;
    }
    out[n] = value as u8;
    n + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    #[test]
    fn writes_what_prost_writes() {
        let text = "x".repeat(300);
        let want = crate::pb::PromptExpansion {
            command: Some(crate::pb::Command {
                name: "deploy".into(),
                arguments: String::new(),
            }),
            text: text.clone(),
        };
        let mut w = ProtoWriter::default();
        w.message(1, |w| {
            w.string(1, "deploy");
            w.string(2, "");
        });
        w.string_of(2, &[&text[..100], "", &text[100..]]);
        assert_eq!(w.into_vec(), want.encode_to_vec());
    }

    #[test]
    fn long_messages_get_long_length_prefixes() {
        for len in [0, 1, 127, 128, 16_383, 16_384, 70_000] {
            let reply = "r".repeat(len);
            let want = crate::pb::CommandOutcome {
                reply: reply.clone(),
                changes: Some(Default::default()),
                outcome: -1,
                ..Default::default()
            };
            let mut outer = ProtoWriter::default();
            outer.message(2, |w| {
                w.int(2, -1);
                w.string(3, &reply);
                w.message(6, |_| {});
            });
            let bytes = outer.into_vec();
            let decoded = crate::pb::ExecuteResponse::decode(&bytes[..]).unwrap();
            let Some(crate::pb::execute_response::Result::Command(got)) = decoded.result else {
                panic!("not a command outcome");
            };
            assert_eq!(got, want, "{len}");
            let expected = crate::pb::ExecuteResponse {
                result: Some(crate::pb::execute_response::Result::Command(want)),
                revision: 0,
            };
            assert_eq!(bytes, expected.encode_to_vec(), "{len}");
        }
    }

    #[test]
    fn scalars_follow_proto3_defaults() {
        let want = crate::pb::CompleteResponse {
            total: 300,
            has_more: true,
            revision: u64::MAX,
            ..Default::default()
        };
        let mut w = ProtoWriter::default();
        w.uint(2, 300);
        w.bool(3, true);
        w.string(4, "");
        w.uint(5, u64::MAX);
        assert_eq!(w.into_vec(), want.encode_to_vec());
        let mut zero = ProtoWriter::default();
        zero.uint(2, 0);
        zero.bool(3, false);
        zero.int(1, 0);
        assert!(zero.into_vec().is_empty());
        let mut settings = ProtoWriter::default();
        settings.optional_string(1, Some(""));
        settings.optional_string(2, None);
        let want = crate::pb::TaskSettings {
            model: Some(String::new()),
            effort: None,
        };
        assert_eq!(settings.into_vec(), want.encode_to_vec());
    }
}
