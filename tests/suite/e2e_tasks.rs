//! End to end, the Tasks extension (SEP-2663): the demo server as a real stdio child process
//! and over real HTTP, driven by rmcp's 2026-07-28 client with and without the per-request
//! tasks opt-in. Every message the server sends is recorded raw and validated against the
//! official schemas, `tasks/get` results against the Tasks extension's `GetTaskResult`.

use crate::common;

use std::{
    future::Future,
    time::{Duration, Instant},
};

use ferrymcp::types::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, ErrorCode,
    ErrorData, GetTaskParams, GetTaskResult, JsonObject, TASKS_EXTENSION_ID, TaskPayload,
    TaskStatus, UpdateTaskParams,
};
use ferrymcp_test_helpers::{
    client::{Lifecycle, TestClient, connect},
    schema::{Spec, assert_valid},
    wire::{WireCounts, WireLog},
};
use rmcp::{ServiceError, transport::StreamableHttpClientTransport};
use serde_json::{Value, json};

/// How long a poll loop may run before the test gives up: generous, only there so a broken
/// server fails the test instead of hanging it.
const POLL_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause between two `tasks/get`s. The demo advertises `pollIntervalMs: 5000` (the
/// engine's default), which a real client should honor; a test polls faster so it stays quick.
const POLL_PAUSE: Duration = Duration::from_millis(10);

/// The acceptance line of the issue: a cancelled task reads `cancelled` this soon after
/// `tasks/cancel` is sent.
const CANCEL_LATENCY: Duration = Duration::from_millis(100);

fn args(value: Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

async fn submit(client: &TestClient, name: &str, arguments: Value) -> CreateTaskResult {
    let reply = client
        .call_tool_once(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments)))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    match reply {
        CallToolResponse::Task(created) => created,
        other => panic!("an opted-in call of `{name}` must become a task, got {other:?}"),
    }
}

