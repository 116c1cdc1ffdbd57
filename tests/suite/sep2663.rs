//! SEP-2663 (`io.modelcontextprotocol/tasks`) conformance, in process: the numbered
//! requirements R1..R60 of `shared/docs/sep2663.md` §15 that apply to the in-memory engine,
//! driven through the real `tools/call` and `tasks/*` request paths of a started server.
//! Every test is named after the requirement(s) it proves. The over-the-wire ones (R1, R2,
//! R7, R8 and R9 on a connection, R48, R49, full lifecycles through rmcp's client and raw
//! HTTP) are in `tests/suite/sep2663_wire.rs`.
//!
//! Every task message a test sees (`CreateTaskResult`, `GetTaskResult`, the update and
//! cancel acknowledgements) is validated against the official ext-tasks schema.
//!
//! Declined here, with the reason:
//! * R12 (`subscriptions/listen` with `taskIds` without the opt-in): `subscriptions/listen`
//!   carries list changes and resource updates, not task status yet.
//! * R22 (MRTR rounds before a task is created): not here but in `tests/suite/sep2663_wire.rs`
//!   (r22), over HTTP, with `TasksExtension::ask_first`.
//! * R50, R51 (no progress/message notifications for task work; `notifications/tasks`
//!   bodies): the server never sends `notifications/tasks`, and a worker run has no peer to
//!   send progress or log notifications to, so there is nothing to observe.
//! * R55 (encrypted credentials at rest): the in-memory engine keeps the caller's
//!   `Principal` in process memory only; there is no store to encrypt.
//! * R56..R60: requirements on a client's poll loop; the framework is a server (its tests use
//!   rmcp's client as is).
//! * R48, R49 (`Mcp-Name` over Streamable HTTP) are not declined: see `sep2663_wire.rs`.

use std::{
    collections::BTreeSet,
    sync::{Arc, atomic::Ordering},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use ferrymcp::{
    RequestScope, Server, ToolCall, ToolDef,
    auth::Principal,
    tasks::{TasksConfig, TasksExtension},
    types::{CallToolResponse, ErrorData, JsonObject, ProtocolVersion, TASKS_EXTENSION_ID},
};
use ferrymcp_test_helpers::{
    schema::{Spec, assert_valid, assert_valid_call_tool_result, validate},
    tasks::{TERMINAL, TaskClient, opted_in_scope, running_task_server},
};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::support::tasks as fixtures;

use fixtures::{Probe, accept, build};

// ------------------------------------------------------------------------------ tools

/// [`build`] with the default settings.
fn default_server() -> (Server, Arc<Probe>) {
    build(TasksConfig::default())
}

/// [`build`] with one worker slot: runs are claimed one at a time, in order, so a task run to
/// completion after some action proves that any run that action queued has already ended.
fn serial_server() -> (Server, Arc<Probe>) {
    build(TasksConfig::default().with_concurrency(1))
}

// ------------------------------------------------------------------------------ requests

fn alice() -> Principal {
    Principal::new("app").with_subject("alice")
}

fn bob() -> Principal {
    Principal::new("app").with_subject("bob")
}

/// A 2026-07-28 request scope with the tasks opt-in, as `caller`.
fn scope(caller: Option<&Principal>) -> RequestScope {
    opted_in_scope(caller, JsonObject::new())
}

/// A 2026-07-28 request scope without the opt-in.
fn modern_without_optin() -> RequestScope {
    RequestScope::new().with_protocol_version(ProtocolVersion::V_2026_07_28)
}

/// An opted-in `tools/call` that must answer with a task handle; returns the handle's JSON,
/// validated as a `CreateTaskResult`.
async fn submit_as(server: &Server, caller: Option<&Principal>, name: &str, args: Value) -> Value {
    let call = ToolCall::new(name).arguments(args).scope(scope(caller));
    match server.call(call).await {
        Ok(CallToolResponse::Task(created)) => {
            let value = serde_json::to_value(&created).expect("serialize CreateTaskResult");
            assert_valid(Spec::Tasks, "CreateTaskResult", &value);
            value
        }
        other => panic!("expected `{name}` to become a task, got {other:?}"),
    }
}

async fn submit(server: &Server, name: &str, args: Value) -> Value {
    submit_as(server, None, name, args).await
}

fn id_of(task: &Value) -> String {
    task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId in {task}"))
        .to_owned()
}

fn status_of(task: &Value) -> &str {
    task["status"]
        .as_str()
        .unwrap_or_else(|| panic!("no status in {task}"))
}

/// `tasks/get` as `caller`; a body is validated as a `GetTaskResult`.
async fn try_get(
    server: &Server,
    caller: Option<&Principal>,
    id: &str,
) -> Result<Value, ErrorData> {
    let body = server
        .request("tasks/get", Some(json!({"taskId": id})), scope(caller))
        .await?;
    assert_valid(Spec::Tasks, "GetTaskResult", &body);
    Ok(body)
}

async fn get(server: &Server, id: &str) -> Value {
    try_get(server, None, id)
        .await
        .unwrap_or_else(|e| panic!("tasks/get {id}: {} ({})", e.message, e.code.0))
}

/// `tasks/update` as `caller`; an acknowledgement is validated as an `UpdateTaskResult`.
async fn try_update(
    server: &Server,
    caller: Option<&Principal>,
    id: &str,
    responses: Value,
) -> Result<Value, ErrorData> {
    let ack = server
        .request(
            "tasks/update",
            Some(json!({"taskId": id, "inputResponses": responses})),
            scope(caller),
        )
        .await?;
    assert_valid(Spec::Tasks, "UpdateTaskResult", &ack);
    Ok(ack)
}

async fn update(server: &Server, id: &str, responses: Value) -> Value {
    try_update(server, None, id, responses)
        .await
        .unwrap_or_else(|e| panic!("tasks/update {id}: {} ({})", e.message, e.code.0))
}

/// `tasks/cancel` as `caller`; an acknowledgement is validated as a `CancelTaskResult`.
async fn try_cancel(
    server: &Server,
    caller: Option<&Principal>,
    id: &str,
) -> Result<Value, ErrorData> {
    let ack = server
        .request("tasks/cancel", Some(json!({"taskId": id})), scope(caller))
        .await?;
    assert_valid(Spec::Tasks, "CancelTaskResult", &ack);
    Ok(ack)
}

async fn cancel(server: &Server, id: &str) -> Value {
    try_cancel(server, None, id)
        .await
        .unwrap_or_else(|e| panic!("tasks/cancel {id}: {} ({})", e.message, e.code.0))
}

/// The engine's change notifications (the memory backend pushes them).
fn changes(server: &Server) -> tokio::sync::broadcast::Receiver<String> {
    server
        .extension_as::<TasksExtension>()
        .and_then(|extension| extension.engine())
        .and_then(|engine| engine.backend().changes())
        .expect("a started memory engine pushes changes")
}

/// Polls `tasks/get` as `caller` on every change of the task until its status is one of
/// `targets` (5 s at most); returns that body. No sleeping: it waits on the engine's change
/// notifications.
async fn wait_as(server: &Server, caller: Option<&Principal>, id: &str, targets: &[&str]) -> Value {
    let mut changed = changes(server);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let body = try_get(server, caller, id)
            .await
            .unwrap_or_else(|e| panic!("tasks/get {id}: {} ({})", e.message, e.code.0));
        if targets.contains(&status_of(&body)) {
            return body;
        }
        loop {
            match tokio::time::timeout_at(deadline, changed.recv()).await {
                Err(_) => panic!(
                    "task {id} is still {} (waiting for {targets:?})",
                    status_of(&body)
                ),
                Ok(Ok(other)) if other != id => {}
                Ok(_) => break,
            }
        }
    }
}

