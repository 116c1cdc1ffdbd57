//! The worker: claims runs from a [`TaskBackend`], runs each tool on the server that owns
//! it, and records the outcome.
//!
//! A run goes through no middleware and no extension: its submission already went
//! through the root's. It runs on the owning mounted child, with a `Context` whose
//! server is the child, `task_id` set, and the previous round's answers when resuming.
//! Cancellation fires the run's token and drops its future, so a tool awaiting anything
//! stops there.
//!
//! Faults: a run whose lease was last renewed (by a heartbeat sent at some instant and
//! answered `Held`) longer ago than the lease less one heartbeat interval is stopped and
//! writes nothing, so it never overlaps the run another worker starts once the lease has
//! lapsed. Outcome writes and hand-backs that fail are retried with jittered exponential
//! backoff while the lease is still good. Failing claims, heartbeats and sweeps back off the
//! same way and log once when they start failing and once when they recover.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use ferrymcp_core::{
    RequestScope, Server, ToolCall, trace_context::TraceContext, version::VersionSpec,
};
use ferrymcp_types::{CallToolResponse, CallToolResult, ContentBlock, ProtocolVersion};
use serde_json::{Value, json};
use tokio::{sync::Semaphore, time::Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::{
    TaskSnapshot,
    backend::{
        BackendError, Claimed, InputRound, Lease, LeaseState, TaskBackend, WorkerId,
        WorkerPresence, WriteAck,
    },
    owner::resolve_tool,
};

/// How long one `claim` waits for work before looping (to notice shutdown).
const CLAIM_WAIT: Duration = Duration::from_secs(1);
/// How much longer than its wait a claim may take before it counts as failed (a hung store).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The first retry delay after a failure, before jitter.
const BACKOFF_START: Duration = Duration::from_millis(50);
/// The longest retry delay, before jitter.
const BACKOFF_CAP: Duration = Duration::from_secs(1);

/// Jittered exponential backoff: each delay is drawn between half and all of the current
/// step, which doubles from [`BACKOFF_START`] up to [`BACKOFF_CAP`].
pub(crate) struct Backoff {
    step: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self {
            step: BACKOFF_START,
        }
    }

    /// The delay before the next try.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(BACKOFF_CAP);
        let mut bytes = [0u8; 4];
        // Without randomness the delay is still bounded; only the spread is lost.
        let fraction = match getrandom::fill(&mut bytes) {
            Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
            Err(_) => 1.0,
        };
        step / 2 + (step / 2).mul_f64(fraction)
    }

    /// Starts again from the first step (after a success).
    pub(crate) fn reset(&mut self) {
        self.step = BACKOFF_START;
    }
}

/// Logs once when an operation starts failing and once when it recovers.
pub(crate) struct Outage {
    what: &'static str,
    failing: bool,
}

impl Outage {
    pub(crate) fn new(what: &'static str) -> Self {
        Self {
            what,
            failing: false,
        }
    }

    pub(crate) fn failed(&mut self, error: &dyn std::fmt::Display) {
        if !self.failing {
            self.failing = true;
            tracing::warn!(%error, "{} failed; retrying with backoff", self.what);
        } else {
            tracing::debug!(%error, "{} failed again", self.what);
        }
    }

    pub(crate) fn succeeded(&mut self) {
        if self.failing {
            self.failing = false;
            tracing::info!("{} works again", self.what);
        }
    }
}

/// One run in flight: its lease, its stop token, and when its lease was last renewed.
struct RunLease {
    lease: Lease,
    token: CancellationToken,
    /// When the request that last renewed the lease (the claim, or a heartbeat answered
    /// `Held`) was sent.
    renewed: Mutex<Instant>,
    /// How long after `renewed` the run must stop: the lease less one heartbeat interval.
    margin: Duration,
}

impl RunLease {
    /// The instant the run must stop at unless renewed again.
    fn fence_at(&self) -> Instant {
        *lock(&self.renewed) + self.margin
    }

