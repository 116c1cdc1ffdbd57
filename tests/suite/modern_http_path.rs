//! Issue 17: plain 2026-07-28 `tools/call`s are answered on the HTTP transport's own path,
//! everything else by rmcp's Streamable HTTP service. Against the demo over real HTTP on
//! 127.0.0.1, each call is sent twice: as a plain call (our path) and with a weighted
//! `Accept` entry, which the path leaves to rmcp. Both answers must be the same: status,
//! media type and JSON body, ids of new tasks and sealed states aside. A client that goes
//! away cancels the call on our path as on rmcp's.

use crate::{
    common,
    support::modern::{answered, post},
};

use std::time::Duration;

use serde_json::{Value, json};

/// A generous bound on "this ends by itself".
const BOUND: Duration = Duration::from_secs(30);

fn meta(tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "modern-path", "version": "1"},
    })
}

/// [`meta`] asking for version `version` of the tool.
fn versioned(version: &str) -> Value {
    let mut meta = meta(false);
    meta["fastmcp"] = json!({ "version": version });
    meta
}

fn call(id: Value, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Values that differ between two runs of the same call (a new task's id and times, a
/// freshly sealed state) replaced by a marker.
fn steady(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    if matches!(
                        key.as_str(),
                        "taskId" | "requestState" | "createdAt" | "lastUpdatedAt"
                    ) {
                        *item = json!("<varies>");
                    } else {
                        walk(item);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// Status, media type and (steadied) body of an answer.
async fn seen(response: reqwest::Response) -> (u16, String, Value) {
    let (status, media, text) = answered(response).await;
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("JSON ({e}): {text}"));
    (status, media, steady(body))
}

#[tokio::test]
async fn issue17_plain_calls_are_answered_exactly_as_rmcp_answers_them() {
    let demo = common::spawn_demo_http().await;
    let cases: Vec<(&str, Value)> = vec![
        (
            "add",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta(false)}),
        ),
        (
            "add",
            json!({"name": "add", "arguments": {"a": "x"}, "_meta": meta(false)}),
        ),
        (
            "nope",
            json!({"name": "nope", "arguments": {}, "_meta": meta(false)}),
        ),
        (
            "child_echo",
            json!({"name": "child_echo", "arguments": {"message": "hé"}, "_meta": meta(false)}),
        ),
        (
            "required_task",
            json!({"name": "required_task", "arguments": {"value": 1}, "_meta": meta(false)}),
        ),
        (
            "required_task",
            json!({"name": "required_task", "arguments": {"value": 1}, "_meta": meta(true)}),
        ),
        (
            "parent_tool",
            json!({"name": "parent_tool", "arguments": {"value": 4}, "_meta": meta(true)}),
        ),
        (
            "parent_tool",
            json!({"name": "parent_tool", "arguments": {"value": 4}, "_meta": meta(false)}),
        ),
        (
            "ask_name",
            json!({"name": "ask_name", "_meta": meta(false)}),
        ),
        (
            "ask_name",
            json!({"name": "ask_name", "_meta": meta(false),
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": "not-a-sealed-state"}),
        ),
        (
            "add",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": versioned("9")}),
        ),
    ];
    for (index, (name, params)) in cases.into_iter().enumerate() {
        let id = if index % 2 == 0 {
            json!(index)
        } else {
            json!(format!("call-{index}"))
        };
        let body = call(id, params);
        let ours = seen(post(&demo.url, name, &body, false).await).await;
        let rmcp = seen(post(&demo.url, name, &body, true).await).await;
        assert_eq!(ours, rmcp, "case {index}: {body}");
        assert_eq!(ours.1, "application/json", "case {index}: {ours:?}");
    }
}

/// The answer of a plain call carries its length, as rmcp's does.
#[tokio::test]
async fn issue17_a_plain_call_is_answered_with_a_content_length() {
    let demo = common::spawn_demo_http().await;
    let body = call(
        json!(1),
        json!({"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta(false)}),
    );
    for via_rmcp in [false, true] {
        let response = post(&demo.url, "add", &body, via_rmcp).await;
        let length: usize = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("a content-length (rmcp: {via_rmcp})"));
        assert_eq!(response.bytes().await.expect("body").len(), length);
    }
}

/// A client that hangs up cancels its call: the demo's `sleep_task` records the
/// cancellation in its ledger.
#[tokio::test]
async fn issue17_a_plain_call_whose_client_hangs_up_is_cancelled() {
    let ledger = std::env::temp_dir().join(format!("modern-path-{}.ledger", std::process::id()));
    let _ = std::fs::remove_file(&ledger);
    let path = ledger.to_string_lossy().into_owned();
    let demo = common::spawn_demo_http_with(&[], &[("MCP_DEMO_LEDGER", path.as_str())]).await;
    let body = call(
        json!(1),
        json!({"name": "sleep_task", "arguments": {"seconds": 30}, "_meta": meta(false)}),
    );
    let hung_up = reqwest::Client::new()
        .post(&demo.url)
        .timeout(Duration::from_millis(500))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "sleep_task")
        .body(body.to_string())
        .send()
        .await;
    assert!(hung_up.is_err(), "the call should still be running");
    let recorded = async {
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            tick.tick().await;
            let text = std::fs::read_to_string(&ledger).unwrap_or_default();
            if text.contains("cancelled sleep_task 30") {
                return;
            }
        }
    };
    tokio::time::timeout(BOUND, recorded)
        .await
        .expect("the call was not cancelled when its client hung up");
    let _ = std::fs::remove_file(&ledger);
}
