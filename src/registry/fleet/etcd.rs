//! The etcd client the fleet store uses: one lazily connected channel per endpoint, a
//! call timeout, failover to the next endpoint when one does not answer, TLS, and
//! etcd's user authentication (its token fetched again when etcd says it expired).
//!
//! Every call is classified on failure: [`EtcdError::Rejected`] means etcd refused the
//! request and did nothing; [`EtcdError::Unreachable`] means the call may or may not
//! have been carried out (a transaction's outcome must then be read back).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_stream::StreamExt;
use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Request, Status};

use crate::metrics::metrics;
use crate::pb::etcd::auth_client::AuthClient;
use crate::pb::etcd::kv_client::KvClient;
use crate::pb::etcd::lease_client::LeaseClient;
use crate::pb::etcd::watch_client::WatchClient;
use crate::pb::etcd::{
    watch_request, AuthenticateRequest, LeaseGrantRequest, LeaseKeepAliveRequest,
    LeaseRevokeRequest, RangeRequest, RangeResponse, ResponseHeader, TxnRequest, TxnResponse,
    WatchCreateRequest, WatchRequest, WatchResponse,
};
use crate::registry::fleet::options::FleetOptions;
use crate::telemetry::{KeyValue, SpanKind, Tracer};

/// etcd's key-value service and its lease service, as spans name them.
const KV: &str = "etcdserverpb.KV";
const LEASE: &str = "etcdserverpb.Lease";

/// Largest answer decoded from etcd: a full page of the registry fits well within it.
const MAX_DECODE_BYTES: usize = 64 << 20;

/// Why an etcd call failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum EtcdError {
    /// etcd answered with a refusal: nothing was done.
    #[error("etcd refused the request: {0}")]
    Rejected(String),
    /// The request is larger than etcd takes (its `--max-request-bytes` or
    /// `--max-txn-ops`): nothing was done.
    #[error("{0}")]
    TooLarge(String),
    /// No connection to any member could be made: the request was never sent.
    #[error("no etcd member could be reached: {0}")]
    NotSent(String),
    /// The revision asked for has been compacted away.
    #[error("etcd compacted revision {0}")]
    Compacted(i64),
    /// No member answered in time, or the connection broke: the request may or may not
    /// have been carried out.
    #[error("no etcd member answered: {0}")]
    Unreachable(String),
}

/// A client of one etcd cluster.
pub struct Etcd {
    channels: Vec<(String, Channel)>,
    /// The endpoint calls go to; moved on when it stops answering.
    current: AtomicUsize,
    timeout: Duration,
    user: Option<(String, std::path::PathBuf)>,
    /// etcd's auth token, once fetched.
    token: Mutex<Option<AsciiMetadataValue>>,
    /// Whether etcd answered last time, and when it last did.
    contact: Mutex<Contact>,
    /// False from a call that no member answered until the next answer: etcd is known
    /// to be unreachable (unknown at first counts as reachable).
    reachable: tokio::sync::watch::Sender<bool>,
    /// Where each call's client span goes (traces on only).
    tracer: Option<Tracer>,
}

/// What the client last heard from etcd; a change is logged once.
struct Contact {
    up: Option<bool>,
    last: Instant,
}

