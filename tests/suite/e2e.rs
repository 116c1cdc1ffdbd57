//! End to end: the demo server as a real stdio child process and over real HTTP, driven by
//! rmcp's client in both protocol eras. Every message the server sends is recorded raw and
//! validated against the official 2026-07-28 schema.

use crate::common;

use ferrymcp::types::{CallToolRequestParams, CallToolResponse, JsonObject};
use ferrymcp_test_helpers::{
    client::{Lifecycle, TestClient, connect},
    wire::WireLog,
};
use rmcp::{ServiceError, transport::StreamableHttpClientTransport};
use serde_json::{Value, json};

const EXPECTED_TOOLS: [&str; 10] = [
    "add",
    "ask_name",
    "child_echo",
    "child_multiply",
    "confirm_task",
    "count_task",
    "once_task",
    "parent_tool",
    "required_task",
    "sleep_task",
];

fn args(value: Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

async fn call(
    client: &TestClient,
    name: &str,
    arguments: Value,
) -> Result<CallToolResponse, ServiceError> {
    client
        .call_tool_once(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments)))
        .await
}

fn error_code(result: Result<CallToolResponse, ServiceError>) -> (i32, String) {
    match result {
        Err(ServiceError::McpError(error)) => (error.code.0, error.message.to_string()),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// The acceptance scenario, the same on every transport and era.
async fn scenario(client: TestClient, log: WireLog, lifecycle: Lifecycle) {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names, EXPECTED_TOOLS,
        "the listing has exactly the demo's tools"
    );

    let reply = call(&client, "child_multiply", json!({"a": 8, "b": 9}))
        .await
        .expect("child_multiply");
    let CallToolResponse::Complete(result) = reply else {
        panic!("child_multiply did not complete synchronously: {reply:?}");
    };
    assert_eq!(result.structured_content, Some(json!({"result": 72})));
    assert_eq!(result.is_error, Some(false));

    let (code, message) = error_code(call(&client, "does_not_exist", json!({})).await);
    assert_eq!(code, -32602);
    assert!(message.contains("does_not_exist"), "{message}");

    let (code, message) = error_code(call(&client, "add", json!({"a": 1, "b": "x"})).await);
    assert_eq!(code, -32602);
    assert!(
        message.contains("'add'") && message.contains(": b: "),
        "the message names the tool and the field: {message}"
    );

    let (code, _) = error_code(call(&client, "add", json!({"a": 1})).await);
    assert_eq!(code, -32602, "a missing argument");

    client.cancel().await.expect("close the client");

    let legacy = lifecycle == Lifecycle::Legacy;
    let counts = log.assert_valid(legacy);
    assert!(
        counts.tools >= 7,
        "every listed Tool was validated: {counts:?}"
    );
    assert!(
        counts.call_results >= 1,
        "the CallToolResult was validated: {counts:?}"
    );
    assert!(
        counts.errors >= 3,
        "the error responses were validated: {counts:?}"
    );

    if !legacy {
        for message in log.messages() {
            for tool in message["result"]["tools"].as_array().into_iter().flatten() {
                assert!(
                    tool.get("execution").is_none(),
                    "2026-07-28 listings carry no `execution`: {tool}"
                );
            }
        }
    }
}

async fn over_stdio(lifecycle: Lifecycle) {
    let child = common::demo_stdio();
    let client = connect(child.transport, lifecycle, false)
        .await
        .expect("connect over stdio");
    scenario(client, child.log, lifecycle).await;
}

async fn over_http(lifecycle: Lifecycle) {
    let http = common::demo_http_recorded().await;
    let recorder = &http.recorder;
    let transport = StreamableHttpClientTransport::from_uri(recorder.url.clone());
    let client = connect(transport, lifecycle, false)
        .await
        .expect("connect over HTTP");
    scenario(client, recorder.log.clone(), lifecycle).await;
}

#[tokio::test]
async fn stdio_2025_11_25_end_to_end() {
    over_stdio(Lifecycle::Legacy).await;
}

#[tokio::test]
async fn stdio_2026_07_28_end_to_end() {
    over_stdio(Lifecycle::Modern).await;
}

#[tokio::test]
async fn http_2025_11_25_end_to_end() {
    over_http(Lifecycle::Legacy).await;
}

#[tokio::test]
async fn http_2026_07_28_end_to_end() {
    over_http(Lifecycle::Modern).await;
}
