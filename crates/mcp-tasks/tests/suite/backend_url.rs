//! The backend comes from the URL (`TasksConfig::url`, `MCP_TASKS_URL`): the same server code
//! runs on `memory://` or `redis://…`, and a URL it cannot serve stops the server from
//! starting with a message that says why.

use ferrymcp_core::{Args, Server, ToolDef};
use ferrymcp_tasks::{TasksConfig, TasksExtension};
use ferrymcp_test_helpers::tasks::TaskClient;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Number {
    x: i64,
}

/// A root with a mounted child owning a task tool, and the tasks extension on `config`.
fn server(config: TasksConfig) -> Server {
    let child = Server::new("child");
    child
        .add_tool(ToolDef::new("double", |Args(n): Args<Number>| async move { n.x * 2 }).task(true))
        .expect("double");
    let root = Server::new("root");
    root.mount(&child, "child").expect("mount");
    root.add_extension(TasksExtension::with_config(config))
        .expect("the tasks extension");
    root
}

async fn runs_a_task_on(config: TasksConfig) -> String {
    let root = server(config);
    let running = root.start().await.expect("start");
    let done = TaskClient::new(&root)
        .run("child_double", json!({"x": 21}))
        .await
        .expect("the task");
    let result = serde_json::to_value(&done).expect("json");
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["result"]["structuredContent"]["result"], 42,
        "{result}"
    );
    running.stop().await;
    done.task.task.task_id.clone()
}

#[tokio::test]
async fn memory_url_runs_tasks_in_process() {
    runs_a_task_on(TasksConfig::default().with_url("memory://")).await;
}

#[tokio::test]
async fn an_unsupported_url_stops_the_start_with_a_clear_error() {
    let root = server(TasksConfig::default().with_url("postgres://db/tasks"));
    let error = root
        .start()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        error.contains("unsupported task backend URL") && error.contains("postgres://db/tasks"),
        "{error}"
    );
}

#[cfg(not(feature = "redis"))]
#[tokio::test]
async fn a_redis_url_without_the_feature_says_which_feature() {
    let root = server(TasksConfig::default().with_url("redis://127.0.0.1/0"));
    let error = root
        .start()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("`redis` feature"), "{error}");
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_redis_url_runs_the_same_server_on_redis_visible_to_a_replica() {
    let redis = ferrymcp_test_helpers::redis::RedisServer::shared();
    let url = redis.queue_url("url");
    let id = runs_a_task_on(TasksConfig::default().with_url(url.clone())).await;
    // Another replica (API-only) on the same URL sees the finished task.
    let replica = server(
        TasksConfig::default()
            .with_url(url)
            .with_embedded_worker(false),
    );
    let running = replica.start().await.expect("start the replica");
    let seen = TaskClient::new(&replica)
        .get(&id)
        .await
        .expect("tasks/get on the replica");
    let seen = serde_json::to_value(&seen).expect("json");
    assert_eq!(seen["result"]["structuredContent"]["result"], 42, "{seen}");
    running.stop().await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn an_unreachable_redis_stops_the_start_with_a_clear_error() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let root = server(TasksConfig::default().with_url(format!("redis://127.0.0.1:{port}/0")));
    let error = root
        .start()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("cannot use Redis at"), "{error}");
}
