//! Quotas of [`RedisBackend`] on a real Redis: unfinished tasks per caller and in all, tasks
//! kept, argument and result size. A refused submission stores nothing and names its limit;
//! other callers are unaffected; a finished or expired task frees its place.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_limits::`.

use crate::redis_tasks;

use std::time::{Duration, Instant};

use ferrymcp_tasks::backend::{
    BackendError, Limit, LimitExceeded, NewTask, TaskBackend, TaskLimits, WorkerId, WriteAck,
    redis::{RedisBackend, RedisOptions},
};
use ferrymcp_test_helpers::redis::RedisServer;
use serde_json::json;

fn task(caller: &str, ttl: Duration) -> NewTask {
    NewTask {
        arguments: json!({"text": "hi"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ttl: Some(ttl),
        ..redis_tasks::echo_task(caller)
    }
}

async fn backend(name: &str, limits: TaskLimits) -> RedisBackend {
    let url = RedisServer::shared().queue_url(name);
    RedisBackend::connect_with(&url, RedisOptions::default().with_limits(limits))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn refusal(result: Result<impl std::fmt::Debug, BackendError>) -> LimitExceeded {
    match result {
        Err(BackendError::Limit(refusal)) => refusal,
        other => panic!("expected a limit refusal, got {other:?}"),
    }
}

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn over_the_per_caller_quota_a_submit_is_refused_stores_nothing_and_spares_others() {
    let backend = backend("quota", TaskLimits::default().with_max_tasks_per_caller(3)).await;
    let mut alice = Vec::new();
    for _ in 0..3 {
        let new = task("auth:alice", HOUR);
        backend.submit(new.clone()).await.expect("within the quota");
        backend.release(&new.owner, &new.id).await.expect("release");
        alice.push(new);
    }
    let over = task("auth:alice", HOUR);
    let refused = refusal(backend.submit(over.clone()).await);
    assert_eq!(
        refused,
        LimitExceeded {
            limit: Limit::TasksPerCaller,
            max: 3
        }
    );
    assert!(
        refused
            .to_string()
            .contains("MCP_TASKS_MAX_TASKS_PER_CALLER")
    );
    assert_eq!(
        backend.get(&over.owner, &over.id).await.expect("get"),
        None,
        "a refused task is not stored"
    );
    let bob = task("auth:bob", HOUR);
    backend
        .submit(bob)
        .await
        .expect("another caller is unaffected");

    // A finished task frees its place.
    let worker = WorkerId::new();
    let runs = backend
        .claim(&worker, 1, Duration::ZERO)
        .await
        .expect("claim");
    let run = runs.first().expect("a run");
    assert_eq!(
        backend
            .complete(&run.lease, &json!({}))
            .await
            .expect("complete"),
        WriteAck::Recorded
    );
    backend
        .submit(task("auth:alice", HOUR))
        .await
        .expect("a place was freed");
    refusal(backend.submit(task("auth:alice", HOUR)).await);
}

#[tokio::test]
async fn over_the_global_limit_every_caller_is_refused() {
    let backend = backend("global", TaskLimits::default().with_max_tasks(2)).await;
    backend.submit(task("auth:a", HOUR)).await.expect("first");
    backend.submit(task("auth:b", HOUR)).await.expect("second");
    let refused = refusal(backend.submit(task("auth:c", HOUR)).await);
    assert_eq!(refused.limit, Limit::Tasks);
    assert_eq!(refused.max, 2);
}

#[tokio::test]
async fn kept_tasks_count_until_they_expire() {
    let backend = backend("kept", TaskLimits::default().with_max_kept(2)).await;
    let short = task("auth:a", Duration::from_millis(300));
    backend.submit(short.clone()).await.expect("first");
    backend.submit(task("auth:b", HOUR)).await.expect("second");
    assert_eq!(
        refusal(backend.submit(task("auth:c", HOUR)).await).limit,
        Limit::Kept
    );
    // The short-lived task's expiry (on Redis' clock) frees its place: retried until it
    // does, for at most 10 s.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match backend.submit(task("auth:c", HOUR)).await {
            Ok(_) => break,
            Err(BackendError::Limit(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("the expired task never freed its place: {other:?}"),
        }
    }
    assert_eq!(
        backend.get(&short.owner, &short.id).await.expect("get"),
        None
    );
}

#[tokio::test]
async fn arguments_over_the_limit_are_refused() {
    let backend = backend("args", TaskLimits::default().with_max_argument_bytes(64)).await;
    let mut big = task("auth:a", HOUR);
    big.arguments = json!({"text": "x".repeat(100)})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let refused = refusal(backend.submit(big.clone()).await);
    assert_eq!((refused.limit, refused.max), (Limit::ArgumentBytes, 64));
    assert_eq!(backend.get(&big.owner, &big.id).await.expect("get"), None);
    backend
        .submit(task("auth:a", HOUR))
        .await
        .expect("small arguments pass");
}

#[tokio::test]
async fn a_result_over_the_limit_fails_the_task_with_an_error_naming_the_limit() {
    let backend = backend("result", TaskLimits::default().with_max_result_bytes(256)).await;
    let new = task("auth:a", HOUR);
    backend.submit(new.clone()).await.expect("submit");
    backend.release(&new.owner, &new.id).await.expect("release");
    let runs = backend
        .claim(&WorkerId::new(), 1, Duration::ZERO)
        .await
        .expect("claim");
    let run = runs.first().expect("a run");
    let result = json!({"content": [{"type": "text", "text": "y".repeat(1000)}]});
    assert_eq!(
        backend
            .complete(&run.lease, &result)
            .await
            .expect("complete"),
        WriteAck::Recorded
    );
    let view = backend
        .get(&new.owner, &new.id)
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(view.status, ferrymcp_types::TaskStatus::Failed);
    assert_eq!(view.result, None, "the oversized result is not kept");
    let expected = LimitExceeded {
        limit: Limit::ResultBytes,
        max: 256,
    };
    assert_eq!(
        view.error,
        Some(json!({
            "code": -32000,
            "message": expected.to_string(),
            "data": {"limit": "MCP_TASKS_MAX_RESULT_BYTES", "max": 256},
        }))
    );
}

#[tokio::test]
async fn callers_are_not_stored_in_plaintext() {
    let backend = backend("plain", TaskLimits::default()).await;
    let caller = "auth:caller-in-plaintext";
    let new = task(caller, HOUR);
    backend.submit(new.clone()).await.expect("submit");
    backend.release(&new.owner, &new.id).await.expect("release");
    let mut redis = redis::Client::open(RedisServer::shared().url())
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", backend.key_prefix()))
        .query_async(&mut redis)
        .await
        .expect("KEYS");
    assert!(keys.iter().any(|key| key.ends_with(":n")), "{keys:?}");
    for key in &keys {
        assert!(!key.contains("caller-in-plaintext"), "{key}");
        let dump: Vec<u8> = redis::cmd("DUMP")
            .arg(key)
            .query_async(&mut redis)
            .await
            .expect("DUMP");
        assert!(
            !String::from_utf8_lossy(&dump).contains("caller-in-plaintext"),
            "{key} holds the caller"
        );
    }
}