async fn wait(server: &Server, id: &str, targets: &[&str]) -> Value {
    wait_as(server, None, id, targets).await
}

const DONE: [&str; 3] = ["completed", "failed", "cancelled"];

/// The client-facing keys of an `input_required` body.
fn input_keys(task: &Value) -> Vec<String> {
    task["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputRequests object in {task}"))
        .keys()
        .cloned()
        .collect()
}

/// The single outstanding key of an `input_required` body.
fn only_key(task: &Value) -> String {
    let keys = input_keys(task);
    assert_eq!(keys.len(), 1, "exactly one outstanding request: {task}");
    keys[0].clone()
}

/// An empty acknowledgement: `resultType: "complete"` and at most `_meta`.
fn assert_empty_ack(ack: &Value, what: &str) {
    let object = ack
        .as_object()
        .unwrap_or_else(|| panic!("{what}: the ack is not an object: {ack}"));
    assert_eq!(ack["resultType"], "complete", "{what}: {ack}");
    for key in object.keys() {
        assert!(
            key == "resultType" || key == "_meta",
            "{what}: the ack carries `{key}`: {ack}"
        );
    }
}

/// What a terminal state is made of: status, status message and payload.
fn state_of(task: &Value) -> Value {
    json!({
        "status": task.get("status"),
        "statusMessage": task.get("statusMessage"),
        "result": task.get("result"),
        "error": task.get("error"),
        "inputRequests": task.get("inputRequests"),
        "createdAt": task.get("createdAt"),
    })
}

fn error_code(outcome: Result<Value, ErrorData>, what: &str) -> ErrorData {
    match outcome {
        Err(error) => error,
        Ok(body) => panic!("{what}: expected a JSON-RPC error, got {body}"),
    }
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

/// Runs a `multiply` task to completion. On a [`serial_server`] this proves every run queued
/// before it has ended.
async fn drain(server: &Server) {
    let task = submit(server, "multiply", json!({"a": 2, "b": 3})).await;
    let done = wait(server, &id_of(&task), &DONE).await;
    assert_eq!(status_of(&done), "completed", "{done}");
}

/// Milliseconds since the Unix epoch of an ISO 8601 / RFC 3339 date-time
/// (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`), or `None` when it is not one.
fn iso8601_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let number = |from: usize, to: usize| -> Option<i64> {
        let part = text.get(from..to)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't')
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if bytes[at] == b'.' {
        let mut end = at + 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        if end == at + 1 {
            return None;
        }
        let digits = &text[at + 1..end];
        millis = format!("{:0<3}", &digits[..digits.len().min(3)])
            .parse()
            .ok()?;
        at = end;
    }
    let offset_minutes = match text.get(at..)? {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(bytes[at], b'+' | b'-') && bytes[at + 3] == b':' => {
            let sign = if bytes[at] == b'-' { -1 } else { 1 };
            sign * (number(at + 1, at + 3)? * 60 + number(at + 4, at + 6)?)
        }
        _ => return None,
    };
    // Days from the civil date (H. Hinnant's algorithm).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch");
    i64::try_from(since.as_millis()).expect("fits")
}

#[test]
fn iso8601_parser_reads_utc_offsets_and_fractions() {
    assert_eq!(iso8601_ms("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(iso8601_ms("1970-01-01T00:00:01.5Z"), Some(1_500));
    assert_eq!(iso8601_ms("1970-01-01T01:00:00+01:00"), Some(0));
    assert_eq!(
        iso8601_ms("2026-08-01T09:15:02.123Z"),
        Some(1_785_575_702_123)
    );
    assert_eq!(iso8601_ms("2026-08-01 09:15:02Z"), None);
    assert_eq!(iso8601_ms("yesterday"), None);
}

// ------------------------------------------------------------------------------ negotiation

#[tokio::test]
async fn r03_tools_call_without_optin_never_returns_a_task_for_any_mode() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let not_opted_in = [
        ("no protocol version", RequestScope::new()),
        ("2026-07-28 without opt-in", modern_without_optin()),
        (
            "opt-in value not an object",
            modern_without_optin().with_meta(
                json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION_ID: true}}})
                    .as_object()
                    .cloned()
                    .expect("object"),
            ),
        ),
    ];
    for (what, scope) in not_opted_in {
        for (tool, args) in [
            ("sync_only", json!({})),
            ("multiply", json!({"a": 2, "b": 21})),
            ("required_answer", json!({})),
        ] {
            let reply = server
                .call(ToolCall::new(tool).arguments(args).scope(scope.clone()))
                .await;
            match reply {
                Ok(CallToolResponse::Complete(result)) => {
                    let value = serde_json::to_value(&result).expect("json");
                    assert_ne!(value["resultType"], "task", "{what}, {tool}: {value}");
                    assert!(value.get("taskId").is_none(), "{what}, {tool}: {value}");
                    assert_ne!(
                        tool, "required_answer",
                        "{what}: a required tool ran synchronously"
                    );
                }
                Err(error) => {
                    assert_eq!(tool, "required_answer", "{what}, {tool}: {error:?}");
                    assert_eq!(error.code.0, -32021, "{what}: {error:?}");
                }
                Ok(other) => panic!("{what}, {tool}: not opted in, but got {other:?}"),
            }
        }
    }
    running.stop().await;
}

#[tokio::test]
async fn r04_optin_does_not_carry_over_to_a_later_call() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let task = submit(&server, "multiply", json!({"a": 6, "b": 7})).await;
    assert_eq!(task["resultType"], "task");
    // The same caller, the same server, the next request without the opt-in.
    let reply = server
        .call(
            ToolCall::new("multiply")
                .arguments(json!({"a": 6, "b": 7}))
                .scope(modern_without_optin()),
        )
        .await;
    let Ok(CallToolResponse::Complete(result)) = reply else {
        panic!("a later call without the opt-in must run synchronously, got {reply:?}");
    };
    assert_eq!(result.structured_content, Some(json!({"result": 42})));
    let refused = server
        .call(ToolCall::new("required_answer").scope(modern_without_optin()))
        .await;
    assert_eq!(
        refused.expect_err("required without the opt-in").code.0,
        -32021
    );
    running.stop().await;
}

#[tokio::test]
async fn r05_required_tool_without_optin_is_32021_with_required_capabilities() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for scope in [RequestScope::new(), modern_without_optin()] {
        let error = server
            .call(ToolCall::new("required_answer").scope(scope))
            .await
            .expect_err("a required tool without the opt-in must fail");
        assert_eq!(error.code.0, -32021, "{error:?}");
        let data = error.data.clone().expect("error.data");
        assert!(
            data["requiredCapabilities"]["extensions"]
                .get(TASKS_EXTENSION_ID)
                .is_some_and(Value::is_object),
            "data.requiredCapabilities.extensions names the tasks extension: {data}"
        );
        let wire = json!({"jsonrpc": "2.0", "id": 1, "error": error});
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &wire);
    }
    running.stop().await;
}

#[tokio::test]
async fn r06_tasks_methods_without_optin_are_32021_even_for_unknown_ids() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let real = id_of(&submit(&server, "multiply", json!({"a": 1, "b": 1})).await);
    for id in ["no-such-task", real.as_str()] {
        for (method, params) in [
            ("tasks/get", json!({"taskId": id})),
            ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
            ("tasks/cancel", json!({"taskId": id})),
        ] {
            for scope in [RequestScope::new(), modern_without_optin()] {
                let error = server
                    .request(method, Some(params.clone()), scope)
                    .await
                    .expect_err("no opt-in");
                assert_eq!(error.code.0, -32021, "{method} {id}: {error:?}");
            }
        }
    }
    // The refused cancel did not touch the real task.
    let done = wait(&server, &real, &DONE).await;
    assert_eq!(status_of(&done), "completed", "{done}");
    running.stop().await;
}

