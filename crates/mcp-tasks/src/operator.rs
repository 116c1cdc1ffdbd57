//! What operators do with a running engine: see the queue and the workers, list and inspect
//! tasks, cancel one, purge what expired. [`Operator`] works on any [`TaskBackend`]; the
//! admin routes ([`admin`](crate::admin)) and the `ferrymcp-tasks` command line use it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ferrymcp_tasks::operator::OperatorError> {
//! use std::sync::Arc;
//! use ferrymcp_tasks::{backend::memory::MemoryBackend, operator::Operator};
//!
//! let operator = Operator::new(Arc::new(MemoryBackend::new()));
//! let status = operator.status().await?;
//! assert_eq!(status.tasks.unfinished(), 0);
//! assert!(status.workers.is_empty());
//! # Ok(()) }
//! ```

use std::{sync::Arc, time::Duration};

use serde::{Deserialize, Serialize};

use crate::backend::{
    BackendError, CancelAck, StoreStats, TaskBackend, TaskFilter, TaskRecord, WorkerPresence,
};

/// Why an operator's request failed.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The task store failed or is unreachable.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The task store cannot do this (a custom backend without operator support).
    #[error("this task store cannot {0}")]
    Unsupported(&'static str),
}

/// The queue and the workers at one instant: what `status` shows.
///
/// ```
/// # use ferrymcp_tasks::operator::FleetStatus;
/// let status: FleetStatus = serde_json::from_str(r#"{"nowMs": 5000, "leaseMs": 30000,
///     "tasks": {"queued": 1, "running": 2, "waiting": 0, "finished": 4, "ended": 9},
///     "workers": []}"#).unwrap();
/// assert_eq!(status.tasks.unfinished(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// The store's clock when read, Unix milliseconds.
    pub now_ms: u64,
    /// The store's lease: a worker not heard from for longer is stale.
    pub lease_ms: u64,
    /// Tasks by where they are.
    pub tasks: StoreStats,
    /// The workers the store has heard from, by id.
    pub workers: Vec<WorkerStatus>,
}

/// One worker in [`FleetStatus`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    /// Its last report.
    #[serde(flatten)]
    pub presence: WorkerPresence,
    /// How long ago it was heard from, in milliseconds.
    pub age_ms: u64,
    /// Not heard from for longer than a lease: stopped or cut off, and whatever it held
    /// is (or will be) run again or failed by the lost-worker policy.
    pub stale: bool,
}

/// How a cancel went.
///
/// ```
/// # use ferrymcp_tasks::operator::Cancelled;
/// assert_eq!(serde_json::to_string(&Cancelled::AlreadyEnded).unwrap(), r#""alreadyEnded""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Cancelled {
    /// The task is now cancelled; its run, if any, is told to stop.
    Cancelled,
    /// It had already ended; nothing changed.
    AlreadyEnded,
    /// There is no such task (never was, or expired).
    NotFound,
}

/// What a purge did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeReport {
    /// Tasks the store held before.
    pub tasks_before: u64,
    /// Tasks it holds after (expired ones are gone).
    pub tasks_after: u64,
    /// Workers forgotten: not heard from for longer than a lease.
    pub workers_forgotten: u64,
}

/// Operators' requests on one task store. See the [module docs](self).
#[derive(Clone)]
pub struct Operator {
    backend: Arc<dyn TaskBackend>,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator").finish_non_exhaustive()
    }
}

impl Operator {
    /// Operators' requests on `backend`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let operator = ferrymcp_tasks::operator::Operator::new(Arc::new(
    ///     ferrymcp_tasks::backend::memory::MemoryBackend::new(),
    /// ));
    /// # let _ = operator;
    /// ```
    pub fn new(backend: Arc<dyn TaskBackend>) -> Self {
        Self { backend }
    }

