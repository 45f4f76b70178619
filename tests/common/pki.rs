//! Certificates for TLS tests, made fresh with rcgen.

/// A CA, a server certificate for `localhost` and a client certificate, all PEM.
pub struct Pki {
    /// The CA's certificate.
    pub ca: String,
    /// The server's certificate and key.
    pub server: (String, String),
    /// The client's certificate and key.
    pub client: (String, String),
}

/// A fresh PKI.
pub fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    Pki {
        ca: ca.pem(),
        server: leaf("localhost"),
        client: leaf("gateway"),
    }
}