#[tokio::test]
async fn r08_c08_legacy_era_optin_never_creates_a_task() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_06_18] {
        let legacy = RequestScope::new()
            .with_protocol_version(version.clone())
            .with_client_extension(TASKS_EXTENSION_ID, JsonObject::new());
        let reply = server
            .call(
                ToolCall::new("multiply")
                    .arguments(json!({"a": 8, "b": 9}))
                    .scope(legacy.clone()),
            )
            .await;
        let Ok(CallToolResponse::Complete(result)) = reply else {
            panic!("{version}: an opted-in legacy call must run synchronously, got {reply:?}");
        };
        assert_eq!(result.structured_content, Some(json!({"result": 72})));
        let reply = server.call(ToolCall::new("slow").scope(legacy.clone()));
        // `slow` would block: a synchronous run signals `slow_started` and waits.
        let (reply, ()) = tokio::join!(reply, async {
            probe.slow_started.notified().await;
            probe.slow_release.notify_one();
        });
        assert!(
            matches!(reply, Ok(CallToolResponse::Complete(_))),
            "{version}: {reply:?}"
        );
        let error = server
            .call(ToolCall::new("required_answer").scope(legacy))
            .await
            .expect_err("a required tool on a legacy request");
        assert_eq!(error.code.0, -32021, "{version}: {error:?}");
    }
    running.stop().await;
}

#[tokio::test]
async fn r10_tasks_result_and_tasks_list_are_32601() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "multiply", json!({"a": 1, "b": 2})).await);
    for (method, params) in [
        ("tasks/result", Some(json!({"taskId": id}))),
        ("tasks/list", Some(json!({}))),
        ("tasks/list", None),
    ] {
        let error = server
            .request(method, params, scope(None))
            .await
            .expect_err("gone in 2026-07-28");
        assert_eq!(error.code.0, -32601, "{method}: {error:?}");
    }
    running.stop().await;
}

#[tokio::test]
async fn r11_tasks_methods_without_the_extension_are_32601() {
    let server = Server::new("no-tasks");
    server
        .add_tool(ToolDef::new("plain", || async { 1 }))
        .expect("plain");
    let running = server.start().await.expect("start");
    for (method, params) in [
        ("tasks/get", json!({"taskId": "x"})),
        ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "x"})),
    ] {
        let error = server
            .request(method, Some(params), scope(None))
            .await
            .expect_err("no tasks extension");
        assert_eq!(error.code.0, -32601, "{method}: {error:?}");
    }
    // An opted-in call is an ordinary call there.
    let reply = server.call(ToolCall::new("plain").scope(scope(None))).await;
    assert!(
        matches!(reply, Ok(CallToolResponse::Complete(_))),
        "{reply:?}"
    );
    running.stop().await;
}

// ------------------------------------------------------------------------------ creation

#[tokio::test]
async fn r13_r14_create_task_result_is_flat_with_the_required_fields() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for (tool, args) in [
        ("required_answer", json!({})),
        ("multiply", json!({"a": 3, "b": 4})),
    ] {
        let task = submit(&server, tool, args).await;
        assert_eq!(task["resultType"], "task", "{tool}: {task}");
        for key in ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"] {
            assert!(task.get(key).is_some(), "{tool}: `{key}` missing in {task}");
        }
        assert!(task["taskId"].as_str().is_some_and(|id| !id.is_empty()));
        assert!(
            [
                "working",
                "input_required",
                "completed",
                "failed",
                "cancelled"
            ]
            .contains(&status_of(&task)),
            "{task}"
        );
        for key in [
            "task",
            "result",
            "error",
            "inputRequests",
            "requestState",
            "ttl",
            "pollInterval",
        ] {
            assert!(task.get(key).is_none(), "{tool}: `{key}` in {task}");
        }
    }
    running.stop().await;
}

#[tokio::test]
async fn r15_only_create_task_result_carries_result_type_task() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let mut seen: Vec<(String, Value)> = Vec::new();
    let sync = server
        .call(ToolCall::new("sync_only").scope(scope(None)))
        .await;
    let Ok(CallToolResponse::Complete(sync)) = sync else {
        panic!("sync_only: {sync:?}");
    };
    seen.push((
        "sync tools/call".into(),
        serde_json::to_value(&sync).expect("json"),
    ));
    let slow = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    seen.push(("get working".into(), get(&server, &slow).await));
    seen.push(("cancel".into(), cancel(&server, &slow).await));
    seen.push(("get cancelled".into(), wait(&server, &slow, &DONE).await));
    let greet = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &greet, &["input_required"]).await;
    let key = only_key(&parked);
    seen.push(("get input_required".into(), parked));
    seen.push((
        "update".into(),
        update(&server, &greet, json!({key: accept("name", "Ada")})).await,
    ));
    seen.push(("get completed".into(), wait(&server, &greet, &DONE).await));
    let fault = id_of(&submit(&server, "protocol_fault", json!({})).await);
    seen.push(("get failed".into(), wait(&server, &fault, &DONE).await));
    for (what, value) in &seen {
        assert_ne!(value["resultType"], "task", "{what}: {value}");
        assert_ne!(value["result"]["resultType"], "task", "{what}: {value}");
    }
    running.stop().await;
}

#[tokio::test]
async fn r16_get_right_after_create_resolves() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for (tool, args) in [
        ("multiply", json!({"a": 5, "b": 5})),
        ("slow", json!({})),
        ("greet", json!({})),
        ("required_answer", json!({})),
    ] {
        let task = submit(&server, tool, args).await;
        let id = id_of(&task);
        let body = try_get(&server, None, &id)
            .await
            .unwrap_or_else(|e| panic!("{tool}: tasks/get right after create: {e:?}"));
        assert_eq!(body["taskId"], task["taskId"]);
        assert_eq!(body["createdAt"], task["createdAt"], "{tool}");
    }
    probe.slow_release.notify_one();
    running.stop().await;
}

/// The value (0..64) of a base64url character.
fn base64url_value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

#[tokio::test]
async fn r17_r18_a_thousand_task_ids_are_distinct_random_and_header_safe() {
    // One caller submits all 1,000, faster than they finish: lift its quota.
    let limits = ferrymcp::tasks::backend::TaskLimits::default().with_max_tasks_per_caller(1000);
    let (server, _) = build(TasksConfig::default().with_limits(limits));
    let running = running_task_server(&server).await.expect("start");
    let mut ids = Vec::with_capacity(1000);
    for n in 0..1000 {
        ids.push(id_of(
            &submit(&server, "multiply", json!({"a": n, "b": 2})).await,
        ));
    }
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 1000, "task ids repeat");
    for id in &ids {
        // R18: header-safe; R17: 43 base64url characters carry 256 bits.
        assert!(
            !id.is_empty()
                && id
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'),
            "not [A-Za-z0-9_-]+: {id:?}"
        );
        assert_eq!(
            id.len(),
            43,
            "43 characters of base64url (256 bits): {id:?}"
        );
    }
    // No sequential pattern: creation order is not sorted order, and consecutive ids share
    // no meaningful prefix.
    let mut sorted = ids.clone();
    sorted.sort();
    assert_ne!(sorted, ids, "ids are minted in sorted order");
    for pair in ids.windows(2) {
        let common = pair[0]
            .bytes()
            .zip(pair[1].bytes())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            common < 6,
            "consecutive ids share {common} leading characters: {pair:?}"
        );
    }
    // Every one of the first 252 bits is set in about half of the ids (a counter, a
    // timestamp or a constant field would not be): 1000 fair bits have sd ~16 around 500.
    let mut ones = vec![0u32; 42 * 6];
    for id in &ids {
        for (i, c) in id.bytes().take(42).enumerate() {
            let value = base64url_value(c).expect("base64url");
            for bit in 0..6 {
                if value & (1 << bit) != 0 {
                    ones[i * 6 + bit] += 1;
                }
            }
        }
    }
    for (position, count) in ones.iter().enumerate() {
        assert!(
            (350..=650).contains(count),
            "bit {position} is set in {count} of 1000 ids: not uniformly random"
        );
    }
    running.stop().await;
}

