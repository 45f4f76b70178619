//! The protobuf codec of every generated service and client (`build.rs` names it):
//! prost's, plus a check that runs on the request's bytes before prost builds it in
//! memory. It sits beside [`pb`](crate::pb), below every layer; which shape each
//! generated type has is said in `wire::shapes`.
//!
//! A request's size is bounded (`--max-message-bytes`), but not what it costs once
//! decoded: an empty `Part` is two bytes on the wire and over a hundred in memory, so a
//! 4 MiB Classify of empty parts would take hundreds of MiB. The check walks the wire
//! format of Classify, Execute, Complete and Register requests (messages, parts, metadata
//! `Struct`s and their values, sub-tasks, handler headers, roles) and counts every
//! element of a repeated or map field; more than the limit is RESOURCE_EXHAUSTED, and
//! nothing is allocated for it.

use std::future::Future;
use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::ProstCodec;

/// The default most elements (parts, metadata entries, list values, extensions,
/// sub-tasks, event forms, ...) one request may hold.
pub const DEFAULT_MAX_ELEMENTS: usize = 10_000;

tokio::task_local! {
    /// The limit of the call being decoded. Codecs are built by the generated code with
    /// `Default`, so they cannot carry it; each server's route sets it around its calls
    /// instead, so that two servers in one process keep their own.
    static MAX_ELEMENTS: usize;
}

/// Runs `call` with `max` as the most elements a request it decodes may hold.
pub fn with_max_elements<F: Future>(
    max: usize,
    call: F,
) -> tokio::task::futures::TaskLocalFuture<usize, F> {
    MAX_ELEMENTS.scope(max, call)
}

/// The most elements a request may hold: the limit set around the current call, or the
/// default.
pub fn max_elements() -> usize {
    MAX_ELEMENTS
        .try_with(|max| *max)
        .unwrap_or(DEFAULT_MAX_ELEMENTS)
}

/// Which of our message shapes a wire message has, for the element count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Not walked: its repeated fields are bounded by other rules.
    Opaque,
    /// `ClassifyRequest`.
    Classify,
    /// `ExecuteRequest`.
    Execute,
    /// `CompleteRequest`.
    Complete,
    /// `RegisterRequest`: decoded before its token is checked, so walked like the rest.
    Register,
    /// `HandlerBinding`.
    Handler,
    /// A2A `Message`.
    Message,
    /// A2A `Part`.
    Part,
    /// `TaskSnapshot`.
    Task,
    /// `google.protobuf.Struct`.
    Struct,
    /// One entry of `Struct.fields`.
    StructEntry,
    /// `google.protobuf.Value`.
    Value,
    /// `google.protobuf.ListValue`.
    List,
}

/// How a field's occurrences count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// Not a repeated field.
    No,
    /// Each occurrence is one element (repeated messages and strings, map entries).
    Each,
    /// A repeated scalar: packed, one element per varint; unpacked, one each.
    Packed,
}

/// What a field of `shape` numbered `field` holds: its shape when it is a message we
/// walk into, and how its occurrences count.
fn field(shape: Shape, field: u32) -> (Option<Shape>, Count) {
    use Shape::*;
    match (shape, field) {
        (Classify, 1) | (Execute, 1) => (Some(Message), Count::No),
        (Execute, 2) | (Complete, 2) => (Some(Task), Count::No),
        (Execute, 6) | (Register, 4) => (None, Count::Packed),
        (Register, 3) => (Some(Handler), Count::No),
        (Handler, 5) => (None, Count::Each),
        (Message, 5) => (Some(Part), Count::Each),
        (Message, 6) | (Part, 5) | (Value, 5) => (Some(Struct), Count::No),
        (StructEntry, 2) | (Part, 4) => (Some(Value), Count::No),
        (Message, 7) | (Message, 8) | (Task, 8) => (None, Count::Each),
        (Struct, 1) => (Some(StructEntry), Count::Each),
        (Value, 6) => (Some(List), Count::No),
        (List, 1) => (Some(Value), Count::Each),
        _ => (None, Count::No),
    }
}

/// A request over the element limit, or bytes that are not a protobuf message.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanError {
    /// More elements than `max`.
    TooMany {
        /// The limit.
        max: usize,
    },
    /// Not valid wire format (prost says so in detail when it decodes).
    Malformed,
}

/// Counts the elements of a message of `shape` in `bytes`; an error as soon as there
/// are more than `max`. Nesting is bounded by the bytes themselves (each level costs at
/// least two), and by prost's own depth limit when it decodes.
pub fn count_elements(shape: Shape, bytes: &[u8], max: usize) -> Result<usize, ScanError> {
    let mut count = 0;
    walk(shape, bytes, max, &mut count, 0)?;
    Ok(count)
}

/// prost refuses deeper nesting than this when it decodes; walking stops there too.
const MAX_DEPTH: u32 = 100;

