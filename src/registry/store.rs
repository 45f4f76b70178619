//! The registry on disk: the sled layout, opening the directory, loading the state and
//! writing a group of changes as one atomic batch.
//!
//! One sled tree: `c:<name>` holds a command's JSON record (its place in the order, spec,
//! body and source); `m:revision` and `m:next_seq` hold big-endian u64s.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::registry::snapshot::{Commands, Registered};
use crate::registry::state::{State, Write};
use crate::rules::spec::CommandName;

const COMMAND_PREFIX: &[u8] = b"c:";
const REVISION_KEY: &[u8] = b"m:revision";
const NEXT_SEQ_KEY: &[u8] = b"m:next_seq";

/// How to open the registry.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sled directory.
    pub data_dir: PathBuf,
    /// sled's page cache, in bytes (sled's own default is 1 GiB).
    pub cache_bytes: u64,
    /// Most commands the registry holds.
    pub max_commands: usize,
}

/// The data directory could not be opened; the service must not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot open data directory {}: {cause}", dir.display())]
pub struct OpenError {
    /// The directory.
    pub dir: PathBuf,
    /// Why, in words.
    pub cause: String,
}

/// Opens the sled store in `dir`; the error is one line for the operator.
pub(super) fn open(dir: &Path, cache_bytes: u64) -> Result<sled::Db, String> {
    let config = sled::Config::new().path(dir).cache_capacity(cache_bytes);
    // sled panics on some kinds of damage instead of returning an error; either way the
    // operator must get one clear line, and the data must be left as it is.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| config.open())) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(sled::Error::Io(e))) if e.to_string().contains("could not acquire lock") => {
            Err("it is in use by another running instance (its lock is held)".into())
        }
        Ok(Err(sled::Error::Io(e))) => Err(e.to_string()),
        Ok(Err(sled::Error::Corruption { .. })) => {
            Err("the store is corrupt; it was left untouched".into())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the store could not be read (sled panicked); it was left untouched".into()),
    }
}

/// Reads the whole registry from `db`.
pub(super) fn load(db: &sled::Db) -> Result<State, String> {
    let read_u64 = |key: &[u8]| -> Result<u64, String> {
        match db.get(key).map_err(|e| e.to_string())? {
            None => Ok(0),
            Some(v) => v
                .as_ref()
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| format!("the store is corrupt: {} is not a u64", show(key))),
        }
    };
    let revision = read_u64(REVISION_KEY)?;
    let next_seq = read_u64(NEXT_SEQ_KEY)?;
    let mut commands = Commands::default();
    for item in db.scan_prefix(COMMAND_PREFIX) {
        let (key, value) = item.map_err(|e| e.to_string())?;
        let record: Registered = serde_json::from_slice(&value).map_err(|e| {
            format!(
                "the store is corrupt: record {} is unreadable: {e}",
                show(&key)
            )
        })?;
        if record.seq >= next_seq {
            return Err(format!(
                "the store is corrupt: record {} has place {} beyond the next ({next_seq})",
                show(&key),
                record.seq
            ));
        }
        commands.put(record);
    }
    Ok(State {
        revision,
        next_seq,
        commands,
    })
}

/// The batch that takes the store from its last state to `state` by `writes`.
pub(super) fn batch(writes: &[Write], state: &State) -> sled::Batch {
    let mut batch = sled::Batch::default();
    for write in writes {
        match write {
            Write::Put(record) => batch.insert(command_key(&record.spec.name), encode(record)),
            Write::Remove(name) => batch.remove(command_key(name)),
        }
    }
    batch.insert(REVISION_KEY, &state.revision.to_be_bytes());
    batch.insert(NEXT_SEQ_KEY, &state.next_seq.to_be_bytes());
    batch
}

/// Classifies a sled error: a full disk is worth telling apart.
pub(super) fn error(err: sled::Error) -> Error {
    match &err {
        sled::Error::Io(io) if is_disk_full(io) => Error::DiskFull(io.to_string()),
        _ => Error::Storage(err.to_string()),
    }
}

/// Whether an I/O error means "no space left". sled re-creates the I/O errors it keeps
/// (losing the OS code, keeping the kind), so the kind is checked too.
fn is_disk_full(io: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    matches!(io.raw_os_error(), Some(ENOSPC | EDQUOT))
        || matches!(
            io.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        )
}

fn command_key(name: &CommandName) -> Vec<u8> {
    [COMMAND_PREFIX, name.as_str().as_bytes()].concat()
}

fn encode(record: &Registered) -> Vec<u8> {
    serde_json::to_vec(record).expect("records always serialize")
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}
