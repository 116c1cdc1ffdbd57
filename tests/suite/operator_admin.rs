//! Issue 18's admin routes on a memory engine, against `demo --http --admin` as a process: the
//! JSON API and the operators' command line through it (status with the embedded worker,
//! tasks, inspect, cancel), its errors, and the endpoint's `Host` and `Origin` checks in front
//! of it; and the same routes in-process on a Redis engine whose Redis freezes. (The command
//! line against Redis directly: `tests/redis_processes.rs`.)

use std::time::{Duration, Instant};

use ferrymcp::{
    tasks::{backend::TaskRecord, operator::FleetStatus},
    types::TaskPayload,
};
use serde_json::{Value, json};

use crate::common;

const PATIENCE: Duration = Duration::from_secs(60);
const POLL_PAUSE: Duration = Duration::from_millis(20);

pub use common::{drive_task as terminal, submit_task as submit, tasks_client as client};

/// Reads `GET <admin>/api/<path>` until `done` holds of the JSON answer.
pub async fn api_until(admin: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let answer: Value = http
            .get(format!("{admin}/api/{path}"))
            .send()
            .await
            .expect("the admin API answers")
            .json()
            .await
            .expect("JSON");
        if done(&answer) {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never as expected: {answer}"
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue18_admin_routes_and_the_cli_on_a_memory_engine() {
    let demo = common::spawn_demo_http_with(&["--admin"], &[]).await;
    let admin = demo.url.replace("/mcp", "/admin");
    let client = client(&demo.url).await;
    let http = reqwest::Client::new();

    let page = http.get(&admin).send().await.expect("the dashboard");
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text().await.unwrap().contains("Task engine"));

    let quick = submit(&client, "parent_tool", json!({"value": 4})).await;
    assert!(matches!(
        terminal(&client, &quick).await,
        TaskPayload::Completed { .. }
    ));
    let first = submit(&client, "sleep_task", json!({"seconds": 30})).await;
    let second = submit(&client, "sleep_task", json!({"seconds": 30})).await;
    api_until(&admin, "status", |status| {
        status["tasks"]["running"] == 2 && status["workers"][0]["running"] == 2
    })
    .await;

    // The command line through the admin routes: the embedded worker holds both runs.
    let status: FleetStatus = common::run_operator_cli(&admin, &["--json", "status"])
        .await
        .json();
    assert_eq!(status.workers.len(), 1, "{status:?}");
    assert_eq!(status.workers[0].presence.running, 2);
    assert!(!status.workers[0].stale);
    assert_eq!((status.tasks.running, status.tasks.finished), (2, 1));
    let sleeping: Vec<TaskRecord> = common::run_operator_cli(
        &admin,
        &[
            "--json",
            "tasks",
            "--tool",
            "sleep_task",
            "--newer-than",
            "1h",
        ],
    )
    .await
    .json();
    let mut ids: Vec<&str> = sleeping.iter().map(|t| t.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = [first.as_str(), second.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    let table = common::run_operator_cli(&admin, &["tasks", "--status", "completed"]).await;
    assert!(
        table.stdout.contains(&quick) && table.stdout.contains("parent_tool"),
        "{}",
        table.stdout
    );

    let cancelled = common::run_operator_cli(&admin, &["cancel", &first]).await;
    assert_eq!(cancelled.code, Some(0), "{}", cancelled.stderr);
    assert!(
        cancelled.stdout.contains("cancelled"),
        "{}",
        cancelled.stdout
    );
    assert!(matches!(
        terminal(&client, &first).await,
        TaskPayload::Cancelled
    ));
    let record: TaskRecord = common::run_operator_cli(&admin, &["--json", "inspect", &first])
        .await
        .json();
    assert_eq!(record.status, ferrymcp::types::TaskStatus::Cancelled);
    assert!(record.worker.is_none());
    // The worker let go of the cancelled run.
    api_until(&admin, "status", |status| {
        status["workers"][0]["running"] == 1
    })
    .await;
    let again = common::run_operator_cli(&admin, &["cancel", &first]).await;
    assert!(again.stdout.contains("already ended"), "{}", again.stdout);
    let missing = common::run_operator_cli(&admin, &["cancel", "no-such-task"]).await;
    assert_eq!(missing.code, Some(1));
    assert!(missing.stderr.contains("no task"), "{}", missing.stderr);
    // A task id may begin with `-` (ids are random): it is an id, not an option.
    for command in ["inspect", "cancel"] {
        let dashed = common::run_operator_cli(&admin, &[command, "-1no-such-task"]).await;
        assert_eq!(dashed.code, Some(1), "{command}: {}", dashed.stderr);
        assert!(
            dashed.stderr.contains("no task \"-1no-such-task\""),
            "{command}: {}",
            dashed.stderr
        );
    }

    // Errors are JSON with the right status.
    let bad = http
        .get(format!("{admin}/api/tasks?limit=many"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.json::<Value>().await.unwrap()["error"].is_string());
    let unknown = http
        .get(format!("{admin}/api/tasks/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    // The endpoint's Host and Origin checks stand in front of the admin routes too: no page
    // of another site can read or cancel through a browser on this machine.
    let foreign = http
        .post(format!("{admin}/api/tasks/{second}/cancel"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let rebound = http
        .get(format!("{admin}/api/status"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    let still: TaskRecord = common::run_operator_cli(&admin, &["--json", "inspect", &second])
        .await
        .json();
    assert_eq!(still.status, ferrymcp::types::TaskStatus::Working);
    let _ = common::run_operator_cli(&admin, &["cancel", &second]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue18_without_admin_the_routes_are_not_served() {
    let demo = common::spawn_demo_http().await;
    let admin = demo.url.replace("/mcp", "/admin");
    let answer = reqwest::get(format!("{admin}/api/status")).await.unwrap();
    assert_eq!(answer.status(), 404);
    let cli = common::run_operator_cli(&admin, &["status"]).await;
    assert_eq!(cli.code, Some(1), "{}", cli.stdout);
}

/// The command line against a Redis that cannot be reached: it fails at once with exit 1 and
/// an error that says so, and never prints the URL's password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue18_the_cli_fails_cleanly_when_redis_is_down() {
    let port = common::free_port();
    let url = format!("redis://:hunter2-secret@127.0.0.1:{port}/0");
    let started = Instant::now();
    let run = common::run_operator_cli(&url, &["status"]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("ferrymcp-tasks:") && !run.stderr.trim().is_empty(),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("hunter2") && !run.stdout.contains("hunter2"),
        "the password leaked: {}",
        run.stderr
    );
    assert!(started.elapsed() < PATIENCE, "it hung");
}

/// The admin routes on a Redis engine whose Redis freezes (`SIGSTOP`: connections open,
/// nothing answers): the API answers 503 with a JSON error within the engine's response
/// timeout instead of hanging, the dashboard page still loads, and once Redis is back the
/// same routes answer again.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue18_the_admin_api_answers_503_while_redis_is_frozen_and_recovers() {
    use std::sync::Arc;

    use ferrymcp::tasks::{admin::Admin, backend::redis::RedisBackend};
    use ferrymcp_test_helpers::redis::RedisServer;

    // A redis-server process of its own, even where MCP_TEST_REDIS_URL names a shared one.
    let redis = RedisServer::start_local();
    let url = format!(
        "{}&response_timeout_ms=500",
        redis.queue_url("admin-frozen")
    );
    let backend = RedisBackend::connect(&url).await.expect("connect to Redis");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let admin = format!("http://{}/admin", listener.local_addr().expect("address"));
    let routes = Admin::new(Arc::new(backend)).router("/admin");
    tokio::spawn(async move { axum::serve(listener, routes).await });
    let http = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .expect("a client");

    api_until(&admin, "status", |status| {
        status["tasks"]["queued"].is_u64()
    })
    .await;

    redis.freeze();
    // A hang would end at the client's timeout, and fail here.
    for path in ["status", "tasks", "tasks/no-such-task"] {
        let answer = http
            .get(format!("{admin}/api/{path}"))
            .send()
            .await
            .unwrap_or_else(|error| panic!("{path} answers while Redis is frozen: {error}"));
        assert_eq!(answer.status(), 503, "{path} while Redis is frozen");
        let body: Value = answer.json().await.expect("a JSON error");
        assert!(body["error"].is_string(), "{path}: {body}");
    }
    let page = http
        .get(format!("{admin}/"))
        .send()
        .await
        .expect("the page while Redis is frozen");
    assert_eq!(page.status(), 200, "the dashboard page needs no Redis");

    redis.thaw();
    api_until(&admin, "status", |status| {
        status["tasks"]["queued"].is_u64()
    })
    .await;
}
