//! Following the fleet's registry: a whole read, then a watch of the registry's key range
//! from the revision after it, each etcd revision's events handed to the writer in
//! order. No change is ever skipped: the writer applies a revision only on top of the
//! one it was made on (`layout::apply_events`); a compacted revision, or a gap the
//! writer finds, means a whole read again.
//!
//! A watch that ends is opened again only once etcd is shown to still hold the history
//! this sidecar applied: `meta` as the writer last applied it is etcd's current `meta`, or
//! was `meta` at its revision (`check`). Otherwise etcd was recreated, restored from a
//! snapshot or had the keys deleted, and the whole registry is read and handed on with
//! the cause; etcd's revisions cannot tell, since a recreated etcd's soon pass ours. Every
//! whole read is checked the same way, and the writer checks the history's name on every
//! change it applies.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Notify};

use crate::metrics::metrics;
use crate::pb::etcd::{Event, RangeRequest};
use crate::registry::fleet::etcd::{Etcd, EtcdError};
use crate::registry::fleet::layout::{range_end, AppliedMeta, FleetState, Keys, MetaAt};
use crate::registry::fleet::record::read_all;

/// What the follower hands the writer.
#[derive(Debug)]
pub enum Followed {
    /// The whole registry, read at one etcd revision.
    Whole {
        /// The registry.
        whole: FleetState,
        /// What the writer had applied when the read was checked.
        checked: AppliedMeta,
        /// Why `checked` is not in etcd's history, when it is not: etcd is not the
        /// history followed.
        lost: Option<String>,
    },
    /// The events of one etcd revision, in order.
    Events {
        /// The etcd revision.
        revision: i64,
        /// Its events under the registry's prefix.
        events: Vec<Event>,
    },
}

/// What etcd holds of a write of `meta` a sidecar applied.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// It is etcd's current `meta`, read at this etcd revision: nothing changed since.
    Current(i64),
    /// It was `meta` at its revision, and `meta` changed since.
    Behind,
    /// It is not in etcd's history; why.
    Lost(String),
    /// Its revision is compacted and `meta` changed since: a whole read must tell.
    Unknown,
}

/// Waits between attempts while etcd does not answer.
const RETRY: Duration = Duration::from_millis(500);

/// What the follower does next.
enum Next {
    /// Read the whole registry; `lost` says why, when the history followed is gone.
    Read { lost: Option<Lost> },
    /// Check the history applied is etcd's, then watch from after it.
    Resume,
}