/// R19 on one task-bearing object.
fn assert_ttl_and_poll_interval(task: &Value, what: &str) {
    match task.get("ttlMs") {
        Some(Value::Null) => {}
        Some(ttl) => assert!(
            ttl.as_u64().is_some_and(|ms| ms > 0),
            "{what}: ttlMs is neither null nor a positive integer: {task}"
        ),
        None => panic!("{what}: ttlMs is missing: {task}"),
    }
    if let Some(poll) = task.get("pollIntervalMs") {
        assert!(
            poll.as_u64().is_some_and(|ms| ms > 0),
            "{what}: pollIntervalMs is not a positive integer: {task}"
        );
    }
}

#[tokio::test]
async fn r19_ttl_and_poll_interval_are_positive_integers_on_every_task_object() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let mut seen = Vec::new();
    let slow = submit(&server, "slow", json!({})).await;
    let slow_id = id_of(&slow);
    seen.push(("create slow", slow));
    probe.slow_started.notified().await;
    seen.push(("working", get(&server, &slow_id).await));
    cancel(&server, &slow_id).await;
    seen.push(("cancelled", wait(&server, &slow_id, &DONE).await));
    let greet = submit(&server, "greet", json!({})).await;
    let greet_id = id_of(&greet);
    seen.push(("create greet", greet));
    let parked = wait(&server, &greet_id, &["input_required"]).await;
    let key = only_key(&parked);
    seen.push(("input_required", parked));
    update(&server, &greet_id, json!({key: accept("name", "Ada")})).await;
    seen.push(("completed", wait(&server, &greet_id, &DONE).await));
    let fault = id_of(&submit(&server, "protocol_fault", json!({})).await);
    seen.push(("failed", wait(&server, &fault, &DONE).await));
    for (what, task) in &seen {
        assert_ttl_and_poll_interval(task, what);
        // The defaults (C37, C38) are numbers, so null would be a regression here too.
        assert_eq!(task["ttlMs"], 900_000, "{what}: {task}");
        assert_eq!(task["pollIntervalMs"], 5_000, "{what}: {task}");
    }
    running.stop().await;
}

/// R19 whatever the configuration: a TTL or poll interval below one millisecond (zero
/// included) must not reach the wire as `0`, which is neither null nor a positive integer.
#[tokio::test]
async fn r19_sub_millisecond_ttl_and_poll_interval_settings_still_emit_positive_integers() {
    let (server, _) = build(
        TasksConfig::default()
            .with_ttl(Duration::from_micros(500))
            .with_poll_interval(Duration::from_micros(500)),
    );
    server
        .add_tool(
            ToolDef::new("eager", || async { 1 })
                .task(ferrymcp::TaskConfig::optional().with_poll_interval(Duration::ZERO)),
        )
        .expect("eager");
    let running = running_task_server(&server).await.expect("start");
    for tool in ["multiply", "eager"] {
        let created = submit(&server, tool, json!({"a": 1, "b": 1})).await;
        assert_ttl_and_poll_interval(&created, tool);
    }
    running.stop().await;
}

/// R16 whatever the configuration: a TTL set to zero is raised to one second, so a task
/// is still there when its client asks for it right after being handed it (on tokio's
/// paused clock, 2 ms later).
#[tokio::test(start_paused = true)]
async fn r16_a_zero_ttl_setting_still_leaves_the_task_readable_right_after_creation() {
    let (server, _) = build(TasksConfig::default().with_ttl(Duration::ZERO));
    let running = running_task_server(&server).await.expect("start");
    let created = submit(&server, "slow", json!({})).await;
    assert_eq!(created["ttlMs"], 1_000, "{created}");
    tokio::time::advance(Duration::from_millis(2)).await;
    let id = id_of(&created);
    let body = try_get(&server, None, &id)
        .await
        .unwrap_or_else(|e| panic!("the task is gone 2 ms after creation: {e:?}"));
    assert_eq!(body["taskId"], id.as_str(), "{body}");
    running.stop().await;
}

#[tokio::test]
async fn r20_timestamps_are_iso8601_created_at_is_stable_and_last_updated_follows() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let before = now_ms();
    let created = submit(&server, "slow", json!({})).await;
    let id = id_of(&created);
    probe.slow_started.notified().await;
    let working = get(&server, &id).await;
    let working_again = get(&server, &id).await;
    probe.slow_release.notify_one();
    let done = wait(&server, &id, &DONE).await;
    let after_done = get(&server, &id).await;
    let after = now_ms();
    assert_eq!(status_of(&done), "completed", "{done}");
    let created_at = iso8601_ms(created["createdAt"].as_str().expect("createdAt string"))
        .unwrap_or_else(|| panic!("createdAt is not ISO 8601: {created}"));
    // Real UTC times: within this test's run (a 2 s allowance for clock granularity).
    assert!(
        created_at >= before - 2_000 && created_at <= after + 2_000,
        "createdAt {created_at} is not the creation time ({before}..{after})"
    );
    let mut last = created_at;
    for (what, task) in [
        ("create", &created),
        ("working", &working),
        ("working again", &working_again),
        ("completed", &done),
        ("completed again", &after_done),
    ] {
        assert_eq!(
            task["createdAt"], created["createdAt"],
            "{what}: createdAt changed"
        );
        let updated = task["lastUpdatedAt"]
            .as_str()
            .and_then(iso8601_ms)
            .unwrap_or_else(|| panic!("{what}: lastUpdatedAt is not ISO 8601: {task}"));
        assert!(
            updated >= created_at,
            "{what}: lastUpdatedAt < createdAt: {task}"
        );
        assert!(
            updated >= last,
            "{what}: lastUpdatedAt went backwards: {task}"
        );
        last = updated;
    }
    running.stop().await;
}

// ------------------------------------------------------------------------------ tasks/get

#[tokio::test]
async fn r21_synchronous_answer_has_result_type_complete_and_content() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for (tool, scope) in [
        ("sync_only", scope(None)),
        ("multiply", modern_without_optin()),
    ] {
        let reply = server
            .call(
                ToolCall::new(tool)
                    .arguments(json!({"a": 2, "b": 2}))
                    .scope(scope),
            )
            .await;
        let Ok(CallToolResponse::Complete(result)) = reply else {
            panic!("{tool}: {reply:?}");
        };
        let value = serde_json::to_value(&result).expect("json");
        assert_eq!(value["resultType"], "complete", "{tool}: {value}");
        assert!(value["content"].is_array(), "{tool}: {value}");
        assert_valid_call_tool_result(&value, false);
    }
    running.stop().await;
}

