//! The registry's state as the writer holds it, and the changes it takes: every rule
//! about order, override, capacity, built-ins and the commands file is applied here, in
//! memory, with no I/O. What a change writes is recorded as [`Writes`] for the store.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Error;
use crate::registry::snapshot::{Commands, Registered, Snapshot, Source};
use crate::rules::body::Body;
use crate::rules::builtins::Builtin;
use crate::rules::policy::Access;
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
        /// What runs it; [`Body::None`] keeps an existing command's body.
        body: Body,
        /// Who may run it, and whether the card shows it.
        access: Access,
        /// Replace an existing command of the same name.
        replace: bool,
        /// On a replace, take `access` whole; otherwise it only narrows (see
        /// [`Access::narrowed_by`]).
        replace_access: bool,
    },
    /// Remove a command.
    Unregister {
        /// Its name.
        name: CommandName,
    },
    /// Make the configuration-owned commands (the enabled built-ins, and the commands
    /// file's when `file` is given) exactly what a fresh replica given the same
    /// configuration holds: missing ones added, changed ones updated, ones no longer
    /// configured removed, all in a fresh replica's order within the places they hold.
    /// Commands from the API keep their places. All or nothing.
    Configure {
        /// The built-ins to offer, in order.
        builtins: Vec<Builtin>,
        /// The commands file's commands, in file order; `None` when there is no file
        /// (the file's commands, if any, are then left as they are).
        file: Option<Vec<Declared>>,
    },
}

/// [`Change::Register`]'s fields, for [`State::register`].
struct Registration {
    spec: CommandSpec,
    body: Body,
    access: Access,
    replace: bool,
    replace_access: bool,
}