fn walk(
    shape: Shape,
    mut bytes: &[u8],
    max: usize,
    count: &mut usize,
    depth: u32,
) -> Result<(), ScanError> {
    if shape == Shape::Opaque || depth > MAX_DEPTH {
        return Ok(());
    }
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let number = u32::try_from(key >> 3).map_err(|_| ScanError::Malformed)?;
        let (inner, counts) = field(shape, number);
        let mut elements = usize::from(counts != Count::No);
        match key & 7 {
            0 => {
                varint(&mut bytes)?;
            }
            1 => bytes = bytes.get(8..).ok_or(ScanError::Malformed)?,
            5 => bytes = bytes.get(4..).ok_or(ScanError::Malformed)?,
            2 => {
                let len = usize::try_from(varint(&mut bytes)?).map_err(|_| ScanError::Malformed)?;
                let body = bytes.get(..len).ok_or(ScanError::Malformed)?;
                bytes = &bytes[len..];
                if let Some(inner) = inner {
                    walk(inner, body, max, count, depth + 1)?;
                } else if counts == Count::Packed {
                    elements = body.iter().filter(|b| *b & 0x80 == 0).count();
                }
            }
            _ => return Err(ScanError::Malformed),
        }
        *count += elements;
        if *count > max {
            return Err(ScanError::TooMany { max });
        }
    }
    Ok(())
}

fn varint(bytes: &mut &[u8]) -> Result<u64, ScanError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Ok(value);
        }
    }
    Err(ScanError::Malformed)
}

/// The shape a decoded type is walked as.
pub trait Scanned {
    /// Its shape.
    const SHAPE: Shape;
}

/// prost's codec with the element check on decoding (see the module's comment).
#[derive(Debug, Clone)]
pub struct BoundedCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for BoundedCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for BoundedCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Scanned + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = BoundedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        BoundedDecoder {
            decodes: PhantomData,
        }
    }
}

/// The decoder of [`BoundedCodec`]: its limit is the one set around the call.
#[derive(Debug)]
pub struct BoundedDecoder<U> {
    decodes: PhantomData<U>,
}

impl<U> Decoder for BoundedDecoder<U>
where
    U: prost::Message + Default + Scanned,
{
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        use bytes::Buf as _;
        let max = max_elements();
        let bytes = buf.chunk();
        // Decoded from the contiguous slice when the message is one (it always is in
        // tonic's buffer): prost reads a slice several times faster than a `Buf` that
        // must update its cursor on every varint.
        if bytes.len() == buf.remaining() {
            let length = bytes.len();
            let decoded = decode_bounded::<U>(bytes, max);
            buf.advance(length);
            return decoded.map(Some);
        }
        check_elements::<U>(bytes, max)?;
        U::decode(buf).map(Some).map_err(not_a_message)
    }
}

/// Decodes `bytes` as `U`, after the element check (see the module's comment): the one
/// rule of tonic's decoder and of the server's own unary path.
pub fn decode_bounded<U>(bytes: &[u8], max: usize) -> Result<U, Status>
where
    U: prost::Message + Default + Scanned,
{
    check_elements::<U>(bytes, max)?;
    U::decode(bytes).map_err(not_a_message)
}

/// A request as [`read_bounded`] read it.
#[derive(Debug)]
pub enum Read<V, U> {
    /// Its borrowed view (`views`).
    Viewed(V),
    /// Decoded by prost: it has no view. Boxed: the owned request is hundreds of bytes
    /// that every call's future would otherwise hold room for, and copy as it moves.
    Decoded(Box<U>),
}

/// Reads `bytes`, a `U`, after the element check: as `view` reads it when it can
/// (`views`), else decoded by prost, which gives the same values or its error.
pub fn read_bounded<'a, U, V>(
    bytes: &'a [u8],
    max: usize,
    view: impl FnOnce(&'a [u8]) -> Option<V>,
) -> Result<Read<V, U>, Status>
where
    U: prost::Message + Default + Scanned,
{
    check_elements::<U>(bytes, max)?;
    match view(bytes) {
        Some(viewed) => Ok(Read::Viewed(viewed)),
        None => U::decode(bytes)
            .map(|decoded| Read::Decoded(Box::new(decoded)))
            .map_err(not_a_message),
    }
}

/// RESOURCE_EXHAUSTED if `bytes`, a `U`, holds more than `max` elements.
fn check_elements<U: Scanned>(bytes: &[u8], max: usize) -> Result<(), Status> {
    // Every element counted takes at least one byte on the wire, so a message no
    // longer than the limit cannot pass it: most requests need no walk.
    if bytes.len() <= max {
        return Ok(());
    }
    match count_elements(U::SHAPE, bytes, max) {
        Err(ScanError::TooMany { max }) => Err(Status::resource_exhausted(format!(
            "the request holds more than {max} repeated elements (message parts, metadata \
             entries, list values, extensions, sub-tasks, ...); the limit is \
             --max-request-elements"
        ))),
        // prost decodes it next and says what is wrong in detail.
        Err(ScanError::Malformed) | Ok(_) => Ok(()),
    }
}

/// What prost's decode error is said as: the client's mistake.
fn not_a_message(e: prost::DecodeError) -> Status {
    Status::invalid_argument(format!("the request is not a valid protobuf message: {e}"))
}
