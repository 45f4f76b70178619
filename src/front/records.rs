//! What the front keeps: the tasks it made (answered to `GetTask` and to later
//! commands, and joined to the agent's id for them once a message reached the agent),
//! and the task data of the agent's tasks that commands changed. Kept in the
//! registry's store ([`crate::registry::records`]): durable before a command's answer
//! is sent, shared by every replica in fleet mode, bounded by a cap and an expiry.

use serde_json::{json, Value};

use crate::error::Error;
use crate::registry::records::Records as Store;

/// One id's record.
#[derive(Clone, Debug, PartialEq)]
pub enum Kept {
    /// A whole task the front made, and the agent's id for it once there is one.
    Task(Value, Option<String>),
    /// The task data of an agent's task.
    Data(Value),
}

/// What the key of the agent's id for a task the front made begins with: it names the
/// front's id, for answers that list the agent's tasks.
const JOINED: &str = "joined:";

/// The front's records.
#[derive(Debug)]
pub struct Records {
    store: Store,
}

impl Records {
    /// The front's records in `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// What is kept under task id `id`.
    pub async fn get(&self, id: &str) -> Result<Option<Kept>, Error> {
        let Some(record) = self.store.get(id).await? else {
            return Ok(None);
        };
        Ok(match (record.get("task"), record.get("data")) {
            (Some(task), _) => Some(Kept::Task(
                task.clone(),
                record
                    .get("upstream")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            )),
            (None, Some(data)) => Some(Kept::Data(data.clone())),
            // Not a record of ours: as good as none.
            (None, None) => None,
        })
    }

    /// The task the front made with id `id`, and the agent's id it is joined to.
    pub async fn task(&self, id: &str) -> Result<Option<(Value, Option<String>)>, Error> {
        Ok(match self.get(id).await? {
            Some(Kept::Task(task, upstream)) => Some((task, upstream)),
            _ => None,
        })
    }

    /// Keeps `task` (made by the front) under its id, joined to the agent's task
    /// `upstream` once there is one.
    pub async fn put_task(&self, task: &Value, upstream: Option<&str>) -> Result<(), Error> {
        let Some(id) = task.get("id").and_then(Value::as_str) else {
            return Ok(());
        };
        self.store
            .put(id, &json!({"task": task, "upstream": upstream}))
            .await
    }

    /// Keeps `data` for the agent's task `id`.
    pub async fn put_data(&self, id: &str, data: &Value) -> Result<(), Error> {
        self.store.put(id, &json!({"data": data})).await
    }

    /// Joins the front's task `front` to the agent's `upstream`, once the agent named
    /// its task.
    pub async fn join(&self, front: &str, upstream: &str) -> Result<(), Error> {
        match self.task(front).await? {
            Some((task, None)) => {
                self.store
                    .put(&format!("{JOINED}{upstream}"), &json!({"front": front}))
                    .await?;
                self.put_task(&task, Some(upstream)).await
            }
            _ => Ok(()),
        }
    }

    /// Up to `limit` tasks the front made (their ids begin with `prefix`) that the agent
    /// does not hold yet, the most recently used first: the ones only the front can list.
    pub async fn unjoined(&self, prefix: &str, limit: usize) -> Result<Vec<Value>, Error> {
        // Joined tasks share the prefix; read past them, within a bound.
        let read = self.store.newest(prefix, limit.saturating_mul(4)).await?;
        Ok(read
            .into_iter()
            .filter(|record| record.get("upstream").is_none_or(Value::is_null))
            .filter_map(|mut record| record.get_mut("task").map(Value::take))
            .take(limit)
            .collect())
    }

    /// The front's id for the agent's task `upstream`, when the front made that task.
    pub async fn joined_to(&self, upstream: &str) -> Result<Option<String>, Error> {
        Ok(self
            .store
            .get(&format!("{JOINED}{upstream}"))
            .await?
            .and_then(|record| record.get("front")?.as_str().map(str::to_owned)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::records::{Home, Limits};

    #[tokio::test]
    async fn tasks_and_data_are_kept_apart_and_a_task_is_joined_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &Home::Local(dir.path().to_owned()),
            Limits {
                cap: 100,
                expiry: std::time::Duration::from_secs(60),
            },
        )
        .unwrap();
        let records = Records::new(store);
        records
            .put_task(&json!({"id": "t-1", "status": {}}), None)
            .await
            .unwrap();
        records
            .put_data("t-2", &json!({"name": "x"}))
            .await
            .unwrap();
        assert_eq!(
            records.task("t-1").await.unwrap(),
            Some((json!({"id": "t-1", "status": {}}), None))
        );
        assert_eq!(records.joined_to("u-1").await.unwrap(), None);
        assert_eq!(
            records.unjoined("t-", 10).await.unwrap(),
            vec![json!({"id": "t-1", "status": {}})]
        );
        records.join("t-1", "u-1").await.unwrap();
        assert!(records.unjoined("t-", 10).await.unwrap().is_empty());
        records.join("t-1", "u-2").await.unwrap();
        assert_eq!(
            records.joined_to("u-1").await.unwrap().as_deref(),
            Some("t-1")
        );
        assert_eq!(records.joined_to("u-2").await.unwrap(), None);
        assert_eq!(
            records.task("t-1").await.unwrap().unwrap().1.as_deref(),
            Some("u-1")
        );
        assert_eq!(
            records.get("t-2").await.unwrap(),
            Some(Kept::Data(json!({"name": "x"})))
        );
        assert!(records.task("t-2").await.unwrap().is_none());
        assert!(records.get("t-3").await.unwrap().is_none());
    }
}
