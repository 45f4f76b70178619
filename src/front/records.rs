//! What the front keeps: the tasks it made (answered to `GetTask` and to later
//! commands, and joined to the agent's id for them once a message reached the agent),
//! and the task data of the agent's tasks that commands changed. Kept in the
//! registry's store ([`crate::registry::records`]): durable before a command's answer
//! is sent, shared by every replica in fleet mode, bounded by a cap and an expiry.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::error::Error;
use crate::registry::records::Records as Store;

/// Who is asking, for whose records a request may touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// No caller identity is configured: every record is every caller's.
    Shared,
    /// The caller named by the configured identity (a verified token's subject, or the
    /// sender header; empty when the request carries none): only its own records.
    Sender(String),
}

/// Whose records a request may touch: the caller's, within the request's tenant (A2A's
/// optional `tenant`: a record made under one tenant is no other's, as an agent that
/// keeps tasks per tenant answers another tenant's task id as unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// Who is asking.
    pub caller: Caller,
    /// The request's tenant, if it named one.
    pub tenant: Option<String>,
}

impl Scope {
    /// Every caller's records, outside any tenant: what a request the front does not
    /// look into carries.
    pub const SHARED: Self = Self {
        caller: Caller::Shared,
        tenant: None,
    };

    /// `caller`'s records in `tenant`.
    pub fn new(caller: Caller, tenant: Option<String>) -> Self {
        Self { caller, tenant }
    }

    /// Whether `record` is visible in this scope: only one made in the same tenant (its
    /// `tenant`, none outside any); of those, all when shared, otherwise only the
    /// caller's own (its `owner`, none when made with no identity configured).
    fn sees(&self, record: &Value) -> bool {
        let of = |key| record.get(key).and_then(Value::as_str);
        of("tenant") == self.tenant.as_deref()
            && match &self.caller {
                Caller::Shared => true,
                Caller::Sender(sender) => of("owner") == Some(sender.as_str()),
            }
    }

    /// The owner written into a record made in this scope.
    fn owner(&self) -> Option<&str> {
        match &self.caller {
            Caller::Shared => None,
            Caller::Sender(sender) => Some(sender),
        }
    }

    /// The key of the task data the caller keeps for the agent's task `id`: the id
    /// itself when shared outside any tenant, or the id and a digest of the caller and
    /// tenant (each caller's settings for an agent's task are its own; a sender's
    /// digest outside any tenant is of its name alone, as before tenants were kept).
    fn data_key(&self, id: &str) -> String {
        let digested = match (&self.caller, &self.tenant) {
            (Caller::Shared, None) => return id.to_owned(),
            (Caller::Sender(sender), None) => sender.clone(),
            (_, Some(tenant)) => format!("tenant\0{tenant}\0{}", self.owner().unwrap_or_default()),
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, digested.as_bytes());
        let hex: String = digest.as_ref()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{DATA}{hex}:{id}")
    }

    /// Whether task data is kept under the agent's task id itself.
    fn data_by_id(&self) -> bool {
        *self == Self::SHARED
    }
}

/// A task the front made, as kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Own {
    /// The task, under the front's id and context.
    pub task: Value,
    /// The agent's task, once a message reached it.
    pub upstream: Option<Upstream>,
}

/// The agent's task for one of the front's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// The agent's id for it.
    pub id: String,
    /// The agent's context for it (the front's, unless the agent chose its own).
    pub context: Option<String>,
}

/// One id's record, as the caller may see it.
#[derive(Clone, Debug, PartialEq)]
pub enum Kept {
    /// A whole task the front made.
    Task(Own),
    /// The task data of an agent's task.
    Data(Value),
}

/// What the key of the agent's id for a task the front made begins with: it names the
/// front's id, for answers that list the agent's tasks.
const JOINED: &str = "joined:";

/// What the key of a caller's task data for an agent's task begins with.
const DATA: &str = "data:";

