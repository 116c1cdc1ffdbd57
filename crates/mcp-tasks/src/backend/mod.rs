//! The engine's storage contract: [`TaskBackend`], and what flows through it.
//!
//! A backend stores tasks and hands their work to workers. The request side (any server
//! replica) submits, reads, answers and cancels; the worker side claims work under a lease,
//! renews it by heartbeat and reports the outcome. Every worker-side write presents its
//! [`Lease`], whose `fence` changes on every claim, so a worker that lost its lease can no
//! longer write (the recorded outcome is exactly-once even when delivery is not).
//!
//! [`MemoryBackend`](memory::MemoryBackend) is the embedded, per-server implementation; the
//! Redis backend implements the same contract with one atomic script per transition.

mod inspect;
mod limits;
pub mod memory;
#[cfg(feature = "redis")]
pub mod redis;

pub use inspect::{TaskFilter, TaskRecord, WorkerPresence};
pub use limits::{LIMIT_CODE, Limit, LimitExceeded, TaskLimits};

use std::time::Duration;

use async_trait::async_trait;
use ferrymcp_types::{InputResponses, JsonObject, TaskStatus};
use serde_json::Value;

/// Who a task belongs to. Every request-side operation names the owner, and a task of
/// another owner is indistinguishable from a missing one.
///
/// ```
/// use ferrymcp_core::auth::Principal;
/// use ferrymcp_tasks::backend::Owner;
/// assert_eq!(Owner::of(None).as_str(), "anon");
/// assert_eq!(Owner::of(Some(&Principal::new("app").with_subject("alice"))).as_str(), "auth:app|alice");
/// // A client literally called "anon" never aliases the anonymous keyspace.
/// assert_ne!(Owner::of(Some(&Principal::new("anon"))), Owner::of(None));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Owner(String);

impl Owner {
    /// The owner of a request by `principal`; `None` is the anonymous keyspace.
    pub fn of(principal: Option<&ferrymcp_core::auth::Principal>) -> Self {
        match principal {
            Some(p) => Owner(format!("auth:{}", p.scope_key())),
            None => Owner("anon".to_owned()),
        }
    }

    /// The owner key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Identifies one worker (a process or an embedded pool) for leases.
///
/// ```
/// let a = ferrymcp_tasks::backend::WorkerId::new();
/// assert_ne!(a, ferrymcp_tasks::backend::WorkerId::new());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct WorkerId(String);

impl WorkerId {
    /// A fresh, never reused id.
    pub fn new() -> Self {
        WorkerId(format!("worker-{}", crate::ids::random_token(12)))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for WorkerId {
    fn default() -> Self {
        Self::new()
    }
}

/// A task to create.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// The server-minted id.
    pub id: String,
    /// Its owner.
    pub owner: Owner,
    /// Who submitted it, for quotas and fair scheduling: `auth:<principal>` for a verified
    /// caller, `anon:<clientInfo name>` for an anonymous one (see [`caller_key`]).
    pub caller: String,
    /// The tool's name at the root, and its exact version.
    pub tool: String,
    /// The tool's version, if versioned.
    pub version: Option<String>,
    /// The (validated) arguments.
    pub arguments: JsonObject,
    /// What the worker needs of the submitting request (principal, protocol version...).
    pub context: JsonObject,
    /// How long the task is kept from creation; `None` is unlimited.
    pub ttl: Option<Duration>,
    /// The poll interval clients are told.
    pub poll_interval: Duration,
    /// How many times the work may be started (1 unless the tool is idempotent).
    pub max_attempts: u32,
}

/// A task as `tasks/get` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    /// The id.
    pub id: String,
    /// The status.
    pub status: TaskStatus,
    /// A human-readable status, if any.
    pub status_message: Option<String>,
    /// Creation time, Unix milliseconds.
    pub created_at_ms: u64,
    /// Time of the last change, Unix milliseconds.
    pub updated_at_ms: u64,
    /// Lifetime from creation, in ms; `None` is unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested poll interval, in ms.
    pub poll_interval_ms: u64,
    /// The `CallToolResult`, when completed.
    pub result: Option<Value>,
    /// The JSON-RPC error, when failed.
    pub error: Option<Value>,
    /// Outstanding input requests by client-facing key, when input is required.
    pub input_requests: std::collections::BTreeMap<String, Value>,
}

/// The right to write a claimed task's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The task.
    pub task: String,
    /// The worker holding it.
    pub worker: WorkerId,
    /// Changes on every claim; only the current value may write.
    pub fence: u64,
}

