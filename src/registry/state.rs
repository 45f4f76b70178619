//! The registry's state as the writer holds it, and the changes it takes: every rule
//! about order, override, capacity, built-ins and the commands file is applied here, in
//! memory, with no I/O. What a change writes is recorded as [`Writes`] for the store.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Error;
use crate::registry::snapshot::{Commands, Registered, Snapshot, Source};
use crate::rules::body::Body;
use crate::rules::builtins::Builtin;
use crate::rules::spec::{CommandName, CommandSpec};

/// One write a change makes, in order; the store turns a group's writes into one batch.
#[derive(Clone, Debug)]
pub enum Write {
    /// Store this command's record.
    Put(Arc<Registered>),
    /// Delete this command's record.
    Remove(CommandName),
}

/// The writes of a group of changes, in the order they were made.
pub type Writes = Vec<Write>;

/// A change to the registry.
#[derive(Clone, Debug)]
pub enum Change {
    /// Add a command, or with `replace` replace one in its place (from the API).
    Register {
        /// The spec.
        spec: CommandSpec,
        /// What runs it.
        body: Body,
        /// Replace an existing command of the same name.
        replace: bool,
    },
    /// Make the commands file's commands exactly `commands`, in that order: add or
    /// update each, remove those the file added before and no longer lists, and give
    /// the file's commands the file's order within the places they hold. All or
    /// nothing.
    Reconcile {
        /// The file's commands, in file order.
        commands: Vec<(CommandSpec, Body)>,
    },
    /// Remove a command.
    Unregister {
        /// Its name.
        name: CommandName,
    },
    /// Make the built-ins exactly `enabled`: add the missing ones at the end, remove
    /// those still running a built-in body that are no longer enabled. A built-in an
    /// operator replaced (`override`) is left alone.
    SetBuiltins {
        /// The built-ins to offer, in order.
        enabled: Vec<Builtin>,
    },
}

/// What a change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A new command was added at the end.
    Created,
    /// A command was replaced in its place.
    Replaced,
    /// Nothing needed to change.
    Unchanged,
    /// A command was removed.
    Removed,
    /// Several commands were added, updated or removed ([`Change::SetBuiltins`],
    /// [`Change::Reconcile`]).
    Reconciled,
}

/// The answer to a change: what it did and the revision after it.
pub type ChangeResult = Result<(Applied, u64), Error>;

/// The writer's copy of the registry.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// Bumped by every change that changes something.
    pub(super) revision: u64,
    /// The place the next new command takes.
    pub(super) next_seq: u64,
    /// The commands.
    pub(super) commands: Commands,
}

