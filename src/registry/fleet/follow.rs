//! Following the fleet's registry: a whole read, then a watch of the registry's key range
//! from the revision after it, each etcd revision's events handed to the writer in
//! order. A watch that ends is opened again from the revision after the last one handed
//! on; a compacted revision, or a gap the writer finds, means a whole read again. No
//! change is ever skipped: the writer applies a revision only on top of the one it
//! was made on (`layout::apply_events`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Notify};

use crate::metrics::metrics;
use crate::pb::etcd::Event;
use crate::registry::fleet::etcd::{Etcd, EtcdError};
use crate::registry::fleet::layout::{range_end, FleetState, Keys};
use crate::registry::fleet::record::read_all;

/// What the follower hands the writer.
#[derive(Debug)]
pub enum Followed {
    /// The whole registry, read at one etcd revision.
    Whole(FleetState),
    /// The whole registry, read after etcd's history was found not to be the one
    /// followed (the cluster recreated or restored): its revisions start again.
    Reset(FleetState),
    /// The events of one etcd revision, in order.
    Events {
        /// The etcd revision.
        revision: i64,
        /// Its events under the registry's prefix.
        events: Vec<Event>,
    },
}

/// Waits between attempts while etcd does not answer.
const RETRY: Duration = Duration::from_millis(500);

/// Follows the registry until `out` closes. `resync` asks for a whole read.
pub async fn run(etcd: Arc<Etcd>, keys: Keys, out: mpsc::Sender<Followed>, resync: Arc<Notify>) {
    let m = &metrics().fleet;
    let mut next: Option<i64> = None;
    // Whether the last whole read failed: logged once, not at every attempt.
    let mut failing = false;
    // The etcd cluster the registry was read from: one recreated from nothing starts
    // its revisions again, so a watch resumed there from ours would wait for revisions
    // that mean something else; it is read whole instead.
    let mut cluster = 0;
    // Set once the history followed is gone: the next whole read is a reset.
    let mut reset = false;
    loop {
        let start = match next {
            Some(start) => start,
            None => match read_all(&etcd, &keys).await {
                Ok((whole, revision)) => {
                    m.full_reads.inc();
                    cluster = whole.cluster;
                    let whole = if std::mem::take(&mut reset) {
                        Followed::Reset(whole)
                    } else {
                        Followed::Whole(whole)
                    };
                    if std::mem::take(&mut failing) {
                        tracing::info!(etcd_revision = revision, "read the fleet's registry");
                    }
                    if out.send(whole).await.is_err() {
                        return;
                    }
                    next = Some(revision + 1);
                    revision + 1
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "cannot read the fleet's registry; trying again every 0.5 s");
                        failing = true;
                    }
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            },
        };
        let prefix = keys.registry();
        let end = range_end(&prefix);
        let mut stream = match etcd.watch(prefix, end, start).await {
            // A recreated cluster, or one restored from a backup, has revisions that
            // start again: one below where we resume is not our history.
            Ok((stream, header))
                if other_cluster(cluster, header.cluster_id) || header.revision < start - 1 =>
            {
                drop(stream);
                tracing::warn!(
                    cluster = header.cluster_id,
                    revision = header.revision,
                    resume_at = start,
                    "etcd's history is not the one this sidecar followed (cluster recreated or restored?); reading the whole registry"
                );
                reset = true;
                next = None;
                continue;
            }
            Ok((stream, _)) => stream,
            Err(EtcdError::Compacted(at)) => {
                tracing::info!(from = start, compacted = at, "the fleet's history was compacted past this sidecar's revision; reading the whole registry");
                next = None;
                continue;
            }
            Err(e) => {
                tracing::debug!(error = %e, "opening the fleet watch");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        loop {
            let answer = tokio::select! {
                () = resync.notified() => {
                    next = None;
                    break;
                }
                answer = stream.message() => answer,
            };
            let answer = match answer {
                Ok(Some(answer)) => answer,
                Ok(None) | Err(_) => {
                    m.watch_restarts.inc();
                    etcd.unreachable("the fleet watch ended");
                    break;
                }
            };
            etcd.answered();
            if other_cluster(cluster, answer.header.as_ref().map_or(0, |h| h.cluster_id)) {
                tracing::warn!(
                    "the etcd cluster changed (recreated or restored?); reading the whole registry"
                );
                reset = true;
                next = None;
                break;
            }
            if answer.compact_revision > 0 {
                tracing::info!(from = next.unwrap_or(0), compacted = answer.compact_revision, "the fleet's history was compacted past this sidecar's revision; reading the whole registry");
                next = None;
                break;
            }
            if answer.canceled {
                m.watch_restarts.inc();
                break;
            }
            if answer.events.is_empty() {
                // A progress notice: every later event has a higher revision.
                if let Some(h) = &answer.header {
                    next = Some(next.unwrap_or(0).max(h.revision + 1));
                }
                continue;
            }
            for (revision, events) in by_revision(answer.events) {
                if out
                    .send(Followed::Events { revision, events })
                    .await
                    .is_err()
                {
                    return;
                }
                next = Some(revision + 1);
            }
        }
    }
}

/// Whether `now` is a cluster other than `was` (0: not known).
fn other_cluster(was: u64, now: u64) -> bool {
    was != 0 && now != 0 && was != now
}

/// Splits events into runs of one revision each, in order.
fn by_revision(events: Vec<Event>) -> Vec<(i64, Vec<Event>)> {
    let mut out: Vec<(i64, Vec<Event>)> = Vec::new();
    for event in events {
        let revision = event.kv.as_ref().map_or(0, |kv| kv.mod_revision);
        match out.last_mut() {
            Some((at, run)) if *at == revision => run.push(event),
            _ => out.push((revision, vec![event])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::etcd::KeyValue;

    #[test]
    fn events_are_handed_on_one_revision_at_a_time() {
        let event = |rev| Event {
            kv: Some(KeyValue {
                mod_revision: rev,
                ..Default::default()
            }),
            ..Default::default()
        };
        let runs = by_revision(vec![event(5), event(5), event(7)]);
        let shape: Vec<_> = runs.iter().map(|(r, e)| (*r, e.len())).collect();
        assert_eq!(shape, vec![(5, 2), (7, 1)]);
    }
}