/// Work a worker claimed: one run of a task's tool.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The lease to present with every write.
    pub lease: Lease,
    /// The task's owner.
    pub owner: Owner,
    /// The tool's name at the root.
    pub tool: String,
    /// Its exact version.
    pub version: Option<String>,
    /// The arguments.
    pub arguments: JsonObject,
    /// The submission context.
    pub context: JsonObject,
    /// Which start of the work this is (1 first; more after a lost worker).
    pub attempt: u32,
    /// Which input round (1 first).
    pub round: u32,
    /// The answers to the previous round, by the tool's own keys.
    pub responses: Option<InputResponses>,
    /// The state the tool returned with its input requests.
    pub request_state: Option<String>,
    /// When the task was created, if the store tells (how long its first run waited).
    pub created_at: Option<std::time::SystemTime>,
}

/// What a heartbeat learns about a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// Still held; stop the work if `cancel_requested`.
    Held {
        /// The task was cancelled (or expired): stop.
        cancel_requested: bool,
    },
    /// Another claim took the task over (the lease lapsed): stop and drop the result.
    Lost,
    /// The task no longer exists (expired, purged) or has completed or failed: stop. (A
    /// cancelled task answers `Held { cancel_requested: true }`.)
    Gone,
}

/// How a worker-side write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAck {
    /// Recorded.
    Recorded,
    /// The task was already terminal (cancelled meanwhile): nothing changed.
    Terminal,
    /// The lease is no longer current: nothing changed.
    Lost,
    /// The task no longer exists.
    Gone,
}

/// How `tasks/update` went (the client gets an empty ack either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateAck {
    /// Every outstanding request is answered: the next round is queued.
    Resumed,
    /// Some answers were taken; others are still outstanding.
    Waiting,
    /// Nothing matched an outstanding request; nothing changed.
    Ignored,
}

/// How `tasks/cancel` went (the client gets an empty ack either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAck {
    /// The task is now cancelled.
    Cancelled,
    /// It was already terminal; nothing changed.
    AlreadyTerminal,
}

/// An input round the tool asked for: requests by the tool's own keys (the backend mints
/// the client-facing ones).
#[derive(Debug, Clone, Default)]
pub struct InputRound {
    /// Requests by the tool's keys, as JSON (`{"method": ..., "params": ...}`).
    pub requests: std::collections::BTreeMap<String, Value>,
    /// State for the next run.
    pub request_state: Option<String>,
}

/// Best-effort wake-ups for a worker; heartbeats are the guarantee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerEvent {
    /// Stop the work of this task.
    Cancel(String),
}

/// A backend failure (the store is unreachable, or its data is corrupt).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The store cannot be reached or refused the operation.
    #[error("task store unavailable: {0}")]
    Unavailable(String),
    /// The store holds something it should not.
    #[error("task store error: {0}")]
    Corrupt(String),
    /// A [`TaskLimits`] limit refused the submission; nothing was stored.
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
}

/// The caller key of a request, as [`NewTask::caller`] holds it: the verified principal's
/// owner key, or for an anonymous request the `clientInfo` name it declared (`anon:` alone
/// when it declared none).
///
/// ```
/// use ferrymcp_core::auth::Principal;
/// use ferrymcp_tasks::backend::caller_key;
/// assert_eq!(caller_key(Some(&Principal::new("app")), Some("ignored")), "auth:app");
/// // A declared name is cut to 64 characters.
/// assert_eq!(caller_key(None, Some(&"x".repeat(100))).len(), "anon:".len() + 64);
/// assert_eq!(caller_key(None, Some("inspector")), "anon:inspector");
/// assert_eq!(caller_key(None, None), "anon:");
/// ```
pub fn caller_key(
    principal: Option<&ferrymcp_core::auth::Principal>,
    client_name: Option<&str>,
) -> String {
    match principal {
        Some(_) => Owner::of(principal).0,
        None => {
            let name = client_name.unwrap_or_default();
            let cut = name.char_indices().nth(64).map_or(name.len(), |(at, _)| at);
            format!("anon:{}", &name[..cut])
        }
    }
}

