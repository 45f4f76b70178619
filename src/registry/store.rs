//! The registry on disk: the sled layout, opening the directory (verified against the
//! acknowledged-state record, see [`seal`](crate::registry::seal)), loading the state and
//! writing a group of changes as one atomic batch.
//!
//! One sled tree: `c:<name>` holds a command's JSON record (its place in the order, spec,
//! body and source); `m:revision` and `m:next_seq` hold big-endian u64s. Beside sled's own
//! files the directory holds `acknowledged` (the record) and, only while a start checks
//! the store, `.open-check/` (a copy that sled opens first, so that the original is never
//! changed by sled's recovery unless it holds what was acknowledged).

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::registry::durable::{self, Durable};
use crate::registry::fleet;
use crate::registry::seal::{self, Fingerprint, Seal};
use crate::registry::snapshot::{Commands, Registered};
use crate::registry::state::{State, Write};
use crate::rules::spec::CommandName;

/// The copy a start opens first; ours alone, so a leftover from a killed start is removed.
const CHECK_DIR: &str = ".open-check";

/// The folder of the records kept beside the registry (see `records`): a database of
/// its own, never part of the registry's files.
pub(super) const RECORDS_DIR: &str = "records";

/// Where fleet mode sets a damaged copy aside, inside the data directory (`set_aside`).
const ASIDE_PREFIX: &str = "damaged-";

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

/// The store open for serving: sled, and our handles to sync what sled leaves unsynced.
#[derive(Debug)]
pub(super) struct Served {
    db: sled::Db,
    durable: Durable,
}

impl Served {
    /// Opens sled in `dir` and makes durable whatever opening it wrote.
    pub(super) fn open(dir: &Path, cache_bytes: u64) -> Result<Self, String> {
        let db = open(dir, cache_bytes)?;
        let durable = Durable::after_open(dir)
            .map_err(|e| format!("cannot sync what the store wrote at open: {e}"))?;
        Ok(Self { db, durable })
    }

    /// Writes `batch` atomically and returns once it survives a power cut: sled's flush,
    /// then the syncs sled does not do (see [`durable`]).
    pub(super) fn commit(&mut self, batch: sled::Batch) -> Result<(), Failed> {
        self.db
            .apply_batch(batch)
            .map_err(|e| Failed::Write(error(e)))?;
        self.db.flush().map_err(|e| Failed::Write(error(e)))?;
        self.durable
            .after_flush()
            .map_err(|e| Failed::Sync(io_error(&e)))
    }

    /// Reads the whole registry.
    pub(super) fn load(&self) -> Result<State, String> {
        load(&self.db)
    }

    /// Flushes before a clean stop (sled syncs on close too).
    pub(super) fn flush(&self) -> Result<(), Error> {
        self.db.flush().map(drop).map_err(error)
    }
}

/// Why a group did not become durable.
#[derive(Debug)]
pub(super) enum Failed {
    /// sled could not write it. Nothing claims it reached the disk, so closing sled and
    /// opening it again (and re-reading what it holds) may go on.
    Write(Error),
    /// A sync failed. The kernel may have dropped the data it held while still reading
    /// it back, and a later sync would not say so: nothing can be trusted to be on disk
    /// until a restart checks the store against what was acknowledged.
    Sync(Error),
}

/// Why a data directory was not opened for serving: one line for the operator.
#[derive(Debug)]
pub(super) struct Refused {
    /// What is wrong.
    pub(super) cause: String,
    /// Whether it is the content that failed its check (damaged, or not what was
    /// acknowledged), rather than a directory that cannot be used (in use, unreadable,
    /// full). Only such a store can be replaced from a copy kept elsewhere.
    pub(super) damaged: bool,
}

impl From<String> for Refused {
    fn from(cause: String) -> Self {
        Self {
            cause,
            damaged: false,
        }
    }
}

impl Refused {
    fn damaged(cause: String) -> Self {
        Self {
            cause,
            damaged: true,
        }
    }
}