    fn renewed_at(&self, sent: Instant) {
        let mut renewed = lock(&self.renewed);
        *renewed = (*renewed).max(sent);
    }

    /// Resolves when the lease can no longer be trusted.
    async fn lapsed(&self) {
        loop {
            let at = self.fence_at();
            tokio::time::sleep_until(at).await;
            if self.fence_at() <= Instant::now() {
                return;
            }
        }
    }
}

type Running = Arc<Mutex<HashMap<String, Arc<RunLease>>>>;

/// Runs tasks for a server tree. The tasks extension starts one inside the server
/// (the embedded worker); a worker-only process runs one on its own, for the same tree
/// defined in code, resolving each task's owning mounted child from its snapshot.
///
/// ```no_run
/// # async fn run(root: ferrymcp_core::Server) {
/// use std::sync::Arc;
/// use ferrymcp_tasks::{Worker, backend::memory::MemoryBackend};
/// let shutdown = tokio_util::sync::CancellationToken::new();
/// Worker::new(root, Arc::new(MemoryBackend::new())).with_concurrency(4).run(shutdown).await;
/// # }
/// ```
///
/// A worker-only process, on the backend `MCP_TASKS_URL` names, until SIGINT or SIGTERM:
///
/// ```no_run
/// # async fn run(root: ferrymcp_core::Server) -> Result<(), ferrymcp_tasks::ConnectError> {
/// use ferrymcp_tasks::{TasksConfig, Worker};
/// Worker::from_config(root, &TasksConfig::from_env()).await?.run_until_signal().await;
/// # Ok(()) }
/// ```
pub struct Worker {
    root: Server,
    backend: Arc<dyn TaskBackend>,
    id: WorkerId,
    concurrency: usize,
    heartbeat: Duration,
    grace: Duration,
    sweeps: bool,
}

impl Worker {
    /// A worker for the tree under `root`, claiming from `backend`, 10 runs at a time.
    ///
    /// The backend is the one the serving process's [`TasksExtension`](crate::TasksExtension)
    /// submits to; `root` is the same tree, so a task's tool resolves here as it did there.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ferrymcp_core::Server;
    /// use ferrymcp_tasks::{Worker, backend::{TaskBackend, memory::MemoryBackend}};
    ///
    /// let backend: Arc<dyn TaskBackend> = Arc::new(MemoryBackend::new());
    /// let worker = Worker::new(Server::new("app"), backend.clone());
    /// println!("worker {} ready", worker.id().as_str());
    /// ```
    pub fn new(root: Server, backend: Arc<dyn TaskBackend>) -> Self {
        Self {
            root,
            backend,
            id: WorkerId::new(),
            concurrency: 10,
            heartbeat: Duration::from_secs(10),
            grace: Duration::ZERO,
            sweeps: false,
        }
    }

    /// A worker-only process's worker: connects the backend `config` names, takes its
    /// concurrency, heartbeats every third of the backend's lease, recovers lapsed leases
    /// itself (so a fleet without embedded workers still does), and gives runs in flight
    /// 30 s to finish when shut down (then hands them back).
    ///
    /// ```no_run
    /// # async fn run(root: ferrymcp_core::Server) -> Result<(), ferrymcp_tasks::ConnectError> {
    /// let config = ferrymcp_tasks::TasksConfig::default().with_url("redis://127.0.0.1/0?queue=demo");
    /// let worker = ferrymcp_tasks::Worker::from_config(root, &config).await?;
    /// # Ok(()) }
    /// ```
    pub async fn from_config(
        root: Server,
        config: &crate::TasksConfig,
    ) -> Result<Self, crate::ConnectError> {
        let connected = crate::connect(config).await?;
        Ok(Self::new(root, connected.backend.clone())
            .with_concurrency(config.concurrency)
            .with_heartbeat(connected.heartbeat())
            .with_grace(Duration::from_secs(30))
            .with_sweeper(true))
    }