/// The storage contract of the tasks engine. See the [module docs](self).
///
/// Request side: [`submit`](Self::submit) (durable before it returns),
/// [`release`](Self::release), [`get`](Self::get), [`deliver_input`](Self::deliver_input),
/// [`cancel`](Self::cancel). Worker side: [`claim`](Self::claim),
/// [`heartbeat`](Self::heartbeat), [`complete`](Self::complete), [`fail`](Self::fail),
/// [`request_input`](Self::request_input), [`hand_back`](Self::hand_back). Housekeeping: [`expire`](Self::expire).
///
/// One task's life on the in-memory backend, as the extension and a worker drive it:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ferrymcp_tasks::backend::BackendError> {
/// use std::time::Duration;
/// use ferrymcp_tasks::backend::{NewTask, Owner, TaskBackend, WorkerId, memory::MemoryBackend};
/// use ferrymcp_types::TaskStatus;
///
/// let backend = MemoryBackend::new();
/// let owner = Owner::of(None);
/// // The request side: a `tools/call` that asked for a task.
/// backend.submit(NewTask {
///     id: "t1".into(),
///     owner: owner.clone(),
///     caller: "anon:inspector".into(),
///     tool: "report".into(),
///     version: None,
///     arguments: Default::default(),
///     context: Default::default(),
///     ttl: Some(Duration::from_secs(60)),
///     poll_interval: Duration::from_millis(500),
///     max_attempts: 1,
/// }).await?;
/// backend.release(&owner, "t1").await?; // the answer is on its way: workers may start
///
/// // A worker claims the run and records the tool's result under its lease.
/// let worker = WorkerId::new();
/// let claimed = backend.claim(&worker, 1, Duration::from_secs(1)).await?;
/// assert_eq!(claimed[0].tool, "report");
/// backend.complete(&claimed[0].lease, &serde_json::json!({"content": []})).await?;
///
/// // `tasks/get` sees the outcome.
/// let task = backend.get(&owner, "t1").await?.expect("the task");
/// assert_eq!(task.status, TaskStatus::Completed);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait TaskBackend: Send + Sync + 'static {
    /// Stores a new `working` task. It is visible to [`get`](Self::get) as soon as this
    /// returns, but no worker may claim it before [`release`](Self::release).
    async fn submit(&self, task: NewTask) -> Result<TaskView, BackendError>;

    /// Makes a submitted task's work claimable. The tasks extension releases a task only
    /// after its `CreateTaskResult` has left the root's middleware.
    async fn release(&self, owner: &Owner, id: &str) -> Result<(), BackendError>;

    /// The task, if it exists and belongs to `owner`.
    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<TaskView>, BackendError>;

    /// Answers outstanding input requests (by client-facing key). `None`: no such task for
    /// `owner`. Answering the last outstanding request queues the next run exactly once.
    async fn deliver_input(
        &self,
        owner: &Owner,
        id: &str,
        responses: InputResponses,
    ) -> Result<Option<UpdateAck>, BackendError>;

    /// Cancels a non-terminal task and withdraws its input requests. `None`: no such task.
    async fn cancel(&self, owner: &Owner, id: &str) -> Result<Option<CancelAck>, BackendError>;

    /// Claims up to `max` runs, waiting up to `wait` for one to be ready.
    async fn claim(
        &self,
        worker: &WorkerId,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Claimed>, BackendError>;

    /// Renews leases and reports, for each, whether to go on.
    async fn heartbeat(&self, leases: &[Lease]) -> Result<Vec<LeaseState>, BackendError>;

    /// Records the run's `CallToolResult` (tool errors included): `completed`.
    async fn complete(&self, lease: &Lease, result: &Value) -> Result<WriteAck, BackendError>;

    /// Records a JSON-RPC error: `failed`, with its message as the status message.
    async fn fail(&self, lease: &Lease, error: &Value) -> Result<WriteAck, BackendError>;

    /// Sets the running task's `statusMessage` (how a tool's progress reports surface, since
    /// notifications after the task is created are forbidden). Fenced like every
    /// worker-side write.
    async fn set_status_message(
        &self,
        lease: &Lease,
        message: String,
    ) -> Result<WriteAck, BackendError>;

    /// Parks the task `input_required` with fresh client-facing keys; the run ends and the
    /// lease is released (no worker is held while waiting).
    async fn request_input(
        &self,
        lease: &Lease,
        round: InputRound,
    ) -> Result<WriteAck, BackendError>;

    /// Gives a claimed run back before its lease lapses (a worker stopping with runs still
    /// going): the lost-worker policy applies at once, as if the lease had lapsed: another
    /// start if attempts are left, else `failed` with the lost-worker message.
    /// `Recorded` when handed back; the lease can no longer write either way.
    async fn hand_back(&self, lease: &Lease) -> Result<WriteAck, BackendError>;

    /// Expires tasks past their TTL (they become unknown, -32602) and recovers runs whose
    /// worker stopped renewing its lease. Returns when to call again at the latest.
    async fn expire(&self) -> Result<Duration, BackendError>;

    /// Wake-ups for `worker` (cancellations), if the backend can push them.
    fn events(
        &self,
        worker: &WorkerId,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<WorkerEvent>> {
        let _ = worker;
        None
    }

    /// Ids of tasks as they change, if the backend can push them (status notifications,
    /// tests). A backend may report only the tasks someone [watches](Self::watch). An empty
    /// id means changes may have been missed (the feed reconnected): read again every task
    /// of interest, as after a lagging receiver.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// Asks for the changes of task `id` of `owner` on [`changes`](Self::changes) from now
    /// on (a backend that reports every change does nothing). `false` when there is no
    /// such task of that owner.
    async fn watch(&self, owner: &Owner, id: &str) -> Result<bool, BackendError> {
        Ok(self.get(owner, id).await?.is_some())
    }

    /// How long a claim stays valid without a heartbeat. A worker whose heartbeats keep
    /// failing stops its runs before this runs out (it fences itself), and retries a failed
    /// outcome write until then.
    fn lease(&self) -> Duration;

    /// A notifier the sweeper also waits on, so a new, earlier deadline is not missed.
    fn sweeper_wakeup(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        None
    }

    /// How many tasks the store holds, by where they are (the metrics' `mcp_tasks` gauges),
    /// or `None` from a backend that cannot tell.
    async fn stats(&self) -> Result<Option<StoreStats>, BackendError> {
        Ok(None)
    }

    /// Records that a worker is alive, with what it holds (workers call it at every
    /// heartbeat tick). The store sets `seen_at_ms` by its own clock.
    async fn worker_seen(&self, worker: &WorkerPresence) -> Result<(), BackendError> {
        let _ = worker;
        Ok(())
    }

    /// Forgets a worker that stopped cleanly.
    async fn worker_gone(&self, worker: &WorkerId) -> Result<(), BackendError> {
        let _ = worker;
        Ok(())
    }

    /// The workers the store has heard from, with the store's clock now (Unix ms), or
    /// `None` from a backend that does not keep them.
    async fn workers(&self) -> Result<Option<(u64, Vec<WorkerPresence>)>, BackendError> {
        Ok(None)
    }

    /// Forgets the workers not heard from for `unseen_for` (stopped without saying so);
    /// returns how many.
    async fn forget_workers(&self, unseen_for: Duration) -> Result<u64, BackendError> {
        let _ = unseen_for;
        Ok(0)
    }

    /// The tasks `filter` selects, newest first, whoever owns them; `None` from a backend
    /// that cannot list its tasks.
    async fn records(&self, filter: &TaskFilter) -> Result<Option<Vec<TaskRecord>>, BackendError> {
        let _ = filter;
        Ok(None)
    }

    /// Task `id` as an operator sees it, whoever owns it.
    async fn record(&self, id: &str) -> Result<Option<TaskRecord>, BackendError> {
        let _ = id;
        Err(BackendError::Unavailable(
            "this task store cannot show a task to an operator".to_owned(),
        ))
    }

    /// Cancels task `id` whoever owns it (an operator's cancel). `None`: no such task.
    async fn cancel_any(&self, id: &str) -> Result<Option<CancelAck>, BackendError> {
        let _ = id;
        Err(BackendError::Unavailable(
            "this task store cannot cancel a task for an operator".to_owned(),
        ))
    }
}

/// How many tasks a store holds, by where they are.
///
/// ```
/// let stats = ferrymcp_tasks::backend::StoreStats { queued: 3, running: 2, waiting: 0, finished: 7, ended: 9 };
/// assert_eq!(stats.unfinished(), 5);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreStats {
    /// Runs waiting for a worker.
    pub queued: u64,
    /// Runs a worker holds.
    pub running: u64,
    /// Unfinished tasks with no run queued or held: waiting for the client's input, or
    /// for the release of their first run.
    pub waiting: u64,
    /// Tasks that ended (completed, failed or cancelled) and are kept until they expire.
    pub finished: u64,
    /// Tasks that ended since the store began (expired ones included): the difference
    /// between two readings is the throughput between them.
    pub ended: u64,
}

impl StoreStats {
    /// Tasks not yet ended.
    ///
    /// ```
    /// assert_eq!(ferrymcp_tasks::backend::StoreStats::default().unfinished(), 0);
    /// ```
    pub fn unfinished(&self) -> u64 {
        self.queued + self.running + self.waiting
    }
}
