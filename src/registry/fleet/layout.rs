//! How the registry is laid out in etcd, and how it is read back: one key per command
//! (the same JSON record sled keeps) and one `meta` key that every change rewrites.
//!
//! ```text
//! <prefix>registry/meta        {"revision", "next_seq", "from", "txn"}
//! <prefix>registry/c/<name>    the command's record
//! <prefix>members/<id>         a live sidecar (lease-bound), see `members`
//! ```
//!
//! Because every change rewrites `meta`, comparing `meta`'s mod revision with the one
//! last read is a compare-and-swap on the whole registry, and the registry's order is
//! etcd's commit order. `from` is the registry revision the change was made on, so a
//! follower can tell that it applied every change in between.

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
}

/// The registry as the fleet holds it at one etcd revision.
#[derive(Clone, Debug, Default)]
pub struct FleetState {
    /// The registry.
    pub state: State,
    /// `meta`'s mod revision: what the next write compares against (0: no registry yet).
    pub meta_mod: i64,
    /// The etcd cluster it was read from (0: not known). A cluster recreated from
    /// nothing starts its revisions again, so they compare only within one cluster.
    pub cluster: u64,
}

/// What a transaction built by [`txn`] costs against etcd's limits.
#[derive(Clone, Copy, Debug)]
pub struct TxnSize {
    /// Operations in its success branch.
    pub ops: usize,
    /// Its encoded size in bytes.
    pub bytes: usize,
}

/// The compare-and-swap that takes the fleet from `before` to `next` by `writes`.
pub fn txn(
    keys: &Keys,
    before: &FleetState,
    next: &State,
    writes: &[Write],
    id: &str,
) -> (TxnRequest, TxnSize) {
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
    };
    success.push(RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key: keys.meta(),
            value: serde_json::to_vec(&meta).expect("meta serializes"),
            lease: 0,
        })),
    });
    let request = TxnRequest {
        compare: vec![meta_unchanged(keys, before.meta_mod)],
        success,
        failure: Vec::new(),
    };
    let size = TxnSize {
        ops: request.success.len(),
        bytes: prost::Message::encoded_len(&request),
    };
    (request, size)
}

/// The compare that the registry is still at `meta_mod` (0: no registry yet).
pub fn meta_unchanged(keys: &Keys, meta_mod: i64) -> Compare {
    Compare {
        result: compare::CompareResult::Equal as i32,
        target: compare::CompareTarget::Mod as i32,
        key: keys.meta(),
        target_union: Some(compare::TargetUnion::ModRevision(meta_mod)),
    }
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
            meta = Some((decode_meta(kv)?, kv.mod_revision));
        } else {
            commands.put(decode_record(kv)?);
        }
    }
    let Some((meta, meta_mod)) = meta else {
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
        meta_mod,
        cluster: 0,
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
                return Ok(Applied::Gap("the fleet's meta key was deleted".into()));
            }
            meta = Some((decode_meta(kv)?, kv.mod_revision));
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
    let Some((meta, meta_mod)) = meta else {
        return Ok(Applied::Gap(
            "a change under the registry's prefix did not rewrite meta".into(),
        ));
    };
    if meta.from != before.state.revision {
        return Ok(Applied::Gap(format!(
            "a change made on revision {} arrived while revision {} was applied",
            meta.from, before.state.revision
        )));
    }
    next.state.revision = meta.revision;
    next.state.next_seq = meta.next_seq;
    next.meta_mod = meta_mod;
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
