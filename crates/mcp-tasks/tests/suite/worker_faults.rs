//! A worker facing a faulty store: heartbeats that fail, outcome writes that fail, a store
//! that stops answering. A [`Faulty`] backend wraps the memory backend and injects the
//! faults on command; every case runs on tokio's paused clock, so leases of 30 s pass at
//! once and deterministically.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use ferrymcp_core::{Server, ToolDef};
use ferrymcp_tasks::{
    Worker,
    backend::{
        BackendError, CancelAck, Claimed, InputRound, Lease, LeaseState, NewTask, Owner,
        TaskBackend, TaskView, UpdateAck, WorkerEvent, WorkerId, WriteAck, memory::MemoryBackend,
    },
};
use ferrymcp_types::{InputResponses, TaskStatus};
use serde_json::Value;
use tokio::{
    sync::{Notify, broadcast, mpsc},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(30);
const HEARTBEAT: Duration = Duration::from_secs(10);
use ferrymcp_tasks::lost_worker::LOST_WORKER_MESSAGE;

/// The memory backend, with faults on command.
struct Faulty {
    inner: MemoryBackend,
    /// Every heartbeat fails (the store is unreachable for renewals).
    heartbeats_fail: AtomicBool,
    /// How many of the next `complete`s fail.
    completes_to_fail: AtomicUsize,
    /// How many `complete`s were tried.
    completes: AtomicUsize,
    /// Every call hangs for good (a half-open connection).
    hang: AtomicBool,
}

impl Faulty {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryBackend::with_lease(LEASE),
            heartbeats_fail: AtomicBool::new(false),
            completes_to_fail: AtomicUsize::new(0),
            completes: AtomicUsize::new(0),
            hang: AtomicBool::new(false),
        })
    }

    async fn maybe_hang(&self) {
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }
}

fn unavailable() -> BackendError {
    BackendError::Unavailable("injected fault".to_owned())
}

#[async_trait]
impl TaskBackend for Faulty {
    async fn submit(&self, task: NewTask) -> Result<TaskView, BackendError> {
        self.maybe_hang().await;
        self.inner.submit(task).await
    }
    async fn release(&self, owner: &Owner, id: &str) -> Result<(), BackendError> {
        self.maybe_hang().await;
        self.inner.release(owner, id).await
    }
    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<TaskView>, BackendError> {
        self.maybe_hang().await;
        self.inner.get(owner, id).await
    }
    async fn deliver_input(
        &self,
        owner: &Owner,
        id: &str,
        responses: InputResponses,
    ) -> Result<Option<UpdateAck>, BackendError> {
        self.maybe_hang().await;
        self.inner.deliver_input(owner, id, responses).await
    }
    async fn cancel(&self, owner: &Owner, id: &str) -> Result<Option<CancelAck>, BackendError> {
        self.maybe_hang().await;
        self.inner.cancel(owner, id).await
    }
    async fn claim(
        &self,
        worker: &WorkerId,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Claimed>, BackendError> {
        self.maybe_hang().await;
        self.inner.claim(worker, max, wait).await
    }
    async fn heartbeat(&self, leases: &[Lease]) -> Result<Vec<LeaseState>, BackendError> {
        self.maybe_hang().await;
        if self.heartbeats_fail.load(Ordering::SeqCst) {
            return Err(unavailable());
        }
        self.inner.heartbeat(leases).await
    }
    async fn complete(&self, lease: &Lease, result: &Value) -> Result<WriteAck, BackendError> {
        self.maybe_hang().await;
        self.completes.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .completes_to_fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(unavailable());
        }
        self.inner.complete(lease, result).await
    }
    async fn fail(&self, lease: &Lease, error: &Value) -> Result<WriteAck, BackendError> {
        self.maybe_hang().await;
        self.inner.fail(lease, error).await
    }
    async fn set_status_message(
        &self,
        lease: &Lease,
        message: String,
    ) -> Result<WriteAck, BackendError> {
        self.maybe_hang().await;
        self.inner.set_status_message(lease, message).await
    }
    async fn request_input(
        &self,
        lease: &Lease,
        round: InputRound,
    ) -> Result<WriteAck, BackendError> {
        self.maybe_hang().await;
        self.inner.request_input(lease, round).await
    }
    async fn hand_back(&self, lease: &Lease) -> Result<WriteAck, BackendError> {
        self.maybe_hang().await;
        self.inner.hand_back(lease).await
    }
    async fn expire(&self) -> Result<Duration, BackendError> {
        self.maybe_hang().await;
        self.inner.expire().await
    }
    fn events(&self, worker: &WorkerId) -> Option<mpsc::UnboundedReceiver<WorkerEvent>> {
        self.inner.events(worker)
    }
    fn changes(&self) -> Option<broadcast::Receiver<String>> {
        self.inner.changes()
    }
    async fn watch(&self, owner: &Owner, id: &str) -> Result<bool, BackendError> {
        self.inner.watch(owner, id).await
    }
    fn lease(&self) -> Duration {
        self.inner.lease()
    }
}

/// What the test tool reports: how many times it started, and when its run was dropped.
#[derive(Default)]
struct Probe {
    started: Notify,
    executions: AtomicUsize,
    dropped: std::sync::Mutex<Option<Instant>>,
    dropped_signal: Notify,
}

/// Notes when the run holding it is dropped (stopped before it returned).
struct DropGuard(Arc<Probe>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        *self.0.dropped.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.0.dropped_signal.notify_one();
    }
}