    /// The queue's counts and the workers with how long ago each was heard from.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # use std::sync::Arc;
    /// # let operator = ferrymcp_tasks::operator::Operator::new(Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new()));
    /// let status = operator.status().await.unwrap();
    /// println!("{} queued, {} workers", status.tasks.queued, status.workers.len());
    /// # }
    /// ```
    pub async fn status(&self) -> Result<FleetStatus, OperatorError> {
        let tasks = self
            .backend
            .stats()
            .await?
            .ok_or(OperatorError::Unsupported("count its tasks"))?;
        let (now_ms, workers) = self
            .backend
            .workers()
            .await?
            .ok_or(OperatorError::Unsupported("list its workers"))?;
        let lease_ms = u64::try_from(self.backend.lease().as_millis()).unwrap_or(u64::MAX);
        let workers = workers
            .into_iter()
            .map(|presence| {
                let age_ms = presence.age_ms(now_ms);
                WorkerStatus {
                    presence,
                    age_ms,
                    stale: age_ms > lease_ms,
                }
            })
            .collect();
        Ok(FleetStatus {
            now_ms,
            lease_ms,
            tasks,
            workers,
        })
    }

    /// The tasks `filter` selects, newest first.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # use std::sync::Arc;
    /// # let operator = ferrymcp_tasks::operator::Operator::new(Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new()));
    /// use ferrymcp_tasks::backend::TaskFilter;
    /// use ferrymcp_types::TaskStatus;
    /// let failed = operator
    ///     .tasks(&TaskFilter { status: Some(TaskStatus::Failed), ..TaskFilter::default() })
    ///     .await
    ///     .unwrap();
    /// assert!(failed.is_empty());
    /// # }
    /// ```
    pub async fn tasks(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>, OperatorError> {
        self.backend
            .records(filter)
            .await?
            .ok_or(OperatorError::Unsupported("list its tasks"))
    }

    /// Task `id`: its state, attempts, worker, timings and error (never its arguments,
    /// context or result). `None` when there is no such task.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # use std::sync::Arc;
    /// # let operator = ferrymcp_tasks::operator::Operator::new(Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new()));
    /// assert!(operator.inspect("no-such-task").await.unwrap().is_none());
    /// # }
    /// ```
    pub async fn inspect(&self, id: &str) -> Result<Option<TaskRecord>, OperatorError> {
        Ok(self.backend.record(id).await?)
    }

    /// Cancels task `id`, whoever submitted it; its run, if any, is told to stop.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # use std::sync::Arc;
    /// # let operator = ferrymcp_tasks::operator::Operator::new(Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new()));
    /// use ferrymcp_tasks::operator::Cancelled;
    /// assert_eq!(operator.cancel("no-such-task").await.unwrap(), Cancelled::NotFound);
    /// # }
    /// ```
    pub async fn cancel(&self, id: &str) -> Result<Cancelled, OperatorError> {
        Ok(match self.backend.cancel_any(id).await? {
            Some(CancelAck::Cancelled) => Cancelled::Cancelled,
            Some(CancelAck::AlreadyTerminal) => Cancelled::AlreadyEnded,
            None => Cancelled::NotFound,
        })
    }

    /// Removes what expired and is still around (tasks past their TTL, runs whose worker
    /// stopped renewing its lease, recovered by the lost-worker policy) and forgets the
    /// workers not heard from for longer than a lease. The sweeper does the first part on
    /// its own; this does it now.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # use std::sync::Arc;
    /// # let operator = ferrymcp_tasks::operator::Operator::new(Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new()));
    /// let report = operator.purge().await.unwrap();
    /// assert_eq!(report.workers_forgotten, 0);
    /// # }
    /// ```
    pub async fn purge(&self) -> Result<PurgeReport, OperatorError> {
        let kept = |stats: Option<StoreStats>| {
            stats.map_or(0, |stats| stats.unfinished() + stats.finished)
        };
        let tasks_before = kept(self.backend.stats().await?);
        self.backend.expire().await?;
        let tasks_after = kept(self.backend.stats().await?);
        let unseen_for = self.backend.lease().max(Duration::from_millis(1));
        let workers_forgotten = self.backend.forget_workers(unseen_for).await?;
        Ok(PurgeReport {
            tasks_before,
            tasks_after,
            workers_forgotten,
        })
    }
}