/// Polls `tasks/get` until the task is in `target`, or panics after [`POLL_TIMEOUT`].
///
/// This is a poll loop against a remote process: the client has no event channel into the
/// server's engine (the demo sends no task notifications), so short sleeps between gets are
/// the only way to observe a status change; the whole loop is bounded by a timeout.
async fn poll_until(client: &TestClient, task_id: &str, target: TaskStatus) -> GetTaskResult {
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
        assert!(
            Instant::now() < deadline,
            "task {task_id} still {status:?} after {POLL_TIMEOUT:?} (waiting for {target:?})"
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

fn json_rpc_error<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> ErrorData {
    match result {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// The -32021 refusal, naming the tasks extension as the missing capability.
fn assert_missing_tasks_capability(error: &ErrorData) {
    assert_eq!(
        error.code,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "{error:?}"
    );
    let required = error
        .data
        .as_ref()
        .and_then(|data| data.get("requiredCapabilities"))
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION_ID));
    assert!(
        required.is_some(),
        "the error names the tasks extension as required: {error:?}"
    );
}

/// Validates the recorded wire: everything [`WireLog::assert_valid`] checks (including every
/// `CreateTaskResult` against the Tasks schema), plus every `tasks/get` result against the
/// Tasks schema's `GetTaskResult`. Returns the counts and how many `tasks/get` results it saw.
fn validate_wire(log: &WireLog) -> (WireCounts, usize) {
    let counts = log.assert_valid(false);
    let mut gets = 0;
    for message in log.messages() {
        let result = &message["result"];
        let is_task_state = result.get("taskId").is_some() && result.get("status").is_some();
        let is_handle = result.get("resultType").and_then(Value::as_str) == Some("task");
        if is_task_state && !is_handle {
            assert_valid(Spec::Tasks, "GetTaskResult", result);
            gets += 1;
        }
    }
    (counts, gets)
}

/// `child_multiply(8, 9)` as a task: a `CreateTaskResult` at once, then `tasks/get` until
/// `completed` with the tool's result.
async fn task_lifecycle_child_multiply(client: TestClient, log: WireLog) {
    let created = submit(&client, "child_multiply", json!({"a": 8, "b": 9})).await;
    let task_id = created.task.task_id.clone();
    assert!(!task_id.is_empty());
    assert!(
        matches!(
            created.task.status,
            TaskStatus::Working | TaskStatus::Completed
        ),
        "a new task: {created:?}"
    );
    assert!(
        created.task.poll_interval_ms.is_some(),
        "the handle suggests a poll interval: {created:?}"
    );

    let done = poll_until(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(done.task.task.task_id, task_id);
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("a completed task carries its result: {done:?}");
    };
    assert_eq!(
        result.get("structuredContent"),
        Some(&json!({"result": 72})),
        "{result:?}"
    );
    assert_eq!(result.get("isError"), Some(&json!(false)), "{result:?}");

    client.cancel().await.expect("close the client");

    let (counts, gets) = validate_wire(&log);
    assert_eq!(
        counts.tasks, 1,
        "the CreateTaskResult was validated: {counts:?}"
    );
    assert!(
        gets >= 1,
        "the tasks/get results were validated: {counts:?}"
    );
}

/// `sleep_task(20)` as a task, then `tasks/cancel`: `tasks/get` reads `cancelled` within
/// [`CANCEL_LATENCY`] of sending the cancel.
async fn cancel_sleep_task(client: TestClient, log: WireLog) {
    let created = submit(&client, "sleep_task", json!({"seconds": 20})).await;
    let task_id = created.task.task_id.clone();
    assert_eq!(created.task.status, TaskStatus::Working, "{created:?}");

    let sent = Instant::now();
    client
        .cancel_task(CancelTaskParams::new(task_id.clone()))
        .await
        .expect("tasks/cancel");
    let cancelled = poll_until(&client, &task_id, TaskStatus::Cancelled).await;
    let elapsed = sent.elapsed();
    assert_eq!(cancelled.task.payload, TaskPayload::Cancelled);
    assert!(
        elapsed < CANCEL_LATENCY,
        "tasks/get read `cancelled` {elapsed:?} after tasks/cancel was sent (bound {CANCEL_LATENCY:?})"
    );
    eprintln!("sleep_task: cancelled observed {elapsed:?} after tasks/cancel was sent");

    client.cancel().await.expect("close the client");

    let (counts, gets) = validate_wire(&log);
    assert_eq!(
        counts.tasks, 1,
        "the CreateTaskResult was validated: {counts:?}"
    );
    assert!(
        gets >= 1,
        "the tasks/get results were validated: {counts:?}"
    );
}

/// A client that does not opt in calls a task-required tool: -32021, no task.
async fn required_task_without_optin(client: TestClient, log: WireLog) {
    let error = json_rpc_error(
        client
            .call_tool_once(
                CallToolRequestParams::new("required_task")
                    .with_arguments(args(json!({"value": 1}))),
            )
            .await,
    );
    assert_missing_tasks_capability(&error);

    client.cancel().await.expect("close the client");

    let (counts, gets) = validate_wire(&log);
    assert_eq!(counts.tasks, 0, "no task was created: {counts:?}");
    assert_eq!(gets, 0);
    assert!(counts.errors >= 1, "the error was validated: {counts:?}");
}

/// `tasks/get` without the opt-in: -32021, whatever the id.
async fn tasks_get_without_optin(client: TestClient, log: WireLog) {
    let error = json_rpc_error(client.get_task(GetTaskParams::new("no-such-task")).await);
    assert_missing_tasks_capability(&error);

    client.cancel().await.expect("close the client");

    let (counts, _) = validate_wire(&log);
    assert!(counts.errors >= 1, "the error was validated: {counts:?}");
}

/// `tasks/get` on a 2025-11-25 (`initialize`) connection: the tasks methods exist only at
/// modern protocol versions, so `-32601` (C44), not the modern era's `-32021`.
async fn tasks_get_on_legacy_session(client: TestClient, log: WireLog) {
    let error = json_rpc_error(client.get_task(GetTaskParams::new("no-such-task")).await);
    assert_eq!(
        error.code,
        ErrorCode::METHOD_NOT_FOUND,
        "tasks/get on a 2025-11-25 session: {error:?}"
    );

    client.cancel().await.expect("close the client");

    let counts = log.assert_valid(true);
    assert!(counts.errors >= 1, "the error was validated: {counts:?}");
}

/// A 2025-11-25 client that declares the tasks extension at `initialize`: SEP-2663 is not
/// defined at that version, so the declaration is ignored: an optional tool runs
/// synchronously (never a `CreateTaskResult`), a required one is refused with -32021, and
/// `tasks/get` does not exist (-32601).
async fn optin_on_legacy_session_is_ignored(client: TestClient, log: WireLog) {
    let reply = client
        .call_tool_once(
            CallToolRequestParams::new("child_multiply")
                .with_arguments(args(json!({"a": 8, "b": 9}))),
        )
        .await
        .expect("child_multiply");
    let CallToolResponse::Complete(result) = reply else {
        panic!("a 2025-11-25 call must not become a task: {reply:?}");
    };
    assert_eq!(result.structured_content, Some(json!({"result": 72})));

    let error = json_rpc_error(
        client
            .call_tool_once(
                CallToolRequestParams::new("required_task")
                    .with_arguments(args(json!({"value": 1}))),
            )
            .await,
    );
    assert_missing_tasks_capability(&error);

    let error = json_rpc_error(client.get_task(GetTaskParams::new("no-such-task")).await);
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND, "{error:?}");

    client.cancel().await.expect("close the client");

    let counts = log.assert_valid(true);
    assert_eq!(counts.tasks, 0, "no task was created: {counts:?}");
    assert!(counts.call_results >= 1, "{counts:?}");
}

/// The full task lifecycle with an input round, on rmcp's typed task API: `ask_name` as a
/// task (`call_tool_once` → `CallToolResponse::Task`), `get_task` until `input_required`,
/// `update_task` answering the elicitation under the server's key, `get_task` until
/// `completed` with the greeting.
async fn ask_name_task_with_input_round(client: TestClient, log: WireLog) {
    let created = submit(&client, "ask_name", json!({})).await;
    let task_id = created.task.task_id.clone();

    let parked = poll_until(&client, &task_id, TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &parked.task.payload else {
        panic!("an input_required task lists its requests: {parked:?}");
    };
    let keys: Vec<String> = input_requests.keys().cloned().collect();
    assert_eq!(keys.len(), 1, "ask_name asks one question: {parked:?}");
    let request = serde_json::to_value(&input_requests[&keys[0]]).expect("a request");
    assert_eq!(request["method"], "elicitation/create", "{request}");

    let mut answers = ferrymcp::types::InputResponses::new();
    answers.insert(
        keys[0].clone(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    client
        .update_task(UpdateTaskParams::new(task_id.clone(), answers))
        .await
        .expect("tasks/update");

    let done = poll_until(&client, &task_id, TaskStatus::Completed).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("a completed task carries its result: {done:?}");
    };
    assert_eq!(
        result["content"][0]["text"], "Hello, Ada!",
        "the answer reached the tool: {result:?}"
    );

    client.cancel().await.expect("close the client");
    let (counts, gets) = validate_wire(&log);
    assert_eq!(counts.tasks, 1, "{counts:?}");
    assert!(
        gets >= 2,
        "input_required and completed were validated: {counts:?}"
    );
}

/// Runs `scenario` against the demo as a stdio child process; `tasks` is the opt-in.
async fn over_stdio<F, Fut>(lifecycle: Lifecycle, tasks: bool, scenario: F)
where
    F: FnOnce(TestClient, WireLog) -> Fut,
    Fut: Future<Output = ()>,
{
    let child = common::demo_stdio();
    let client = connect(child.transport, lifecycle, tasks)
        .await
        .expect("connect over stdio");
    scenario(client, child.log).await;
}

/// Runs `scenario` against the demo over HTTP, through a recording proxy.
async fn over_http<F, Fut>(lifecycle: Lifecycle, tasks: bool, scenario: F)
where
    F: FnOnce(TestClient, WireLog) -> Fut,
    Fut: Future<Output = ()>,
{
    let http = common::demo_http_recorded().await;
    let recorder = &http.recorder;
    let transport = StreamableHttpClientTransport::from_uri(recorder.url.clone());
    let client = connect(transport, lifecycle, tasks)
        .await
        .expect("connect over HTTP");
    scenario(client, recorder.log.clone()).await;
}

#[tokio::test]
async fn stdio_task_lifecycle_child_multiply() {
    over_stdio(Lifecycle::Modern, true, task_lifecycle_child_multiply).await;
}

#[tokio::test]
async fn http_task_lifecycle_child_multiply() {
    over_http(Lifecycle::Modern, true, task_lifecycle_child_multiply).await;
}

#[tokio::test]
async fn stdio_cancel_sleep_task() {
    over_stdio(Lifecycle::Modern, true, cancel_sleep_task).await;
}

#[tokio::test]
async fn http_cancel_sleep_task() {
    over_http(Lifecycle::Modern, true, cancel_sleep_task).await;
}

#[tokio::test]
async fn stdio_required_task_without_optin_is_32021() {
    over_stdio(Lifecycle::Modern, false, required_task_without_optin).await;
}

#[tokio::test]
async fn http_required_task_without_optin_is_32021() {
    over_http(Lifecycle::Modern, false, required_task_without_optin).await;
}

#[tokio::test]
async fn stdio_tasks_get_without_optin_is_32021() {
    over_stdio(Lifecycle::Modern, false, tasks_get_without_optin).await;
}

#[tokio::test]
async fn http_tasks_get_without_optin_is_32021() {
    over_http(Lifecycle::Modern, false, tasks_get_without_optin).await;
}

#[tokio::test]
async fn stdio_tasks_get_on_2025_11_25_is_32601() {
    over_stdio(Lifecycle::Legacy, false, tasks_get_on_legacy_session).await;
}

#[tokio::test]
async fn http_tasks_get_on_2025_11_25_is_32601() {
    over_http(Lifecycle::Legacy, false, tasks_get_on_legacy_session).await;
}

#[tokio::test]
async fn stdio_optin_on_2025_11_25_is_ignored() {
    over_stdio(Lifecycle::Legacy, true, optin_on_legacy_session_is_ignored).await;
}

#[tokio::test]
async fn http_optin_on_2025_11_25_is_ignored() {
    over_http(Lifecycle::Legacy, true, optin_on_legacy_session_is_ignored).await;
}

#[tokio::test]
async fn stdio_ask_name_task_with_input_round() {
    over_stdio(Lifecycle::Modern, true, ask_name_task_with_input_round).await;
}

#[tokio::test]
async fn http_ask_name_task_with_input_round() {
    over_http(Lifecycle::Modern, true, ask_name_task_with_input_round).await;
}