    /// How many runs at once (at least 1).
    ///
    /// ```
    /// # let root = ferrymcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = ferrymcp_tasks::Worker::new(root, backend).with_concurrency(4);
    /// ```
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// How often leases are renewed (a third of the backend's lease or less).
    ///
    /// ```
    /// # let root = ferrymcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = ferrymcp_tasks::Worker::new(root, backend).with_heartbeat(std::time::Duration::from_secs(1));
    /// ```
    pub fn with_heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every.max(Duration::from_millis(1));
        self
    }

    /// How long runs in flight may go on after shutdown before they are stopped and handed
    /// back ([`TaskBackend::hand_back`]: idempotent tools run again elsewhere, others fail
    /// for a lost worker). Default: none.
    ///
    /// ```
    /// # let root = ferrymcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = ferrymcp_tasks::Worker::new(root, backend).with_grace(std::time::Duration::from_secs(30));
    /// ```
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Whether this worker also runs the backend's expiry and lease recovery
    /// ([`TaskBackend::expire`]). Servers do; a worker-only process should.
    ///
    /// ```
    /// # let root = ferrymcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = ferrymcp_tasks::Worker::new(root, backend).with_sweeper(true);
    /// ```
    pub fn with_sweeper(mut self, sweeps: bool) -> Self {
        self.sweeps = sweeps;
        self
    }

    /// This worker's id (the holder its leases name).
    ///
    /// ```
    /// # let root = ferrymcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(ferrymcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = ferrymcp_tasks::Worker::new(root, backend);
    /// assert!(worker.id().as_str().starts_with("worker-"));
    /// ```
    pub fn id(&self) -> &WorkerId {
        &self.id
    }

    /// [`run`](Self::run)s until the process gets SIGINT (Ctrl-C) or, on Unix, SIGTERM.
    ///
    /// ```no_run
    /// # async fn demo(worker: ferrymcp_tasks::Worker) {
    /// worker.run_until_signal().await;
    /// # }
    /// ```
    pub async fn run_until_signal(self) {
        let shutdown = CancellationToken::new();
        let trigger = shutdown.clone();
        let signals = tokio::spawn(async move {
            ferrymcp_core::shutdown_signal().await;
            trigger.cancel();
        });
        self.run(shutdown).await;
        signals.abort();
    }

    /// Claims and runs tasks until `shutdown` fires. Then it stops claiming, lets the runs
    /// in flight finish within the [grace period](Self::with_grace) (heartbeats go on), and
    /// stops the rest and hands them back: the backend's lost-worker policy applies at once.
    ///
    /// ```no_run
    /// # async fn demo(worker: ferrymcp_tasks::Worker) {
    /// let shutdown = tokio_util::sync::CancellationToken::new();
    /// let running = tokio::spawn(worker.run(shutdown.clone()));
    /// shutdown.cancel(); // stop claiming; runs in flight get the grace period
    /// running.await.unwrap();
    /// # }
    /// ```
    pub async fn run(self, shutdown: CancellationToken) {
        let running: Running = Arc::default();
        let permits = Arc::new(Semaphore::new(self.concurrency));
        let stopped = CancellationToken::new();
        let lease = self.backend.lease();
        // At least three heartbeats per lease, whatever was configured.
        let every = self.heartbeat.min(lease / 3).max(Duration::from_millis(1));
        let margin = lease.saturating_sub(every);
        let watcher = tokio::spawn(watch(
            Arc::clone(&self.backend),
            self.backend.events(&self.id),
            Arc::clone(&running),
            every,
            stopped.clone(),
        ));
        let sweeper = self
            .sweeps
            .then(|| tokio::spawn(sweep(Arc::clone(&self.backend), stopped.clone())));
        let runs_changed = Arc::new(tokio::sync::Notify::new());
        let reporter = tokio::spawn(report_presence(
            Arc::clone(&self.backend),
            self.presence(),
            (Arc::clone(&running), Arc::clone(&runs_changed)),
            every,
            stopped.clone(),
        ));
        let mut jobs = tokio::task::JoinSet::new();
        let mut backoff = Backoff::new();
        let mut outage = Outage::new("claiming tasks");
        loop {
            let first = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                permit = Arc::clone(&permits).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let free = permits.available_permits() + 1;
            // Not raced against shutdown: a claim dropped half-way could leave runs claimed
            // by nobody until their leases lapse. A claim waits at most CLAIM_WAIT; one that
            // takes much longer (a hung store) counts as failed.
            let asked = Instant::now();
            let claimed = tokio::time::timeout(
                CLAIM_WAIT + CALL_TIMEOUT,
                self.backend.claim(&self.id, free, CLAIM_WAIT),
            )
            .await
            .unwrap_or_else(|_| {
                Err(BackendError::Unavailable(
                    "the claim got no answer in time".to_owned(),
                ))
            });
            let claimed = match claimed {
                Ok(claimed) => {
                    outage.succeeded();
                    backoff.reset();
                    claimed
                }
                Err(error) => {
                    outage.failed(&error);
                    tokio::select! {
                        biased;
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(backoff.next_delay()) => continue,
                    }
                }
            };
            let mut first = Some(first);
            for run in claimed {
                let permit = match first.take() {
                    Some(permit) => permit,
                    None => match Arc::clone(&permits).try_acquire_owned() {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                };
                let held = Arc::new(RunLease {
                    lease: run.lease.clone(),
                    token: CancellationToken::new(),
                    renewed: Mutex::new(asked),
                    margin,
                });
                lock(&running).insert(run.lease.task.clone(), Arc::clone(&held));
                runs_changed.notify_one();
                let root = self.root.clone();
                let backend = Arc::clone(&self.backend);
                let running = Arc::clone(&running);
                let runs_changed = Arc::clone(&runs_changed);
                // Whatever the run logs carries the task, the tool and which attempt it is.
                // The run continues the trace of the request that submitted the task, and is
                // sampled when that request was.
                let trace = run
                    .context
                    .get("trace")
                    .and_then(|trace| serde_json::from_value::<TraceContext>(trace.clone()).ok());
                let span = ferrymcp_core::trace_root_span!(
                    trace.as_ref(),
                    "mcp.task_run",
                    task = %run.lease.task,
                    tool = %run.tool,
                    attempt = run.attempt,
                    round = run.round,
                );
                if let Some(trace) = trace
                    && !span.is_disabled()
                {
                    trace.adopt(&span);
                }
                jobs.spawn(
                    async move {
                        let task = run.lease.task.clone();
                        // Boxed: the run's state (a few KiB, with the tool call's) is then
                        // not copied as the task is spawned, polled and finished.
                        Box::pin(execute(&root, &backend, run, &held)).await;
                        lock(&running).remove(&task);
                        runs_changed.notify_one();
                        drop(permit);
                    }
                    .instrument(span),
                );
            }
            while jobs.try_join_next().is_some() {}
        }
        let drained = tokio::time::timeout(self.grace, async {
            while jobs.join_next().await.is_some() {}
        })
        .await
        .is_ok();
        if !drained {
            let left: Vec<Arc<RunLease>> = lock(&running).values().cloned().collect();
            tracing::warn!(
                left = left.len(),
                "stopping runs still in flight after the grace period and handing them back"
            );
            for run in &left {
                run.token.cancel();
            }
            jobs.abort_all();
            while jobs.join_next().await.is_some() {}
            // Stopped here, so handing back cannot race a result of ours.
            for run in &left {
                let backend = Arc::clone(&self.backend);
                let lease = run.lease.clone();
                write_outcome(run, "handing back a run", move || {
                    let backend = Arc::clone(&backend);
                    let lease = lease.clone();
                    async move { backend.hand_back(&lease).await }
                })
                .await;
            }
        }
        stopped.cancel();
        let _ = watcher.await;
        if let Some(sweeper) = sweeper {
            let _ = sweeper.await;
        }
        let _ = reporter.await;
        // Stopped cleanly: operators no longer see it (one that dies shows its last report,
        // growing older).
        // Bounded tightly: a store that is down must not hold up the shutdown (the entry
        // then turns stale and `purge` forgets it).
        let gone = self.backend.worker_gone(&self.id);
        match tokio::time::timeout(Duration::from_secs(1), gone).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::debug!(%error, "could not take the worker off the list"),
            Err(_) => tracing::debug!("taking the worker off the list got no answer in time"),
        }
    }

    /// What this worker reports of itself, `running` and `seen_at_ms` left to fill in.
    fn presence(&self) -> WorkerPresence {
        WorkerPresence {
            id: self.id.as_str().to_owned(),
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            pid: std::process::id(),
            started_at_ms: crate::backend::memory::now_ms(),
            seen_at_ms: 0,
            running: 0,
            capacity: u32::try_from(self.concurrency).unwrap_or(u32::MAX),
        }
    }
}

