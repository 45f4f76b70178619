//! Fleet mode's settings: how to reach etcd, and the limits its transactions keep to.

use std::path::PathBuf;
use std::time::Duration;

/// TLS to etcd.
#[derive(Clone, Debug, Default)]
pub struct EtcdTls {
    /// PEM CA certificate(s) that signed the members' certificates (the system's roots
    /// when not given).
    pub ca: Option<PathBuf>,
    /// PEM client certificate and key, for a cluster that requires them.
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// How to reach the fleet's etcd, and the limits its transactions must keep to.
#[derive(Clone, Debug)]
pub struct FleetOptions {
    /// The members' client URLs (`http://host:2379`, or `https://` with TLS).
    pub endpoints: Vec<String>,
    /// The key prefix the fleet's registry lives under.
    pub prefix: String,
    /// TLS, when the endpoints are `https://`.
    pub tls: Option<EtcdTls>,
    /// etcd user, and the file holding its password.
    pub user: Option<(String, PathBuf)>,
    /// How long one etcd call may take.
    pub timeout: Duration,
    /// Most operations in one transaction (etcd's `--max-txn-ops`).
    pub max_txn_ops: usize,
    /// Largest transaction in bytes (etcd's `--max-request-bytes`).
    pub max_request_bytes: usize,
    /// This sidecar's name among the fleet's members (the pod's name, by default the
    /// host name).
    pub member_name: String,
    /// The API address shown beside the member.
    pub member_addr: String,
}
