//! The registry as readers see it: an immutable [`Snapshot`] of the ordered commands at
//! one revision. Snapshots share structure (persistent maps), so a copy costs O(1) and
//! a change O(log n).

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::rules::body::Body;
use crate::rules::card::Card;
use crate::rules::parse::{Found, Lookup};
use crate::rules::policy::Access;
use crate::rules::spec::{CommandName, CommandSpec};

/// Who put a command in the registry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Register, over the API.
    #[default]
    Api,
    /// The built-ins, from configuration.
    Builtins,
    /// The commands file; the API may not change such a command.
    File,
}

/// A command in the registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    /// Its place in the order: commands sort by it.
    pub(super) seq: u64,
    /// The spec shown on the card.
    pub spec: CommandSpec,
    /// What runs it.
    pub body: Body,
    /// Who put it there.
    #[serde(default)]
    pub source: Source,
    /// Who may run it, and whether the card shows it (absent from older records).
    #[serde(default, skip_serializing_if = "Access::is_default")]
    pub access: Access,
}

impl Registered {
    /// The record as the store keeps it (JSON): what the store writes and what the
    /// digest of the registry is taken over.
    pub(super) fn stored_form(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("records always serialize")
    }
}

/// The digest of one record: the first 128 bits of SHA-256 over its stored form.
fn record_digest(record: &Registered) -> u128 {
    let hash = ring::digest::digest(&ring::digest::SHA256, &record.stored_form());
    u128::from_be_bytes(hash.as_ref()[..16].try_into().expect("32 bytes"))
}

/// The commands, in order and by name. Both maps are persistent (they share structure),
/// so a copy costs O(1) and a change O(log n): publishing a snapshot after a change does
/// not grow with the registry.
#[derive(Clone, Debug, Default)]
pub(super) struct Commands {
    pub(super) by_seq: imbl::OrdMap<u64, Arc<Registered>>,
    /// Hashed by foldhash (seeded per process) rather than SipHash: every command
    /// message is looked up here. Only an authorized Register adds a name, so no caller
    /// can fill the map with names that collide.
    pub(super) by_name: imbl::GenericHashMap<
        CommandName,
        Arc<Registered>,
        foldhash::fast::RandomState,
        imbl::shared_ptr::DefaultSharedPtr,
    >,
    /// The sum (wrapping) of every record's digest. A record holds its place, so the
    /// sum covers the order too; kept up to date by `put` and `remove`, so a change
    /// costs one digest, not one per command.
    sum: u128,
}

impl Commands {
    pub(super) fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.by_name.get(name)
    }

    pub(super) fn len(&self) -> usize {
        self.by_name.len()
    }

    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &Arc<Registered>> + '_ {
        self.by_seq.values()
    }

    /// Inserts `record`, replacing the command of the same name (wherever it was).
    pub(super) fn put(&mut self, record: Registered) -> Arc<Registered> {
        self.sum = self.sum.wrapping_add(record_digest(&record));
        let record = Arc::new(record);
        if let Some(old) = self
            .by_name
            .insert(record.spec.name.clone(), Arc::clone(&record))
        {
            self.sum = self.sum.wrapping_sub(record_digest(&old));
            // Moving to another place: free the old one, unless another command has
            // already taken it.
            if old.seq != record.seq
                && self
                    .by_seq
                    .get(&old.seq)
                    .is_some_and(|at| at.spec.name == old.spec.name)
            {
                self.by_seq.remove(&old.seq);
            }
        }
        self.by_seq.insert(record.seq, Arc::clone(&record));
        record
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<Arc<Registered>> {
        let old = self.by_name.remove(name)?;
        self.sum = self.sum.wrapping_sub(record_digest(&old));
        // Its place may already be another's (a change that moves several commands,
        // applied one record at a time).
        if self
            .by_seq
            .get(&old.seq)
            .is_some_and(|at| at.spec.name == old.spec.name)
        {
            self.by_seq.remove(&old.seq);
        }
        Some(old)
    }

    /// The sum of the records' digests (see [`Commands`]).
    pub(super) fn digest_sum(&self) -> u128 {
        self.sum
    }
}

/// An immutable view of the registry at one revision.
#[derive(Debug)]
pub struct Snapshot {
    revision: u64,
    commands: Commands,
    /// Rendered on first use, so writes never pay for it.
    card: OnceLock<Card>,
    /// The commands as plain lists, built on first use: completion looks names up by
    /// prefix on every keystroke.
    names: OnceLock<NameIndex>,
}

