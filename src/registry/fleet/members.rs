//! Each live sidecar's key, `<prefix>members/<name>-<id>`, bound to a lease it keeps
//! alive: it says the registry revision the sidecar has applied, and goes when the
//! sidecar dies (the lease expires) or stops (the lease is revoked). `ctl fleet` lists
//! them.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::metrics::metrics;
use crate::pb::etcd::{request_op, PutRequest, RangeRequest, RequestOp, TxnRequest};
use crate::registry::fleet::etcd::Etcd;
use crate::registry::fleet::layout::{range_end, AppliedMeta, Keys};

/// How long a member's key outlives its last keep-alive.
const LEASE: Duration = Duration::from_secs(10);
/// How often the lease is renewed.
const RENEW: Duration = Duration::from_secs(3);

/// What a member's key holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The sidecar's name (its pod's, by default).
    pub name: String,
    /// Its API address, as it was configured.
    pub addr: String,
    /// The registry revision it has applied.
    pub revision: u64,
    /// The etcd revision of that change.
    pub etcd_revision: i64,
}

/// Keeps this sidecar's member key up to date (within a second) until `stop`, then
/// revokes it.
pub async fn run(
    etcd: Arc<Etcd>,
    keys: Keys,
    mut member: Member,
    applied: watch::Receiver<AppliedMeta>,
    stop: CancellationToken,
) {
    let key = {
        let mut id = [0u8; 4];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut id)
            .expect("the system's random source works");
        keys.member(&format!("{}-{:08x}", member.name, u32::from_be_bytes(id)))
    };
    let m = &metrics().fleet;
    let mut lease = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut renewed = tokio::time::Instant::now();
    loop {
        // Once a second at most: a busy registry does not turn into a write per change
        // per sidecar.
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        m.seconds_since_contact
            .set(etcd.since_contact().as_secs_f64());
        let (revision, etcd_revision) = {
            let applied = applied.borrow();
            (applied.revision, applied.meta.mod_revision)
        };
        if etcd_revision == 0 {
            // Not a member until it has applied the fleet's registry.
            continue;
        }
        let moved = revision != member.revision || etcd_revision != member.etcd_revision;
        member.revision = revision;
        member.etcd_revision = etcd_revision;
        let id = match lease {
            Some(id) => id,
            None => match etcd.lease_grant(LEASE).await {
                Ok(id) => {
                    renewed = tokio::time::Instant::now();
                    if put(&etcd, &key, &member, id).await.is_ok() {
                        lease = Some(id);
                    }
                    continue;
                }
                Err(_) => continue,
            },
        };
        if moved && put(&etcd, &key, &member, id).await.is_err() {
            // Written again at the next renewal.
            member.revision = 0;
        }
        if renewed.elapsed() >= RENEW {
            match etcd.lease_keep_alive(id).await {
                Ok(true) => renewed = tokio::time::Instant::now(),
                // Expired (an outage longer than the lease): a new lease, a new key.
                Ok(false) => lease = None,
                Err(_) => {}
            }
        }
    }
    if let Some(id) = lease {
        let _ = etcd.lease_revoke(id).await;
    }
}

async fn put(etcd: &Etcd, key: &[u8], member: &Member, lease: i64) -> Result<(), Error> {
    let put = RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key: key.to_vec(),
            value: serde_json::to_vec(member).expect("members serialize"),
            lease,
        })),
    };
    etcd.txn(TxnRequest {
        success: vec![put],
        ..Default::default()
    })
    .await
    .map(drop)
    .map_err(|e| Error::FleetUnavailable(e.to_string()))
}

/// The live members of the fleet under `keys`, by name.
pub async fn list(etcd: &Etcd, keys: &Keys) -> Result<Vec<Member>, Error> {
    let prefix = keys.members();
    let answer = etcd
        .range(RangeRequest {
            range_end: range_end(&prefix),
            key: prefix,
            ..Default::default()
        })
        .await
        .map_err(|e| Error::FleetUnavailable(e.to_string()))?;
    let mut members: Vec<Member> = answer
        .kvs
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect();
    members.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(members)
}
