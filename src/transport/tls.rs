//! TLS for the API listener: the server's identity, and client certificates for mTLS.

use std::path::PathBuf;

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::config::Tls;

/// A TLS file that cannot be used; the message names it.
#[derive(Debug)]
pub struct TlsError(pub String);

fn read_file(what: &str, path: &PathBuf) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))
}

/// The server TLS configuration from the files `tls` names.
pub fn tls_config(tls: &Tls) -> Result<ServerTlsConfig, TlsError> {
    let cert = read_file("TLS certificate", &tls.cert)?;
    let key = read_file("TLS key", &tls.key)?;
    let mut config = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
    if let Some(ca) = &tls.client_ca {
        // With a client CA, every client must present a certificate it signed (mTLS).
        config = config.client_ca_root(Certificate::from_pem(read_file("TLS client CA", ca)?));
    }
    Ok(config)
}