/// The commands in registration order, and their names sorted with their positions,
/// so that the names with a prefix are one contiguous run found by binary search.
#[derive(Debug)]
struct NameIndex {
    listing: Vec<Arc<Registered>>,
    /// Each name beside its position in `listing`: a search compares the names where
    /// they lie, not through each command.
    by_name: Vec<(Box<str>, u32)>,
}

impl NameIndex {
    fn new(commands: &Commands) -> Self {
        let listing: Vec<Arc<Registered>> = commands.iter().cloned().collect();
        // Positions fit: the registry holds at most --max-commands, far below u32::MAX.
        let mut by_name: Vec<(Box<str>, u32)> = listing
            .iter()
            .zip(0u32..)
            .map(|(command, at)| (command.spec.name.as_str().into(), at))
            .collect();
        by_name.sort_unstable();
        Self { listing, by_name }
    }

    /// The commands whose names start with `prefix`, in registration order.
    fn starting_with(&self, prefix: &str) -> impl Iterator<Item = &Arc<Registered>> {
        // Sorted by name, the names below `prefix` come first, then those starting with
        // it, then the rest.
        let from = self.by_name.partition_point(|(name, _)| &**name < prefix);
        let run = &self.by_name[from..];
        let to = run.partition_point(|(name, _)| name.starts_with(prefix));
        let mut found: Vec<u32> = run[..to].iter().map(|(_, at)| *at).collect();
        found.sort_unstable();
        found.into_iter().map(|p| &self.listing[p as usize])
    }
}

impl Snapshot {
    pub(super) fn new(revision: u64, commands: Commands) -> Self {
        Self {
            revision,
            commands,
            card: OnceLock::new(),
            names: OnceLock::new(),
        }
    }

    /// The revision: bumped by every change, persisted, never going backwards.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The commands in registration order.
    pub fn commands(&self) -> impl ExactSizeIterator<Item = &Arc<Registered>> + '_ {
        self.commands.iter()
    }

    /// The commands whose names start with `prefix`, in registration order: a binary
    /// search in an index built on first use, not a walk of every command.
    pub fn starting_with(&self, prefix: &str) -> impl Iterator<Item = &Arc<Registered>> {
        self.names
            .get_or_init(|| NameIndex::new(&self.commands))
            .starting_with(prefix)
    }

    /// How many commands there are.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The command named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.commands.get(name)
    }

    /// The agent card's extension entry for these commands.
    pub fn card(&self) -> &Card {
        self.card.get_or_init(|| {
            let shown = self.commands.iter().filter(|c| !c.access.hidden);
            Card::render(shown.map(|c| &c.spec))
        })
    }

    /// A snapshot of `commands` in the order given, that no store holds: for
    /// benchmarks and tests of the read path.
    pub fn detached(commands: impl IntoIterator<Item = (CommandSpec, Body)>) -> Self {
        let mut all = Commands::default();
        for (seq, (spec, body)) in commands.into_iter().enumerate() {
            all.put(Registered {
                seq: seq as u64,
                spec,
                body,
                source: Source::Api,
                access: Access::default(),
            });
        }
        Self::new(0, all)
    }
}

impl Lookup for Snapshot {
    fn find(&self, name: &str) -> Option<Found<'_>> {
        self.commands.get(name).map(|c| Found {
            body: &c.body,
            access: Some(&c.access),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_prefix_come_in_registration_order() {
        let names = ["zeta", "model-b", "alpha", "model-a", "mod", "m", "mode"];
        let snapshot = Snapshot::detached(names.map(|n| {
            (
                CommandSpec::new("", n, "A command", "").unwrap(),
                Body::None,
            )
        }));
        let found = |prefix: &str| -> Vec<&str> {
            snapshot
                .starting_with(prefix)
                .map(|c| c.spec.name.as_str())
                .collect()
        };
        assert_eq!(found("mod"), ["model-b", "model-a", "mod", "mode"]);
        assert_eq!(found("model-"), ["model-b", "model-a"]);
        assert_eq!(found("zz"), Vec::<&str>::new());
        // Every prefix (and a few that match nothing) gives what a scan of every
        // command gives.
        let mut prefixes: Vec<String> = vec!["".into(), "n".into(), "b".into(), "zz".into()];
        for name in names {
            prefixes.extend((1..=name.len()).map(|i| name[..i].to_owned()));
        }
        for prefix in &prefixes {
            let scanned: Vec<&str> = snapshot
                .commands()
                .map(|c| c.spec.name.as_str())
                .filter(|n| n.starts_with(prefix.as_str()))
                .collect();
            assert_eq!(found(prefix), scanned, "{prefix:?}");
        }
    }
}
