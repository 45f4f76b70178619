//! How the registry is laid out in etcd, and how it is read back: one key per command
//! (the same JSON record sled keeps) and one `meta` key that every change rewrites.
//!
//! ```text
//! <prefix>registry/meta        {"revision", "next_seq", "from", "txn", "incarnation"}
//! <prefix>registry/c/<name>    the command's record
//! <prefix>members/<id>         a live sidecar (lease-bound), see `members`
//! ```
//!
//! Because every change rewrites `meta`, comparing `meta`'s mod revision with the one
//! last read is a compare-and-swap on the whole registry, and the registry's order is
//! etcd's commit order. `from` is the registry revision the change was made on, so a
//! follower can tell that it applied every change in between. `incarnation` names the
//! history: a random id made with the registry's first write, carried by every later
//! one, and made anew by the first sidecar that finds etcd's history is not the one it
//! followed (etcd recreated, restored from a snapshot, or the keys deleted by hand), so
//! that every other sidecar finds out too. etcd's own cluster id and revisions cannot
//! tell: a cluster recreated with the same members has the same id, and its revisions
//! soon pass the old ones.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::pb::etcd::{
    compare, event::EventType, request_op, Compare, DeleteRangeRequest, Event, KeyValue,
    PutRequest, RangeRequest, RequestOp, TxnRequest,
};
use crate::registry::snapshot::{Commands, Registered};
use crate::registry::state::{State, Write};

/// The keys of one fleet, under its prefix.
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys under `prefix` (a `/` is added when it does not end with one).
    pub fn new(prefix: &str) -> Self {
        let mut prefix = prefix.to_owned();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Self { prefix }
    }

    /// The prefix, ending in `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The first key of the registry's range.
    pub fn registry(&self) -> Vec<u8> {
        format!("{}registry/", self.prefix).into_bytes()
    }

    /// `meta`'s key.
    pub fn meta(&self) -> Vec<u8> {
        format!("{}registry/meta", self.prefix).into_bytes()
    }

    /// A command's key.
    pub fn command(&self, name: &str) -> Vec<u8> {
        format!("{}registry/c/{name}", self.prefix).into_bytes()
    }

    /// The first key of the members' range.
    pub fn members(&self) -> Vec<u8> {
        format!("{}members/", self.prefix).into_bytes()
    }

    /// One member's key.
    pub fn member(&self, id: &str) -> Vec<u8> {
        format!("{}members/{id}", self.prefix).into_bytes()
    }
}

/// The end of the range of every key starting with `prefix` (etcd's convention: the
/// prefix with its last byte incremented).
pub fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// `meta`'s value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// The registry's revision after the change.
    pub revision: u64,
    /// The place the next new command takes.
    pub next_seq: u64,
    /// The registry's revision the change was made on.
    pub from: u64,
    /// The transaction's id, so a writer whose answer was lost can find its own.
    pub txn: String,
    /// The history's name (empty: written by a version that did not name it).
    #[serde(default)]
    pub incarnation: String,
}

/// One write of `meta` as etcd holds it: its mod revision and its bytes (0 and none: no
/// registry yet). The bytes name the transaction that wrote them, so no two histories
/// share both, whatever their revisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaAt {
    /// `meta`'s mod revision.
    pub mod_revision: i64,
    /// `meta`'s value.
    pub value: Vec<u8>,
}

impl MetaAt {
    /// `meta` as `kv` holds it.
    pub fn of(kv: &KeyValue) -> Self {
        Self {
            mod_revision: kv.mod_revision,
            value: kv.value.clone(),
        }
    }
}

/// What a sidecar has applied, as the member key and the follower's checks need it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppliedMeta {
    /// The registry revision.
    pub revision: u64,
    /// The write of `meta` it was read or made at.
    pub meta: MetaAt,
    /// The resets it took so far (etcd's history found not to be the one followed): a
    /// read checked before one is about the history before it.
    pub resets: u64,
}

/// The registry as the fleet holds it at one etcd revision.
#[derive(Clone, Debug, Default)]
pub struct FleetState {
    /// The registry.
    pub state: State,
    /// The write of `meta` it is at: what the next write compares against.
    pub meta: MetaAt,
    /// The history's name, from `meta` (empty: none yet).
    pub incarnation: String,
}

