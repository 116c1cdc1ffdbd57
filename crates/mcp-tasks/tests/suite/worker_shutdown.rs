//! A worker's graceful shutdown: it stops claiming at once, lets the runs in flight finish
//! within its grace period (heartbeats go on), and only then returns; runs still going after
//! the grace period are stopped and handed back (the lost-worker policy applies at once).

use std::{sync::Arc, time::Duration};

use ferrymcp_core::{Server, ToolDef};
use ferrymcp_tasks::{
    Worker,
    backend::{NewTask, Owner, TaskBackend, memory::MemoryBackend},
};
use ferrymcp_types::TaskStatus;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A tool that says it started, then waits to be let go.
fn gated_server(started: Arc<Notify>, gate: Arc<Notify>) -> Server {
    let server = Server::new("root");
    server
        .add_tool(
            ToolDef::new("gated", move || {
                let (started, gate) = (Arc::clone(&started), Arc::clone(&gate));
                async move {
                    started.notify_one();
                    gate.notified().await;
                    "done"
                }
            })
            .task(true),
        )
        .expect("the gated tool");
    server
}

async fn queued(backend: &MemoryBackend) -> String {
    let owner = Owner::of(None);
    let id = ferrymcp_tasks::new_task_id();
    backend
        .submit(NewTask {
            id: id.clone(),
            owner: owner.clone(),
            caller: owner.as_str().to_owned(),
            tool: "gated".to_owned(),
            version: None,
            arguments: Default::default(),
            context: Default::default(),
            ttl: Some(Duration::from_secs(600)),
            poll_interval: Duration::from_secs(1),
            max_attempts: 1,
        })
        .await
        .expect("submit");
    backend.release(&owner, &id).await.expect("release");
    id
}

async fn status(backend: &MemoryBackend, id: &str) -> TaskStatus {
    backend
        .get(&Owner::of(None), id)
        .await
        .expect("get")
        .expect("the task")
        .status
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_claiming_and_lets_runs_in_flight_finish() {
    let backend = Arc::new(MemoryBackend::new());
    let (started, gate) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let worker = Worker::new(
        gated_server(Arc::clone(&started), Arc::clone(&gate)),
        Arc::clone(&backend) as Arc<dyn TaskBackend>,
    )
    // One run at a time: with its run in flight, the worker waits for a free slot (not in a
    // claim) when the shutdown comes, so no claim is under way then.
    .with_concurrency(1)
    .with_grace(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(worker.run(shutdown.clone()));

    let first = queued(&backend).await;
    started.notified().await;
    shutdown.cancel();
    // Work released after the shutdown is not claimed by this worker.
    let second = queued(&backend).await;
    let mut running = running;
    // On the paused clock, up to just before the grace period ends: the worker still waits
    // for its run, which is still going.
    assert!(
        tokio::time::timeout(Duration::from_secs(59), &mut running)
            .await
            .is_err(),
        "the worker waits for its run in flight"
    );
    assert_eq!(status(&backend, &first).await, TaskStatus::Working);
    gate.notify_one();
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the worker returns once its run finished")
        .expect("the worker task");
    assert_eq!(status(&backend, &first).await, TaskStatus::Completed);
    assert_eq!(status(&backend, &second).await, TaskStatus::Working);
    let left = backend
        .claim(&ferrymcp_tasks::backend::WorkerId::new(), 8, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(
        left.len(),
        1,
        "the second task is still queued for another worker"
    );
}

#[tokio::test(start_paused = true)]
async fn runs_still_going_after_the_grace_period_are_handed_back() {
    let backend = Arc::new(MemoryBackend::new());
    let (started, gate) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let worker = Worker::new(
        gated_server(Arc::clone(&started), gate),
        Arc::clone(&backend) as Arc<dyn TaskBackend>,
    )
    .with_grace(Duration::from_secs(5));
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(worker.run(shutdown.clone()));
    let id = queued(&backend).await;
    started.notified().await;
    shutdown.cancel();
    running
        .await
        .expect("the worker returns after its grace period");
    // Handed back at once (not after the 30 s lease): one attempt only, so it failed.
    let view = backend
        .get(&Owner::of(None), &id)
        .await
        .expect("get")
        .expect("the task");
    assert_eq!(view.status, TaskStatus::Failed);
    assert_eq!(
        view.status_message.as_deref(),
        Some(ferrymcp_tasks::lost_worker::LOST_WORKER_MESSAGE)
    );
}
