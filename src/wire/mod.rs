//! The wire: the codec every generated service and client uses (`build.rs` names
//! [`BoundedCodec`]), with its bound on what a request costs once decoded ([`codec`]),
//! which shape each generated request is walked as ([`shapes`]), and a writer for
//! answers encoded straight from borrowed values ([`writer`]). They sit beside the
//! generated types, below every other layer.

pub mod codec;
mod shapes;
pub mod writer;

pub use codec::{
    count_elements, decode_bounded, max_elements, read_bounded, with_max_elements, BoundedCodec,
    BoundedDecoder, Read, ScanError, Scanned, Shape, DEFAULT_MAX_ELEMENTS,
};
pub use writer::{Answer, ProtoWriter, GRPC_PREFIX};