/// What a transaction built by [`txn`] costs against etcd's limits.
#[derive(Clone, Copy, Debug)]
pub struct TxnSize {
    /// Operations in its success branch.
    pub ops: usize,
    /// Its encoded size in bytes.
    pub bytes: usize,
}

/// The compare-and-swap that takes the fleet from `before` to `next` by `writes`, in the
/// history named `incarnation`; also `meta`'s new value.
pub fn txn(
    keys: &Keys,
    before: &FleetState,
    next: &State,
    writes: &[Write],
    id: &str,
    incarnation: &str,
) -> (TxnRequest, TxnSize, Vec<u8>) {
    let mut success = Vec::with_capacity(writes.len() + 1);
    for write in writes {
        let op = match write {
            Write::Put(record) => request_op::Request::RequestPut(PutRequest {
                key: keys.command(record.spec.name.as_str()),
                value: record.stored_form(),
                lease: 0,
            }),
            Write::Remove(name) => request_op::Request::RequestDeleteRange(DeleteRangeRequest {
                key: keys.command(name.as_str()),
                range_end: Vec::new(),
            }),
        };
        success.push(RequestOp { request: Some(op) });
    }
    // etcd refuses a transaction that writes one key twice: only each key's last write
    // counts (a group may put and then remove the same command).
    dedup_last(&mut success);
    let meta = Meta {
        revision: next.revision,
        next_seq: next.next_seq,
        from: before.state.revision,
        txn: id.to_owned(),
        incarnation: incarnation.to_owned(),
    };
    let value = serde_json::to_vec(&meta).expect("meta serializes");
    success.push(RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key: keys.meta(),
            value: value.clone(),
            lease: 0,
        })),
    });
    let request = TxnRequest {
        compare: meta_unchanged(keys, &before.meta),
        success,
        failure: Vec::new(),
    };
    let size = TxnSize {
        ops: request.success.len(),
        bytes: prost::Message::encoded_len(&request),
    };
    (request, size, value)
}

/// The compares that the registry is still at `meta`: its mod revision, and its value
/// too (an etcd recreated or restored may hold another write of `meta` at the same
/// revision). With no registry yet, only that `meta` is absent (mod revision 0).
pub fn meta_unchanged(keys: &Keys, meta: &MetaAt) -> Vec<Compare> {
    let mut compares = vec![Compare {
        result: compare::CompareResult::Equal as i32,
        target: compare::CompareTarget::Mod as i32,
        key: keys.meta(),
        target_union: Some(compare::TargetUnion::ModRevision(meta.mod_revision)),
    }];
    if meta.mod_revision != 0 {
        compares.push(Compare {
            result: compare::CompareResult::Equal as i32,
            target: compare::CompareTarget::Value as i32,
            key: keys.meta(),
            target_union: Some(compare::TargetUnion::Value(meta.value.clone())),
        });
    }
    compares
}

fn op_key(op: &RequestOp) -> &[u8] {
    match &op.request {
        Some(request_op::Request::RequestPut(put)) => &put.key,
        Some(request_op::Request::RequestDeleteRange(delete)) => &delete.key,
        _ => &[],
    }
}

/// Keeps only the last operation on each key, in the order of those last operations.
fn dedup_last(ops: &mut Vec<RequestOp>) {
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<RequestOp> = Vec::with_capacity(ops.len());
    for op in ops.drain(..).rev() {
        if seen.insert(op_key(&op).to_vec()) {
            kept.push(op);
        }
    }
    kept.reverse();
    *ops = kept;
}

/// A page of the registry's range at `revision` (0: the newest), from `from` on.
pub fn page(keys: &Keys, from: Vec<u8>, revision: i64, limit: i64) -> RangeRequest {
    RangeRequest {
        key: from,
        range_end: range_end(&keys.registry()),
        limit,
        revision,
        ..Default::default()
    }
}

