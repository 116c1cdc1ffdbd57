//! TTL hygiene of [`RedisBackend`]: after 5,000 tasks ended every way a task can end (and
//! some left waiting for input, with their side keys), and their TTL passed, the queue's
//! keyspace holds no task keys, and its queue, leases and counts no members.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_ttl::`.

use std::time::{Duration, Instant};

use ferrymcp_tasks::backend::{
    InputRound, NewTask, Owner, TaskBackend, TaskLimits, WorkerId,
    redis::{RedisBackend, RedisOptions},
};
use ferrymcp_test_helpers::redis::RedisServer;
use futures::StreamExt as _;
use serde_json::json;

const TASKS: usize = 5000;
/// Long enough to submit and end every task first (the test then waits it out).
const TTL: Duration = Duration::from_secs(20);

/// Every key of the queue whose name says it belongs to a task.
async fn task_keys(redis: &mut redis::aio::MultiplexedConnection, prefix: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:t:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(redis)
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_task_key_outlives_its_ttl() {
    let server = RedisServer::shared();
    let options = RedisOptions::default().with_limits(TaskLimits::unlimited());
    let backend = RedisBackend::connect_with(&server.queue_url("ttl"), options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let prefix = backend.key_prefix().to_owned();
    let mut redis = redis::Client::open(server.url())
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let owner = Owner::of(None);

    let submitted: Vec<_> = futures::stream::iter(0..TASKS)
        .map(|_| {
            let (backend, owner) = (&backend, owner.clone());
            async move {
                let task = NewTask {
                    id: ferrymcp_tasks::new_task_id(),
                    owner: owner.clone(),
                    caller: owner.as_str().to_owned(),
                    tool: "t".to_owned(),
                    version: None,
                    arguments: Default::default(),
                    context: Default::default(),
                    ttl: Some(TTL),
                    poll_interval: Duration::from_secs(1),
                    max_attempts: 1,
                };
                backend.submit(task.clone()).await.expect("submit");
                backend.release(&owner, &task.id).await.expect("release");
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert_eq!(submitted.len(), TASKS);

    // End them every way: completed, failed, cancelled while running, cancelled while
    // waiting, and left waiting for input with one of two answers given (so every side key
    // exists).
    let worker = WorkerId::new();
    let mut ended = 0;
    let mut n = 0usize;
    while ended < TASKS {
        let runs = backend
            .claim(&worker, 256, Duration::from_secs(5))
            .await
            .expect("claim");
        assert!(!runs.is_empty(), "claimed {ended} of {TASKS}, then nothing");
        for run in runs {
            let lease = &run.lease;
            match n % 5 {
                0 => drop(
                    backend
                        .complete(lease, &json!({"content": []}))
                        .await
                        .expect("complete"),
                ),
                1 => drop(
                    backend
                        .fail(lease, &json!({"code": -32603, "message": "no"}))
                        .await
                        .expect("fail"),
                ),
                2 => drop(backend.cancel(&owner, &lease.task).await.expect("cancel")),
                _ => {
                    let round = InputRound {
                        requests: [
                            ("a".to_owned(), json!({"method": "x"})),
                            ("b".to_owned(), json!({"method": "y"})),
                        ]
                        .into_iter()
                        .collect(),
                        request_state: Some("s".to_owned()),
                    };
                    backend
                        .request_input(lease, round)
                        .await
                        .expect("request_input");
                    let view = backend
                        .get(&owner, &lease.task)
                        .await
                        .expect("get")
                        .expect("the task");
                    let first = view.input_requests.keys().next().cloned().expect("a key");
                    backend
                        .deliver_input(
                            &owner,
                            &lease.task,
                            [(first, json!({"action": "accept"}))].into_iter().collect(),
                        )
                        .await
                        .expect("deliver_input");
                    if n % 5 == 3 {
                        backend.cancel(&owner, &lease.task).await.expect("cancel");
                    }
                }
            }
            n += 1;
            ended += 1;
        }
    }
    let before = task_keys(&mut redis, &prefix).await;
    assert!(
        before.len() >= TASKS,
        "the tasks are kept until their TTL: {} keys",
        before.len()
    );
    assert!(
        before.iter().any(|k| k.ends_with(":ir")) && before.iter().any(|k| k.ends_with(":ia")),
        "tasks waiting for input have their side keys"
    );

    // Then their TTL passes: poll the keyspace (Redis expires keys on its own clock).
    let deadline = Instant::now() + TTL + Duration::from_secs(60);
    loop {
        let left = task_keys(&mut redis, &prefix).await;
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} task keys outlived their TTL, e.g. {:?}",
            left.len(),
            &left[..left.len().min(5)]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for key in ["r", "l", "s"] {
        let left: u64 = redis::cmd("ZCARD")
            .arg(format!("{prefix}:{key}"))
            .query_async(&mut redis)
            .await
            .expect("ZCARD");
        assert_eq!(left, 0, "{prefix}:{key} keeps members of expired tasks");
    }
    // A sweep once their expiry buckets (100 ms wide) have passed takes the expired tasks
    // out of the counts.
    loop {
        backend.expire().await.expect("expire");
        let mut left: Vec<String> = Vec::new();
        for pattern in ["n*", "x:*", "xb"] {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{prefix}:{pattern}"))
                .query_async(&mut redis)
                .await
                .expect("KEYS");
            left.extend(keys);
        }
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "counts outlived their tasks: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
