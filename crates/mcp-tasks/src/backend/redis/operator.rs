//! What an operator reads of a queue, and the workers' reports (`lua/operator.lua`): task
//! records one `SCAN` step at a time, one task by id, and the worker registry (a hash of
//! reports and a sorted set of when each came, by the Redis clock).

use std::time::Duration;

use redis::Value;

use super::{
    RedisBackend, parse_json, parse_status,
    reply::{corrupt, items, take_text, uint},
};
use crate::backend::{BackendError, TaskFilter, TaskRecord, WorkerId, WorkerPresence};

/// How many keys one `SCAN` step of a listing asks for.
const SCAN_COUNT: &str = "500";
/// The most `SCAN` steps one listing takes (a listing of a queue of millions stops there).
const MAX_SCAN_STEPS: usize = 20_000;
/// The most workers a queue keeps reports of.
const MAX_WORKERS_KNOWN: &str = "1024";

/// A record row of `record_row` (prelude.lua): 16 fields, '' for an absent one.
fn record(row: Value) -> Result<TaskRecord, BackendError> {
    let mut fields = items(row, "a task record")?;
    if fields.len() != 16 {
        return Err(BackendError::Corrupt(format!(
            "a task record of {} fields",
            fields.len()
        )));
    }
    let mut texts: Vec<String> = fields
        .iter_mut()
        .map(|field| take_text(field).unwrap_or_default())
        .collect();
    let mut take = |i: usize| std::mem::take(&mut texts[i]);
    let optional = |text: String| (!text.is_empty()).then_some(text);
    let number = |text: String| text.parse::<u64>().ok();
    let small = |text: String, default: u32| text.parse::<u32>().unwrap_or(default);
    let id = take(0);
    let status = parse_status(&take(1))?;
    let status_message = optional(take(2));
    let tool = take(3);
    let version = optional(take(4));
    let caller = take(5);
    let created_at_ms = number(take(6)).unwrap_or(0);
    let updated_at_ms = number(take(7)).unwrap_or(created_at_ms);
    let expires_at_ms = number(take(8));
    let attempt = small(take(9), 0);
    let max_attempts = small(take(10), 1);
    let round = small(take(11), 1);
    let worker = optional(take(12));
    let lease_until_ms = number(take(13));
    let queued = take(14) == "1";
    let error = optional(take(15))
        .map(|raw| parse_json(&raw, "error"))
        .transpose()?;
    Ok(TaskRecord {
        id,
        status,
        status_message,
        tool,
        version,
        caller,
        created_at_ms,
        updated_at_ms,
        expires_at_ms,
        attempt,
        max_attempts,
        round,
        worker,
        lease_until_ms,
        queued,
        error,
    })
}

impl RedisBackend {
    async fn operator(&self, args: &[&str]) -> Result<Value, BackendError> {
        self.run(&self.scripts.operator, args).await
    }

    pub(super) async fn record_of(&self, id: &str) -> Result<Option<TaskRecord>, BackendError> {
        match self.operator(&["one", id]).await? {
            Value::Nil => Ok(None),
            row => record(row).map(Some),
        }
    }

    /// Every task of the queue `filter` selects: `SCAN` steps until the cursor comes back.
    pub(super) async fn records_of(
        &self,
        filter: &TaskFilter,
    ) -> Result<Vec<TaskRecord>, BackendError> {
        let mut cursor = "0".to_owned();
        let mut found = Vec::new();
        for _ in 0..MAX_SCAN_STEPS {
            let mut reply = items(
                self.operator(&["list", &cursor, SCAN_COUNT]).await?,
                "a task listing",
            )?;
            if reply.len() != 3 {
                return Err(BackendError::Corrupt("a task listing's reply".to_owned()));
            }
            let now = uint(&reply[2]).unwrap_or(0);
            let rows = items(std::mem::replace(&mut reply[1], Value::Nil), "task rows")?;
            for row in rows {
                let record = record(row)?;
                if filter.matches(&record, now) {
                    found.push(record);
                }
            }
            // Keeps memory bounded on a huge queue: only the newest `limit` can be shown.
            if found.len() > filter.capped_limit() * 4 {
                found = filter.newest(found);
            }
            cursor = take_text(&mut reply[0]).unwrap_or_else(|| "0".to_owned());
            if cursor == "0" {
                break;
            }
        }
        Ok(filter.newest(found))
    }

    pub(super) async fn report_worker(&self, worker: &WorkerPresence) -> Result<(), BackendError> {
        let report = serde_json::to_string(worker)
            .map_err(|e| BackendError::Corrupt(format!("a worker's report: {e}")))?;
        self.operator(&["seen", &worker.id, &report, MAX_WORKERS_KNOWN])
            .await
            .map(drop)
    }

    pub(super) async fn forget_worker(&self, worker: &WorkerId) -> Result<(), BackendError> {
        self.operator(&["gone", worker.as_str()]).await.map(drop)
    }

    pub(super) async fn workers_known(&self) -> Result<(u64, Vec<WorkerPresence>), BackendError> {
        let reply = items(self.operator(&["workers"]).await?, "the workers")?;
        let (Some(now), Some(list)) = (reply.first().and_then(uint), reply.get(1)) else {
            return Err(BackendError::Corrupt("the workers' reply".to_owned()));
        };
        let mut workers = Vec::new();
        for entry in items(list.clone(), "the workers")? {
            let mut entry = items(entry, "a worker")?;
            let seen = entry.get(1).and_then(uint);
            let report = entry.get_mut(2).and_then(take_text).unwrap_or_default();
            let (Some(seen), Ok(mut worker)) =
                (seen, serde_json::from_str::<WorkerPresence>(&report))
            else {
                return Err(corrupt("a worker's report", &Value::Nil));
            };
            worker.seen_at_ms = seen;
            workers.push(worker);
        }
        Ok((now, workers))
    }

    pub(super) async fn forget_workers_unseen(
        &self,
        unseen_for: Duration,
    ) -> Result<u64, BackendError> {
        let ms = unseen_for.as_millis().to_string();
        let reply = self.operator(&["forget", &ms]).await?;
        uint(&reply).ok_or_else(|| corrupt("forget", &reply))
    }
}
