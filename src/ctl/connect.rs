//! Reaching the server: its URL, the channel (TLS and mTLS), the admin token, and one
//! line for a failed call.

use std::path::Path;

use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::Request;

use crate::config::CtlArgs;
use crate::pb::command_service_client::CommandServiceClient;

pub(super) type Client = CommandServiceClient<Channel>;

/// The URL `addr` names: `host:port` is taken as `http://host:port`, the form the kits
/// accept too; `https://` means TLS.
pub fn server_url(addr: &str) -> Result<String, String> {
    let addr = addr.trim();
    if addr.starts_with("http://") || addr.starts_with("https://") {
        Ok(addr.to_owned())
    } else if let Some((scheme, _)) = addr.split_once("://") {
        Err(format!(
            "--addr {addr}: the scheme {scheme}:// is not served; use host:port, \
             http://host:port, or https://host:port for TLS"
        ))
    } else {
        Ok(format!("http://{addr}"))
    }
}

pub(super) async fn connect(args: &CtlArgs) -> Result<Client, String> {
    let url = server_url(&args.addr)?;
    let fail = |e: &dyn std::error::Error| format!("cannot connect to {url}: {}", explain(e));
    let mut endpoint = Endpoint::from_shared(url.clone()).map_err(|e| fail(&e))?;
    if url.starts_with("https://") {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut tls = ClientTlsConfig::new().with_native_roots();
        if let Some(ca) = &args.tls_ca {
            let pem =
                std::fs::read(ca).map_err(|e| format!("cannot read {}: {e}", ca.display()))?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
            let read = |p: &Path| {
                std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
            };
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| fail(&e))?;
    }
    let channel = endpoint.connect().await.map_err(|e| fail(&e))?;
    Ok(CommandServiceClient::new(channel))
}

/// An error with its causes (tonic's own says only "transport error"), and what to do
/// about the common ones.
pub(super) fn explain(error: &dyn std::error::Error) -> String {
    let mut causes = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !causes.iter().any(|c| c.contains(&text)) {
            causes.push(text);
        }
        source = cause.source();
    }
    let all = causes.join(": ");
    let lower = all.to_lowercase();
    let hint = if lower.contains("connection refused") {
        " (is the server running there? set --addr or A2A_COMMANDS_ADDR)"
    } else if lower.contains("unknownissuer") || lower.contains("invalid peer certificate") {
        " (the server's certificate is not trusted: pass its CA with --tls-ca)"
    } else if lower.contains("certificaterequired") || lower.contains("certificate required") {
        " (the server requires a client certificate: pass --tls-cert and --tls-key)"
    } else if lower.contains("invalid uri") || lower.contains("invalid authority") {
        " (give host:port, http://host:port or https://host:port)"
    } else if lower.contains("corrupt message") || lower.contains("invalidcontenttype") {
        " (is it a TLS server? use https://)"
    } else {
        ""
    };
    format!("{all}{hint}")
}

/// `message` with the admin token, if one is configured.
pub(super) fn authorized<T>(args: &CtlArgs, message: T) -> Result<Request<T>, String> {
    let mut request = Request::new(message);
    let token = match (&args.token_file, &args.token) {
        (Some(path), _) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?
                .trim()
                .to_owned(),
        ),
        (None, Some(token)) => Some(token.trim().to_owned()),
        (None, None) => None,
    };
    if let Some(token) = token {
        let value = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| "the admin token is not a valid header value".to_owned())?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

/// One line for a failed call: the code's name and the server's message.
pub(super) fn status_line(status: &tonic::Status) -> String {
    let line = format!(
        "{}: {}",
        crate::codes::name(status.code()),
        status.message()
    );
    // A call that failed below gRPC (TLS, a reset) carries the cause as its source.
    match std::error::Error::source(status) {
        Some(cause) => format!("{line}: {}", explain(cause)),
        None => line,
    }
}