/// Opens the store in `dir` for serving: the directory is created if missing (and its
/// entry synced); a store whose content is not what the record says was acknowledged
/// (or with no record, or that sled cannot read) is refused with one line, and left
/// byte for byte as it was.
pub(super) fn open_verified(
    dir: &Path,
    cache_bytes: u64,
) -> Result<(Served, State, Seal), Refused> {
    durable::create_dir_all(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory => {
            format!("{e}: the path exists and is not a directory; give --data-dir a directory")
        }
        _ => e.to_string(),
    })?;
    let check_dir = dir.join(CHECK_DIR);
    remove_if_present(&check_dir)?;
    refuse_if_locked(dir)?;
    let has_store = !sled_files(dir)?.is_empty();
    let sealed = match seal::read(dir) {
        Ok(Some(sealed)) => sealed,
        Ok(None) if !has_store => seal::create(dir)?,
        Ok(None) => {
            return Err(Refused::damaged(format!(
                "it holds a store but no acknowledged-state record ({}), so what it holds \
                 cannot be verified; it was left untouched (see README, \"Recovering a data \
                 directory\")",
                seal::FILE_NAME
            )))
        }
        Err(seal::Unreadable::Io(cause)) => return Err(cause.into()),
        Err(seal::Unreadable::Damaged(cause)) => return Err(Refused::damaged(cause)),
    };
    if !has_store && sealed.after != Fingerprint::of(&State::default()) {
        // sled would create an empty store here, which is not what was acknowledged.
        return Err(Refused::damaged(format!(
            "it holds no store, but its record ({}) says {} was acknowledged; it was left \
             untouched (see README, \"Recovering a data directory\")",
            seal::FILE_NAME,
            sealed.after
        )));
    }
    if has_store {
        // sled's recovery may rewrite what it opens: open a copy first, and the original
        // only once the copy holds what was acknowledged.
        let copied = copy_store(dir, &check_dir);
        let checked = copied.as_ref().map_err(Clone::clone).and_then(|()| {
            let db = open(&check_dir, cache_bytes)?;
            let state = load(&db);
            close(db);
            sealed.check(Fingerprint::of(&state?))
        });
        // Whatever happened, the copy goes: the directory is left as it was found.
        let removed = remove_if_present(&check_dir);
        if let Err(cause) = checked {
            let cause = format!("{cause}; it was left untouched");
            // A copy that could not be made says nothing of the store.
            return Err(match copied {
                Ok(()) => Refused::damaged(cause),
                Err(_) => cause.into(),
            });
        }
        removed?;
    }
    remove_stale_snapshots(dir)?;
    let served = Served::open(dir, cache_bytes)?;
    let state = served.load().map_err(Refused::damaged)?;
    sealed
        .check(Fingerprint::of(&state))
        .map_err(Refused::damaged)?;
    let seal = Seal::open(dir, sealed)?;
    Ok((served, state, seal))
}

/// Moves the store out of the way (sled's files, the record and the fleet marker) into
/// a new folder `damaged-<unix seconds>` inside `dir`, never deleting anything; returns
/// that folder. For fleet mode, whose local store is a copy of what etcd holds.
pub(super) fn set_aside(dir: &Path) -> Result<PathBuf, String> {
    let aside = aside_path(dir, "");
    durable::create_dir_all(&aside).map_err(|e| format!("cannot make {}: {e}", aside.display()))?;
    let mut moving = sled_files(dir)?;
    for ours in [seal::FILE_NAME, fleet::copy::FILE_NAME] {
        if dir.join(ours).exists() {
            moving.push(dir.join(ours));
        }
    }
    for path in moving {
        let name = path.file_name().expect("a file name");
        std::fs::rename(&path, aside.join(name))
            .map_err(|e| format!("cannot move {} aside: {e}", path.display()))?;
    }
    std::fs::File::open(&aside)
        .and_then(|d| d.sync_all())
        .and_then(|()| std::fs::File::open(dir))
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", aside.display()))?;
    Ok(aside)
}

/// A free name in `dir` for something damaged set aside: `damaged-<what><unix
/// seconds>`, with `-<n>` added while the name is taken (a name the store's listing
/// passes over).
pub(super) fn aside_path(dir: &Path, what: &str) -> PathBuf {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (0..)
        .map(|n| match n {
            0 => dir.join(format!("{ASIDE_PREFIX}{what}{seconds}")),
            n => dir.join(format!("{ASIDE_PREFIX}{what}{seconds}-{n}")),
        })
        .find(|path| !path.exists())
        .expect("a free name")
}

/// sled's files in `dir` (what is there besides the record and our copy).
fn sled_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let marker = format!("{}.new", fleet::copy::FILE_NAME);
        let ours = [
            seal::FILE_NAME,
            seal::TEMPORARY_NAME,
            CHECK_DIR,
            fleet::copy::FILE_NAME,
            &marker,
            RECORDS_DIR,
        ];
        if !ours.contains(&name.as_ref())
            && !is_stale_snapshot(&name)
            && !name.starts_with(ASIDE_PREFIX)
        {
            out.push(entry.path());
        }
    }
    Ok(out)
}

/// A snapshot sled began and never finished: it is renamed when complete, so one that
/// still has this name never is, and sled would take it for the newest snapshot.
fn is_stale_snapshot(name: &str) -> bool {
    name.starts_with("snap.") && name.ends_with(".generating")
}

