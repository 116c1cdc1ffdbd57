//! Shared by the proxy suites (`proxy_demo.rs`, `proxy_gateway.rs`, `proxy_fastmcp.rs`,
//! `proxy_relay.rs`, `proxy_input_rounds.rs`): an upstream served over HTTP, comparable call
//! outcomes and task polling through an rmcp client.

// Each suite uses a subset.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use ferrymcp::types::{
    CallToolRequestParams, CallToolResponse, CreateTaskResult, GetTaskParams, GetTaskResult,
    JsonObject, TaskStatus,
};
use ferrymcp::{HttpConfig, HttpServer, Server};
use ferrymcp_test_helpers::client::TestClient;
use rmcp::ServiceError;
use serde_json::{Value, json};
use tokio_util::sync::{CancellationToken, DropGuard};

/// Bounds every poll loop: a broken proxy fails the test instead of hanging it.
pub const POLL_TIMEOUT: Duration = Duration::from_secs(20);
/// The pause between two `tasks/get`s (the client has no event channel into the upstream's
/// engine: polling is the protocol).
pub const POLL_PAUSE: Duration = Duration::from_millis(10);

/// Serves `server` on 127.0.0.1 until the guard drops; its endpoint's URL.
pub async fn serve(server: Server) -> (String, DropGuard) {
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        let _ = http.run_until(stopped.cancelled_owned()).await;
    });
    (url, stop.drop_guard())
}

pub fn args(value: Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

/// A call's outcome, comparable across direct and proxied calls.
pub fn outcome(reply: Result<CallToolResponse, ServiceError>) -> Value {
    match reply {
        Ok(CallToolResponse::Complete(result)) => json!({"complete": result}),
        Ok(CallToolResponse::Task(_)) => json!("task"),
        Ok(other) => json!({"other": format!("{other:?}")}),
        Err(ServiceError::McpError(error)) => {
            json!({"error": {"code": error.code.0, "message": error.message}})
        }
        Err(other) => json!({"transport": other.to_string()}),
    }
}

pub async fn call(client: &rmcp::Peer<rmcp::RoleClient>, name: &str, arguments: Value) -> Value {
    outcome(
        client
            .call_tool_once(
                CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments)),
            )
            .await,
    )
}

pub async fn submit(client: &TestClient, name: &str, arguments: Value) -> CreateTaskResult {
    let reply = client
        .call_tool_once(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments)))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    match reply {
        CallToolResponse::Task(created) => created,
        other => panic!("an opted-in call of `{name}` must become a task, got {other:?}"),
    }
}

pub async fn poll_until(client: &TestClient, task_id: &str, target: TaskStatus) -> GetTaskResult {
    let deadline = Instant::now() + POLL_TIMEOUT;
    loop {
        let current = client
            .get_task(GetTaskParams::new(task_id))
            .await
            .unwrap_or_else(|e| panic!("tasks/get {task_id}: {e}"));
        let status = current.task.status();
        if status == target {
            return current;
        }
        assert!(
            !status.is_terminal(),
            "task {task_id} ended {status:?} while waiting for {target:?}: {current:?}"
        );
        assert!(Instant::now() < deadline, "task {task_id} still {status:?}");
        tokio::time::sleep(POLL_PAUSE).await;
    }
}