/// A command as configuration declares it: spec, body and access.
pub type Declared = (CommandSpec, Body, Access);

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
    /// Several commands were added, updated or removed ([`Change::Configure`]).
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
                access,
                replace,
                replace_access,
            } => {
                let to = Registration {
                    spec,
                    body,
                    access,
                    replace,
                    replace_access,
                };
                self.register(to, max, writes)?
            }
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
            Change::Configure { builtins, file } => self.configure(&builtins, file, max, writes)?,
        };
        if applied != Applied::Unchanged {
            self.revision += 1;
        }
        Ok((applied, self.revision))
    }

    fn register(
        &mut self,
        to: Registration,
        max: usize,
        writes: &mut Writes,
    ) -> Result<Applied, Error> {
        let Registration {
            spec,
            body,
            mut access,
            replace,
            replace_access,
        } = to;
        let (seq, body, applied) = match self.commands.get(spec.name.as_str()) {
            Some(old) => {
                if !replace_access {
                    access = old.access.narrowed_by(&access);
                }
                // Without a handler the existing body stays: a gateway may register its
                // specs (with or without override) at every start, and a built-in or a
                // bound handler must not silently lose its body.
                let body = if body == Body::None {
                    old.body.clone()
                } else {
                    body
                };
                if old.spec == spec && old.body == body && old.access == access {
                    return Ok(Applied::Unchanged);
                }
                if old.source == Source::File {
                    return Err(Error::ManagedByFile(spec.name.to_string()));
                }
                if !replace {
                    return Err(Error::AlreadyExists(spec.name.to_string()));
                }
                (old.seq, body, Applied::Replaced)
            }
            None => {
                if self.commands.len() >= max {
                    return Err(Error::RegistryFull(max));
                }
                (self.take_seq(), body, Applied::Created)
            }
        };
        let record = Registered {
            seq,
            spec,
            body,
            source: Source::Api,
            access,
        };
        self.put(record, writes);
        Ok(applied)
    }

    /// See [`Change::Configure`].
    fn configure(
        &mut self,
        builtins: &[Builtin],
        file: Option<Vec<Declared>>,
        max: usize,
        writes: &mut Writes,
    ) -> Result<Applied, Error> {
        let file_given = file.is_some();
        let owned =
            |source: Source| source == Source::Builtins || (file_given && source == Source::File);
        let wanted = configured(builtins, file.unwrap_or_default(), |name| {
            self.commands.get(name).is_some_and(|c| !owned(c.source))
        });
        let wanted_names: HashMap<&str, usize> = wanted
            .iter()
            .enumerate()
            .map(|(i, (spec, ..))| (spec.name.as_str(), i))
            .collect();
        // Configuration-owned commands no longer configured, and API replacements of
        // built-ins that are turned off.
        let stale: Vec<CommandName> = self
            .commands
            .iter()
            .filter(|c| {
                let disabled_builtin =
                    matches!(c.body, Body::Builtin { builtin } if !builtins.contains(&builtin));
                (owned(c.source) && !wanted_names.contains_key(c.spec.name.as_str()))
                    || (c.source == Source::Api && disabled_builtin)
            })
            .map(|c| c.spec.name.clone())
            .collect();
        // Check capacity before changing anything: a change is all or nothing. Built-ins
        // do not count against it.
        if file_given {
            let added = wanted
                .iter()
                .filter(|(spec, _, source, _)| {
                    *source == Source::File && self.commands.get(spec.name.as_str()).is_none()
                })
                .count();
            let builtins_held = self
                .commands
                .iter()
                .filter(|c| c.source == Source::Builtins)
                .count();
            let after = (self.commands.len() + added).saturating_sub(stale.len() + builtins_held);
            if after > max && added > 0 {
                return Err(Error::RegistryFull(max));
            }
        }

        let before = self.commands.clone();
        for name in &stale {
            self.remove(name, writes);
        }
        // The configured commands keep the places they hold (new ones get places at the
        // end) and take those places in a fresh replica's order.
        let mut places: Vec<u64> = wanted
            .iter()
            .map(|(spec, ..)| match self.commands.get(spec.name.as_str()) {
                Some(existing) => existing.seq,
                None => self.take_seq(),
            })
            .collect();
        places.sort_unstable();
        let changed: Vec<Registered> = wanted
            .into_iter()
            .zip(places)
            .map(|((spec, body, source, access), seq)| Registered {
                seq,
                spec,
                body,
                source,
                access,
            })
            .filter(|record| before.get(record.spec.name.as_str()).map(|b| &**b) != Some(record))
            .collect();
        // Take them all out first, so that no move lands on a place another still holds.
        for record in &changed {
            self.commands.remove(record.spec.name.as_str());
        }
        for record in changed {
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

/// The writes that take a store holding `before` to `after`: each command `after` holds
/// differently put, each it no longer holds removed.
pub fn diff(before: &State, after: &State) -> Writes {
    let mut writes: Writes = before
        .commands
        .iter()
        .filter(|c| after.commands.get(c.spec.name.as_str()).is_none())
        .map(|c| Write::Remove(c.spec.name.clone()))
        .collect();
    writes.extend(
        after
            .commands
            .iter()
            .filter(|c| {
                before
                    .commands
                    .get(c.spec.name.as_str())
                    .is_none_or(|b| !Arc::ptr_eq(b, c) && **b != ***c)
            })
            .map(|c| Write::Put(Arc::clone(c))),
    );
    writes
}

/// The configuration-owned commands in the order a fresh replica gives them: the
/// enabled built-ins first (as the built-ins are added before the file is read), the
/// file's commands taking, in file order, the places of the built-ins they name and then
/// new places at the end. A built-in whose name the API holds (an operator's override)
/// is left out: that command stays as it is. A file entry without a handler for an
/// enabled built-in keeps the built-in body, as an override without a handler does.
fn configured(
    builtins: &[Builtin],
    file: Vec<Declared>,
    held_by_api: impl Fn(&str) -> bool,
) -> Vec<(CommandSpec, Body, Source, Access)> {
    let listed: HashMap<CommandName, usize> = file
        .iter()
        .enumerate()
        .map(|(i, (spec, ..))| (spec.name.clone(), i))
        .collect();
    // None marks a place the file's next command takes.
    let mut places: Vec<Option<Builtin>> = builtins
        .iter()
        .map(|&b| (!listed.contains_key(b.name())).then_some(b))
        .collect();
    let new_file_places = file
        .iter()
        .filter(|(spec, ..)| {
            Builtin::from_name(spec.name.as_str()).is_none_or(|b| !builtins.contains(&b))
        })
        .count();
    places.extend(std::iter::repeat_n(None, new_file_places));
    let mut file = file.into_iter();
    places
        .into_iter()
        .filter_map(|place| match place {
            Some(builtin) if held_by_api(builtin.name()) => None,
            Some(builtin) => Some((
                builtin.spec(),
                Body::Builtin { builtin },
                Source::Builtins,
                Access::default(),
            )),
            None => {
                let (spec, body, access) = file.next().expect("one place per file command");
                let body = match (body, Builtin::from_name(spec.name.as_str())) {
                    (Body::None, Some(builtin)) if builtins.contains(&builtin) => {
                        Body::Builtin { builtin }
                    }
                    (body, _) => body,
                };
                Some((spec, body, Source::File, access))
            }
        })
        .collect()
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
            access: Access::default(),
            replace,
            replace_access: false,
        };
        state.apply(change, 3, &mut Writes::new())
    }

    fn reconcile(state: &mut State, names: &[&str]) -> ChangeResult {
        let commands = names
            .iter()
            .map(|n| (spec(n, "from file"), Body::None, Access::default()))
            .collect();
        state.apply(
            Change::Configure {
                builtins: vec![],
                file: Some(commands),
            },
            10,
            &mut Writes::new(),
        )
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
            access: Access::default(),
            replace: false,
            replace_access: false,
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
    fn an_override_only_narrows_access() {
        use crate::rules::policy::Role;
        let mut s = State::default();
        let restricted = Access {
            roles: Some(vec![Role::Admin]),
            hidden: true,
        };
        let send = |s: &mut State, access: Access, replace_access: bool| {
            let change = Change::Register {
                spec: spec("deploy", "ships it"),
                body: Body::None,
                access,
                replace: true,
                replace_access,
            };
            s.apply(change, 10, &mut Writes::new()).unwrap().0
        };
        assert_eq!(send(&mut s, restricted.clone(), false), Applied::Created);
        // A gateway re-registering its spec with override at start: nothing widens.
        assert_eq!(send(&mut s, Access::default(), false), Applied::Unchanged);
        assert_eq!(s.commands.get("deploy").unwrap().access, restricted);
        // Roles it names do not replace a restriction already set (they could widen it).
        let wider = Access {
            roles: Some(vec![Role::Admin, Role::Assignee]),
            hidden: false,
        };
        assert_eq!(send(&mut s, wider, false), Applied::Unchanged);
        assert_eq!(s.commands.get("deploy").unwrap().access, restricted);
        // Widening is an explicit act.
        assert_eq!(send(&mut s, Access::default(), true), Applied::Replaced);
        assert!(s.commands.get("deploy").unwrap().access.is_default());
        // A command every role may run takes the roles an override names: that narrows.
        let reporters = Access {
            roles: Some(vec![Role::Reporter]),
            hidden: false,
        };
        assert_eq!(send(&mut s, reporters.clone(), false), Applied::Replaced);
        assert_eq!(s.commands.get("deploy").unwrap().access, reporters);
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

    mod convergence {
        //! Item 6 of the reference issue: whatever the history of commands-file versions,
        //! built-in settings, API changes and restarts, the configuration-owned commands
        //! end as a fresh replica given the last configuration builds them.
        use super::*;
        use proptest::prelude::*;

        const POOL: [&str; 7] = [
            "model", "status", "alpha", "beta", "gamma", "delta", "sub-task",
        ];

        #[derive(Clone, Debug)]
        enum Step {
            /// A new file version: (pool index, description variant) in file order.
            File(Vec<(usize, u8)>),
            /// Enabled built-ins: a mask over `Builtin::ALL`.
            Builtins(u8),
            /// Register over the API (with override).
            Api(usize, u8),
            /// Unregister over the API.
            Drop(usize),
            /// A restart: the same configuration applied again.
            Restart,
        }

        fn step() -> impl Strategy<Value = Step> {
            prop_oneof![
                prop::collection::vec((0..POOL.len(), 0u8..2), 0..6).prop_map(|mut v| {
                    let mut seen = std::collections::HashSet::new();
                    v.retain(|(i, _)| seen.insert(*i));
                    Step::File(v)
                }),
                (0u8..16).prop_map(Step::Builtins),
                (0..POOL.len(), 0u8..2).prop_map(|(i, d)| Step::Api(i, d)),
                (0..POOL.len()).prop_map(Step::Drop),
                Just(Step::Restart),
            ]
        }

        fn file(v: &[(usize, u8)]) -> Vec<Declared> {
            v.iter()
                .map(|&(i, d)| {
                    let access = Access {
                        hidden: d == 1,
                        ..Access::default()
                    };
                    (spec(POOL[i], &format!("file {d}")), Body::None, access)
                })
                .collect()
        }

        fn builtins(mask: u8) -> Vec<Builtin> {
            Builtin::ALL
                .into_iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, b)| b)
                .collect()
        }

        fn configure(state: &mut State, mask: u8, v: &[(usize, u8)]) -> ChangeResult {
            let change = Change::Configure {
                builtins: builtins(mask),
                file: Some(file(v)),
            };
            state.apply(change, 100, &mut Writes::new())
        }

        /// The configuration-owned commands, in order, without their places.
        fn configured_part(state: &State) -> Vec<(CommandSpec, Body, Source, Access)> {
            state
                .commands
                .iter()
                .filter(|c| c.source != Source::Api)
                .map(|c| (c.spec.clone(), c.body.clone(), c.source, c.access.clone()))
                .collect()
        }

        fn empty() -> State {
            State {
                revision: 0,
                next_seq: 0,
                commands: Commands::default(),
            }
        }

        /// A restart reloads the same state and applies the configuration; doing so
        /// twice changes nothing the second time.
        fn restart(s: &mut State, mask: u8, last: &[(usize, u8)]) -> Result<(), TestCaseError> {
            configure(s, mask, last).unwrap();
            let revision = s.revision;
            prop_assert_eq!(
                configure(s, mask, last).unwrap(),
                (Applied::Unchanged, revision)
            );
            Ok(())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2_000))]
            #[test]
            fn histories_converge_to_a_fresh_replica(
                steps in prop::collection::vec(step(), 0..24)
            ) {
                let (mut mask, mut last) = (0b1111u8, Vec::new());
                let mut s = empty();
                configure(&mut s, mask, &last).unwrap();
                for step in steps {
                    match step {
                        Step::File(v) => {
                            last = v;
                            configure(&mut s, mask, &last).unwrap();
                        }
                        Step::Builtins(m) => {
                            mask = m;
                            configure(&mut s, mask, &last).unwrap();
                        }
                        Step::Api(i, d) => {
                            let change = Change::Register {
                                spec: spec(POOL[i], &format!("api {d}")),
                                body: Body::None,
                                access: Access::default(),
                                replace: true,
                                replace_access: false,
                            };
                            let _ = s.apply(change, 100, &mut Writes::new());
                        }
                        Step::Drop(i) => {
                            let name = CommandName::parse("name", POOL[i]).unwrap();
                            let _ = s.apply(Change::Unregister { name }, 100, &mut Writes::new());
                        }
                        Step::Restart => restart(&mut s, mask, &last)?,
                    }
                }
                restart(&mut s, mask, &last)?;
                // Where the API did not take a built-in's name over, history does not
                // matter: the configured part is the fresh replica's.
                let mut fresh = empty();
                configure(&mut fresh, mask, &last).unwrap();
                let api_held: Vec<&str> = s
                    .commands
                    .iter()
                    .filter(|c| c.source == Source::Api)
                    .map(|c| c.spec.name.as_str())
                    .collect();
                let want: Vec<_> = configured_part(&fresh)
                    .into_iter()
                    .filter(|(spec, ..)| !api_held.contains(&spec.name.as_str()))
                    .collect();
                prop_assert_eq!(configured_part(&s), want);
                // No name the last file lists is left to the API.
                for (i, _) in &last {
                    prop_assert!(!api_held.contains(&POOL[*i]));
                }
            }
        }
    }
}
