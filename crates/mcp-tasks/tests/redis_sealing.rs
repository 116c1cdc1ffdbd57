//! Credentials at rest on [`RedisBackend`]: with a key, the stored context (the caller's
//! principal) is sealed; a worker with the key gets it back; a worker without it, or with
//! another key, fails the task instead of running it without its caller (R55).
//!
//! Needs the `redis` feature: `cargo test -p mcp-tasks --features redis --test redis_sealing`.

use std::time::Duration;

use mcp_core::auth::Principal;
use mcp_tasks::{
    TaskSnapshot,
    backend::{
        NewTask, Owner, TaskBackend, WorkerId,
        redis::{RedisBackend, RedisOptions},
    },
    sealing::Sealer,
};
use mcp_types::TaskStatus;
use serde_json::Value;
use test_helpers::redis::RedisServer;

const KEY: [u8; 32] = [7; 32];

async fn backend(url: &str, sealer: Option<Sealer>) -> RedisBackend {
    let mut options = RedisOptions::default();
    if let Some(sealer) = sealer {
        options = options.with_sealer(sealer);
    }
    RedisBackend::connect_with(url, options)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A released task of alice's whose context names her.
async fn alices_task(server: &RedisBackend) -> (Owner, NewTask) {
    let principal = Principal::new("app").with_subject("alice");
    let owner = Owner::of(Some(&principal));
    let snapshot = TaskSnapshot {
        tool: Some("t".to_owned()),
        version: None,
        principal: Some(principal),
    };
    let Ok(Value::Object(context)) = serde_json::to_value(&snapshot) else {
        panic!("a snapshot is an object");
    };
    let task = NewTask {
        id: mcp_tasks::new_task_id(),
        owner: owner.clone(),
        caller: owner.as_str().to_owned(),
        tool: "t".to_owned(),
        version: None,
        arguments: Default::default(),
        context,
        ttl: Some(Duration::from_secs(600)),
        poll_interval: Duration::from_secs(1),
        max_attempts: 1,
    };
    server.submit(task.clone()).await.expect("submit");
    server.release(&owner, &task.id).await.expect("release");
    (owner, task)
}

async fn stored_context(url: &str, prefix: &str, id: &str) -> String {
    let mut redis = redis::Client::open(url)
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    redis::cmd("HGET")
        .arg(format!("{prefix}:t:{id}"))
        .arg("ctx")
        .query_async(&mut redis)
        .await
        .expect("HGET ctx")
}

#[tokio::test]
async fn a_worker_with_the_key_gets_the_caller_back_and_redis_never_sees_it() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let server = backend(&url, Some(Sealer::new(&KEY))).await;
    let (_, task) = alices_task(&server).await;
    let stored = stored_context(redis.url(), server.key_prefix(), &task.id).await;
    assert!(stored.starts_with("sealed:v1:"), "sealed at rest: {stored}");
    assert!(
        !stored.contains("alice"),
        "the principal is not readable at rest"
    );

    let worker = backend(&url, Some(Sealer::new(&KEY))).await;
    let runs = worker
        .claim(&WorkerId::new(), 1, Duration::from_secs(5))
        .await
        .expect("claim");
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].context, task.context,
        "opened to what was submitted"
    );
}

#[tokio::test]
async fn a_worker_that_cannot_open_the_context_fails_the_task() {
    let redis = RedisServer::shared();
    for (what, key) in [
        ("no key", None),
        ("another key", Some(Sealer::new(&[9; 32]))),
    ] {
        let url = redis.queue_url("sealing");
        let server = backend(&url, Some(Sealer::new(&KEY))).await;
        let (owner, task) = alices_task(&server).await;
        let worker = backend(&url, key).await;
        let runs = worker
            .claim(&WorkerId::new(), 1, Duration::from_millis(200))
            .await
            .expect("claim");
        assert!(
            runs.is_empty(),
            "{what}: the run is not handed out anonymously"
        );
        let view = server
            .get(&owner, &task.id)
            .await
            .expect("get")
            .expect("the task");
        assert_eq!(view.status, TaskStatus::Failed, "{what}");
        let message = view.status_message.unwrap_or_default();
        assert!(message.contains("credentials"), "{what}: {message}");
    }
}
