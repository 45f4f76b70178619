//! The acknowledged-state record: a small file beside sled, independent of it, that says
//! which registry states the service may have acknowledged. sled's recovery cannot tell
//! a damaged file from a torn tail and would serve an older registry; comparing what it
//! loads with this record turns that into a refusal to start.
//!
//! The file holds two fixed-size slots, written alternately in place (like a
//! double-buffered superblock), each with its own CRC-32. Before a group of changes is
//! written to sled, the next slot is written and synced with the fingerprint of the
//! state before the group and after it. Whatever happens next (a crash, a full disk, a
//! kill), sled holds one of those two states, so at open the store must match one of
//! them. Once sled has flushed the group, and before it is acknowledged, the other slot
//! is written with the new state alone: from then on a store holding the older state
//! lost an acknowledged group, and is refused. A torn slot fails its checksum and the
//! other one is used: either the last confirmation (the torn slot's group never reached
//! sled, which is written only after the slot is synced) or the group's own record
//! (sled holds one of its two states).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write as _};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::registry::state::State;

/// The record's file name inside the data directory.
pub const FILE_NAME: &str = "acknowledged";

/// Where the first record is written before it is renamed into place; one left by a
/// power cut during a first start is not part of the store and is written over.
pub const TEMPORARY_NAME: &str = "acknowledged.new";

const MAGIC: &[u8; 8] = b"A2ACACK1";
const SLOT: usize = 96;
/// Bytes of a slot covered by its checksum; the CRC follows them.
const BODY: usize = 88;

/// What identifies a registry state: its revision, its next place, and the sum of its
/// records' digests (see `snapshot::Commands`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// The revision.
    pub revision: u64,
    /// The place the next new command takes.
    pub next_seq: u64,
    /// The sum of the records' digests.
    pub sum: u128,
}

impl Fingerprint {
    /// The fingerprint of `state`.
    pub fn of(state: &State) -> Self {
        Self {
            revision: state.revision,
            next_seq: state.next_seq,
            sum: state.commands.digest_sum(),
        }
    }

    fn write_to(self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.revision.to_be_bytes());
        out[8..16].copy_from_slice(&self.next_seq.to_be_bytes());
        out[16..32].copy_from_slice(&self.sum.to_be_bytes());
    }

    fn read_from(bytes: &[u8]) -> Self {
        let u64_at = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Self {
            revision: u64_at(0),
            next_seq: u64_at(8),
            sum: u128::from_be_bytes(bytes[16..32].try_into().expect("16 bytes")),
        }
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "revision {} (digest {:032x})", self.revision, self.sum)
    }
}

/// The newest valid slot: the states the store may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sealed {
    counter: u64,
    /// The state before the last group written (acknowledged).
    pub before: Fingerprint,
    /// The state after it (acknowledged if sled got it).
    pub after: Fingerprint,
}

impl Sealed {
    /// Whether a store holding `held` agrees with the record; the error says how not.
    pub fn check(&self, held: Fingerprint) -> Result<(), String> {
        if held == self.after || held == self.before {
            return Ok(());
        }
        let acknowledged = self.after;
        Err(if held.revision == acknowledged.revision {
            format!(
                "revision {} acknowledged, the store holds revision {} with other contents \
                 (digest {:032x}, acknowledged {:032x})",
                acknowledged.revision, held.revision, held.sum, acknowledged.sum
            )
        } else {
            format!(
                "revision {} acknowledged, the store holds revision {}",
                acknowledged.revision, held.revision
            )
        })
    }

    fn encode(&self) -> [u8; SLOT] {
        let mut slot = [0u8; SLOT];
        slot[..8].copy_from_slice(MAGIC);
        slot[8..16].copy_from_slice(&self.counter.to_be_bytes());
        self.before.write_to(&mut slot[16..48]);
        self.after.write_to(&mut slot[48..80]);
        // 80..88 reserved (zero).
        let crc = crc32fast::hash(&slot[..BODY]);
        slot[BODY..BODY + 4].copy_from_slice(&crc.to_be_bytes());
        slot
    }

    fn decode(slot: &[u8]) -> Option<Self> {
        let crc = u32::from_be_bytes(slot[BODY..BODY + 4].try_into().ok()?);
        if &slot[..8] != MAGIC || crc32fast::hash(&slot[..BODY]) != crc {
            return None;
        }
        Some(Self {
            counter: u64::from_be_bytes(slot[8..16].try_into().ok()?),
            before: Fingerprint::read_from(&slot[16..48]),
            after: Fingerprint::read_from(&slot[48..80]),
        })
    }
}

