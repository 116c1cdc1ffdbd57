//! Task limits on the wire: the demo server as a real child process over HTTP, with
//! `MCP_TASKS_MAX_TASKS_PER_CALLER=3` and `MCP_TASKS_MAX_ARGUMENT_BYTES=20`, driven by raw
//! 2026-07-28 requests whose `clientInfo` name tells the anonymous callers apart. Every
//! answer is validated against the official schemas.

use crate::common;

use ferrymcp::types::TASKS_EXTENSION_ID;
use ferrymcp_test_helpers::schema::{Spec, assert_valid};
use serde_json::{Value, json};

const PER_CALLER: u64 = 3;
const ARGUMENT_BYTES: u64 = 20;

/// One raw request to the demo as the client named `client`, with the tasks opt-in.
async fn post(url: &str, client: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "0"},
    });
    let name = ["name", "taskId"]
        .iter()
        .find_map(|key| params.get(*key).and_then(Value::as_str))
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let text = request
        .body(body.to_string())
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .expect("POST to the demo")
        .text()
        .await
        .expect("the answer's body");
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    let message: Value =
        serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    if message.get("error").is_some() {
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &message);
    }
    message
}

/// `sleep_task(60)` as `client`: the created task's id.
async fn sleep_task(url: &str, client: &str) -> String {
    let message = post(url, client, "tools/call", sleep_params(60.0)).await;
    let result = message
        .get("result")
        .unwrap_or_else(|| panic!("{client}'s sleep_task should be a task: {message}"));
    assert_valid(Spec::Tasks, "CreateTaskResult", result);
    result["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id: {result}"))
        .to_owned()
}

fn sleep_params(seconds: f64) -> Value {
    json!({"name": "sleep_task", "arguments": {"seconds": seconds}})
}

/// The error of a refused call, which must be `code`, name `setting` in its message and
/// carry `{"limit": setting, "max": max}` as data.
fn assert_refused(message: &Value, code: i64, setting: &str, max: u64) {
    let error = message
        .get("error")
        .unwrap_or_else(|| panic!("should be refused by {setting}: {message}"));
    assert_eq!(error["code"], json!(code), "{message}");
    let text = error["message"].as_str().unwrap_or_default();
    assert!(
        text.contains(setting),
        "the message names {setting}: {text}"
    );
    assert_eq!(
        error["data"],
        json!({"limit": setting, "max": max}),
        "{message}"
    );
}

async fn demo() -> common::DemoHttp {
    common::spawn_demo_http_with(
        &[],
        &[
            ("MCP_TASKS_MAX_TASKS_PER_CALLER", &PER_CALLER.to_string()),
            ("MCP_TASKS_MAX_ARGUMENT_BYTES", &ARGUMENT_BYTES.to_string()),
        ],
    )
    .await
}

#[tokio::test]
async fn a_caller_over_its_task_quota_gets_32000_naming_the_limit_and_no_task() {
    let demo = demo().await;
    let url = demo.url.as_str();
    let mut mine = Vec::new();
    for _ in 0..PER_CALLER {
        mine.push(sleep_task(url, "a").await);
    }
    let refused = post(url, "a", "tools/call", sleep_params(60.0)).await;
    assert_refused(
        &refused,
        -32000,
        "MCP_TASKS_MAX_TASKS_PER_CALLER",
        PER_CALLER,
    );
    assert!(
        refused.get("result").is_none(),
        "no CreateTaskResult: {refused}"
    );

    // Another caller is not held up by a's quota.
    sleep_task(url, "b").await;

    // The refusal created no task: once one of a's tasks ends, exactly one more fits.
    let cancelled = post(url, "a", "tasks/cancel", json!({"taskId": mine[0]})).await;
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    sleep_task(url, "a").await;
    let again = post(url, "a", "tools/call", sleep_params(60.0)).await;
    assert_refused(&again, -32000, "MCP_TASKS_MAX_TASKS_PER_CALLER", PER_CALLER);
}

#[tokio::test]
async fn arguments_over_the_limit_get_32602_naming_the_limit() {
    let demo = demo().await;
    let url = demo.url.as_str();
    // {"seconds":60.000000001} is 24 bytes of compact JSON; {"seconds":1.0} fits.
    let refused = post(url, "a", "tools/call", sleep_params(60.000_000_001)).await;
    assert_refused(
        &refused,
        -32602,
        "MCP_TASKS_MAX_ARGUMENT_BYTES",
        ARGUMENT_BYTES,
    );
    sleep_task(url, "a").await;
}
