//! Fleet mode: one registry for every replica, kept in etcd.
//!
//! etcd is then the acknowledged record: the writer commits each group of changes as one
//! compare-and-swap transaction ([`record`]), and every sidecar follows the registry's
//! key range ([`follow`]) and applies each committed change, in etcd's order, to its
//! snapshot and to its local sled copy (kept with the same syncs as in sled mode, so a
//! restart during an outage serves the last registry it applied). [`layout`] says what
//! the keys hold, [`etcd`] is the client, [`members`] the lease-bound key by which
//! `ctl fleet` sees each live sidecar, and [`copy`] marks a data directory whose
//! registry is a copy of a fleet's.

pub mod copy;
pub mod etcd;
pub mod follow;
pub mod layout;
pub mod members;
pub mod options;
pub mod record;

pub use options::{EtcdTls, FleetOptions};
