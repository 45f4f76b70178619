//! A raw HTTP/2 client (the `h2` crate) for requests no gRPC client sends: other
//! methods and content types, messages cut short or never finished, and connections
//! watched for the server closing them.

use std::net::SocketAddr;

use bytes::{Buf as _, Bytes, BytesMut};
use h2::client::{ResponseFuture, SendRequest};
use h2::{RecvStream, SendStream};
use http::{HeaderMap, Method, StatusCode};
use tokio::task::JoinHandle;

pub const CLASSIFY: &str = "/a2a.commands.v1.CommandService/Classify";
pub const REGISTER: &str = "/a2a.commands.v1.CommandService/Register";
pub const WATCH_SPECS: &str = "/a2a.commands.v1.CommandService/WatchSpecs";
pub const COMPLETE: &str = "/a2a.commands.v1.CommandService/Complete";
pub const EXECUTE: &str = "/a2a.commands.v1.CommandService/Execute";
pub const LIST_SPECS: &str = "/a2a.commands.v1.CommandService/ListSpecs";

pub const GRPC: &str = "application/grpc";

/// The gRPC message prefix: a compressed flag and a 4-byte length.
pub const PREFIX: usize = 5;

/// One HTTP/2 connection. Its connection task runs until the connection ends.
pub struct Http2 {
    send: SendRequest<Bytes>,
    authority: String,
    connection: JoinHandle<Result<(), h2::Error>>,
}

/// A request started with [`Http2::start`]: its answer to come, and its body to send.
pub struct Started {
    pub response: ResponseFuture,
    pub body: SendStream<Bytes>,
}

/// A whole answer: the status and headers, the gRPC messages and the trailers.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub messages: Vec<Bytes>,
    pub trailers: Option<HeaderMap>,
}

impl Answer {
    /// `grpc-status`, from the trailers or, for a trailers-only answer, the headers.
    pub fn grpc_status(&self) -> Option<i32> {
        self.grpc_header("grpc-status")
            .map(|v| v.parse().expect("a number"))
    }

    /// `grpc-message` as sent (percent-encoded), or "".
    pub fn grpc_message(&self) -> String {
        self.grpc_header("grpc-message").unwrap_or_default()
    }

    fn grpc_header(&self, name: &str) -> Option<String> {
        self.trailers
            .as_ref()
            .and_then(|t| t.get(name))
            .or_else(|| self.headers.get(name))
            .map(|v| v.to_str().unwrap().to_owned())
    }

    /// The answer's one message, decoded as `M`.
    pub fn message<M: prost::Message + Default>(&self) -> M {
        assert_eq!(self.messages.len(), 1, "{self:?}");
        M::decode(self.messages[0].clone()).unwrap()
    }

    /// Asserts that this is Classify's answer, and that it found a command.
    pub fn assert_classified_a_command(&self) {
        let classified: a2a_commands::pb::ClassifyResponse = self.message();
        assert!(
            matches!(
                classified.result,
                Some(a2a_commands::pb::classify_response::Result::Command(_))
            ),
            "{classified:?}"
        );
    }
}

/// `message` with its gRPC prefix, ready to send as a request body.
pub fn framed(message: &impl prost::Message) -> Bytes {
    let bytes = message.encode_to_vec();
    let mut body = Vec::with_capacity(PREFIX + bytes.len());
    body.push(0);
    body.extend_from_slice(&u32::try_from(bytes.len()).unwrap().to_be_bytes());
    body.extend_from_slice(&bytes);
    body.into()
}

impl Http2 {
    /// Connects to `addr` over plain text and finishes the HTTP/2 handshake.
    pub async fn connect(addr: SocketAddr) -> Self {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (send, connection) = h2::client::handshake(tcp).await.unwrap();
        Self {
            send,
            authority: addr.to_string(),
            connection: tokio::spawn(connection),
        }
    }

    /// Starts a request to `path`; `body`, if any, is sent at once. The request ends
    /// (END_STREAM) with it, or with the headers when there is none, if `end` is set.
    pub async fn start(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<Bytes>,
        end: bool,
    ) -> Started {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.authority))
            .header("te", "trailers");
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let mut send = self.send.clone().ready().await.unwrap();
        let (response, mut stream) = send
            .send_request(request.body(()).unwrap(), end && body.is_none())
            .unwrap();
        if let Some(body) = body {
            stream.send_data(body, end).unwrap();
        }
        Started {
            response,
            body: stream,
        }
    }

    /// A whole unary gRPC call: `message` to `path`, and its answer.
    pub async fn unary(&mut self, path: &str, message: &impl prost::Message) -> Answer {
        self.unary_with(path, message, &[]).await
    }

    /// The same with `headers` added (a `grpc-timeout` this client does not enforce,
    /// so the status seen is the server's).
    pub async fn unary_with(
        &mut self,
        path: &str,
        message: &impl prost::Message,
        headers: &[(&'static str, &str)],
    ) -> Answer {
        self.raw_unary(path, headers, framed(message)).await
    }

    /// A unary gRPC call whose body is `body` as given, framing and all (or none, when
    /// empty), with `headers` added.
    pub async fn raw_unary(
        &mut self,
        path: &str,
        headers: &[(&'static str, &str)],
        body: Bytes,
    ) -> Answer {
        let mut request = http::Request::builder()
            .method(Method::POST)
            .uri(format!("http://{}{path}", self.authority))
            .header("te", "trailers")
            .header("content-type", GRPC);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut send = self.send.clone().ready().await.unwrap();
        let (response, mut stream) = send
            .send_request(request.body(()).unwrap(), body.is_empty())
            .unwrap();
        if !body.is_empty() {
            stream.send_data(body, true).unwrap();
        }
        answer(response).await
    }

    /// Whether the connection has ended (the server closed it, or it failed).
    pub fn is_closed(&self) -> bool {
        self.connection.is_finished()
    }

    /// Waits until the connection has ended. The caller bounds the wait.
    pub async fn closed(self) {
        // Ended either way: a clean close, or an error such as a reset socket.
        let _ = self.connection.await.unwrap();
    }
}

/// The gRPC messages of an answer's body, one at a time.
pub struct Messages {
    body: RecvStream,
    buffer: BytesMut,
}

impl Messages {
    pub fn new(body: RecvStream) -> Self {
        Self {
            body,
            buffer: BytesMut::new(),
        }
    }

    /// The next whole message, or `None` at the end of the body.
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.buffer.len() >= PREFIX {
                let length =
                    u32::from_be_bytes(self.buffer[1..PREFIX].try_into().unwrap()) as usize;
                if self.buffer.len() >= PREFIX + length {
                    self.buffer.advance(PREFIX);
                    return Some(self.buffer.split_to(length).freeze());
                }
            }
            let data = self.body.data().await?.unwrap();
            // Read, so the server may send more.
            self.body
                .flow_control()
                .release_capacity(data.len())
                .unwrap();
            self.buffer.extend_from_slice(&data);
        }
    }

    /// The trailers, once the body has been read to its end.
    pub async fn trailers(mut self) -> Option<HeaderMap> {
        self.body.trailers().await.unwrap()
    }
}

/// Reads a whole answer.
pub async fn answer(response: ResponseFuture) -> Answer {
    let (parts, body) = response.await.unwrap().into_parts();
    let mut body = Messages::new(body);
    let mut messages = Vec::new();
    while let Some(message) = body.next().await {
        messages.push(message);
    }
    Answer {
        status: parts.status,
        headers: parts.headers,
        messages,
        trailers: body.trailers().await,
    }
}