#[tokio::test]
async fn r23_r24_get_is_complete_for_all_five_statuses_with_the_right_payload() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let mut by_status = std::collections::BTreeMap::new();
    let slow = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    by_status.insert("working", get(&server, &slow).await);
    cancel(&server, &slow).await;
    by_status.insert("cancelled", wait(&server, &slow, &DONE).await);
    let greet = id_of(&submit(&server, "greet", json!({})).await);
    by_status.insert(
        "input_required",
        wait(&server, &greet, &["input_required"]).await,
    );
    let done = id_of(&submit(&server, "multiply", json!({"a": 2, "b": 3})).await);
    by_status.insert("completed", wait(&server, &done, &DONE).await);
    let fault = id_of(&submit(&server, "protocol_fault", json!({})).await);
    by_status.insert("failed", wait(&server, &fault, &DONE).await);
    assert_eq!(by_status.len(), 5);
    for (status, body) in &by_status {
        assert_eq!(status_of(body), *status, "{body}");
        assert_eq!(body["resultType"], "complete", "R23, {status}: {body}");
        let (result, error, inputs) = (
            body.get("result").is_some(),
            body.get("error").is_some(),
            body.get("inputRequests").is_some(),
        );
        let expected = match *status {
            "working" | "cancelled" => (false, false, false),
            "input_required" => (false, false, true),
            "completed" => (true, false, false),
            "failed" => (false, true, false),
            _ => unreachable!(),
        };
        assert_eq!(
            (result, error, inputs),
            expected,
            "R24, {status}: (result, error, inputRequests) present: {body}"
        );
    }
    running.stop().await;
}

#[tokio::test]
async fn r25_completed_result_equals_sync_result() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for (tool, args) in [
        ("multiply", json!({"a": 8, "b": 9})),
        ("child_multiply", json!({"a": 8, "b": 9})),
        ("totals", json!({})),
        ("kaboom", json!({})),
    ] {
        let sync = server
            .call(ToolCall::new(tool).arguments(args.clone()))
            .await;
        let Ok(CallToolResponse::Complete(sync)) = sync else {
            panic!("{tool}: the synchronous call: {sync:?}");
        };
        let sync = serde_json::to_value(&sync).expect("json");
        let id = id_of(&submit(&server, tool, args).await);
        let done = wait(&server, &id, &DONE).await;
        assert_eq!(status_of(&done), "completed", "{tool}: {done}");
        assert!(done.get("error").is_none(), "{tool}: {done}");
        assert_eq!(
            done["result"], sync,
            "{tool}: the inlined result differs from the sync one"
        );
        assert!(done["result"]["content"].is_array(), "{tool}: {done}");
    }
    running.stop().await;
}

#[tokio::test]
async fn r26_tool_error_ends_completed_with_is_error() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "kaboom", json!({})).await);
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(
        status_of(&done),
        "completed",
        "a tool error is not `failed`: {done}"
    );
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(done.get("error").is_none(), "{done}");
    assert_eq!(text_of(&done["result"]), "kaboom", "{done}");
    running.stop().await;
}

#[tokio::test]
async fn r27_r28_protocol_error_ends_failed_with_that_error_and_a_status_message() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "protocol_fault", json!({})).await);
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(status_of(&done), "failed", "{done}");
    assert!(
        done.get("result").is_none(),
        "R27: no result on failed: {done}"
    );
    assert_eq!(done["error"]["code"], -32603, "R27: {done}");
    assert!(done["error"]["code"].is_i64(), "R27: integer code: {done}");
    assert_eq!(done["error"]["message"], "protocol fault", "R27: {done}");
    assert_eq!(done["error"]["data"], json!({"x": 1}), "R27: {done}");
    assert_valid(Spec::Tasks, "FailedTask", &done);
    assert!(
        done["statusMessage"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "R28: a failed task has a non-empty statusMessage: {done}"
    );
    running.stop().await;
}

#[tokio::test]
async fn r29_input_required_lists_its_requests_with_known_methods() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for tool in ["greet", "two_questions"] {
        let id = id_of(&submit(&server, tool, json!({})).await);
        let parked = wait(&server, &id, &["input_required"]).await;
        assert_valid(Spec::Tasks, "InputRequiredTask", &parked);
        let requests = parked["inputRequests"]
            .as_object()
            .unwrap_or_else(|| panic!("{tool}: no inputRequests: {parked}"));
        assert!(!requests.is_empty(), "{tool}: {parked}");
        assert_eq!(
            requests.len(),
            if tool == "greet" { 1 } else { 2 },
            "{parked}"
        );
        for (key, request) in requests {
            assert!(!key.is_empty());
            let method = request["method"].as_str().unwrap_or_default();
            assert!(
                ["elicitation/create", "sampling/createMessage", "roots/list"].contains(&method),
                "{tool}: {key}: {request}"
            );
            assert_eq!(request["params"]["mode"], "form", "{request}");
        }
    }
    running.stop().await;
}

#[tokio::test]
async fn r29_every_kind_of_input_request_is_listed() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "ask_all", json!({})).await);
    let parked = wait(&server, &id, &["input_required"]).await;
    let requests = parked["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputRequests: {parked}"));
    let methods: BTreeSet<&str> = requests
        .values()
        .filter_map(|request| request["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        BTreeSet::from(["elicitation/create", "roots/list", "sampling/createMessage"]),
        "all outstanding requests are listed: {parked}"
    );
    let key_for = |method: &str| {
        requests
            .iter()
            .find(|(_, request)| request["method"] == method)
            .map(|(key, _)| key.clone())
            .unwrap_or_else(|| panic!("no {method} request: {parked}"))
    };
    let responses = json!({
        key_for("elicitation/create"): accept("choice", "b"),
        key_for("sampling/createMessage"): {
            "role": "assistant", "content": {"type": "text", "text": "short"}, "model": "test-model"
        },
        key_for("roots/list"): {"roots": [{"uri": "file:///work", "name": "work"}]},
    });
    update(&server, &id, responses).await;
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(status_of(&done), "completed", "{done}");
    assert_eq!(
        text_of(&done["result"]),
        r#""b"|"short"|"file:///work""#,
        "{done}"
    );
    running.stop().await;
}

#[tokio::test]
async fn r30_get_unknown_task_is_32602() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    for id in ["nope", "", "A".repeat(43).as_str()] {
        let error = error_code(try_get(&server, None, id).await, "unknown id");
        assert_eq!(error.code.0, -32602, "{id:?}: {error:?}");
        assert_eq!(error.message, format!("Task {id} not found"), "{id:?}");
    }
    // A huge unknown id is repeated only in part, for every method: the error stays small.
    let huge = "é".repeat(100_000);
    for outcome in [
        try_get(&server, None, &huge).await,
        try_update(&server, None, &huge, json!({})).await,
        try_cancel(&server, None, &huge).await,
    ] {
        let error = error_code(outcome, "huge unknown id");
        assert_eq!(error.code.0, -32602, "{}", error.message);
        assert_eq!(
            error.message,
            format!("Task {}… not found", "é".repeat(256)),
            "a huge id is cut at 256 characters"
        );
    }
    // Malformed params are -32602 too, for every method.
    for (method, params) in [
        ("tasks/get", json!({})),
        ("tasks/get", json!({"taskId": 7})),
        ("tasks/update", json!({"inputResponses": {}})),
        ("tasks/cancel", json!({})),
    ] {
        let error = server
            .request(method, Some(params.clone()), scope(None))
            .await
            .expect_err("malformed params");
        assert_eq!(error.code.0, -32602, "{method} {params}: {error:?}");
    }
    running.stop().await;
}

