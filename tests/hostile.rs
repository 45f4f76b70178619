//! Hostile input: every request a buggy or malicious gateway could send gets a clear
//! status, never a panic, and the server keeps serving.

mod common;

use std::marker::PhantomData;

use a2a_commands::pb::{self, classify_response::Result as Classified, OrdinaryReason};
use bytes::Bytes;
use common::*;
use prost::Message as _;
use prost_types::{value::Kind, Struct, Value};
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::Code;

/// Sends bytes as they are and decodes the answer as `R`.
struct Raw<R>(PhantomData<R>);

struct Pass;

impl Encoder for Pass {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        use bytes::BufMut as _;
        dst.put_slice(&item);
        Ok(())
    }
}

impl<R: prost::Message + Default + Send + 'static> Codec for Raw<R> {
    type Encode = Bytes;
    type Decode = R;
    type Encoder = Pass;
    type Decoder = tonic_prost::ProstDecoder<R>;

    fn encoder(&mut self) -> Pass {
        Pass
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::default()
    }
}

async fn raw<R: prost::Message + Default + Send + 'static>(
    channel: Channel,
    method: &'static str,
    body: Vec<u8>,
) -> Result<R, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel).max_encoding_message_size(usize::MAX);
    grpc.ready().await.unwrap();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(method);
    grpc.unary(
        tonic::Request::new(Bytes::from(body)),
        path,
        Raw::<R>(PhantomData),
    )
    .await
    .map(tonic::Response::into_inner)
}

const CLASSIFY: &str = "/a2a.commands.v1.CommandService/Classify";
const REGISTER: &str = "/a2a.commands.v1.CommandService/Register";

fn classify_bytes(message: pb::Message) -> Vec<u8> {
    pb::ClassifyRequest {
        message: Some(message),
    }
    .encode_to_vec()
}

#[tokio::test]
async fn oversized_requests_are_resource_exhausted() {
    let server = TestServer::start_with(|s| s.max_message_bytes = 64 * 1024).await;
    let big = "x".repeat(100 * 1024);
    let status = raw::<pb::ClassifyResponse>(
        server.channel().await,
        CLASSIFY,
        classify_bytes(text_message("m", &big)),
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(
        status.message().contains("limit of 65536 bytes"),
        "{}",
        status.message()
    );
    // ListSpecs goes its own way through the server; its limit holds too.
    let status = raw::<pb::ListSpecsResponse>(
        server.channel().await,
        "/a2a.commands.v1.CommandService/ListSpecs",
        vec![0u8; 100 * 1024],
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    still_serving(&server).await;
}

#[tokio::test]
async fn one_mebibyte_texts_are_classified() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let args = "é".repeat(512 * 1024);
    let got = classify(&mut client, text_message("m", &format!("/model {args}"))).await;
    assert_eq!(
        got,
        Classified::Command(pb::Command {
            name: "model".into(),
            arguments: args.clone()
        })
    );
    let got = classify(&mut client, text_message("m", &args)).await;
    assert_eq!(
        got,
        Classified::Ordinary(pb::Ordinary {
            reason: OrdinaryReason::NotCommandSyntax.into(),
            name: String::new()
        })
    );
    // A name that never ends is not a registered name, however long.
    let long = format!("/{}", "a".repeat(1 << 20));
    let got = classify(&mut client, text_message("m", &long)).await;
    assert!(matches!(got, Classified::Ordinary(o) if o.reason() == OrdinaryReason::NotRegistered));
}

#[tokio::test]
async fn thousands_of_parts_are_ordinary() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let mut message = text_message("m", "/status");
    message.parts = (0..10_000).map(|_| text_part("/status")).collect();
    let got = classify(&mut client, message).await;
    assert!(
        matches!(got, Classified::Ordinary(o) if o.reason() == OrdinaryReason::NotSingleTextPart)
    );
}

fn nested(depth: usize) -> Struct {
    let mut inner = Struct::default();
    for _ in 0..depth {
        let mut outer = Struct::default();
        outer.fields.insert(
            "n".into(),
            Value {
                kind: Some(Kind::StructValue(inner)),
            },
        );
        inner = outer;
    }
    inner
}