fn remove_stale_snapshots(dir: &Path) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        if is_stale_snapshot(&entry.file_name().to_string_lossy()) {
            std::fs::remove_file(entry.path()).map_err(|e| {
                format!(
                    "cannot remove the unfinished snapshot {:?}: {e}",
                    entry.file_name()
                )
            })?;
            tracing::info!(file = ?entry.file_name(), "removed an unfinished sled snapshot");
        }
    }
    Ok(())
}

/// Copies sled's files (not the record, not unfinished snapshots) into `to`.
fn copy_store(dir: &Path, to: &Path) -> Result<(), String> {
    fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy_tree(&entry.path(), &target)?;
            } else {
                std::fs::copy(entry.path(), target)?;
            }
        }
        Ok(())
    }
    std::fs::create_dir(to).map_err(|e| format!("cannot make the copy to check: {e}"))?;
    for path in sled_files(dir)? {
        let target = to.join(path.file_name().expect("a file name"));
        let copied = if path.is_dir() {
            copy_tree(&path, &target)
        } else {
            std::fs::copy(&path, &target).map(drop)
        };
        copied.map_err(|e| format!("cannot copy the store to check it: {e}"))?;
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// sled locks its `db` file while open; another instance holding it must be told apart
/// from damage before anything is copied or compared.
fn refuse_if_locked(dir: &Path) -> Result<(), String> {
    let Ok(file) = std::fs::File::open(dir.join("db")) else {
        return Ok(());
    };
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err("it is in use by another running instance (its lock is held)".into())
        }
        Err(std::fs::TryLockError::Error(e)) => Err(format!("cannot check its lock: {e}")),
    }
}

/// Waits, at most `limit`, until nothing holds the lock of the store in `dir`; false if
/// something still does. sled can finish work on threads of its own after its last
/// handle is dropped, holding the lock until they end; a caller told the store is
/// closed must be able to open it again at once.
pub(super) fn wait_unlocked(dir: &Path, limit: std::time::Duration) -> bool {
    let started = std::time::Instant::now();
    loop {
        if refuse_if_locked(dir).is_ok() {
            return true;
        }
        if started.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Opens the sled store in `dir`; the error is one line for the operator.
pub(super) fn open(dir: &Path, cache_bytes: u64) -> Result<sled::Db, String> {
    // No periodic flush: the writer flushes and syncs every group itself, and sled's
    // flusher would sync `db` at moments of its own, possibly before the blobs `db`
    // points at (see `durable`).
    let config = sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .flush_every_ms(None);
    // sled panics on some kinds of damage instead of returning an error; either way the
    // operator must get one clear line (not a panic message and a backtrace before it),
    // and the data must be left as it is.
    guarded(|| match config.open() {
        Ok(db) => Ok(db),
        Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => {
            Err("it is in use by another running instance (its lock is held)".into())
        }
        Err(sled::Error::Io(e)) => Err(e.to_string()),
        Err(e) => Err(read_error(e)),
    })
}

thread_local! {
    /// Set while this thread opens a store: a panic then is caught and reported as one
    /// line, so the panic hook stays silent.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A panic hook.
type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync>;

/// `previous`, except for panics of a thread inside [`quietly`].
fn silent_while_quiet(previous: Hook) -> Hook {
    Box::new(move |info| {
        if !QUIET.with(std::cell::Cell::get) {
            previous(info);
        }
    })
}

/// Runs `f` with this thread's panics kept out of stderr (the hook that does so is
/// installed once, around whatever hook was there).
fn quietly<T>(f: impl FnOnce() -> T) -> T {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| std::panic::set_hook(silent_while_quiet(std::panic::take_hook())));
    with_quiet_flag(f)
}

/// Runs `f` with this thread marked quiet (see [`silent_while_quiet`]).
fn with_quiet_flag<T>(f: impl FnOnce() -> T) -> T {
    /// Clears the flag however `f` ends.
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(self.0));
        }
    }
    let _reset = Reset(QUIET.with(|q| q.replace(true)));
    f()
}

/// What a salvage recovered: the readable records in order, and what could not be read.
#[derive(Debug)]
pub struct Salvaged {
    /// The records sled still returns, in order.
    pub commands: Vec<Registered>,
    /// One line for each record or key that could not be read.
    pub problems: Vec<String>,
}