/// R31 on tokio's paused clock (the memory engine's deadlines are tokio instants): a task
/// with `ttlMs` = 1000 is retrievable 1 ms before its TTL, disappears after it without
/// anybody reading it (the sweeper reports it through `changes()`, never before the TTL),
/// then answers -32602.
#[tokio::test(start_paused = true)]
async fn r31_task_is_retrievable_until_its_ttl_then_expires_by_the_sweeper() {
    let ttl = Duration::from_millis(1_000);
    let (server, _) = build(TasksConfig::default().with_ttl(ttl));
    let running = running_task_server(&server).await.expect("start");
    let mut changed = changes(&server);
    let polled = id_of(&submit(&server, "multiply", json!({"a": 1, "b": 2})).await);
    // Both were created at this instant or before: the clock only moves when every task
    // waits on a timer.
    let created = Instant::now();
    let unpolled = id_of(&submit(&server, "multiply", json!({"a": 3, "b": 4})).await);
    let done = wait(&server, &polled, &DONE).await;
    assert_eq!(done["ttlMs"], 1_000, "{done}");
    tokio::time::sleep_until(created + ttl - Duration::from_millis(1)).await;
    let body = try_get(&server, None, &polled)
        .await
        .unwrap_or_else(|e| panic!("the task is gone 1 ms before createdAt + ttlMs: {e:?}"));
    assert_eq!(status_of(&body), "completed");
    // What changed until now (both runs' ends) is behind us. Nobody reads either task any
    // more: the sweeper removes both, and not before their TTL.
    while changed.try_recv().is_ok() {}
    let mut expired = BTreeSet::new();
    let deadline = created + ttl + Duration::from_secs(5);
    while expired.len() < 2 {
        match tokio::time::timeout_at(deadline, changed.recv()).await {
            Err(_) => panic!(
                "no expiry notice within 5 s after the TTL (expired so far: {expired:?}); expiry must not wait for a read"
            ),
            Ok(Ok(id)) if id == polled || id == unpolled => {
                assert!(
                    Instant::now() >= created + ttl,
                    "a task changed {:?} after creation, before its TTL",
                    Instant::now() - created
                );
                expired.insert(id);
            }
            Ok(Ok(_)) => {}
            Ok(Err(missed)) => panic!("missed change notices: {missed}"),
        }
    }
    for id in [&polled, &unpolled] {
        let error = error_code(try_get(&server, None, id).await, "an expired task");
        assert_eq!(error.code.0, -32602, "{error:?}");
    }
    running.stop().await;
}

#[tokio::test]
async fn r32_r44_terminal_state_survives_later_get_cancel_and_update() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    // completed, failed, and cancelled (with the cancelled run released afterwards).
    let completed = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &completed, &["input_required"]).await;
    let key = only_key(&parked);
    update(
        &server,
        &completed,
        json!({key.clone(): accept("name", "Ada")}),
    )
    .await;
    let failed = id_of(&submit(&server, "protocol_fault", json!({})).await);
    let cancelled = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    cancel(&server, &cancelled).await;
    for (id, expected) in [
        (&completed, "completed"),
        (&failed, "failed"),
        (&cancelled, "cancelled"),
    ] {
        let first = wait(&server, id, &DONE).await;
        assert_eq!(status_of(&first), expected, "{first}");
        // R44: cancelling a terminal task is the same empty ack and changes nothing.
        let ack = cancel(&server, id).await;
        assert_empty_ack(&ack, "cancel of a terminal task");
        let ack = update(
            &server,
            id,
            json!({key.clone(): accept("name", "Eve"), "other": accept("x", "y")}),
        )
        .await;
        assert_empty_ack(&ack, "update of a terminal task");
        let later = get(&server, id).await;
        assert_eq!(
            state_of(&later),
            state_of(&first),
            "R32, {expected}: {later}"
        );
    }
    // Let the cancelled run go, if it were still alive, and drain the worker: the cancelled
    // task must still be cancelled and its tool must not have finished.
    probe.slow_release.notify_one();
    drain(&server).await;
    let later = get(&server, &cancelled).await;
    assert_eq!(status_of(&later), "cancelled", "{later}");
    assert_eq!(
        probe.slow_finished.load(Ordering::SeqCst),
        0,
        "a cancelled run finished"
    );
    assert_eq!(
        probe.greet_runs.load(Ordering::SeqCst),
        2,
        "the update to a completed task re-ran it"
    );
    let done = get(&server, &completed).await;
    assert_eq!(text_of(&done["result"]), "Hello, Ada!");
    running.stop().await;
}

#[tokio::test]
async fn r33_polling_has_no_side_effects() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let slow = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    let greet = id_of(&submit(&server, "greet", json!({})).await);
    wait(&server, &greet, &["input_required"]).await;
    let done = id_of(&submit(&server, "multiply", json!({"a": 4, "b": 4})).await);
    wait(&server, &done, &DONE).await;
    for id in [&slow, &greet, &done] {
        let first = get(&server, id).await;
        let second = get(&server, id).await;
        let third = get(&server, id).await;
        assert_eq!(first, second, "two polls differ");
        assert_eq!(second, third, "two polls differ");
    }
    probe.slow_release.notify_one();
    running.stop().await;
}

#[tokio::test]
async fn r34_input_keys_are_never_reused_across_rounds() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "full_name", json!({})).await);
    let round1 = wait(&server, &id, &["input_required"]).await;
    let first_key = only_key(&round1);
    // Polling repeats the same outstanding key.
    assert_eq!(
        input_keys(&get(&server, &id).await),
        vec![first_key.clone()]
    );
    update(
        &server,
        &id,
        json!({first_key.clone(): accept("first", "Ada")}),
    )
    .await;
    // The update leaves `input_required` at once, so this is the second round.
    let round2 = wait(&server, &id, &["input_required"]).await;
    let last_key = only_key(&round2);
    assert_ne!(
        last_key, first_key,
        "an answered key was reused for a new request"
    );
    assert_eq!(
        round2["inputRequests"][&last_key]["params"]["message"],
        "Last name?"
    );
    // Answering the retired key again changes nothing (R38 as well).
    update(
        &server,
        &id,
        json!({first_key.clone(): accept("first", "Eve")}),
    )
    .await;
    let still = get(&server, &id).await;
    assert_eq!(input_keys(&still), vec![last_key.clone()], "{still}");
    update(&server, &id, json!({last_key: accept("last", "Lovelace")})).await;
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(status_of(&done), "completed", "{done}");
    assert_eq!(text_of(&done["result"]), "Ada Lovelace", "{done}");
    assert_eq!(probe.name_runs.load(Ordering::SeqCst), 3);
    running.stop().await;
}

#[tokio::test]
async fn r35_no_related_task_meta_and_no_request_state_on_task_objects() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "full_name", json!({})).await);
    let mut seen = vec![get(&server, &id).await];
    let round1 = wait(&server, &id, &["input_required"]).await;
    let key = only_key(&round1);
    seen.push(round1);
    update(&server, &id, json!({key.clone(): accept("first", "Ada")})).await;
    let round2 = wait(&server, &id, &["input_required"]).await;
    let last = only_key(&round2);
    assert_ne!(last, key, "{round2}");
    seen.push(round2);
    update(&server, &id, json!({last: accept("last", "Lovelace")})).await;
    let done = wait(&server, &id, &DONE).await;
    seen.push(done.clone());
    for body in &seen {
        assert!(body.get("requestState").is_none(), "{body}");
        assert!(body["result"].get("requestState").is_none(), "{body}");
        assert!(
            body["result"]["_meta"]
                .get("io.modelcontextprotocol/related-task")
                .is_none(),
            "{body}"
        );
        assert!(
            body["_meta"]
                .get("io.modelcontextprotocol/related-task")
                .is_none(),
            "{body}"
        );
    }
    assert!(done["result"].is_object(), "{done}");
    running.stop().await;
}