#[tokio::test]
async fn deeply_nested_metadata_is_invalid_argument_past_the_decoder_limit() {
    let server = TestServer::start().await;
    // Moderate nesting is fine.
    let mut message = text_message("m", "/status");
    message.metadata = Some(nested(20));
    let got: pb::ClassifyResponse = raw(server.channel().await, CLASSIFY, classify_bytes(message))
        .await
        .unwrap();
    assert!(matches!(got.result, Some(Classified::Command(_))));
    // Past protobuf's recursion limit the request cannot be decoded: a client error.
    let mut message = text_message("m", "/status");
    message.metadata = Some(nested(500));
    let status =
        raw::<pb::ClassifyResponse>(server.channel().await, CLASSIFY, classify_bytes(message))
            .await
            .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("not a valid protobuf message"));
    still_serving(&server).await;
}

#[tokio::test]
async fn malformed_bytes_are_invalid_argument() {
    let server = TestServer::start().await;
    // Part.text (1) holding a byte that is not UTF-8, inside Message.parts (5), inside
    // ClassifyRequest.message (1).
    let part = [0x0A, 0x01, 0xFF];
    let mut message = vec![0x2A, part.len() as u8];
    message.extend_from_slice(&part);
    let mut request = vec![0x0A, message.len() as u8];
    request.extend_from_slice(&message);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("invalid UTF-8", request),
        ("truncated", vec![0x0A, 0x10, 0x01]),
        ("wrong wire type", vec![0x0D, 0, 0, 0, 0]),
        ("garbage", vec![0xFF; 32]),
    ];
    for (what, bytes) in cases {
        let status = raw::<pb::ClassifyResponse>(server.channel().await, CLASSIFY, bytes)
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{what}: {status:?}");
    }
    still_serving(&server).await;
}

#[tokio::test]
async fn unknown_fields_and_enum_values_are_tolerated_where_harmless() {
    let server = TestServer::start().await;
    let mut bytes = classify_bytes(text_message("m", "/status"));
    // An unknown field (number 99, varint) that a newer client might send.
    bytes.extend_from_slice(&[0x98, 0x06, 0x01]);
    let got: pb::ClassifyResponse = raw(server.channel().await, CLASSIFY, bytes).await.unwrap();
    assert!(matches!(got.result, Some(Classified::Command(_))));
    // A role value no version defines does not matter to classification.
    let mut message = text_message("m", "/status");
    message.role = 77;
    let mut client = server.client().await;
    assert!(matches!(
        classify(&mut client, message).await,
        Classified::Command(_)
    ));
}

#[tokio::test]
async fn empty_and_missing_fields_get_named_errors() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let status = raw::<pb::ClassifyResponse>(server.channel().await, CLASSIFY, vec![])
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("message: "),
        "{}",
        status.message()
    );
    let status = raw::<pb::RegisterResponse>(server.channel().await, REGISTER, vec![])
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().starts_with("spec: "));
    let status = register(&mut client, spec("", "", ""), false)
        .await
        .unwrap_err();
    assert!(status.message().starts_with("spec.name: must not be empty"));
    let status = client
        .execute(pb::ExecuteRequest::default())
        .await
        .unwrap_err();
    assert!(status.message().starts_with("message: "));
}

#[tokio::test]
async fn names_and_texts_of_every_kind() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let long = "a".repeat(10_000);
    for name in [
        long.as_str(),
        "модель",
        "名前",
        "model\u{0}",
        "mo\u{301}del",
        "model\u{200B}",
        "🙂",
    ] {
        let status = register(&mut client, spec(name, "d", ""), false)
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{name:?}");
        assert!(status.message().starts_with("spec.name: "));
    }
    let controls = (0u32..0x20).chain(0x7F..0xA0).filter_map(char::from_u32);
    for c in controls {
        for field in ["description", "argument_hint"] {
            let text = format!("a{c}b");
            let bad = if field == "description" {
                spec("m", &text, "")
            } else {
                spec("m", "d", &text)
            };
            let status = register(&mut client, bad, false).await.unwrap_err();
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "U+{:04X} in {field}",
                c as u32
            );
            assert!(
                status.message().starts_with(&format!("spec.{field}: ")),
                "{}",
                status.message()
            );
        }
    }
    // Non-ASCII text that is not a control character is fine in descriptions.
    register(&mut client, spec("m", "Déploie 🚀 — 名前", "<环境>"), false)
        .await
        .unwrap();
    // Classification of texts with control characters is just the rule.
    let got = classify(&mut client, text_message("m", "/model\u{0}x")).await;
    assert!(
        matches!(got, Classified::Ordinary(o) if o.reason() == OrdinaryReason::NotCommandSyntax)
    );
    still_serving(&server).await;
}