/// Reads whatever the store in `dir` still holds, for an operator recovering a damaged
/// directory: sled opens a copy in a temporary directory, so `dir` is never written,
/// and unreadable records are skipped and named rather than ending the read. The
/// acknowledged-state record is not consulted: this is what is there, not what was
/// acknowledged.
pub fn salvage(dir: &Path) -> Result<Salvaged, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if !sled_files(dir)?.iter().any(|f| f.ends_with("db")) {
        return Err(format!(
            "{} holds no store (no sled `db` file): nothing to salvage; is it the \
             --data-dir the service ran with?",
            dir.display()
        ));
    }
    let scratch = tempfile::tempdir().map_err(|e| format!("cannot make a temporary copy: {e}"))?;
    let copy = scratch.path().join("store");
    copy_store(dir, &copy)?;
    let db = open(&copy, 8 << 20)?;
    let mut problems = Vec::new();
    let mut commands = Vec::new();
    // What was read before sled panicked is kept; the panic is one more problem.
    let read = guarded(|| {
        for item in db.scan_prefix(COMMAND_PREFIX) {
            match item {
                Ok((key, value)) => match serde_json::from_slice::<Registered>(&value) {
                    Ok(record) => commands.push(record),
                    Err(e) => problems.push(format!("record {} is unreadable: {e}", show(&key))),
                },
                Err(e) => {
                    problems.push(format!("sled stopped reading: {}", read_error(e)));
                    break;
                }
            }
        }
        Ok(())
    });
    if let Err(e) = read {
        problems.push(format!("{e}; records after that point were not read"));
    }
    close(db);
    commands.sort_by_key(|c| c.seq);
    Ok(Salvaged { commands, problems })
}

/// Reads the whole registry from `db`. sled panics on some damage its open does not
/// notice (a node whose keys lie outside its bounds, found only while iterating), so
/// the read runs under the same guard as the open: one line, never a panic.
pub(super) fn load(db: &sled::Db) -> Result<State, String> {
    guarded(|| load_unguarded(db))
}

/// One line for an error sled gave while reading (its corruption error's text carries a
/// debug dump of where it looked and an empty backtrace).
fn read_error(err: sled::Error) -> String {
    match err {
        sled::Error::Corruption { .. } => "the store is corrupt (sled found damaged data)".into(),
        other => other.to_string(),
    }
}

/// Drops a store handle under the guard: sled's drop flushes, and after a panic inside
/// sled that may panic again.
fn close(db: sled::Db) {
    let _ = guarded(move || {
        drop(db);
        Ok(())
    });
}

/// Runs `read` (a read of a store that may be damaged) with a panic inside it caught
/// and kept off stderr, reported as one line.
pub(super) fn guarded<T>(read: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let result = quietly(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)));
    result.unwrap_or_else(|_| Err("the store could not be read (sled panicked)".into()))
}

fn load_unguarded(db: &sled::Db) -> Result<State, String> {
    let read_u64 = |key: &[u8]| -> Result<u64, String> {
        match db.get(key).map_err(read_error)? {
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
        let (key, value) = item.map_err(read_error)?;
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
            Write::Put(record) => {
                batch.insert(command_key(&record.spec.name), record.stored_form())
            }
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

/// Classifies an I/O error of our own files the same way.
pub(super) fn io_error(err: &std::io::Error) -> Error {
    if is_disk_full(err) {
        Error::DiskFull(err.to_string())
    } else {
        Error::Storage(err.to_string())
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

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn waiting_for_the_lock_ends_when_no_one_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        // No store at all: nothing to wait for.
        assert!(wait_unlocked(dir.path(), Duration::ZERO));
        let db = std::fs::File::create(dir.path().join("db")).unwrap();
        db.lock().unwrap();
        // Held (as sled holds it while open): not free, whatever the wait.
        assert!(!wait_unlocked(dir.path(), Duration::ZERO));
        db.unlock().unwrap();
        assert!(wait_unlocked(dir.path(), Duration::ZERO));
    }

    /// The threads whose panics reached the hook that was there before `quietly`'s.
    static REPORTED: Mutex<Vec<std::thread::ThreadId>> = Mutex::new(Vec::new());

    #[test]
    fn a_panic_while_opening_stays_off_stderr_and_others_do_not() {
        // A recorder stands in for the default hook (which prints the message and a
        // backtrace), wrapped as `quietly` wraps the hook it finds. The hook is the
        // process's: it is given back at once, so other tests' panics print again.
        let previous = std::panic::take_hook();
        std::panic::set_hook(silent_while_quiet(Box::new(|_| {
            REPORTED.lock().unwrap().push(std::thread::current().id());
        })));
        let me = std::thread::current().id();
        // Not `quietly`: its one-time hook must not wrap this test's recorder.
        let caught = with_quiet_flag(|| std::panic::catch_unwind(|| panic!("sled: corrupt")));
        let silent = !REPORTED.lock().unwrap().contains(&me);
        let outside = std::panic::catch_unwind(|| panic!("a bug elsewhere"));
        let reported = REPORTED.lock().unwrap().contains(&me);
        std::panic::set_hook(previous);
        assert!(caught.is_err() && outside.is_err());
        assert!(silent, "silent while opening");
        assert!(reported, "reported otherwise");
    }
}