// ------------------------------------------------------------------------------ tasks/update

#[tokio::test]
async fn r36_r40_update_is_an_empty_ack_and_resumes_the_task() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &id, &["input_required"]).await;
    let key = only_key(&parked);
    let ack = update(&server, &id, json!({key: accept("name", "Ada")})).await;
    assert_empty_ack(&ack, "R36");
    for field in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(field).is_none(), "R36: `{field}` in {ack}");
    }
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(status_of(&done), "completed", "R40: {done}");
    assert_eq!(text_of(&done["result"]), "Hello, Ada!", "{done}");
    assert_eq!(probe.greet_runs.load(Ordering::SeqCst), 2);
    running.stop().await;
}

#[tokio::test]
async fn r37_update_unknown_task_is_32602() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let error = error_code(
        try_update(
            &server,
            None,
            "no-such-task",
            json!({"k": accept("name", "Ada")}),
        )
        .await,
        "update of an unknown task",
    );
    assert_eq!(error.code.0, -32602, "{error:?}");
    running.stop().await;
}

#[tokio::test]
async fn r38_updates_with_nothing_outstanding_are_acked_and_change_nothing() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    // Unknown keys on an input_required task.
    let greet = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &greet, &["input_required"]).await;
    for responses in [
        json!({}),
        json!({"made-up": accept("name", "Eve")}),
        json!({format!("{greet}:0000000000000000"): accept("name", "Eve")}),
    ] {
        let ack = update(&server, &greet, responses).await;
        assert_empty_ack(&ack, "unknown keys");
        assert_eq!(
            get(&server, &greet).await,
            parked,
            "an ignored update changed the task"
        );
    }
    // A working task: nothing is outstanding.
    let slow = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    let working = get(&server, &slow).await;
    let ack = update(
        &server,
        &slow,
        json!({only_key(&parked): accept("name", "Eve")}),
    )
    .await;
    assert_empty_ack(&ack, "update of a working task");
    assert_eq!(
        get(&server, &slow).await,
        working,
        "an update changed a working task"
    );
    // A terminal task.
    let done = id_of(&submit(&server, "multiply", json!({"a": 1, "b": 1})).await);
    probe.slow_release.notify_one();
    let finished = wait(&server, &done, &DONE).await;
    let ack = update(&server, &done, json!({"anything": accept("name", "Eve")})).await;
    assert_empty_ack(&ack, "update of a terminal task");
    assert_eq!(
        get(&server, &done).await,
        finished,
        "an update changed a terminal task"
    );
    // None of these resumed `greet`.
    drain(&server).await;
    assert_eq!(
        probe.greet_runs.load(Ordering::SeqCst),
        1,
        "an ignored update ran the tool"
    );
    assert_eq!(get(&server, &greet).await, parked);
    running.stop().await;
}

#[tokio::test]
async fn r39_partial_answer_keeps_the_task_parked_on_the_rest() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "two_questions", json!({})).await);
    let parked = wait(&server, &id, &["input_required"]).await;
    let keys = input_keys(&parked);
    assert_eq!(keys.len(), 2, "{parked}");
    // Which client key asks which question (the client sees only server-minted keys).
    let asks_first =
        |key: &String| parked["inputRequests"][key]["params"]["message"] == "First value?";
    let (answered, remaining) = match keys.iter().position(asks_first) {
        Some(0) => (keys[0].clone(), keys[1].clone()),
        Some(_) => (keys[1].clone(), keys[0].clone()),
        None => panic!("no request asks the first question: {parked}"),
    };
    update(
        &server,
        &id,
        json!({answered.clone(): accept("value", "1st")}),
    )
    .await;
    drain(&server).await;
    let partial = get(&server, &id).await;
    assert_eq!(status_of(&partial), "input_required", "{partial}");
    assert_eq!(
        input_keys(&partial),
        vec![remaining.clone()],
        "only the unanswered key: {partial}"
    );
    assert_eq!(
        partial["inputRequests"][&remaining],
        parked["inputRequests"][&remaining]
    );
    assert_eq!(
        probe.two_runs.load(Ordering::SeqCst),
        1,
        "a partial answer resumed the tool"
    );
    // Re-sending the answered key is ignored (R38): still parked on the other one.
    update(&server, &id, json!({answered: accept("value", "again")})).await;
    assert_eq!(get(&server, &id).await, partial);
    update(&server, &id, json!({remaining: accept("value", "2nd")})).await;
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(status_of(&done), "completed", "{done}");
    // The tool saw both answers under its own keys.
    assert_eq!(text_of(&done["result"]), "1st+2nd", "{done}");
    assert_eq!(probe.two_runs.load(Ordering::SeqCst), 2);
    running.stop().await;
}

#[tokio::test]
async fn r41_concurrent_identical_updates_resume_exactly_once() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &id, &["input_required"]).await;
    let responses = json!({only_key(&parked): accept("name", "Ada")});
    let (first, second) = tokio::join!(
        try_update(&server, None, &id, responses.clone()),
        try_update(&server, None, &id, responses.clone()),
    );
    assert_empty_ack(&first.expect("first update"), "first update");
    assert_empty_ack(&second.expect("second update"), "second update");
    let done = wait(&server, &id, &DONE).await;
    assert_eq!(text_of(&done["result"]), "Hello, Ada!", "{done}");
    // Another task to completion, so a second queued run would have had its turn.
    for _ in 0..3 {
        drain(&server).await;
    }
    assert_eq!(
        probe.greet_runs.load(Ordering::SeqCst),
        2,
        "the first run plus exactly one resumed run"
    );
    running.stop().await;
}

#[tokio::test]
async fn r42_update_without_input_responses_is_32602() {
    let (server, probe) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &id, &["input_required"]).await;
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/update", "params": {"taskId": id}});
    assert!(
        validate(Spec::Tasks, "UpdateTaskRequest", &request).is_err(),
        "the schema requires inputResponses"
    );
    for params in [
        json!({"taskId": id}),
        json!({"taskId": id, "inputResponses": null}),
    ] {
        let error = server
            .request("tasks/update", Some(params.clone()), scope(None))
            .await
            .expect_err("inputResponses is required");
        assert_eq!(error.code.0, -32602, "{params}: {error:?}");
    }
    assert_eq!(get(&server, &id).await, parked);
    assert_eq!(probe.greet_runs.load(Ordering::SeqCst), 1);
    running.stop().await;
}

// ------------------------------------------------------------------------------ tasks/cancel

#[tokio::test]
async fn r43_r46_cancel_running_task_acks_empty_and_ends_cancelled() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    assert_eq!(status_of(&get(&server, &id).await), "working");
    let ack = cancel(&server, &id).await;
    assert_empty_ack(&ack, "R43");
    for field in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(field).is_none(), "R43: `{field}` in {ack}");
    }
    let done = wait(&server, &id, &DONE).await;
    // The work could not have finished (it waits for a release that has not happened).
    assert_eq!(status_of(&done), "cancelled", "R46: {done}");
    assert_valid(Spec::Tasks, "CancelledTask", &done);
    probe.slow_release.notify_one();
    drain(&server).await;
    assert_eq!(status_of(&get(&server, &id).await), "cancelled");
    running.stop().await;
}

