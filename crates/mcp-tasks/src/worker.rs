//! The worker: claims runs from a [`TaskBackend`], runs each tool on the server that owns
//! it, and records the outcome.
//!
//! A run goes through no middleware and no extension (B11, D03): its submission already went
//! through the root's. It runs on the owning mounted child (D06–D08), with a `Context` whose
//! server is the child, `task_id` set, and the previous round's answers when resuming.
//! Cancellation fires the run's token and drops its future, so a tool awaiting anything
//! stops there.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use mcp_core::{RequestScope, Server, ToolCall, version::VersionSpec};
use mcp_types::{CallToolResponse, CallToolResult, ContentBlock, ProtocolVersion};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::{
    TaskSnapshot,
    backend::{Claimed, InputRound, Lease, LeaseState, TaskBackend, WorkerId},
    owner::resolve_tool,
};

/// How long one `claim` waits for work before looping (to notice shutdown).
const CLAIM_WAIT: Duration = Duration::from_secs(1);

type Running = Arc<Mutex<HashMap<String, (Lease, CancellationToken)>>>;

/// Runs tasks for a server tree. The tasks extension starts one inside the server
/// (the embedded worker); a worker-only process runs one on its own, for the same tree
/// defined in code, resolving each task's owning mounted child from its snapshot.
///
/// ```no_run
/// # async fn run(root: mcp_core::Server) {
/// use std::sync::Arc;
/// use mcp_tasks::{Worker, backend::memory::MemoryBackend};
/// let shutdown = tokio_util::sync::CancellationToken::new();
/// Worker::new(root, Arc::new(MemoryBackend::new())).with_concurrency(4).run(shutdown).await;
/// # }
/// ```
///
/// A worker-only process, on the backend `MCP_TASKS_URL` names, until SIGINT or SIGTERM:
///
/// ```no_run
/// # async fn run(root: mcp_core::Server) -> Result<(), mcp_tasks::ConnectError> {
/// use mcp_tasks::{TasksConfig, Worker};
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
    /// # async fn run(root: mcp_core::Server) -> Result<(), mcp_tasks::ConnectError> {
    /// let config = mcp_tasks::TasksConfig::default().with_url("redis://127.0.0.1/0?queue=demo");
    /// let worker = mcp_tasks::Worker::from_config(root, &config).await?;
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
    /// # let root = mcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(mcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = mcp_tasks::Worker::new(root, backend).with_concurrency(4);
    /// ```
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// How often leases are renewed (a third of the backend's lease or less).
    ///
    /// ```
    /// # let root = mcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(mcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = mcp_tasks::Worker::new(root, backend).with_heartbeat(std::time::Duration::from_secs(1));
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
    /// # let root = mcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(mcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = mcp_tasks::Worker::new(root, backend).with_grace(std::time::Duration::from_secs(30));
    /// ```
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Whether this worker also runs the backend's expiry and lease recovery
    /// ([`TaskBackend::expire`]). Servers do; a worker-only process should.
    ///
    /// ```
    /// # let root = mcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(mcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = mcp_tasks::Worker::new(root, backend).with_sweeper(true);
    /// ```
    pub fn with_sweeper(mut self, sweeps: bool) -> Self {
        self.sweeps = sweeps;
        self
    }

    /// This worker's id (the holder its leases name).
    ///
    /// ```
    /// # let root = mcp_core::Server::new("r");
    /// # let backend = std::sync::Arc::new(mcp_tasks::backend::memory::MemoryBackend::new());
    /// let worker = mcp_tasks::Worker::new(root, backend);
    /// assert!(worker.id().as_str().starts_with("worker-"));
    /// ```
    pub fn id(&self) -> &WorkerId {
        &self.id
    }

    /// [`run`](Self::run)s until the process gets SIGINT (Ctrl-C) or, on Unix, SIGTERM.
    ///
    /// ```no_run
    /// # async fn demo(worker: mcp_tasks::Worker) {
    /// worker.run_until_signal().await;
    /// # }
    /// ```
    pub async fn run_until_signal(self) {
        let shutdown = CancellationToken::new();
        let trigger = shutdown.clone();
        let signals = tokio::spawn(async move {
            wait_for_signal().await;
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
    /// # async fn demo(worker: mcp_tasks::Worker) {
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
        let watcher = tokio::spawn(watch(
            Arc::clone(&self.backend),
            self.backend.events(&self.id),
            Arc::clone(&running),
            self.heartbeat,
            stopped.clone(),
        ));
        let sweeper = self
            .sweeps
            .then(|| tokio::spawn(sweep(Arc::clone(&self.backend), stopped.clone())));
        let mut jobs = tokio::task::JoinSet::new();
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
            // by nobody until their leases lapse. A claim waits at most CLAIM_WAIT.
            let claimed = self.backend.claim(&self.id, free, CLAIM_WAIT).await;
            let claimed = match claimed {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(%error, "claiming tasks failed; retrying");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_millis(500)) => continue,
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
                let token = CancellationToken::new();
                lock(&running).insert(run.lease.task.clone(), (run.lease.clone(), token.clone()));
                let root = self.root.clone();
                let backend = Arc::clone(&self.backend);
                let running = Arc::clone(&running);
                jobs.spawn(async move {
                    let task = run.lease.task.clone();
                    execute(&root, &backend, run, token).await;
                    lock(&running).remove(&task);
                    drop(permit);
                });
            }
            while jobs.try_join_next().is_some() {}
        }
        let drained = tokio::time::timeout(self.grace, async {
            while jobs.join_next().await.is_some() {}
        })
        .await
        .is_ok();
        if !drained {
            let left: Vec<(Lease, CancellationToken)> = lock(&running).values().cloned().collect();
            tracing::warn!(
                left = left.len(),
                "stopping runs still in flight after the grace period and handing them back"
            );
            for (_, token) in &left {
                token.cancel();
            }
            jobs.abort_all();
            while jobs.join_next().await.is_some() {}
            // Stopped here, so handing back cannot race a result of ours.
            for (lease, _) in &left {
                if let Err(error) = self.backend.hand_back(lease).await {
                    tracing::warn!(task = %lease.task, %error, "handing a run back failed; its lease will lapse");
                }
            }
        }
        stopped.cancel();
        let _ = watcher.await;
        if let Some(sweeper) = sweeper {
            let _ = sweeper.await;
        }
    }
}

