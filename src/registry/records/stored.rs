//! What a record is as stored, and the bounds on how many are kept and for how long.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The bounds on what is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most records kept; past it, the least recently used go first.
    pub cap: usize,
    /// How long a record is kept after its last use.
    pub expiry: Duration,
}

impl Limits {
    /// How stale a record's last-use time may grow before a read writes it anew: a
    /// read does not pay a write every time, and a record is kept at least `expiry`
    /// after its last use, at most this much longer.
    pub(super) fn touch_after(&self) -> Duration {
        (self.expiry / 100).clamp(Duration::from_secs(1), Duration::from_secs(15 * 60))
    }
}

/// One record as stored: its value and when it was last used (Unix milliseconds).
#[derive(Serialize, Deserialize)]
pub(super) struct Stored {
    pub(super) used: u64,
    pub(super) value: Value,
}

/// A record as it is written: [`Stored`]'s form, its value serialised from where it is
/// (never copied into a `Value` first).
#[derive(Serialize)]
pub(super) struct StoredRef<'a, T: Serialize + ?Sized> {
    pub(super) used: u64,
    pub(super) value: &'a T,
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
