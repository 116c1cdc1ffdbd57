//! Task status pushed across processes on one Redis (SEP-2663 R51 on the distributed
//! engine): two demo servers over HTTP without embedded workers, two `demo worker`
//! processes, and a client listening on server B for tasks submitted through server A. A
//! worker's status message and completion, and a cancel made through A, each reach the
//! listen on B through the queue's change feed (`P:ch`), with the task as `tasks/get`
//! through B shows it.
//!
//! Needs the `redis` feature in the demo binary, as `cargo test --workspace --all-features`
//! builds it. Nothing sleeps: each step waits for the next message on the listen.

use crate::common;

use std::{collections::HashMap, time::Duration};

use ferrymcp_test_helpers::{
    http::{Listen, post_2026_to},
    redis::RedisServer,
    schema::{Spec, assert_valid},
};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

fn opted_in() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

async fn sleep_task(url: &str, seconds: f64) -> String {
    let answer = post_2026_to(
        url,
        None,
        "tools/call",
        json!({"name": "sleep_task", "arguments": {"seconds": seconds}}),
        opted_in(),
    )
    .await;
    answer.body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("sleep_task did not become a task: {answer:?}"))
        .to_owned()
}

/// `tasks/get` through `url`, without `resultType`.
async fn tasks_get(url: &str, id: &str) -> Value {
    let answer = post_2026_to(url, None, "tasks/get", json!({"taskId": id}), opted_in()).await;
    let mut body = answer.body["result"].clone();
    assert!(body.is_object(), "tasks/get {id}: {answer:?}");
    body.as_object_mut().map(|b| b.remove("resultType"));
    body
}

/// The next `notifications/tasks` params (schema-checked, without `_meta`).
async fn next_task(listen: &mut Listen) -> Value {
    let message = listen
        .next(PATIENCE)
        .await
        .unwrap_or_else(|| panic!("no task notification within {PATIENCE:?}"));
    assert_eq!(message["method"], "notifications/tasks", "{message}");
    assert_valid(Spec::Tasks, "TaskStatusNotification", &message);
    let mut params = message["params"].clone();
    params.as_object_mut().map(|p| p.remove("_meta"));
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r51_changes_by_workers_and_another_replica_reach_a_listener_on_any_replica() {
    let redis = RedisServer::shared();
    let url = format!("{}&lease_ms=3000", redis.queue_url("push"));
    let server_args = ["--tasks-url", url.as_str(), "--no-worker"];
    let a = common::spawn_demo_http_with(&server_args, &[]).await;
    let b = common::spawn_demo_http_with(&server_args, &[]).await;
    let worker_args = ["--tasks-url", url.as_str()];
    let _w1 = common::spawn_demo_worker(&worker_args, &[]).await;
    let _w2 = common::spawn_demo_worker(&worker_args, &[]).await;

    // Submitted through A; one ends by itself (its worker), one is cancelled through A.
    let finishing = sleep_task(&a.url, 2.0).await;
    let cancelled = sleep_task(&a.url, 60.0).await;
    let mut listen = Listen::open(
        &b.url,
        json!({"taskIds": [finishing, cancelled]}),
        opted_in(),
    )
    .await;
    let ack = listen.next(PATIENCE).await.expect("acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([finishing, cancelled]),
        "{ack}"
    );

    let mut last: HashMap<String, Value> = HashMap::new();
    let mut cancel_sent = false;
    while !(last
        .get(&finishing)
        .is_some_and(|t| t["status"] == "completed")
        && last
            .get(&cancelled)
            .is_some_and(|t| t["status"] == "cancelled"))
    {
        let task = next_task(&mut listen).await;
        let id = task["taskId"].as_str().expect("taskId").to_owned();
        if task["status"] == "completed" {
            assert_eq!(id, finishing, "{task}");
            assert!(
                last.contains_key(&id),
                "the task was already done when the listen began; the feed was not exercised"
            );
        }
        // A worker wrote the status message: once the long task runs, cancel it through A.
        if id == cancelled && task["statusMessage"] == "sleeping (0/60)" && !cancel_sent {
            let answer = post_2026_to(
                &a.url,
                None,
                "tasks/cancel",
                json!({"taskId": cancelled}),
                opted_in(),
            )
            .await;
            assert_eq!(answer.status, 200, "{answer:?}");
            cancel_sent = true;
        }
        last.insert(id, task);
    }
    assert!(cancel_sent, "the running task's status message was pushed");
    for id in [&finishing, &cancelled] {
        assert_eq!(
            last[id],
            tasks_get(&b.url, id).await,
            "the last push of {id} is what tasks/get on B shows"
        );
    }
    assert_eq!(last[&finishing]["result"]["content"][0]["text"], "slept 2");
}