/// Resolves on SIGINT, or SIGTERM on Unix.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(error) => {
                    tracing::warn!(%error, "cannot watch SIGTERM; stopping on Ctrl-C only");
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs the backend's expiry and lease recovery until `shutdown`.
pub(crate) async fn sweep(backend: Arc<dyn TaskBackend>, shutdown: CancellationToken) {
    let wakeup = backend.sweeper_wakeup();
    loop {
        let next = match backend.expire().await {
            Ok(next) => next,
            Err(error) => {
                tracing::warn!(%error, "expiring tasks failed");
                Duration::from_secs(1)
            }
        };
        let woken = async {
            match &wakeup {
                Some(notify) => notify.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
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
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            event = async {
                match events.as_mut() {
                    Some(events) => events.recv().await,
                    None => std::future::pending().await,
                }
            } => match event {
                Some(crate::backend::WorkerEvent::Cancel(id)) => {
                    if let Some((_, token)) = lock(&running).get(&id) {
                        token.cancel();
                    }
                }
                None => events = None,
            },
            _ = ticks.tick() => {
                let leases: Vec<(Lease, CancellationToken)> = lock(&running).values().cloned().collect();
                if leases.is_empty() {
                    continue;
                }
                let only: Vec<Lease> = leases.iter().map(|(lease, _)| lease.clone()).collect();
                match backend.heartbeat(&only).await {
                    Ok(states) => {
                        for ((_, token), state) in leases.iter().zip(states) {
                            if !matches!(state, LeaseState::Held { cancel_requested: false }) {
                                token.cancel();
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "heartbeat failed"),
                }
            }
        }
    }
}

fn error_value(code: i32, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

/// Runs one claimed run and records its outcome.
async fn execute(
    root: &Server,
    backend: &Arc<dyn TaskBackend>,
    run: Claimed,
    token: CancellationToken,
) {
    let lease = run.lease.clone();
    let snapshot: TaskSnapshot =
        serde_json::from_value(Value::Object(run.context.clone())).unwrap_or_default();
    let Some(tool) = resolve_tool(root, &run.tool, run.version.as_deref()) else {
        let message = format!("Component not found for task: {}", run.tool);
        record(
            backend
                .fail(
                    &lease,
                    error_value(mcp_types::codes::INTERNAL_ERROR, message),
                )
                .await,
        );
        return;
    };
    let mut scope = RequestScope::new()
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
        .with_root(root.clone())
        .with_task_id(lease.task.clone())
        .with_cancellation(token.clone());
    if let Some(principal) = snapshot.principal {
        scope = scope.with_principal(principal);
    }
    if let Some(responses) = run.responses {
        scope = scope.with_input(responses, run.request_state);
    }
    scope = scope.with_progress_sink(progress_to_status(Arc::clone(backend), lease.clone()));
    let mut call = ToolCall::new(tool.owner_name())
        .arguments(Value::Object(run.arguments))
        .scope(scope)
        .without_middleware();
    if let Some(version) = tool.version() {
        call = call.version_spec(VersionSpec::exact(version.clone()));
    }
    let owner = tool.owner().clone();
    let outcome = tokio::select! {
        biased;
        () = token.cancelled() => return,
        outcome = owner.call(call) => outcome,
    };
    let ack = match outcome {
        Ok(CallToolResponse::Complete(result)) => backend.complete(&lease, to_json(&result)).await,
        Ok(CallToolResponse::InputRequired(input)) => match input.input_requests {
            Some(requests) if !requests.is_empty() => {
                let requests = requests
                    .into_iter()
                    .map(|(key, request)| {
                        (key, serde_json::to_value(request).unwrap_or(Value::Null))
                    })
                    .collect();
                let round = InputRound {
                    requests,
                    request_state: input.request_state,
                };
                backend.request_input(&lease, round).await
            }
            _ if input.request_state.is_some() => {
                // C33: state with nothing to ask cannot resume.
                let result = CallToolResult::error(vec![ContentBlock::text(
                    "the tool returned an input round with state-only and no input requests",
                )]);
                backend.complete(&lease, to_json(&result)).await
            }
            _ => {
                backend
                    .complete(&lease, to_json(&CallToolResult::success(Vec::new())))
                    .await
            }
        },
        Ok(_) => {
            let message = "the tool answered with a task handle inside a task";
            backend
                .fail(
                    &lease,
                    error_value(mcp_types::codes::INTERNAL_ERROR, message),
                )
                .await
        }
        Err(error) => {
            backend
                .fail(&lease, serde_json::to_value(&error).unwrap_or(Value::Null))
                .await
        }
    };
    record(ack);
}

fn to_json(result: &CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

fn record(ack: Result<crate::backend::WriteAck, crate::backend::BackendError>) {
    match ack {
        Ok(crate::backend::WriteAck::Recorded) => {}
        Ok(other) => tracing::debug!(?other, "a task outcome was not recorded"),
        Err(error) => tracing::warn!(%error, "recording a task outcome failed"),
    }
}

/// Progress reports of a task run become its `statusMessage` (R50).
fn progress_to_status(backend: Arc<dyn TaskBackend>, lease: Lease) -> mcp_core::ProgressSink {
    Arc::new(move |progress: mcp_core::Progress| {
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