/// A task record as written: the task, what it is joined to, and its owner (read back
/// by its keys, as `get` reads them).
#[derive(serde::Serialize)]
struct TaskRecord<'a> {
    task: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream: Option<&'a str>,
    #[serde(rename = "upstreamContext", skip_serializing_if = "Option::is_none")]
    upstream_context: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<&'a str>,
}

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

    /// What is kept under task id `id` that `scope` may see: a record of another
    /// caller's is as good as none.
    pub async fn get(&self, id: &str, scope: &Scope) -> Result<Option<Kept>, Error> {
        if let Some(record) = self.store.get(id).await? {
            if let Some(task) = record.get("task") {
                // A task the front made: its id is unique, and it is its maker's alone.
                if !scope.sees(&record) {
                    return Ok(None);
                }
                let upstream = record
                    .get("upstream")
                    .and_then(Value::as_str)
                    .map(|id| Upstream {
                        id: id.to_owned(),
                        context: record
                            .get("upstreamContext")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    });
                return Ok(Some(Kept::Task(Own {
                    task: task.clone(),
                    upstream,
                })));
            }
            if let (Some(data), true) = (record.get("data"), scope.data_by_id()) {
                return Ok(Some(Kept::Data(data.clone())));
            }
        }
        if scope.data_by_id() {
            return Ok(None);
        }
        Ok(self
            .store
            .get(&scope.data_key(id))
            .await?
            .and_then(|record| record.get("data").cloned())
            .map(Kept::Data))
    }

    /// The task the front made with id `id`, if `scope` may see it.
    pub async fn task(&self, id: &str, scope: &Scope) -> Result<Option<Own>, Error> {
        Ok(match self.get(id, scope).await? {
            Some(Kept::Task(own)) => Some(own),
            _ => None,
        })
    }

    /// Keeps `own` (a task the front made) under its id, as the caller's in `scope`.
    pub async fn put_task(&self, own: &Own, scope: &Scope) -> Result<(), Error> {
        self.put_task_text(own, scope).await.map(drop)
    }

    /// As [`Records::put_task`], returning the task's JSON text as written: an answer
    /// that carries the same task is made from it, the task serialised once.
    pub async fn put_task_text(&self, own: &Own, scope: &Scope) -> Result<Box<RawValue>, Error> {
        let task = serde_json::value::to_raw_value(&own.task).expect("a Value serializes");
        let Some(id) = own.task.get("id").and_then(Value::as_str) else {
            return Ok(task);
        };
        let record = TaskRecord {
            task: &task,
            upstream: own.upstream.as_ref().map(|u| u.id.as_str()),
            upstream_context: own.upstream.as_ref().and_then(|u| u.context.as_deref()),
            owner: scope.owner(),
            tenant: scope.tenant.as_deref(),
        };
        self.store.put(id, &record).await?;
        Ok(task)
    }

    /// Keeps `data` for the agent's task `id`, as the caller's in `scope`.
    pub async fn put_data(&self, id: &str, data: &Value, scope: &Scope) -> Result<(), Error> {
        self.store
            .put(&scope.data_key(id), &json!({"data": data}))
            .await
    }

    /// Joins the front's task `front` to the agent's `upstream`, once the agent named
    /// its task.
    pub async fn join(&self, front: &str, upstream: &Upstream, scope: &Scope) -> Result<(), Error> {
        match self.task(front, scope).await? {
            Some(Own {
                task,
                upstream: None,
            }) => {
                self.store
                    .put(
                        &format!("{JOINED}{}", upstream.id),
                        &json!({"front": front}),
                    )
                    .await?;
                let own = Own {
                    task,
                    upstream: Some(upstream.clone()),
                };
                self.put_task(&own, scope).await
            }
            _ => Ok(()),
        }
    }

    /// Up to `limit` tasks the front made (their ids begin with `prefix`) that the agent
    /// does not hold yet and `scope` may see, the most recently used first: the ones
    /// only the front can list.
    pub async fn unjoined(
        &self,
        prefix: &str,
        limit: usize,
        scope: &Scope,
    ) -> Result<Vec<Value>, Error> {
        // Joined tasks, and other callers' tasks, share the prefix; read past them,
        // within a bound.
        let factor = if *scope == Scope::SHARED { 4 } else { 16 };
        let read = self
            .store
            .newest(prefix, limit.saturating_mul(factor))
            .await?;
        Ok(read
            .into_iter()
            .filter(|record| record.get("upstream").is_none_or(Value::is_null))
            .filter(|record| scope.sees(record))
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

    fn store(dir: &std::path::Path) -> Records {
        let store = Store::open(
            &Home::Local(dir.to_owned()),
            Limits {
                cap: 100,
                expiry: std::time::Duration::from_secs(60),
            },
        )
        .unwrap();
        Records::new(store)
    }

    fn own(id: &str) -> Own {
        Own {
            task: json!({"id": id, "status": {}}),
            upstream: None,
        }
    }

    #[tokio::test]
    async fn tasks_and_data_are_kept_apart_and_a_task_is_joined_once() {
        let dir = tempfile::tempdir().unwrap();
        let records = store(dir.path());
        let shared = Scope::SHARED;
        records.put_task(&own("t-1"), &shared).await.unwrap();
        records
            .put_data("t-2", &json!({"name": "x"}), &shared)
            .await
            .unwrap();
        assert_eq!(
            records.task("t-1", &shared).await.unwrap(),
            Some(own("t-1"))
        );
        assert_eq!(records.joined_to("u-1").await.unwrap(), None);
        assert_eq!(
            records.unjoined("t-", 10, &shared).await.unwrap(),
            vec![own("t-1").task]
        );
        let u1 = Upstream {
            id: "u-1".into(),
            context: Some("c-1".into()),
        };
        records.join("t-1", &u1, &shared).await.unwrap();
        assert!(records
            .unjoined("t-", 10, &shared)
            .await
            .unwrap()
            .is_empty());
        let u2 = Upstream {
            id: "u-2".into(),
            context: None,
        };
        records.join("t-1", &u2, &shared).await.unwrap();
        assert_eq!(
            records.joined_to("u-1").await.unwrap().as_deref(),
            Some("t-1")
        );
        assert_eq!(records.joined_to("u-2").await.unwrap(), None);
        assert_eq!(
            records
                .task("t-1", &shared)
                .await
                .unwrap()
                .unwrap()
                .upstream,
            Some(u1)
        );
        assert_eq!(
            records.get("t-2", &shared).await.unwrap(),
            Some(Kept::Data(json!({"name": "x"})))
        );
        assert!(records.task("t-2", &shared).await.unwrap().is_none());
        assert!(records.get("t-3", &shared).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_caller_sees_only_its_own_records() {
        let dir = tempfile::tempdir().unwrap();
        let records = store(dir.path());
        let sender = |name: &str| Scope::new(Caller::Sender(name.into()), None);
        let (a, b) = (sender("a"), sender("b"));
        records.put_task(&own("t-a"), &a).await.unwrap();
        records
            .put_data("agent-1", &json!({"settings": {"model": "x"}}), &a)
            .await
            .unwrap();
        assert!(records.get("t-a", &a).await.unwrap().is_some());
        assert_eq!(records.get("t-a", &b).await.unwrap(), None);
        assert_eq!(
            records.get("agent-1", &a).await.unwrap(),
            Some(Kept::Data(json!({"settings": {"model": "x"}})))
        );
        assert_eq!(records.get("agent-1", &b).await.unwrap(), None);
        assert_eq!(records.unjoined("t-", 10, &a).await.unwrap().len(), 1);
        assert!(records.unjoined("t-", 10, &b).await.unwrap().is_empty());
        // B's settings for the same agent task are its own, and leave A's alone.
        records
            .put_data("agent-1", &json!({"settings": {"model": "y"}}), &b)
            .await
            .unwrap();
        assert_eq!(
            records.get("agent-1", &a).await.unwrap(),
            Some(Kept::Data(json!({"settings": {"model": "x"}})))
        );
        // A joined task of A's is not B's to join or read.
        let u = Upstream {
            id: "u-a".into(),
            context: None,
        };
        records.join("t-a", &u, &b).await.unwrap();
        assert_eq!(records.joined_to("u-a").await.unwrap(), None);
        // Made with no identity configured, a task is no identified caller's.
        records.put_task(&own("t-s"), &Scope::SHARED).await.unwrap();
        assert_eq!(records.get("t-s", &a).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_record_is_its_tenant_s_alone() {
        let dir = tempfile::tempdir().unwrap();
        let records = store(dir.path());
        let in_tenant =
            |tenant: Option<&str>| Scope::new(Caller::Shared, tenant.map(str::to_owned));
        let (acme, globex, none) = (
            in_tenant(Some("acme")),
            in_tenant(Some("globex")),
            Scope::SHARED,
        );
        records.put_task(&own("t-acme"), &acme).await.unwrap();
        assert!(records.get("t-acme", &acme).await.unwrap().is_some());
        assert_eq!(records.get("t-acme", &globex).await.unwrap(), None);
        assert_eq!(records.get("t-acme", &none).await.unwrap(), None);
        assert_eq!(records.unjoined("t-", 10, &acme).await.unwrap().len(), 1);
        assert!(records
            .unjoined("t-", 10, &globex)
            .await
            .unwrap()
            .is_empty());
        assert!(records.unjoined("t-", 10, &none).await.unwrap().is_empty());
        // Task data for the agent's task: each tenant's own, none's kept under the id.
        let data = |model: &str| json!({"settings": {"model": model}});
        records
            .put_data("agent-1", &data("x"), &acme)
            .await
            .unwrap();
        records
            .put_data("agent-1", &data("y"), &none)
            .await
            .unwrap();
        assert_eq!(
            records.get("agent-1", &acme).await.unwrap(),
            Some(Kept::Data(data("x")))
        );
        assert_eq!(
            records.get("agent-1", &none).await.unwrap(),
            Some(Kept::Data(data("y")))
        );
        assert_eq!(records.get("agent-1", &globex).await.unwrap(), None);
        // A sender's data outside any tenant is keyed as before tenants were kept.
        let ada = Scope::new(Caller::Sender("ada".into()), None);
        let digest = ring::digest::digest(&ring::digest::SHA256, b"ada");
        let hex: String = digest.as_ref()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(ada.data_key("t"), format!("{DATA}{hex}:t"));
    }
}