/// A server whose task tool `work` counts its runs and takes `takes` (forever if `None`).
fn server(probe: &Arc<Probe>, takes: Option<Duration>) -> Server {
    let server = Server::new("root");
    let probe = Arc::clone(probe);
    server
        .add_tool(
            ToolDef::new("work", move || {
                let probe = Arc::clone(&probe);
                async move {
                    probe.executions.fetch_add(1, Ordering::SeqCst);
                    probe.started.notify_one();
                    let guard = DropGuard(Arc::clone(&probe));
                    match takes {
                        Some(takes) => tokio::time::sleep(takes).await,
                        None => std::future::pending().await,
                    }
                    std::mem::forget(guard);
                    "done"
                }
            })
            .task(true),
        )
        .expect("the work tool");
    server
}

fn worker(server: Server, backend: &Arc<Faulty>) -> Worker {
    Worker::new(server, Arc::clone(backend) as Arc<dyn TaskBackend>).with_heartbeat(HEARTBEAT)
}

async fn queued(backend: &Faulty) -> String {
    let owner = Owner::of(None);
    let id = ferrymcp_tasks::new_task_id();
    backend
        .inner
        .submit(NewTask {
            id: id.clone(),
            owner: owner.clone(),
            caller: "anon:faults".to_owned(),
            tool: "work".to_owned(),
            version: None,
            arguments: Default::default(),
            context: Default::default(),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_secs(1),
            max_attempts: 1,
        })
        .await
        .expect("submit");
    backend.inner.release(&owner, &id).await.expect("release");
    id
}

async fn view(backend: &Faulty, id: &str) -> TaskView {
    backend
        .inner
        .get(&Owner::of(None), id)
        .await
        .expect("get")
        .expect("the task")
}

/// Waits (on the paused clock, at most ten minutes of it) until the task is terminal.
async fn terminal(backend: &Faulty, id: &str) -> TaskView {
    let mut changes = backend
        .inner
        .changes()
        .expect("the memory backend's changes");
    tokio::time::timeout(Duration::from_secs(600), async {
        loop {
            let shown = view(backend, id).await;
            if shown.status.is_terminal() {
                return shown;
            }
            let _ = changes.recv().await;
        }
    })
    .await
    .expect("the task ends")
}

#[tokio::test(start_paused = true)]
async fn a_run_whose_heartbeats_fail_stops_before_its_lease_ends_and_writes_nothing() {
    let backend = Faulty::new();
    backend.heartbeats_fail.store(true, Ordering::SeqCst);
    let probe = Arc::new(Probe::default());
    // The tool would finish after 25 s: within the lease, but past the point (lease less
    // one heartbeat) where its worker can no longer be sure the lease is still its own.
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(
        worker(server(&probe, Some(Duration::from_secs(25))), &backend).run(shutdown.clone()),
    );
    let id = queued(&backend).await;
    probe.started.notified().await;
    let began = Instant::now();
    tokio::time::timeout(LEASE, probe.dropped_signal.notified())
        .await
        .expect("the run is stopped before its lease could have lapsed");
    let stopped = probe
        .dropped
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expect("dropped");
    assert!(
        stopped - began < LEASE,
        "stopped after {:?}",
        stopped - began
    );
    assert_eq!(view(&backend, &id).await.status, TaskStatus::Working);

    // The lease lapses; the store recovers the run (one attempt: failed, worker lost).
    tokio::time::sleep(LEASE).await;
    backend.inner.expire().await.expect("expire");
    let shown = view(&backend, &id).await;
    assert_eq!(shown.status, TaskStatus::Failed);
    assert_eq!(shown.status_message.as_deref(), Some(LOST_WORKER_MESSAGE));
    assert_eq!(
        backend.completes.load(Ordering::SeqCst),
        0,
        "the stopped run wrote nothing"
    );
    assert_eq!(probe.executions.load(Ordering::SeqCst), 1);
    shutdown.cancel();
    running.await.expect("the worker returns");
}

#[tokio::test(start_paused = true)]
async fn a_complete_that_fails_twice_then_succeeds_is_recorded_with_one_execution() {
    let backend = Faulty::new();
    backend.completes_to_fail.store(2, Ordering::SeqCst);
    let probe = Arc::new(Probe::default());
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(
        worker(server(&probe, Some(Duration::from_secs(1))), &backend).run(shutdown.clone()),
    );
    let id = queued(&backend).await;
    let shown = terminal(&backend, &id).await;
    assert_eq!(shown.status, TaskStatus::Completed, "{shown:?}");
    assert_eq!(
        shown
            .result
            .as_ref()
            .and_then(|r| r["content"][0]["text"].as_str()),
        Some("done")
    );
    assert_eq!(
        backend.completes.load(Ordering::SeqCst),
        3,
        "two failed tries, one recorded"
    );
    assert_eq!(
        probe.executions.load(Ordering::SeqCst),
        1,
        "exactly one execution"
    );
    shutdown.cancel();
    running.await.expect("the worker returns");
}

#[tokio::test(start_paused = true)]
async fn shutdown_returns_when_the_backend_hangs() {
    let backend = Faulty::new();
    let probe = Arc::new(Probe::default());
    let grace = Duration::from_secs(5);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(
        worker(server(&probe, None), &backend)
            .with_grace(grace)
            .with_sweeper(true)
            .run(shutdown.clone()),
    );
    queued(&backend).await;
    probe.started.notified().await;
    // From now on no call is ever answered.
    backend.hang.store(true, Ordering::SeqCst);
    shutdown.cancel();
    tokio::time::timeout(grace + LEASE + Duration::from_secs(10), running)
        .await
        .expect("the worker returns although the store hangs")
        .expect("the worker task");
}