/// Builds the registry from every key of its range, read at one revision.
pub fn decode_all(keys: &Keys, kvs: &[KeyValue]) -> Result<FleetState, Error> {
    let meta_key = keys.meta();
    let mut meta = None;
    let mut commands = Commands::default();
    for kv in kvs {
        if kv.key == meta_key {
            meta = Some((decode_meta(kv)?, MetaAt::of(kv)));
        } else {
            commands.put(decode_record(kv)?);
        }
    }
    let Some((meta, at)) = meta else {
        if commands.len() > 0 {
            return Err(corrupt(format!(
                "{} commands under {} but no meta key",
                commands.len(),
                keys.prefix()
            )));
        }
        return Ok(FleetState::default());
    };
    let state = State {
        revision: meta.revision,
        next_seq: meta.next_seq,
        commands,
    };
    check_places(&state)?;
    Ok(FleetState {
        state,
        meta: at,
        incarnation: meta.incarnation,
    })
}

fn check_places(state: &State) -> Result<(), Error> {
    if let Some(beyond) = state.commands.iter().find(|c| c.seq >= state.next_seq) {
        return Err(corrupt(format!(
            "command /{} has place {} beyond the next ({})",
            beyond.spec.name, beyond.seq, state.next_seq
        )));
    }
    if state.commands.by_seq.len() != state.commands.len() {
        return Err(corrupt("two commands hold one place".into()));
    }
    Ok(())
}

/// What applying one revision's events found.
#[derive(Debug)]
pub enum Applied {
    /// The registry after the revision, and the writes that take a copy there.
    Next(FleetState, Vec<Write>),
    /// The events did not follow the registry applied (a change was missed): read it
    /// all again.
    Gap(String),
    /// The change names the history otherwise: another sidecar found etcd's history is
    /// not the one followed (recreated or restored) and named it anew.
    Renamed(String),
    /// `meta` was deleted: the registry's keys are gone from etcd (deleted by hand).
    Deleted,
}

/// Applies the events of one etcd revision to `before`.
pub fn apply_events(keys: &Keys, before: &FleetState, events: &[Event]) -> Result<Applied, Error> {
    let meta_key = keys.meta();
    let mut next = before.clone();
    let mut meta = None;
    let mut writes = Vec::with_capacity(events.len());
    for event in events {
        let Some(kv) = &event.kv else { continue };
        if kv.key == meta_key {
            if event.r#type == EventType::Delete as i32 {
                return Ok(Applied::Deleted);
            }
            meta = Some((decode_meta(kv)?, MetaAt::of(kv)));
            continue;
        }
        if event.r#type == EventType::Delete as i32 {
            let name = kv
                .key
                .strip_prefix(keys.command("").as_slice())
                .map(String::from_utf8_lossy)
                .ok_or_else(|| corrupt(format!("unexpected key {}", show(&kv.key))))?;
            if let Some(old) = next.state.commands.remove(&name) {
                writes.push(Write::Remove(old.spec.name.clone()));
            }
        } else {
            // `put` frees the old place of a command that moves.
            writes.push(Write::Put(next.state.commands.put(decode_record(kv)?)));
        }
    }
    let Some((meta, at)) = meta else {
        return Ok(Applied::Gap(
            "a change under the registry's prefix did not rewrite meta".into(),
        ));
    };
    // A change by a version that does not name the history keeps the name it had.
    if !meta.incarnation.is_empty() && meta.incarnation != before.incarnation {
        if !before.incarnation.is_empty() {
            return Ok(Applied::Renamed(meta.incarnation));
        }
        next.incarnation = meta.incarnation.clone();
    }
    if meta.from != before.state.revision {
        return Ok(Applied::Gap(format!(
            "a change made on revision {} arrived while revision {} was applied",
            meta.from, before.state.revision
        )));
    }
    next.state.revision = meta.revision;
    next.state.next_seq = meta.next_seq;
    next.meta = at;
    check_places(&next.state)?;
    Ok(Applied::Next(next, writes))
}

/// `meta` from its key-value.
pub fn decode_meta(kv: &KeyValue) -> Result<Meta, Error> {
    serde_json::from_slice(&kv.value)
        .map_err(|e| corrupt(format!("the meta key {} is unreadable: {e}", show(&kv.key))))
}