impl Etcd {
    /// Builds the client; connects on first use, so a cluster that is down does not stop
    /// a start.
    pub fn new(options: &FleetOptions) -> Result<Self, String> {
        let tls = match &options.tls {
            Some(tls) => {
                let read = |what: &str, path: &std::path::Path| {
                    std::fs::read(path).map_err(|e| {
                        format!("fleet etcd {what} {}: cannot read: {e}", path.display())
                    })
                };
                let mut config = ClientTlsConfig::new().with_native_roots();
                if let Some(ca) = &tls.ca {
                    config = config.ca_certificate(Certificate::from_pem(read("CA", ca)?));
                }
                if let Some((cert, key)) = &tls.identity {
                    config = config.identity(Identity::from_pem(
                        read("certificate", cert)?,
                        read("key", key)?,
                    ));
                }
                Some(config)
            }
            None => None,
        };
        let mut channels = Vec::with_capacity(options.endpoints.len());
        for url in &options.endpoints {
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| format!("fleet etcd endpoint {url:?}: {e}"))?
                .connect_timeout(options.timeout)
                .http2_keep_alive_interval(Duration::from_secs(2))
                .keep_alive_timeout(options.timeout)
                .keep_alive_while_idle(true)
                .tcp_nodelay(true);
            if let Some(tls) = &tls {
                endpoint = endpoint
                    .tls_config(tls.clone())
                    .map_err(|e| format!("fleet etcd endpoint {url}: TLS: {e}"))?;
            }
            channels.push((url.clone(), endpoint.connect_lazy()));
        }
        if channels.is_empty() {
            return Err("fleet mode needs at least one etcd endpoint".into());
        }
        Ok(Self {
            channels,
            current: AtomicUsize::new(0),
            timeout: options.timeout,
            user: options.user.clone(),
            token: Mutex::new(None),
            contact: Mutex::new(Contact {
                up: None,
                last: Instant::now(),
            }),
            reachable: tokio::sync::watch::Sender::new(true),
            tracer: None,
        })
    }

    /// The same client, each call a client span sent to `tracer` (under the span
    /// current where it is made: a Register's, or none for the follower's reads).
    pub fn traced(self, tracer: Option<Tracer>) -> Self {
        Self { tracer, ..self }
    }

    /// Runs `call`, within a span named for etcd's `service`/`method` when traces are
    /// on; a failure is an error span whose `error.type` says which kind.
    async fn spanned<R>(
        &self,
        service: &'static str,
        method: &'static str,
        call: impl std::future::Future<Output = Result<R, EtcdError>>,
    ) -> Result<R, EtcdError> {
        let Some(tracer) = &self.tracer else {
            return call.await;
        };
        let attributes = vec![
            KeyValue::new("rpc.system", "grpc"),
            KeyValue::new("rpc.service", service),
            KeyValue::new("rpc.method", method),
            KeyValue::new("db.system.name", "etcd"),
        ];
        let span =
            tracer.span_under_current(SpanKind::Client, format!("{service}/{method}"), attributes);
        let result = call.await;
        // The member it ended on: a call that failed over names the one that answered.
        let endpoint = &self.channels[self.current.load(Ordering::Relaxed) % self.channels.len()].0;
        if let Ok(url) = url::Url::parse(endpoint) {
            if let Some(host) = url.host_str() {
                span.set(KeyValue::new("server.address", host.to_owned()));
            }
            if let Some(port) = url.port_or_known_default() {
                span.set(KeyValue::new("server.port", i64::from(port)));
            }
        }
        if result.is_ok() {
            span.set(KeyValue::new("rpc.grpc.status_code", 0_i64));
        }
        span.end(result.as_ref().err().map(|e| match e {
            EtcdError::Rejected(_) => "rejected",
            EtcdError::TooLarge(_) => "too_large",
            EtcdError::NotSent(_) => "not_sent",
            EtcdError::Compacted(_) => "compacted",
            EtcdError::Unreachable(_) => "unreachable",
        }));
        result
    }

    /// Notes that etcd answered (logged when it had not before).
    pub fn answered(&self) {
        let mut contact = self.contact.lock().expect("contact lock");
        contact.last = Instant::now();
        if contact.up != Some(true) {
            contact.up = Some(true);
            self.reachable.send_replace(true);
            metrics().fleet.connected.set(1);
            tracing::info!(endpoints = %self.endpoints(), "fleet store (etcd) connected");
        }
    }

    /// Notes that etcd did not answer (logged when it had before).
    pub fn unreachable(&self, why: &str) {
        let mut contact = self.contact.lock().expect("contact lock");
        if contact.up != Some(false) {
            contact.up = Some(false);
            self.reachable.send_replace(false);
            metrics().fleet.connected.set(0);
            tracing::warn!(endpoints = %self.endpoints(), error = %why, "fleet store (etcd) unreachable; reads go on from the last registry applied, changes are refused");
        }
    }

    /// Whether etcd is reachable as far as the last call knew, as a receiver that sees
    /// each change (false: no member answered the last call, and none has since).
    pub fn reachable(&self) -> tokio::sync::watch::Receiver<bool> {
        self.reachable.subscribe()
    }

    /// Time since etcd last answered.
    pub fn since_contact(&self) -> Duration {
        self.contact.lock().expect("contact lock").last.elapsed()
    }

    fn endpoints(&self) -> String {
        let urls: Vec<&str> = self.channels.iter().map(|(url, _)| url.as_str()).collect();
        urls.join(",")
    }

    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The endpoint calls go to now, and its channel.
    fn channel(&self) -> (usize, Channel) {
        let at = self.current.load(Ordering::Relaxed) % self.channels.len();
        (at, self.channels[at].1.clone())
    }

    /// Moves on from endpoint `at` (if no other call did already).
    fn fail_over(&self, at: usize) {
        let next = (at + 1) % self.channels.len();
        if self
            .current
            .compare_exchange(at, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
            && self.channels.len() > 1
        {
            tracing::debug!(from = %self.channels[at].0, to = %self.channels[next].0, "etcd endpoint switched");
        }
    }

    /// A request with the auth token (fetched first when needed) and the timeout.
    async fn request<T>(&self, message: T, channel: &Channel) -> Result<Request<T>, EtcdError> {
        let mut request = Request::new(message);
        request.set_timeout(self.timeout);
        if let Some(token) = self.token(channel).await? {
            request.metadata_mut().insert("token", token);
        }
        Ok(request)
    }

    async fn token(&self, channel: &Channel) -> Result<Option<AsciiMetadataValue>, EtcdError> {
        let Some((user, password_file)) = &self.user else {
            return Ok(None);
        };
        if let Some(token) = self.token.lock().expect("token lock").clone() {
            return Ok(Some(token));
        }
        let password = std::fs::read_to_string(password_file).map_err(|e| {
            EtcdError::Rejected(format!(
                "cannot read the etcd password file {}: {e}",
                password_file.display()
            ))
        })?;
        let mut request = Request::new(AuthenticateRequest {
            name: user.clone(),
            password: password.trim_end_matches(['\n', '\r']).to_owned(),
        });
        request.set_timeout(self.timeout);
        let answer = AuthClient::new(channel.clone())
            .authenticate(request)
            .await
            .map_err(classify)?
            .into_inner();
        let token = MetadataValue::try_from(answer.token.as_str())
            .map_err(|_| EtcdError::Rejected("etcd gave an auth token that is not ASCII".into()))?;
        *self.token.lock().expect("token lock") = Some(token.clone());
        Ok(Some(token))
    }

    /// Runs `call` against the current endpoint; when it does not answer, tries each
    /// other endpoint once, and fetches a new auth token once if etcd says it expired.
    async fn call<T, R, F, Fut>(&self, message: T, call: F) -> Result<R, EtcdError>
    where
        T: Clone,
        F: Fn(Channel, Request<T>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let mut last = None;
        let mut renewed = false;
        let mut tries = 0;
        while tries < self.channels.len() {
            let (at, channel) = self.channel();
            let request = match self.request(message.clone(), &channel).await {
                Ok(request) => request,
                Err(EtcdError::Unreachable(e) | EtcdError::NotSent(e)) => {
                    self.fail_over(at);
                    tries += 1;
                    last = Some(EtcdError::Unreachable(e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            match call(channel, request).await {
                Ok(answer) => {
                    self.answered();
                    return Ok(answer.into_inner());
                }
                Err(status) if is_token_expired(&status) && !renewed => {
                    renewed = true;
                    *self.token.lock().expect("token lock") = None;
                }
                Err(status) => match classify(status) {
                    EtcdError::Unreachable(e) | EtcdError::NotSent(e) => {
                        self.fail_over(at);
                        tries += 1;
                        last = Some(EtcdError::Unreachable(e));
                    }
                    other => return Err(other),
                },
            }
        }
        let last = last.unwrap_or_else(|| EtcdError::Unreachable("no endpoint".into()));
        self.unreachable(&last.to_string());
        Err(last)
    }

    /// A range read; `revision` 0 reads the newest, linearizably.
    pub async fn range(&self, request: RangeRequest) -> Result<RangeResponse, EtcdError> {
        let call = self.call(request, |channel, request| async move {
            client(KvClient::new(channel)).range(request).await
        });
        self.spanned(KV, "Range", call).await
    }

    /// A transaction. [`EtcdError::Unreachable`] leaves its outcome unknown.
    pub async fn txn(&self, request: TxnRequest) -> Result<TxnResponse, EtcdError> {
        self.spanned(KV, "Txn", self.txn_once(request)).await
    }

    async fn txn_once(&self, request: TxnRequest) -> Result<TxnResponse, EtcdError> {
        // Sent to one member only: a retry on another after a lost answer could apply a
        // transaction twice, so the caller reads the outcome back instead. Members that
        // cannot even be connected to never saw it, so the next one is tried.
        let mut last = None;
        let mut renewed = false;
        let mut tries = 0;
        while tries < self.channels.len() + usize::from(renewed) {
            tries += 1;
            let (at, channel) = self.channel();
            let request = match self.request(request.clone(), &channel).await {
                Ok(request) => request,
                Err(e @ (EtcdError::Unreachable(_) | EtcdError::NotSent(_))) => {
                    // The token could not be fetched: the transaction was not sent.
                    self.fail_over(at);
                    last = Some(EtcdError::NotSent(e.to_string()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            match client(KvClient::new(channel)).txn(request).await {
                Ok(answer) => {
                    self.answered();
                    return Ok(answer.into_inner());
                }
                Err(status) if is_token_expired(&status) && !renewed => {
                    // Refused before it ran: a new token, and the same member again.
                    renewed = true;
                    *self.token.lock().expect("token lock") = None;
                    continue;
                }
                Err(status) => {
                    let err = classify(status);
                    match err {
                        EtcdError::NotSent(_) => {
                            self.fail_over(at);
                            last = Some(err);
                        }
                        EtcdError::Unreachable(_) => {
                            self.fail_over(at);
                            self.unreachable(&err.to_string());
                            return Err(err);
                        }
                        other => return Err(other),
                    }
                }
            }
        }
        let last = last.unwrap_or_else(|| EtcdError::NotSent("no endpoint".into()));
        self.unreachable(&last.to_string());
        Err(last)
    }

    /// Opens a watch of `[key, range_end)` from `start_revision`, on a member that has a
    /// leader (a member cut off from its cluster ends the watch instead of going
    /// silent). Answers once etcd confirmed the watch, with the header of that answer
    /// (the cluster's id, and its revision then).
    pub async fn watch(
        &self,
        key: Vec<u8>,
        range_end: Vec<u8>,
        start_revision: i64,
    ) -> Result<(tonic::Streaming<WatchResponse>, ResponseHeader), EtcdError> {
        let opening = self.open_watch(key, range_end, start_revision);
        self.spanned("etcdserverpb.Watch", "Watch", opening).await
    }

    async fn open_watch(
        &self,
        key: Vec<u8>,
        range_end: Vec<u8>,
        start_revision: i64,
    ) -> Result<(tonic::Streaming<WatchResponse>, ResponseHeader), EtcdError> {
        let (at, channel) = self.channel();
        let create = WatchRequest {
            request_union: Some(watch_request::RequestUnion::CreateRequest(
                WatchCreateRequest {
                    key,
                    range_end,
                    start_revision,
                    progress_notify: true,
                    ..Default::default()
                },
            )),
        };
        // The request stream stays open (ending it would end the watch); dropping the
        // answer stream cancels it.
        let outbound = tokio_stream::once(create).chain(tokio_stream::pending::<WatchRequest>());
        let mut request = Request::new(outbound);
        request
            .metadata_mut()
            .insert("hasleader", MetadataValue::from_static("true"));
        if let Some(token) = self
            .token(&channel)
            .await
            .inspect_err(|_| self.fail_over(at))?
        {
            request.metadata_mut().insert("token", token);
        }
        let opened = tokio::time::timeout(self.timeout, async {
            let mut stream = client(WatchClient::new(channel))
                .watch(request)
                .await?
                .into_inner();
            // The first answer says whether the watch was created.
            match stream.message().await? {
                Some(first) if first.created && !first.canceled => {
                    Ok((stream, first.header.unwrap_or_default()))
                }
                Some(first) if first.compact_revision > 0 => Err(Status::out_of_range(format!(
                    "compacted:{}",
                    first.compact_revision
                ))),
                Some(first) => Err(Status::unavailable(format!(
                    "the watch was not created: {}",
                    first.cancel_reason
                ))),
                None => Err(Status::unavailable("the watch stream ended at once")),
            }
        })
        .await;
        let result = match opened {
            Ok(result) => result,
            Err(_) => Err(Status::deadline_exceeded("opening the watch timed out")),
        };
        result
            .map_err(|status| {
                if is_token_expired(&status) {
                    *self.token.lock().expect("token lock") = None;
                }
                if let Some(rev) = status
                    .message()
                    .strip_prefix("compacted:")
                    .and_then(|r| r.parse().ok())
                {
                    return EtcdError::Compacted(rev);
                }
                let err = classify(status);
                if matches!(err, EtcdError::Unreachable(_)) {
                    self.fail_over(at);
                    self.unreachable(&err.to_string());
                }
                err
            })
            .inspect(|_| self.answered())
    }

    /// Grants a lease of `ttl`.
    pub async fn lease_grant(&self, ttl: Duration) -> Result<i64, EtcdError> {
        let message = LeaseGrantRequest {
            ttl: i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
            id: 0,
        };
        let call = self.call(message, |channel, request| async move {
            client(LeaseClient::new(channel)).lease_grant(request).await
        });
        let answer = self.spanned(LEASE, "LeaseGrant", call).await?;
        if !answer.error.is_empty() {
            return Err(EtcdError::Rejected(answer.error));
        }
        Ok(answer.id)
    }

    /// Renews lease `id` once; `false` when it has expired.
    pub async fn lease_keep_alive(&self, id: i64) -> Result<bool, EtcdError> {
        let answer = self
            .call(id, |channel, request| async move {
                let mut request =
                    request.map(|id| tokio_stream::once(LeaseKeepAliveRequest { id }));
                request.set_timeout(self.timeout);
                let mut stream = client(LeaseClient::new(channel))
                    .lease_keep_alive(request)
                    .await?
                    .into_inner();
                let first = stream
                    .message()
                    .await?
                    .ok_or_else(|| Status::unavailable("the keep-alive stream ended"))?;
                Ok(tonic::Response::new(first))
            })
            .await?;
        Ok(answer.ttl > 0)
    }

    /// Revokes lease `id` (its keys go at once).
    pub async fn lease_revoke(&self, id: i64) -> Result<(), EtcdError> {
        let call = self.call(LeaseRevokeRequest { id }, |channel, request| async move {
            client(LeaseClient::new(channel))
                .lease_revoke(request)
                .await
        });
        self.spanned(LEASE, "LeaseRevoke", call).await.map(drop)
    }
}

/// A generated client with the decode limit raised (tonic's default is 4 MiB).
fn client<C: Limited>(client: C) -> C {
    client.limited(MAX_DECODE_BYTES)
}

/// The generated clients' decode limit, set alike.
trait Limited {
    fn limited(self, bytes: usize) -> Self;
}

macro_rules! limited {
    ($($client:ident),*) => {$(
        impl Limited for $client<Channel> {
            fn limited(self, bytes: usize) -> Self {
                self.max_decoding_message_size(bytes)
            }
        }
    )*};
}
limited!(KvClient, WatchClient, LeaseClient);

/// etcd refused the call for its token (expired, or issued before users or roles
/// changed): nothing was done, and a new token may be fetched.
fn is_token_expired(status: &Status) -> bool {
    let message = status.message();
    message.contains("invalid auth token") || message.contains("revision of auth store is old")
}

/// What a failed call means for the caller (etcd's error strings are its API:
/// `etcdserver: ...`, `mvcc: ...`).
fn classify(status: Status) -> EtcdError {
    let message = status.message().to_owned();
    if message.contains("required revision has been compacted") {
        return EtcdError::Compacted(0);
    }
    if message.contains("request is too large") || message.contains("too many operations in txn") {
        return EtcdError::TooLarge(message);
    }
    match status.code() {
        Code::InvalidArgument
        | Code::FailedPrecondition
        | Code::PermissionDenied
        | Code::Unauthenticated
        | Code::OutOfRange
        | Code::NotFound
        | Code::AlreadyExists
        | Code::ResourceExhausted => {
            EtcdError::Rejected(format!("{message} ({:?})", status.code()))
        }
        // tonic's words for a connection that could not be made: nothing was sent.
        Code::Unavailable
            if message.contains("tcp connect error")
                || message.contains("error trying to connect")
                || message.contains("Connection refused") =>
        {
            EtcdError::NotSent(message)
        }
        _ => EtcdError::Unreachable(if message.is_empty() {
            format!("{:?}", status.code())
        } else {
            message
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etcd_errors_are_classified_by_what_they_mean_for_a_write() {
        let too_many = Status::invalid_argument("etcdserver: too many operations in txn request");
        assert!(matches!(classify(too_many), EtcdError::TooLarge(_)));
        let compacted =
            Status::out_of_range("etcdserver: mvcc: required revision has been compacted");
        assert!(matches!(classify(compacted), EtcdError::Compacted(_)));
        let refused = Status::unavailable("tcp connect error");
        assert!(matches!(classify(refused), EtcdError::NotSent(_)));
        let timed_out = Status::unavailable("etcdserver: request timed out");
        assert!(matches!(classify(timed_out), EtcdError::Unreachable(_)));
        let denied = Status::permission_denied("etcdserver: permission denied");
        assert!(matches!(classify(denied), EtcdError::Rejected(_)));
        let expired = Status::unauthenticated("etcdserver: invalid auth token");
        assert!(is_token_expired(&expired));
        let old = Status::invalid_argument("etcdserver: revision of auth store is old");
        assert!(is_token_expired(&old));
    }
}