#[tokio::test]
async fn r46_r32_a_task_cancelled_before_it_started_never_runs() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    // `slow` holds the only worker slot, so `greet` waits in the queue.
    let slow = id_of(&submit(&server, "slow", json!({})).await);
    probe.slow_started.notified().await;
    let queued = id_of(&submit(&server, "greet", json!({})).await);
    assert_eq!(status_of(&get(&server, &queued).await), "working");
    assert_empty_ack(&cancel(&server, &queued).await, "cancel of a queued task");
    let cancelled = wait(&server, &queued, &DONE).await;
    assert_eq!(status_of(&cancelled), "cancelled", "{cancelled}");
    probe.slow_release.notify_one();
    let done = wait(&server, &slow, &DONE).await;
    assert_eq!(status_of(&done), "completed", "{done}");
    drain(&server).await;
    assert_eq!(
        probe.greet_runs.load(Ordering::SeqCst),
        0,
        "a cancelled queued task ran"
    );
    assert_eq!(get(&server, &queued).await, cancelled);
    running.stop().await;
}

#[tokio::test]
async fn r45_cancel_unknown_task_is_32602() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let error = error_code(
        try_cancel(&server, None, "no-such-task").await,
        "cancel unknown",
    );
    assert_eq!(error.code.0, -32602, "{error:?}");
    running.stop().await;
}

#[tokio::test]
async fn r47_cancel_withdraws_outstanding_input_requests() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    let id = id_of(&submit(&server, "greet", json!({})).await);
    let parked = wait(&server, &id, &["input_required"]).await;
    let key = only_key(&parked);
    assert_empty_ack(&cancel(&server, &id).await, "cancel of a parked task");
    let cancelled = wait(&server, &id, &DONE).await;
    assert_eq!(status_of(&cancelled), "cancelled", "{cancelled}");
    assert!(cancelled.get("inputRequests").is_none(), "{cancelled}");
    let ack = update(&server, &id, json!({key: accept("name", "Ada")})).await;
    assert_empty_ack(&ack, "update of a withdrawn key");
    drain(&server).await;
    assert_eq!(
        get(&server, &id).await,
        cancelled,
        "a withdrawn key resumed the task"
    );
    assert_eq!(
        probe.greet_runs.load(Ordering::SeqCst),
        1,
        "the tool ran again"
    );
    running.stop().await;
}

// ------------------------------------------------------------------------------ security

#[tokio::test]
async fn r52_f10_f11_f14_another_principal_cannot_touch_a_task() {
    let (server, probe) = serial_server();
    let running = running_task_server(&server).await.expect("start");
    let alice = alice();
    let id = id_of(&submit_as(&server, Some(&alice), "greet", json!({})).await);
    let parked = wait_as(&server, Some(&alice), &id, &["input_required"]).await;
    let key = only_key(&parked);
    let other_client = Principal::new("other-app").with_subject("alice");
    for intruder in [bob(), other_client, Principal::new("app")] {
        let who = intruder.scope_key();
        let error = error_code(try_get(&server, Some(&intruder), &id).await, "get");
        assert_eq!(error.code.0, -32602, "{who}: {error:?}");
        let error = error_code(
            try_update(
                &server,
                Some(&intruder),
                &id,
                json!({key.clone(): accept("name", "Mallory")}),
            )
            .await,
            "update",
        );
        assert_eq!(error.code.0, -32602, "{who}: {error:?}");
        let error = error_code(try_cancel(&server, Some(&intruder), &id).await, "cancel");
        assert_eq!(error.code.0, -32602, "{who}: {error:?}");
    }
    drain(&server).await;
    let still = try_get(&server, Some(&alice), &id)
        .await
        .expect("the owner still reads it");
    assert_eq!(
        still, parked,
        "another principal's update or cancel had an effect"
    );
    assert_eq!(probe.greet_runs.load(Ordering::SeqCst), 1);
    try_update(
        &server,
        Some(&alice),
        &id,
        json!({key: accept("name", "Ada")}),
    )
    .await
    .expect("the owner answers");
    let done = wait_as(&server, Some(&alice), &id, &DONE).await;
    assert_eq!(text_of(&done["result"]), "Hello, Ada!");
    running.stop().await;
}

#[tokio::test]
async fn r53_f13_a_foreign_task_is_indistinguishable_from_a_missing_one() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let alice = alice();
    let bob = bob();
    let foreign = id_of(&submit_as(&server, Some(&alice), "greet", json!({})).await);
    let missing = "A".repeat(foreign.len());
    let shape = |error: &ErrorData, id: &str| {
        (
            error.code.0,
            error.message.replace(id, "<id>"),
            error.data.clone(),
        )
    };
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let call = |id: &str| {
            let mut params = json!({"taskId": id});
            if method == "tasks/update" {
                params["inputResponses"] = json!({});
            }
            server.request(method, Some(params), scope(Some(&bob)))
        };
        let for_foreign = call(&foreign).await.expect_err("foreign");
        let for_missing = call(&missing).await.expect_err("missing");
        assert_eq!(
            shape(&for_foreign, &foreign),
            shape(&for_missing, &missing),
            "{method}: a foreign task answers differently from a missing one"
        );
        assert_eq!(for_foreign.code.0, -32602, "{method}");
    }
    running.stop().await;
}

#[tokio::test]
async fn r54_f08_f09_f12_authenticated_and_anonymous_tasks_are_disjoint() {
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let alice = alice();
    let alices: Vec<String> = {
        let mut ids = Vec::new();
        for n in 0..3 {
            ids.push(id_of(
                &submit_as(&server, Some(&alice), "multiply", json!({"a": n, "b": 1})).await,
            ));
        }
        ids
    };
    let anonymous = id_of(&submit(&server, "multiply", json!({"a": 9, "b": 9})).await);
    // F08, F09: each owner resolves all of its own tasks.
    for id in &alices {
        wait_as(&server, Some(&alice), id, &DONE).await;
    }
    let done = wait(&server, &anonymous, &DONE).await;
    assert_eq!(done["result"]["structuredContent"], json!({"result": 81}));
    // F12, R54: and neither resolves the other's.
    for id in &alices {
        let error = error_code(try_get(&server, None, id).await, "anonymous reads alice's");
        assert_eq!(error.code.0, -32602, "{error:?}");
        let error = error_code(
            try_cancel(&server, None, id).await,
            "anonymous cancels alice's",
        );
        assert_eq!(error.code.0, -32602, "{error:?}");
    }
    let error = error_code(
        try_get(&server, Some(&alice), &anonymous).await,
        "alice reads anonymous",
    );
    assert_eq!(error.code.0, -32602, "{error:?}");
    // The owner's view is intact.
    for id in &alices {
        let body = try_get(&server, Some(&alice), id)
            .await
            .expect("alice reads hers");
        assert_eq!(status_of(&body), "completed");
    }
    running.stop().await;
}

#[tokio::test]
async fn r16_r25_task_client_helpers_agree_with_raw_requests() {
    // The shared helpers (`TaskClient`, `TERMINAL`) reach the same engine as the raw requests.
    let (server, _) = default_server();
    let running = running_task_server(&server).await.expect("start");
    let client = TaskClient::new(&server).as_caller(alice());
    let created = client
        .submit("multiply", json!({"a": 8, "b": 9}))
        .await
        .expect("submit");
    let typed = client
        .wait(&created.task.task_id, &TERMINAL, Duration::from_secs(5))
        .await
        .expect("wait");
    let raw = try_get(&server, Some(&alice()), &created.task.task_id)
        .await
        .expect("raw get");
    assert_eq!(serde_json::to_value(&typed).expect("json"), raw);
    running.stop().await;
}
