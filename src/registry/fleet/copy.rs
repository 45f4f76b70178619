//! The marker that says a data directory's registry is a copy of a fleet's, applied from
//! etcd: only such a copy may be served while etcd cannot be read. It names the fleet's
//! prefix, is written (and synced) once the first copy is durable, and is removed before
//! sled mode changes the directory, so a registry written by hand is never taken for the
//! fleet's.

use std::io::Write as _;
use std::path::Path;

/// The marker's file name in the data directory.
pub const FILE_NAME: &str = "fleet-copy";

/// The fleet prefix the directory holds a copy of, if any.
pub fn read(dir: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(dir.join(FILE_NAME)) {
        Ok(prefix) => Ok(Some(prefix.trim_end_matches('\n').to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cannot read {}: {e}",
            dir.join(FILE_NAME).display()
        )),
    }
}

/// Marks the directory as holding a copy of the fleet under `prefix`: written to a
/// temporary file, synced, renamed into place, and the directory synced.
pub fn write(dir: &Path, prefix: &str) -> std::io::Result<()> {
    let temporary = dir.join(format!("{FILE_NAME}.new"));
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(format!("{prefix}\n").as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, dir.join(FILE_NAME))?;
    std::fs::File::open(dir)?.sync_all()
}

/// Removes the marker (and syncs the directory) if it is there.
pub fn remove(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(FILE_NAME)) {
        Ok(()) => std::fs::File::open(dir)?.sync_all(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_its_prefix_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        write(dir.path(), "/a2a-commands/").unwrap();
        assert_eq!(read(dir.path()).unwrap().as_deref(), Some("/a2a-commands/"));
        remove(dir.path()).unwrap();
        remove(dir.path()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
    }
}
