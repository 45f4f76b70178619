//! What the front keeps: the tasks it made (answered to `GetTask` and to later
//! commands), and the task data of the agent's tasks that commands changed. Kept in
//! memory for now, bounded: at most [`CAP`] entries, each forgotten [`EXPIRY`] after
//! its last use (the oldest first when full); a forgotten task is not found, never
//! answered wrongly.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Most entries kept.
pub const CAP: usize = 10_000;
/// How long an entry is kept after its last use.
pub const EXPIRY: Duration = Duration::from_secs(24 * 3600);

/// An entry: a whole task the front made (and the agent's id for it, once a message
/// on it reached the agent), or the data of an agent's task.
#[derive(Clone, Debug)]
enum Entry {
    Task(Value, Option<String>),
    Data(Value),
}

/// The front's records.
#[derive(Debug, Default)]
pub struct Records {
    entries: Mutex<HashMap<String, (Entry, Instant)>>,
}

impl Records {
    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.lock().expect("records lock").is_empty()
    }

    /// The task the front made with id `id`, and the agent's id it is joined to.
    pub fn task(&self, id: &str) -> Option<(Value, Option<String>)> {
        match self.touch(id)? {
            Entry::Task(task, upstream) => Some((task, upstream)),
            Entry::Data(_) => None,
        }
    }

    /// The task data the front keeps for the agent's task `id`.
    pub fn data(&self, id: &str) -> Option<Value> {
        match self.touch(id)? {
            Entry::Data(data) => Some(data),
            Entry::Task(..) => None,
        }
    }

    /// Keeps `task` (made by the front) under its id, joined to the agent's task
    /// `upstream` once there is one.
    pub fn put_task(&self, task: Value, upstream: Option<String>) {
        if let Some(id) = task.get("id").and_then(Value::as_str).map(str::to_owned) {
            self.put(id, Entry::Task(task, upstream));
        }
    }

    /// Keeps `data` for the agent's task `id`.
    pub fn put_data(&self, id: &str, data: Value) {
        self.put(id.to_owned(), Entry::Data(data));
    }

    fn touch(&self, id: &str) -> Option<Entry> {
        let mut entries = self.entries.lock().expect("records lock");
        let now = Instant::now();
        match entries.get_mut(id) {
            Some((_, used)) if now.duration_since(*used) > EXPIRY => {
                entries.remove(id);
                None
            }
            Some((entry, used)) => {
                *used = now;
                Some(entry.clone())
            }
            None => None,
        }
    }

    fn put(&self, id: String, entry: Entry) {
        let mut entries = self.entries.lock().expect("records lock");
        let now = Instant::now();
        entries.retain(|_, (_, used)| now.duration_since(*used) <= EXPIRY);
        if entries.len() >= CAP && !entries.contains_key(&id) {
            let oldest = entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                entries.remove(&oldest);
            }
        }
        entries.insert(id, (entry, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tasks_and_data_are_kept_apart() {
        let records = Records::default();
        assert!(records.is_empty());
        records.put_task(json!({"id": "t-1", "status": {}}), None);
        records.put_data("t-2", json!({"name": "x"}));
        assert!(records
            .task("t-1")
            .is_some_and(|(_, joined)| joined.is_none()));
        records.put_task(json!({"id": "t-1"}), Some("u-1".into()));
        assert_eq!(records.task("t-1").unwrap().1.as_deref(), Some("u-1"));
        assert!(records.data("t-1").is_none());
        assert_eq!(records.data("t-2"), Some(json!({"name": "x"})));
        assert!(records.task("t-2").is_none());
        assert!(records.task("t-3").is_none());
    }
}
