//! Fair scheduling of [`RedisBackend`] on a real Redis: workers take runs by start-time fair
//! queueing across callers, so one caller's flood delays another's tasks by at most one run
//! slot each; and the queue's scheduling keys hold nothing once the work is done.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_fairness::`.

use crate::redis_tasks;

use std::time::Duration;

use ferrymcp_tasks::backend::{
    TaskBackend, TaskLimits, WorkerId, WriteAck,
    redis::{RedisBackend, RedisOptions},
};
use ferrymcp_test_helpers::redis::RedisServer;
use serde_json::json;

use redis_tasks::echo_task as task;

async fn queue(backend: &RedisBackend, caller: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let new = task(caller);
        backend.submit(new.clone()).await.expect("submit");
        backend.release(&new.owner, &new.id).await.expect("release");
        ids.push(new.id);
    }
    ids
}

#[tokio::test]
async fn scope1_a_flooding_caller_delays_another_by_at_most_one_run_slot() {
    let url = RedisServer::shared().queue_url("fair");
    let options = RedisOptions::default().with_limits(TaskLimits::unlimited());
    let backend = RedisBackend::connect_with(&url, options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let flood = queue(&backend, "auth:flood", 60).await;
    let worker = WorkerId::new();
    // The flood is being worked on when the other caller comes.
    let first = backend
        .claim(&worker, 1, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(first.len(), 1);
    let quick = queue(&backend, "auth:quick", 5).await;

    // One run slot: claims one at a time, as a worker with one free slot does.
    let mut order = Vec::new();
    for _ in 0..(flood.len() - 1 + quick.len()) {
        let runs = backend
            .claim(&worker, 1, Duration::ZERO)
            .await
            .expect("claim");
        let run = runs.into_iter().next().expect("work is left");
        assert_eq!(
            backend
                .complete(&run.lease, &json!({}))
                .await
                .expect("complete"),
            WriteAck::Recorded
        );
        order.push(run.lease.task);
    }
    for (i, id) in quick.iter().enumerate() {
        let position = order.iter().position(|claimed| claimed == id);
        let position = position.unwrap_or_else(|| panic!("quick task {i} never ran"));
        // Its i-th task waits for at most i + 1 of the flood's runs (and its own i before).
        assert!(
            position <= 2 * i + 1,
            "quick task {i} ran {position}th: {order:?}"
        );
    }
    assert!(
        backend
            .claim(&worker, 1, Duration::ZERO)
            .await
            .expect("claim")
            .is_empty()
    );
}

#[tokio::test]
async fn the_scheduling_keys_hold_nothing_once_the_work_is_done() {
    let url = RedisServer::shared().queue_url("fair-clean");
    let backend = RedisBackend::connect_with(&url, RedisOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut ids = queue(&backend, "auth:a", 10).await;
    ids.extend(queue(&backend, "auth:b", 10).await);
    let worker = WorkerId::new();
    let mut done = 0;
    while done < ids.len() {
        let runs = backend
            .claim(&worker, 4, Duration::ZERO)
            .await
            .expect("claim");
        assert!(!runs.is_empty(), "work is left");
        for run in runs {
            backend
                .complete(&run.lease, &json!({}))
                .await
                .expect("complete");
            done += 1;
        }
    }
    let mut redis = redis::Client::open(RedisServer::shared().url())
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let prefix = backend.key_prefix();
    for key in ["r", "l", "s"] {
        let left: u64 = redis::cmd("ZCARD")
            .arg(format!("{prefix}:{key}"))
            .query_async(&mut redis)
            .await
            .expect("ZCARD");
        assert_eq!(left, 0, "{prefix}:{key} still holds members");
    }
    // Every task finished: no unfinished count is left, of anybody.
    let counts: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("{prefix}:n"))
        .query_async(&mut redis)
        .await
        .expect("HKEYS");
    assert!(
        counts
            .iter()
            .all(|field| !field.starts_with("c:") && !field.starts_with("t:")),
        "callers' counts or tags left: {counts:?}"
    );
    let unfinished: Option<u64> = redis::cmd("HGET")
        .arg(format!("{prefix}:n"))
        .arg("u")
        .query_async(&mut redis)
        .await
        .expect("HGET");
    assert_eq!(unfinished.unwrap_or(0), 0, "unfinished tasks counted");
    let wake: u64 = redis::cmd("XLEN")
        .arg(format!("{prefix}:w"))
        .query_async(&mut redis)
        .await
        .expect("XLEN");
    assert!(wake <= 200, "the wake-up stream is capped, holds {wake}");
}
