//! The server's own unary path (ListSpecs, Classify, Execute and Complete) reads a
//! request as tonic's path does for the generated service's methods (Register, here):
//! every framing mistake gets the same status from both, a request of two messages is
//! answered for its first, and a successful answer is framed as tonic frames it.

mod common;

use a2a_commands::pb;
use bytes::Bytes;
use common::http2::*;
use common::*;
use prost::Message as _;

/// The direct path's methods, and the generated service's Register beside them.
const DIRECT: [&str; 4] = [CLASSIFY, EXECUTE, COMPLETE, LIST_SPECS];

/// A body of `messages`, each framed with `flag` (0: not compressed).
fn body(flag: u8, messages: &[&[u8]]) -> Bytes {
    let mut out = Vec::new();
    for message in messages {
        out.push(flag);
        out.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
        out.extend_from_slice(message);
    }
    out.into()
}

/// One mistake: what it is, the headers it comes with, its body, and the code it gets.
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    Bytes,
    tonic::Code,
);

/// What a caller sees of a failed call: code, message and the encodings it is told the
/// server accepts.
fn failure(answer: &Answer) -> (Option<i32>, String, Option<String>) {
    let accept = answer
        .headers
        .get("grpc-accept-encoding")
        .map(|v| v.to_str().unwrap().to_owned());
    (answer.grpc_status(), answer.grpc_message(), accept)
}

#[tokio::test]
async fn framing_mistakes_get_the_same_status_on_both_paths() {
    let server = TestServer::start_with(|s| s.max_message_bytes = 1024).await;
    let mut raw = Http2::connect(server.addr()).await;
    let cases: Vec<Case> = vec![
        ("no body", &[], Bytes::new(), tonic::Code::InvalidArgument),
        (
            "a cut prefix",
            &[],
            Bytes::from_static(b"\x00\x00\x00"),
            tonic::Code::InvalidArgument,
        ),
        (
            "a cut message",
            &[],
            Bytes::from_static(b"\x00\x00\x00\x00\x09\x0a"),
            tonic::Code::InvalidArgument,
        ),
        (
            "a flag of 2",
            &[],
            body(2, &[b""]),
            tonic::Code::InvalidArgument,
        ),
        (
            "compressed with no encoding",
            &[],
            body(1, &[b""]),
            tonic::Code::Internal,
        ),
        (
            "over the size limit",
            &[],
            body(0, &[&[0x0a; 2000]]),
            tonic::Code::ResourceExhausted,
        ),
        (
            "an encoding not accepted",
            &[("grpc-encoding", "gzip")],
            body(0, &[b""]),
            tonic::Code::Unimplemented,
        ),
        (
            "a message then garbage",
            &[],
            body(0, &[b"", b"\xff"]),
            tonic::Code::InvalidArgument,
        ),
    ];
    for (what, headers, bytes, code) in cases {
        let generated = raw.raw_unary(REGISTER, headers, bytes.clone()).await;
        let said = failure(&generated);
        assert_eq!(said.0, Some(code as i32), "{what}: {generated:?}");
        for path in DIRECT {
            let direct = raw.raw_unary(path, headers, bytes.clone()).await;
            assert_eq!(failure(&direct), said, "{what} on {path}: {direct:?}");
            assert!(direct.messages.is_empty(), "{what} on {path}: {direct:?}");
        }
    }
    // Bytes that are not the method's message are the client's mistake too (prost's
    // detail names the type, so only the start is the same).
    for path in DIRECT {
        let direct = raw.raw_unary(path, &[], body(0, &[b"\x0a\xff"])).await;
        assert_eq!(
            direct.grpc_status(),
            Some(tonic::Code::InvalidArgument as i32),
            "{direct:?}"
        );
        assert!(
            direct
                .grpc_message()
                .starts_with("the%20request%20is%20not%20a%20valid%20protobuf%20message"),
            "{direct:?}"
        );
    }
    still_serving(&server).await;
}

#[tokio::test]
async fn answers_are_framed_as_tonic_frames_them() {
    let server = TestServer::start().await;
    let mut raw = Http2::connect(server.addr()).await;
    let spec = pb::RegisterRequest {
        spec: Some(spec("deploy", "Deploy", "")),
        ..Default::default()
    };
    let generated = raw.unary(REGISTER, &spec).await;
    assert_eq!(generated.grpc_status(), Some(0), "{generated:?}");
    let classify = pb::ClassifyRequest {
        message: Some(text_message("m", "/deploy now")),
    };
    let direct = raw.unary(CLASSIFY, &classify).await;
    assert_eq!(direct.status, generated.status);
    let names = |answer: &Answer| {
        let mut names: Vec<String> = answer.headers.keys().map(|k| k.to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(names(&direct), names(&generated), "{direct:?}");
    assert_eq!(direct.headers["content-type"], "application/grpc");
    assert_eq!(direct.trailers, generated.trailers, "{direct:?}");
    direct.assert_classified_a_command();
    // `grpc-encoding: identity` is no encoding at all.
    let identity = raw
        .unary_with(CLASSIFY, &classify, &[("grpc-encoding", "identity")])
        .await;
    assert_eq!(identity.messages, direct.messages, "{identity:?}");
}

#[tokio::test]
async fn a_request_of_two_messages_is_answered_for_its_first() {
    let server = TestServer::start().await;
    let mut raw = Http2::connect(server.addr()).await;
    let request = |text: &str| {
        pb::ClassifyRequest {
            message: Some(text_message("m", text)),
        }
        .encode_to_vec()
    };
    let (command, ordinary) = (request("/status"), request("hello"));
    let answer = raw
        .raw_unary(CLASSIFY, &[], body(0, &[&command, &ordinary]))
        .await;
    answer.assert_classified_a_command();
    // A frame boundary inside a message changes nothing.
    let whole = body(0, &[&command]);
    let mut send = raw
        .start(http::Method::POST, CLASSIFY, Some(GRPC), None, false)
        .await;
    send.body.send_data(whole.slice(..3), false).unwrap();
    send.body.send_data(whole.slice(3..9), false).unwrap();
    send.body.send_data(whole.slice(9..), true).unwrap();
    let split = common::http2::answer(send.response).await;
    assert_eq!(split.messages, answer.messages, "{split:?}");
}
