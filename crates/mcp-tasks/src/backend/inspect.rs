//! What a backend tells an operator: tasks as records (never their arguments, context or
//! result), the workers it has heard from, and a filter for listing tasks.

use ferrymcp_types::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One task as an operator sees it: where it is, who holds it, when it changed. Never its
/// arguments, its (sealed) context or its result.
///
/// ```
/// use ferrymcp_tasks::backend::TaskRecord;
/// let json = serde_json::json!({
///     "id": "t1", "status": "working", "tool": "report", "caller": "anon:inspector",
///     "createdAtMs": 1, "updatedAtMs": 2, "attempt": 1, "maxAttempts": 1, "round": 1,
///     "queued": true,
/// });
/// let record: TaskRecord = serde_json::from_value(json).unwrap();
/// assert!(record.queued && record.worker.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The task id.
    pub id: String,
    /// Its status, as `tasks/get` shows it.
    pub status: TaskStatus,
    /// Its status message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The tool's name at the root.
    pub tool: String,
    /// The tool's exact version, if versioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Who submitted it, as quotas count it (a keyed tag when the store seals credentials).
    pub caller: String,
    /// Creation time, Unix milliseconds.
    pub created_at_ms: u64,
    /// Last change, Unix milliseconds.
    pub updated_at_ms: u64,
    /// When the store forgets it, Unix milliseconds; `None` is never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// How many times its work was started (0 before the first claim).
    pub attempt: u32,
    /// How many starts it may have.
    pub max_attempts: u32,
    /// Its input round (1 first).
    pub round: u32,
    /// The worker holding its run, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// Until when that worker's lease runs without a heartbeat, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<u64>,
    /// A run of it waits for a worker.
    pub queued: bool,
    /// The JSON-RPC error it failed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// A worker as the store last heard from it. Workers report themselves at every heartbeat
/// tick, busy or idle, and forget themselves when they stop cleanly.
///
/// ```
/// use ferrymcp_tasks::backend::WorkerPresence;
/// let worker = WorkerPresence { id: "worker-1".into(), host: "box".into(), pid: 42,
///     started_at_ms: 1_000, seen_at_ms: 5_000, running: 2, capacity: 10 };
/// assert_eq!(worker.age_ms(6_500), 1_500);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerPresence {
    /// The worker's id (the one its leases carry).
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// When it started, Unix milliseconds.
    pub started_at_ms: u64,
    /// When the store last heard from it, Unix milliseconds (the store's clock).
    pub seen_at_ms: u64,
    /// Runs it held then.
    pub running: u32,
    /// How many runs it holds at most.
    pub capacity: u32,
}

impl WorkerPresence {
    /// How long ago, at `now_ms`, it was last heard from.
    ///
    /// ```
    /// # use ferrymcp_tasks::backend::WorkerPresence;
    /// # let worker = WorkerPresence { id: "w".into(), host: "h".into(), pid: 1,
    /// #     started_at_ms: 0, seen_at_ms: 5_000, running: 0, capacity: 1 };
    /// assert_eq!(worker.age_ms(4_000), 0); // clocks a little apart never give a negative age
    /// ```
    pub fn age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.seen_at_ms)
    }
}

/// Which tasks to list: by status, tool and age, newest first, at most `limit`.
///
/// ```
/// use ferrymcp_tasks::backend::TaskFilter;
/// use ferrymcp_types::TaskStatus;
/// let filter = TaskFilter { status: Some(TaskStatus::Failed), tool: Some("report".into()),
///     ..TaskFilter::default() };
/// assert_eq!(filter.limit, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskFilter {
    /// Only tasks with this status.
    pub status: Option<TaskStatus>,
    /// Only tasks of this tool (its name at the root).
    pub tool: Option<String>,
    /// Only tasks created at least this long ago, in milliseconds.
    pub older_than_ms: Option<u64>,
    /// Only tasks created at most this long ago, in milliseconds.
    pub newer_than_ms: Option<u64>,
    /// At most this many (the newest); 100 unless set, never more than [`TaskFilter::MAX_LIMIT`].
    pub limit: usize,
}

impl TaskFilter {
    /// The most tasks one listing returns.
    pub const MAX_LIMIT: usize = 10_000;

    /// Whether `record` passes, at `now_ms`.
    ///
    /// ```
    /// # use ferrymcp_tasks::backend::{TaskFilter, TaskRecord};
    /// # use ferrymcp_types::TaskStatus;
    /// let record: TaskRecord = serde_json::from_value(serde_json::json!({
    ///     "id": "t1", "status": "completed", "tool": "report", "caller": "anon:",
    ///     "createdAtMs": 10_000, "updatedAtMs": 10_000, "attempt": 1, "maxAttempts": 1,
    ///     "round": 1, "queued": false })).unwrap();
    /// let old = TaskFilter { older_than_ms: Some(5_000), ..TaskFilter::default() };
    /// assert!(old.matches(&record, 16_000));
    /// assert!(!old.matches(&record, 12_000));
    /// ```
    pub fn matches(&self, record: &TaskRecord, now_ms: u64) -> bool {
        let age = now_ms.saturating_sub(record.created_at_ms);
        self.status.is_none_or(|status| status == record.status)
            && self.tool.as_ref().is_none_or(|tool| *tool == record.tool)
            && self.older_than_ms.is_none_or(|min| age >= min)
            && self.newer_than_ms.is_none_or(|max| age <= max)
    }

    /// The limit to apply: `limit` within 1 and [`TaskFilter::MAX_LIMIT`].
    ///
    /// ```
    /// # use ferrymcp_tasks::backend::TaskFilter;
    /// assert_eq!(TaskFilter { limit: 0, ..TaskFilter::default() }.capped_limit(), 1);
    /// ```
    pub fn capped_limit(&self) -> usize {
        self.limit.clamp(1, Self::MAX_LIMIT)
    }

    /// Keeps the newest `limit` of `records` (sorted newest first).
    pub(crate) fn newest(&self, mut records: Vec<TaskRecord>) -> Vec<TaskRecord> {
        records.sort_by(|a, b| {
            b.created_at_ms
                .cmp(&a.created_at_ms)
                .then_with(|| a.id.cmp(&b.id))
        });
        records.truncate(self.capped_limit());
        records
    }
}

impl Default for TaskFilter {
    fn default() -> Self {
        Self {
            status: None,
            tool: None,
            older_than_ms: None,
            newer_than_ms: None,
            limit: 100,
        }
    }
}