impl State {
    /// The state as a snapshot for readers.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.revision, self.commands.clone())
    }

    /// Puts `record` into the state and records the write.
    fn put(&mut self, record: Registered, writes: &mut Writes) {
        writes.push(Write::Put(self.commands.put(record)));
    }

    fn remove(&mut self, name: &CommandName, writes: &mut Writes) {
        writes.push(Write::Remove(name.clone()));
        self.commands.remove(name.as_str());
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Applies one change in memory and records its writes in `writes`. A change that
    /// fails leaves both untouched.
    pub fn apply(&mut self, change: Change, max: usize, writes: &mut Writes) -> ChangeResult {
        let applied = match change {
            Change::Register {
                spec,
                body,
                replace,
            } => self.register(spec, body, replace, Source::Api, Some(max), writes)?,
            Change::Unregister { name } => {
                let old = self
                    .commands
                    .get(name.as_str())
                    .ok_or_else(|| Error::NotFound(name.to_string()))?;
                if old.source == Source::File {
                    return Err(Error::ManagedByFile(name.to_string()));
                }
                self.remove(&name, writes);
                Applied::Removed
            }
            Change::SetBuiltins { enabled } => self.set_builtins(&enabled, writes),
            Change::Reconcile { commands } => self.reconcile(commands, max, writes)?,
        };
        if applied != Applied::Unchanged {
            self.revision += 1;
        }
        Ok((applied, self.revision))
    }

    #[allow(clippy::too_many_arguments)]
    fn register(
        &mut self,
        spec: CommandSpec,
        body: Body,
        replace: bool,
        source: Source,
        max: Option<usize>,
        writes: &mut Writes,
    ) -> Result<Applied, Error> {
        let (seq, applied) = match self.commands.get(spec.name.as_str()) {
            Some(old) => {
                // Re-registering a spec with no body, without override, is what a gateway
                // does on every start: it leaves the existing body alone.
                let keeps_body = !replace && body == Body::None;
                if old.spec == spec && (old.body == body || keeps_body) {
                    return Ok(Applied::Unchanged);
                }
                if old.source == Source::File && source != Source::File {
                    return Err(Error::ManagedByFile(spec.name.to_string()));
                }
                if !replace {
                    return Err(Error::AlreadyExists(spec.name.to_string()));
                }
                (old.seq, Applied::Replaced)
            }
            None => {
                if let Some(max) = max.filter(|&max| self.commands.len() >= max) {
                    return Err(Error::RegistryFull(max));
                }
                (self.take_seq(), Applied::Created)
            }
        };
        let record = Registered {
            seq,
            spec,
            body,
            source,
        };
        self.put(record, writes);
        Ok(applied)
    }

    fn set_builtins(&mut self, enabled: &[Builtin], writes: &mut Writes) -> Applied {
        let stale: Vec<CommandName> = self
            .commands
            .iter()
            .filter(|c| matches!(c.body, Body::Builtin { builtin } if !enabled.contains(&builtin)))
            .map(|c| c.spec.name.clone())
            .collect();
        let mut changed = !stale.is_empty();
        for name in &stale {
            self.remove(name, writes);
        }
        for &builtin in enabled {
            if self.commands.get(builtin.name()).is_none() {
                let body = Body::Builtin { builtin };
                // Built-ins are configuration: they do not count against the capacity.
                let _ = self.register(builtin.spec(), body, false, Source::Builtins, None, writes);
                changed = true;
            }
        }
        if changed {
            Applied::Reconciled
        } else {
            Applied::Unchanged
        }
    }

    fn reconcile(
        &mut self,
        commands: Vec<(CommandSpec, Body)>,
        max: usize,
        writes: &mut Writes,
    ) -> Result<Applied, Error> {
        let listed: HashMap<CommandName, usize> = commands
            .iter()
            .enumerate()
            .map(|(i, (spec, _))| (spec.name.clone(), i))
            .collect();
        // The file put it there and no longer lists it.
        let stale: Vec<CommandName> = self
            .commands
            .iter()
            .filter(|c| c.source == Source::File && !listed.contains_key(&c.spec.name))
            .map(|c| c.spec.name.clone())
            .collect();
        // Check capacity before changing anything: a change is all or nothing.
        let added = commands
            .iter()
            .filter(|(spec, _)| self.commands.get(spec.name.as_str()).is_none())
            .count();
        if self.commands.len() - stale.len() + added > max {
            return Err(Error::RegistryFull(max));
        }

        let before = self.commands.clone();
        for name in &stale {
            self.remove(name, writes);
        }
        // The file's commands keep the places they hold (new ones get places at the
        // end), and take those places in the file's order.
        let mut places: Vec<u64> = commands
            .iter()
            .map(|(spec, _)| match self.commands.get(spec.name.as_str()) {
                Some(existing) => existing.seq,
                None => self.take_seq(),
            })
            .collect();
        places.sort_unstable();
        let changed_records: Vec<Registered> = commands
            .into_iter()
            .zip(places)
            .map(|((spec, body), seq)| Registered {
                seq,
                spec,
                body,
                source: Source::File,
            })
            .filter(|record| before.get(record.spec.name.as_str()).map(|b| &**b) != Some(record))
            .collect();
        // Take them all out first, so that no move lands on a place another still holds.
        for record in &changed_records {
            self.commands.remove(record.spec.name.as_str());
        }
        for record in changed_records {
            self.put(record, writes);
        }
        let changed = !stale.is_empty() || self.commands.by_seq != before.by_seq;
        Ok(if changed {
            Applied::Reconciled
        } else {
            Applied::Unchanged
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> CommandSpec {
        CommandSpec::new("spec", name, description, "").unwrap()
    }

    /// Registers over the API into a registry of capacity 3.
    fn register(state: &mut State, s: CommandSpec, replace: bool) -> ChangeResult {
        let change = Change::Register {
            spec: s,
            body: Body::None,
            replace,
        };
        state.apply(change, 3, &mut Writes::new())
    }

    fn reconcile(state: &mut State, names: &[&str]) -> ChangeResult {
        let commands = names
            .iter()
            .map(|n| (spec(n, "from file"), Body::None))
            .collect();
        state.apply(Change::Reconcile { commands }, 10, &mut Writes::new())
    }

    #[test]
    fn reconcile_adds_updates_reorders_and_removes_only_its_own() {
        let mut s = State {
            revision: 0,
            next_seq: 0,
            commands: Commands::default(),
        };
        register(&mut s, spec("api", "1"), false).unwrap();
        assert_eq!(
            reconcile(&mut s, &["a", "b"]).unwrap().0,
            Applied::Reconciled
        );
        let late = Change::Register {
            spec: spec("late", "1"),
            body: Body::None,
            replace: false,
        };
        s.apply(late, 10, &mut Writes::new()).unwrap();
        assert_eq!(names(&s), ["api", "a", "b", "late"]);
        assert_eq!(
            reconcile(&mut s, &["a", "b"]).unwrap(),
            (Applied::Unchanged, 3)
        );
        reconcile(&mut s, &["c", "b", "a"]).unwrap();
        assert_eq!(names(&s), ["api", "c", "b", "late", "a"]);
        reconcile(&mut s, &["a"]).unwrap();
        assert_eq!(names(&s), ["api", "late", "a"]);
        assert!(matches!(
            register(&mut s, spec("a", "2"), true),
            Err(Error::ManagedByFile(_))
        ));
        let unregister = Change::Unregister {
            name: CommandName::parse("name", "a").unwrap(),
        };
        let err = s.apply(unregister, 10, &mut Writes::new());
        assert!(matches!(err, Err(Error::ManagedByFile(_))));
        // Seqs stay ordered like the list, so a reload sorts the same way.
        // Both maps agree: every place holds the command its name points to.
        assert_eq!(s.commands.by_seq.len(), s.commands.by_name.len());
        for command in s.commands.iter() {
            assert_eq!(s.commands.get(command.spec.name.as_str()), Some(command));
        }
    }

    fn names(state: &State) -> Vec<&str> {
        state
            .commands
            .iter()
            .map(|c| c.spec.name.as_str())
            .collect()
    }

    #[test]
    fn order_override_and_capacity() {
        let mut s = State {
            revision: 0,
            next_seq: 0,
            commands: Commands::default(),
        };
        assert_eq!(
            register(&mut s, spec("a", "1"), false).unwrap(),
            (Applied::Created, 1)
        );
        assert_eq!(
            register(&mut s, spec("b", "1"), false).unwrap(),
            (Applied::Created, 2)
        );
        assert_eq!(
            register(&mut s, spec("a", "1"), false).unwrap(),
            (Applied::Unchanged, 2)
        );
        assert!(matches!(
            register(&mut s, spec("a", "2"), false),
            Err(Error::AlreadyExists(_))
        ));
        assert_eq!(
            register(&mut s, spec("a", "2"), true).unwrap(),
            (Applied::Replaced, 3)
        );
        assert_eq!(names(&s), ["a", "b"]);
        register(&mut s, spec("c", "1"), false).unwrap();
        assert!(matches!(
            register(&mut s, spec("d", "1"), false),
            Err(Error::RegistryFull(3))
        ));
    }
}
