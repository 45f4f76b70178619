//! TLS on the API listener: served over TLS only, and with a client CA, only to clients
//! with a certificate it signed.

mod common;

use a2a_commands::config::Tls;
use a2a_commands::pb;
use a2a_commands::pb::command_service_client::CommandServiceClient;
use common::pki::{pki, Pki};
use common::*;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

async fn tls_server(pki: &Pki, mutual: bool) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let tls = Tls {
        cert: write("server.pem", &pki.server.0),
        key: write("server.key", &pki.server.1),
        client_ca: mutual.then(|| write("ca.pem", &pki.ca)),
    };
    (TestServer::start_with(|s| s.tls = Some(tls)).await, dir)
}

async fn tls_channel(
    addr: std::net::SocketAddr,
    pki: &Pki,
    client_cert: bool,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&pki.ca))
        .domain_name("localhost");
    if client_cert {
        tls = tls.identity(Identity::from_pem(&pki.client.0, &pki.client.1));
    }
    Channel::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
}

#[tokio::test]
async fn tls_and_mutual_tls() {
    let pki = pki();
    let (server, _dir) = tls_server(&pki, false).await;
    let channel = tls_channel(server.addr(), &pki, false).await.unwrap();
    let mut client = CommandServiceClient::new(channel);
    assert_eq!(names(&mut client).await.len(), 4);
    // Plain text is refused.
    let plain = Channel::from_shared(format!("http://{}", server.addr()))
        .unwrap()
        .connect()
        .await;
    let refused = match plain {
        Err(_) => true,
        Ok(channel) => CommandServiceClient::new(channel)
            .list_specs(pb::ListSpecsRequest::default())
            .await
            .is_err(),
    };
    assert!(refused, "a plain-text client must not be served");

    let (server, _dir) = tls_server(&pki, true).await;
    let with_cert = tls_channel(server.addr(), &pki, true).await.unwrap();
    assert_eq!(
        names(&mut CommandServiceClient::new(with_cert)).await.len(),
        4
    );
    let without = match tls_channel(server.addr(), &pki, false).await {
        Err(_) => true,
        Ok(channel) => CommandServiceClient::new(channel)
            .list_specs(pb::ListSpecsRequest::default())
            .await
            .is_err(),
    };
    assert!(
        without,
        "with mTLS a client without a certificate must be refused"
    );
}