/// Follows the registry until `out` closes. `resync` asks for a whole read; `applied` is
/// what the writer applied, which every resumed watch and whole read is checked against.
pub async fn run(
    etcd: Arc<Etcd>,
    keys: Keys,
    out: mpsc::Sender<Followed>,
    resync: Arc<Notify>,
    applied: watch::Receiver<AppliedMeta>,
) {
    let m = &metrics().fleet;
    // Whether the last attempt failed: logged once, not at every attempt.
    let mut failing = false;
    let mut next = Next::Read { lost: None };
    loop {
        // A path that does not say otherwise checks the history and watches again.
        let start = match std::mem::replace(&mut next, Next::Resume) {
            Next::Resume => {
                let checked = applied.borrow().clone();
                if checked.meta.mod_revision == 0 {
                    // Nothing applied to check (or an empty registry): read it whole.
                    next = Next::Read { lost: None };
                    continue;
                }
                match check(&etcd, &keys, &checked.meta).await {
                    // Nothing under the registry changed since: no event is missed.
                    Ok(Found::Current(at)) => at + 1,
                    // Every change after the one applied; the writer skips what it has.
                    Ok(Found::Behind) => checked.meta.mod_revision + 1,
                    Ok(Found::Lost(cause)) => {
                        let lost = Lost {
                            cause,
                            against: checked,
                        };
                        next = Next::Read { lost: Some(lost) };
                        continue;
                    }
                    Ok(Found::Unknown) => {
                        tracing::info!(from = checked.meta.mod_revision + 1, "the fleet's history was compacted past this sidecar's revision; reading the whole registry");
                        next = Next::Read { lost: None };
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "checking the fleet's history before watching again");
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
            }
            Next::Read { lost } => {
                match read_checked(&etcd, &keys, &applied, lost.as_ref()).await {
                    Ok((followed, revision)) => {
                        m.full_reads.inc();
                        if std::mem::take(&mut failing) {
                            tracing::info!(etcd_revision = revision, "read the fleet's registry");
                        }
                        if out.send(followed).await.is_err() {
                            return;
                        }
                        // Watched from the revision after the read.
                        revision + 1
                    }
                    Err(e) => {
                        if !failing {
                            tracing::warn!(error = %e, "cannot read the fleet's registry; trying again every 0.5 s");
                            failing = true;
                        }
                        tokio::time::sleep(RETRY).await;
                        next = Next::Read { lost };
                        continue;
                    }
                }
            }
        };
        let prefix = keys.registry();
        let end = range_end(&prefix);
        let mut stream = match etcd.watch(prefix, end, start).await {
            Ok((stream, _)) => stream,
            Err(EtcdError::Compacted(at)) => {
                tracing::info!(from = start, compacted = at, "the fleet's history was compacted past this sidecar's revision; reading the whole registry");
                next = Next::Read { lost: None };
                continue;
            }
            Err(e) => {
                tracing::debug!(error = %e, "opening the fleet watch");
                tokio::time::sleep(RETRY).await;
                next = Next::Resume;
                continue;
            }
        };
        next = Next::Resume;
        loop {
            let answer = tokio::select! {
                () = resync.notified() => {
                    next = Next::Read { lost: None };
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
            if answer.compact_revision > 0 {
                tracing::info!(compacted = answer.compact_revision, "the fleet's history was compacted past this sidecar's revision; reading the whole registry");
                next = Next::Read { lost: None };
                break;
            }
            if answer.canceled {
                m.watch_restarts.inc();
                break;
            }
            // An answer without events is a progress notice: nothing to hand on.
            for (revision, events) in by_revision(answer.events) {
                if out
                    .send(Followed::Events { revision, events })
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Why the history followed is gone, and what the writer had applied when that was
/// found: a finding about what the writer has since left behind (its own reset, taken
/// meanwhile, wrote etcd's new history) is not about the registry it serves.
#[derive(Clone, Debug)]
struct Lost {
    cause: String,
    against: AppliedMeta,
}

/// Reads the whole registry, and checks that the write of `meta` the writer applied is
/// in etcd's history (unless `lost` already says why it is not, about what is still
/// applied); returns what to hand on and the etcd revision read at.
async fn read_checked(
    etcd: &Etcd,
    keys: &Keys,
    applied: &watch::Receiver<AppliedMeta>,
    lost: Option<&Lost>,
) -> Result<(Followed, i64), crate::error::Error> {
    let (whole, revision, checked) = loop {
        let resets = applied.borrow().resets;
        let (whole, revision) = read_all(etcd, keys).await?;
        // Checked after the read: a write the writer applied since is newer than the
        // read, which the writer then leaves (it never goes back); but a reset taken
        // meanwhile may have left the history read, so that read is made again.
        let checked = applied.borrow().clone();
        if checked.resets == resets {
            break (whole, revision, checked);
        }
    };
    let lost = match still_lost(lost, &checked) {
        Some(cause) => Some(cause),
        None if checked.meta.mod_revision == 0 || checked.meta == whole.meta => None,
        None => match check(etcd, keys, &checked.meta).await {
            Ok(Found::Lost(cause)) => Some(cause),
            Ok(_) => None,
            Err(e) => {
                return Err(crate::error::Error::FleetUnavailable(format!(
                    "checking the fleet's history: {e}"
                )))
            }
        },
    };
    Ok((
        Followed::Whole {
            whole,
            checked,
            lost,
        },
        revision,
    ))
}

/// What etcd holds of `applied`, a write of `meta` this sidecar applied (mod revision
/// above 0).
pub async fn check(etcd: &Etcd, keys: &Keys, applied: &MetaAt) -> Result<Found, EtcdError> {
    let meta = |revision| RangeRequest {
        key: keys.meta(),
        revision,
        ..Default::default()
    };
    let now = etcd.range(meta(0)).await?;
    let at = now.header.as_ref().map_or(0, |h| h.revision);
    let Some(current) = now.kvs.first() else {
        return Ok(Found::Lost(
            "etcd holds no registry: its keys were deleted, or etcd was recreated empty".into(),
        ));
    };
    if current.mod_revision == applied.mod_revision && current.value == applied.value {
        return Ok(Found::Current(at));
    }
    if current.mod_revision <= applied.mod_revision {
        return Ok(Found::Lost(format!(
            "etcd's registry was last changed at etcd revision {}, not at {} as this sidecar \
             applied: etcd was restored from a snapshot, or recreated",
            current.mod_revision, applied.mod_revision
        )));
    }
    match etcd.range(meta(applied.mod_revision)).await {
        Ok(then) => match then.kvs.first() {
            Some(kv) if kv.mod_revision == applied.mod_revision && kv.value == applied.value => {
                Ok(Found::Behind)
            }
            _ => Ok(Found::Lost(format!(
                "etcd's registry at etcd revision {} is not the one this sidecar applied: etcd \
                 was recreated or restored from a snapshot",
                applied.mod_revision
            ))),
        },
        Err(EtcdError::Compacted(_)) => Ok(Found::Unknown),
        Err(e) => Err(e),
    }
}

/// The cause of `lost` if it was found about `checked`, what the writer applies now;
/// none if the writer applied anything since (that is checked instead).
fn still_lost(lost: Option<&Lost>, checked: &AppliedMeta) -> Option<String> {
    lost.filter(|lost| lost.against == *checked)
        .map(|lost| lost.cause.clone())
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
    fn a_loss_found_before_the_writer_moved_on_is_checked_again() {
        let at = |mod_revision, value: &[u8], resets| AppliedMeta {
            revision: 5,
            meta: MetaAt {
                mod_revision,
                value: value.to_vec(),
            },
            resets,
        };
        let before = at(6, b"four", 0);
        let lost = Lost {
            cause: "etcd's registry at etcd revision 6 is not the one applied".into(),
            against: before.clone(),
        };
        // Still what the writer applies: the finding stands.
        assert_eq!(
            still_lost(Some(&lost), &before).as_deref(),
            Some(lost.cause.as_str())
        );
        // The writer reset meanwhile (its own new history at the same etcd revision), or
        // applied a later change: the finding was about what it left.
        assert_eq!(still_lost(Some(&lost), &at(6, b"renamed", 1)), None);
        assert_eq!(still_lost(Some(&lost), &at(7, b"after", 0)), None);
        assert_eq!(still_lost(None, &before), None);
    }

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