/// Reads the record in `dir`: `None` when there is none; an error when it is damaged.
pub fn read(dir: &Path) -> Result<Option<Sealed>, Unreadable> {
    let path = dir.join(FILE_NAME);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreadable::Io(format!("cannot read {FILE_NAME}: {e}"))),
    };
    let mut bytes = Vec::with_capacity(2 * SLOT);
    file.take(2 * SLOT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Unreadable::Io(format!("cannot read {FILE_NAME}: {e}")))?;
    if bytes.len() != 2 * SLOT {
        return Err(Unreadable::Damaged(format!(
            "the acknowledged-state record {FILE_NAME} is damaged ({} bytes, expected {})",
            bytes.len(),
            2 * SLOT
        )));
    }
    let newest = [&bytes[..SLOT], &bytes[SLOT..]]
        .into_iter()
        .filter_map(Sealed::decode)
        .max_by_key(|s| s.counter);
    match newest {
        Some(sealed) => Ok(Some(sealed)),
        None => Err(Unreadable::Damaged(format!(
            "the acknowledged-state record {FILE_NAME} is damaged (no slot passes its checksum)"
        ))),
    }
}

/// Why the record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// The file could not be read at all.
    #[error("{0}")]
    Io(String),
    /// It was read, and is not a record.
    #[error("{0}")]
    Damaged(String),
}

/// Creates the record for an empty store, durably (written aside, synced, renamed, and
/// the directory synced), before sled creates anything.
pub fn create(dir: &Path) -> Result<Sealed, String> {
    let empty = Fingerprint {
        revision: 0,
        next_seq: 0,
        sum: 0,
    };
    let sealed = Sealed {
        counter: 0,
        before: empty,
        after: empty,
    };
    let mut bytes = [0u8; 2 * SLOT];
    bytes[..SLOT].copy_from_slice(&sealed.encode());
    // The second slot stays invalid (zeros) until the first group writes it.
    let temporary = dir.join(TEMPORARY_NAME);
    let fail = |e: std::io::Error| format!("cannot create {FILE_NAME}: {e}");
    let mut file = File::create(&temporary).map_err(fail)?;
    file.write_all(&bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&temporary, dir.join(FILE_NAME)).map_err(fail)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(fail)?;
    Ok(sealed)
}

/// The record, open for writing.
#[derive(Debug)]
pub struct Seal {
    file: File,
    last: Sealed,
}

impl Seal {
    /// Opens the record in `dir` to continue after `last`.
    pub fn open(dir: &Path, last: Sealed) -> Result<Self, String> {
        let file = OpenOptions::new()
            .write(true)
            .open(dir.join(FILE_NAME))
            .map_err(|e| format!("cannot open {FILE_NAME} for writing: {e}"))?;
        Ok(Self { file, last })
    }

    /// The last record written (or read at open).
    pub fn last(&self) -> Sealed {
        self.last
    }

    /// Records that the store is about to go from `before` to `after` (or, with both the
    /// same, that it holds that state); durable when it returns. Writes in place over
    /// the older slot, so a torn write leaves the newer.
    pub fn write(&mut self, before: Fingerprint, after: Fingerprint) -> std::io::Result<()> {
        let next = Sealed {
            counter: self.last.counter + 1,
            before,
            after,
        };
        let offset = (next.counter % 2) * SLOT as u64;
        self.file.write_all_at(&next.encode(), offset)?;
        self.file.sync_data()?;
        self.last = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(revision: u64) -> Fingerprint {
        Fingerprint {
            revision,
            next_seq: revision + 1,
            sum: u128::from(revision) * 7919,
        }
    }

    #[test]
    fn the_newest_valid_slot_wins_and_a_torn_one_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let created = create(dir.path()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(created));
        let mut seal = Seal::open(dir.path(), created).unwrap();
        seal.write(print(0), print(1)).unwrap();
        seal.write(print(1), print(2)).unwrap();
        let newest = read(dir.path()).unwrap().unwrap();
        assert_eq!((newest.before, newest.after), (print(1), print(2)));
        assert!(newest.check(print(2)).is_ok() && newest.check(print(1)).is_ok());
        assert_eq!(
            newest.check(print(0)).unwrap_err(),
            "revision 2 acknowledged, the store holds revision 0"
        );
        let other = Fingerprint { sum: 1, ..print(2) };
        assert!(newest.check(other).unwrap_err().contains("other contents"));

        // Tear the newest slot (counter 2, at offset 0): the older one is used.
        let path = dir.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let older = read(dir.path()).unwrap().unwrap();
        assert_eq!((older.before, older.after), (print(0), print(1)));
        // Both torn: damaged.
        bytes[SLOT + 20] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let damaged = |err| matches!(&err, Unreadable::Damaged(why) if why.contains("damaged"));
        assert!(damaged(read(dir.path()).unwrap_err()));
        std::fs::write(&path, &bytes[..100]).unwrap();
        let err = read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("100 bytes") && damaged(err));
    }
}