fn decode_record(kv: &KeyValue) -> Result<Registered, Error> {
    serde_json::from_slice(&kv.value)
        .map_err(|e| corrupt(format!("record {} is unreadable: {e}", show(&kv.key))))
}

fn corrupt(what: String) -> Error {
    Error::Storage(format!("the fleet's registry in etcd is damaged: {what}"))
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_ends_after_every_key_that_starts_with_it() {
        assert_eq!(range_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(range_end(b"a\xff"), b"b".to_vec());
        assert_eq!(range_end(b"\xff"), vec![0]);
        assert_eq!(Keys::new("/x").registry(), b"/x/registry/".to_vec());
    }

    /// `meta` written at etcd revision `at` in the history `name`, on registry revision 3.
    fn meta_event(keys: &Keys, at: i64, name: &str) -> Event {
        let meta = Meta {
            revision: 3,
            next_seq: 0,
            from: 3,
            txn: format!("t{at}"),
            incarnation: name.into(),
        };
        Event {
            r#type: EventType::Put as i32,
            kv: Some(KeyValue {
                key: keys.meta(),
                value: serde_json::to_vec(&meta).unwrap(),
                mod_revision: at,
                ..Default::default()
            }),
            prev_kv: None,
        }
    }

    fn applied(name: &str) -> FleetState {
        FleetState {
            state: State {
                revision: 3,
                ..Default::default()
            },
            meta: MetaAt {
                mod_revision: 5,
                value: b"{}".to_vec(),
            },
            incarnation: name.into(),
        }
    }

    #[test]
    fn a_change_names_its_history_and_another_name_is_another_history() {
        let keys = Keys::new("/f/");
        let name_of = |applied: Applied| match applied {
            Applied::Next(next, _) => Ok(next.incarnation),
            Applied::Renamed(name) => Err(format!("renamed {name}")),
            other => Err(format!("{other:?}")),
        };
        let apply = |before: &str, event: &str| {
            name_of(apply_events(&keys, &applied(before), &[meta_event(&keys, 6, event)]).unwrap())
        };
        assert_eq!(apply("a", "a"), Ok("a".into()));
        assert_eq!(apply("a", "b"), Err("renamed b".into()));
        // A version that does not name the history keeps the name; the first name counts.
        assert_eq!(apply("a", ""), Ok("a".into()));
        assert_eq!(apply("", "b"), Ok("b".into()));
        // Deleting `meta` is the registry gone, not a gap.
        let mut deleted = meta_event(&keys, 6, "a");
        deleted.r#type = EventType::Delete as i32;
        let got = apply_events(&keys, &applied("a"), &[deleted]).unwrap();
        assert!(matches!(got, Applied::Deleted), "{got:?}");
    }

    #[test]
    fn a_write_compares_meta_s_value_too_once_there_is_one() {
        let keys = Keys::new("/f/");
        assert_eq!(meta_unchanged(&keys, &MetaAt::default()).len(), 1);
        let compares = meta_unchanged(&keys, &applied("a").meta);
        assert_eq!(compares.len(), 2);
        assert_eq!(
            compares[1].target_union,
            Some(compare::TargetUnion::Value(b"{}".to_vec()))
        );
        let (request, _, value) = txn(&keys, &applied("a"), &State::default(), &[], "id", "b");
        let meta: Meta = serde_json::from_slice(&value).unwrap();
        assert_eq!((meta.txn.as_str(), meta.incarnation.as_str()), ("id", "b"));
        assert_eq!(request.compare, compares);
    }

    #[test]
    fn only_the_last_write_of_a_key_is_sent() {
        let put = |key: &str, value: &str| RequestOp {
            request: Some(request_op::Request::RequestPut(PutRequest {
                key: key.into(),
                value: value.into(),
                lease: 0,
            })),
        };
        let mut ops = vec![put("a", "1"), put("b", "1"), put("a", "2")];
        dedup_last(&mut ops);
        let keys: Vec<_> = ops.iter().map(|op| op_key(op).to_vec()).collect();
        assert_eq!(keys, vec![b"b".to_vec(), b"a".to_vec()]);
    }
}