/// The least time between two reports of a worker that runs start and end in.
const REPORT_GAP: Duration = Duration::from_millis(200);

/// Reports the worker to the store at every heartbeat tick, busy or idle, so operators see
/// it and how long ago it was last heard from, and soon after its runs change (at most one
/// report per [`REPORT_GAP`] for that). A report that fails is only logged: the store is
/// then down for leases too, and the outage is reported there.
async fn report_presence(
    backend: Arc<dyn TaskBackend>,
    mut presence: WorkerPresence,
    (running, changed): (Running, Arc<tokio::sync::Notify>),
    every: Duration,
    shutdown: CancellationToken,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut first = true;
    loop {
        if !first {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(REPORT_GAP) => {}
            }
        }
        first = false;
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
            () = changed.notified() => {}
        }
        presence.running = u32::try_from(lock(&running).len()).unwrap_or(u32::MAX);
        let reported = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            reported = tokio::time::timeout(every, backend.worker_seen(&presence)) => reported,
        };
        match reported {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::debug!(%error, "could not report the worker"),
            Err(_) => tracing::debug!("reporting the worker got no answer in time"),
        }
    }
}

/// Writes a run's outcome (or hands it back): tries again with backoff on failure while the
/// lease is still good, then gives up with an error. A retry that finds the task already
/// terminal counts as done: the earlier try may have landed.
async fn write_outcome<F, Fut>(run: &RunLease, what: &str, mut write: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<WriteAck, BackendError>>,
{
    let task = &run.lease.task;
    let mut backoff = Backoff::new();
    let mut tries = 0u32;
    loop {
        let left = run.fence_at().saturating_duration_since(Instant::now());
        if left.is_zero() {
            tracing::error!(task = %task, tries, "{what} failed until the lease ran out; giving up");
            return;
        }
        tries += 1;
        let error = match tokio::time::timeout(left.min(CALL_TIMEOUT), write()).await {
            Ok(Ok(WriteAck::Recorded)) => return,
            Ok(Ok(WriteAck::Terminal)) if tries > 1 => return,
            Ok(Ok(other)) => {
                tracing::debug!(task = %task, ?other, "{what}: nothing recorded");
                return;
            }
            Ok(Err(BackendError::Unavailable(error))) => error,
            Ok(Err(error)) => {
                tracing::error!(task = %task, %error, "{what} failed; giving up");
                return;
            }
            Err(_) => "no answer in time".to_owned(),
        };
        tracing::debug!(task = %task, tries, %error, "{what} failed; retrying");
        let delay = backoff.next_delay();
        let left = run.fence_at().saturating_duration_since(Instant::now());
        tokio::time::sleep(delay.min(left)).await;
    }
}

/// Runs the backend's expiry and lease recovery until `shutdown`.
pub(crate) async fn sweep(backend: Arc<dyn TaskBackend>, shutdown: CancellationToken) {
    // One process-wide reading of the store per sweeping process, while it sweeps.
    let _gauges = crate::metrics::store_gauges(Arc::downgrade(&backend));
    let wakeup = backend.sweeper_wakeup();
    let mut backoff = Backoff::new();
    let mut outage = Outage::new("expiring tasks");
    loop {
        let expired = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            expired = tokio::time::timeout(CALL_TIMEOUT, backend.expire()) => expired,
        };
        let next = match expired {
            Ok(Ok(next)) => {
                outage.succeeded();
                backoff.reset();
                next
            }
            Ok(Err(error)) => {
                outage.failed(&error);
                backoff.next_delay()
            }
            Err(_) => {
                outage.failed(&"no answer in time");
                backoff.next_delay()
            }
        };
        let woken = async {
            match &wakeup {
                Some(notify) => notify.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(next) => {}
            () = woken => {}
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Renews leases and turns cancellations into token cancels.
async fn watch(
    backend: Arc<dyn TaskBackend>,
    mut events: Option<tokio::sync::mpsc::UnboundedReceiver<crate::backend::WorkerEvent>>,
    running: Running,
    every: Duration,
    shutdown: CancellationToken,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut outage = Outage::new("renewing task leases");
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            event = async {
                match events.as_mut() {
                    Some(events) => events.recv().await,
                    None => std::future::pending().await,
                }
            } => match event {
                Some(crate::backend::WorkerEvent::Cancel(id)) => {
                    if let Some(run) = lock(&running).get(&id) {
                        run.token.cancel();
                    }
                }
                None => events = None,
            },
            _ = ticks.tick() => {
                let runs: Vec<Arc<RunLease>> = lock(&running).values().cloned().collect();
                if runs.is_empty() {
                    continue;
                }
                let leases: Vec<Lease> = runs.iter().map(|run| run.lease.clone()).collect();
                let sent = Instant::now();
                // A heartbeat that hangs must not hold up the next one (nor shutdown).
                let answered = tokio::select! {
                    biased;
                    () = shutdown.cancelled() => return,
                    answered = tokio::time::timeout(every, backend.heartbeat(&leases)) => answered,
                };
                match answered {
                    Ok(Ok(states)) => {
                        outage.succeeded();
                        for (run, state) in runs.iter().zip(states) {
                            match state {
                                LeaseState::Held { cancel_requested: false } => {
                                    run.renewed_at(sent);
                                }
                                _ => run.token.cancel(),
                            }
                        }
                    }
                    Ok(Err(error)) => outage.failed(&error),
                    Err(_) => outage.failed(&"no answer in time"),
                }
            }
        }
    }
}

fn error_value(code: i32, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

/// What a run ends with, to be written.
enum Outcome {
    Complete(Value),
    Fail(Value),
    Input(InputRound),
}

/// Runs one claimed run and records its outcome.
async fn execute(root: &Server, backend: &Arc<dyn TaskBackend>, run: Claimed, held: &RunLease) {
    let started = Instant::now();
    if run.attempt > 1 {
        crate::metrics::retried(&run.tool);
    } else if run.round == 1
        && let Some(waited) = run
            .created_at
            .and_then(|created| std::time::SystemTime::now().duration_since(created).ok())
    {
        crate::metrics::waited(waited);
    }
    let tool_name = run.tool.clone();
    let ran = |outcome: &'static str| {
        crate::metrics::run_done(&tool_name, outcome, started.elapsed());
    };
    let lease = run.lease.clone();
    let token = held.token.clone();
    let snapshot: TaskSnapshot =
        serde_json::from_value(Value::Object(run.context)).unwrap_or_default();
    let outcome = match resolve_tool(root, &run.tool, run.version.as_deref()) {
        None => {
            let message = format!("Component not found for task: {}", run.tool);
            Outcome::Fail(error_value(ferrymcp_types::codes::INTERNAL_ERROR, message))
        }
        Some(tool) => {
            let mut scope = RequestScope::new()
                .with_protocol_version(ProtocolVersion::V_2026_07_28)
                .with_root(root.clone())
                .with_cancellation(token.clone());
            if let Some(principal) = snapshot.principal {
                scope = scope.with_principal(principal);
            }
            if let Some(responses) = run.responses {
                scope = scope.with_input(responses, run.request_state);
            } else if let Some(gathered) = snapshot.input_responses {
                // The answers gathered before the task existed, for its first run.
                scope = scope.with_input(gathered, None);
            }
            scope =
                scope.with_progress_sink(progress_to_status(Arc::clone(backend), lease.clone()));
            let mut call = ToolCall::new(tool.name())
                .arguments(Value::Object(run.arguments))
                .scope(scope);
            if let Some(version) = tool.version() {
                call = call.version_spec(VersionSpec::exact(version.clone()));
            }
            let running = root.run_in_background(lease.task.as_str(), call);
            let answered = tokio::select! {
                biased;
                () = token.cancelled() => {
                    ran("stopped");
                    return;
                }
                () = held.lapsed() => {
                    tracing::warn!(
                        task = %lease.task,
                        "stopping a run whose lease could not be renewed in time; another worker may take it over"
                    );
                    token.cancel();
                    ran("stopped");
                    return;
                }
                answered = running => answered,
            };
            outcome_of(answered)
        }
    };
    ran(match &outcome {
        Outcome::Complete(_) => "completed",
        Outcome::Fail(_) => "failed",
        Outcome::Input(_) => "input_required",
    });
    let backend = Arc::clone(backend);
    match outcome {
        Outcome::Complete(result) => {
            write_outcome(held, "recording a task result", || {
                backend.complete(&lease, &result)
            })
            .await;
        }
        Outcome::Fail(error) => {
            write_outcome(held, "recording a task error", || {
                backend.fail(&lease, &error)
            })
            .await;
        }
        Outcome::Input(round) => {
            write_outcome(held, "recording an input request", || {
                let (backend, lease, round) = (Arc::clone(&backend), lease.clone(), round.clone());
                async move { backend.request_input(&lease, round).await }
            })
            .await;
        }
    }
}

/// The outcome a tool's answer asks to record.
fn outcome_of(answered: Result<CallToolResponse, ferrymcp_types::ErrorData>) -> Outcome {
    match answered {
        Ok(CallToolResponse::Complete(result)) => Outcome::Complete(to_json(&result)),
        Ok(CallToolResponse::InputRequired(input)) => match input.input_requests {
            Some(requests) if !requests.is_empty() => {
                let requests = requests
                    .into_iter()
                    .map(|(key, request)| {
                        (key, serde_json::to_value(request).unwrap_or(Value::Null))
                    })
                    .collect();
                Outcome::Input(InputRound {
                    requests,
                    request_state: input.request_state,
                })
            }
            _ if input.request_state.is_some() => {
                // C33: state with nothing to ask cannot resume.
                let result = CallToolResult::error(vec![ContentBlock::text(
                    "the tool returned an input round with state-only and no input requests",
                )]);
                Outcome::Complete(to_json(&result))
            }
            _ => Outcome::Complete(to_json(&CallToolResult::success(Vec::new()))),
        },
        Ok(_) => {
            let message = "the tool answered with a task handle inside a task";
            Outcome::Fail(error_value(ferrymcp_types::codes::INTERNAL_ERROR, message))
        }
        Err(error) => Outcome::Fail(serde_json::to_value(&error).unwrap_or(Value::Null)),
    }
}

fn to_json(result: &CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// Progress reports of a task run become its `statusMessage`.
fn progress_to_status(backend: Arc<dyn TaskBackend>, lease: Lease) -> ferrymcp_core::ProgressSink {
    Arc::new(move |progress: ferrymcp_core::Progress| {
        let backend = Arc::clone(&backend);
        let lease = lease.clone();
        Box::pin(async move {
            match backend
                .set_status_message(&lease, progress.status_text())
                .await
            {
                Ok(_) => {}
                Err(error) => tracing::debug!(task = %lease.task, %error, "progress not recorded"),
            }
        })
    })
}
