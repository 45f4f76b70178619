//! What must reach the disk, beyond what sled itself syncs, before a state sled holds
//! survives a power cut; see SECURITY.md, "What is synced when".
//!
//! sled's `flush` writes with `pwrite` and `sync_file_range`, which persists neither the
//! file's size nor anything after a power cut, and sled never syncs a directory. So:
//!
//! - after sled opens a directory (the first time, or again after a failed write), the
//!   files it may have created or written unsynced (`db`, `conf`, `blobs/*`) are synced,
//!   then the directories whose entries it may have changed (`blobs/`, the data
//!   directory: `conf`, `db`, `blobs` and the snapshot it renames at every open), then
//!   the data directory's parent (its own entry, if it was just created);
//! - after sled flushes a group, any blob file that appeared since the last sync is
//!   synced with `blobs/`, then `db` (`fdatasync`: its data and the size needed to read
//!   it). Nothing else changes between opens: sled writes snapshots only at open, and
//!   `conf` only when it creates it. sled's own periodic flush is off (see
//!   `store::open`), so `db` is synced only here, after the blobs it points at.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};

/// sled's data file, its configuration and its directory of large values.
const DB: &str = "db";
const CONF: &str = "conf";
const BLOBS: &str = "blobs";

/// A directory's entries as (name, inode): a rename over a name changes the inode.
type Listing = BTreeSet<(OsString, u64)>;

/// Our own handles on what sled writes, to sync after its writes.
#[derive(Debug)]
pub(super) struct Durable {
    /// sled's `db` file (our own handle: `fsync` acts on the file, whoever opened it).
    db: File,
    blobs: PathBuf,
    /// `blobs/` as last synced.
    synced_blobs: Listing,
}

impl Durable {
    /// Makes durable everything sled may have left unsynced while opening `dir`.
    pub(super) fn after_open(dir: &Path) -> io::Result<Self> {
        let db = File::open(dir.join(DB))?;
        db.sync_all()?;
        match File::open(dir.join(CONF)) {
            Ok(conf) => conf.sync_all()?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let blobs = dir.join(BLOBS);
        let listing = list(&blobs)?;
        for (name, _) in &listing {
            File::open(blobs.join(name))?.sync_all()?;
        }
        sync_dir(&blobs)?;
        sync_dir(dir)?;
        sync_parent(dir)?;
        Ok(Self {
            db,
            blobs,
            synced_blobs: listing,
        })
    }

    /// Makes a group that sled has just flushed durable: any new blob files with their
    /// entries first (one `readdir` tells; blobs are rare), then `db`'s data and size.
    /// Blobs first: `db`'s log points at them, and a durable pointer to a blob that is
    /// not is a store sled cannot read.
    pub(super) fn after_flush(&mut self) -> io::Result<()> {
        let now = list(&self.blobs)?;
        if now != self.synced_blobs {
            for (name, _) in now.difference(&self.synced_blobs) {
                match File::open(self.blobs.join(name)) {
                    Ok(blob) => blob.sync_data()?,
                    // sled already removed it (replaced by a newer one): nothing to keep.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            sync_dir(&self.blobs)?;
            self.synced_blobs = now;
        }
        self.db.sync_data()
    }
}

fn list(dir: &Path) -> io::Result<Listing> {
    std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| (e.file_name(), e.ino())))
        .collect()
}

/// Syncs a directory's entries (an `fsync` of the directory itself).
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Syncs the entry of `dir` in its parent.
pub(super) fn sync_parent(dir: &Path) -> io::Result<()> {
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => sync_dir(Path::new(".")),
    }
}

/// Creates `dir` and any missing ancestors, syncing each new entry into its parent, so
/// that a directory the service made does not vanish at a power cut with what it holds.
pub(super) fn create_dir_all(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all(parent)?;
    }
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
        Ok(()) => sync_parent(dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_blob_files_are_seen_and_remembered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(BLOBS)).unwrap();
        std::fs::write(dir.path().join(DB), b"").unwrap();
        let mut durable = Durable::after_open(dir.path()).unwrap();
        assert!(durable.synced_blobs.is_empty());
        std::fs::write(dir.path().join(BLOBS).join("42"), b"large").unwrap();
        durable.after_flush().unwrap();
        let names: Vec<_> = durable
            .synced_blobs
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        assert_eq!(names, vec![OsString::from("42")]);
    }

    #[test]
    fn nested_directories_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        create_dir_all(&deep).unwrap();
        assert!(deep.is_dir());
        create_dir_all(&deep).unwrap();
        std::fs::write(dir.path().join("file"), b"").unwrap();
        assert!(create_dir_all(&dir.path().join("file")).is_err());
    }
}
