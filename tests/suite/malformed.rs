//! Malformed input never panics and always gets a JSON-RPC error with the right code, over
//! real stdio and real HTTP. Every error response validates against the official schema.

use crate::common;

use std::collections::HashMap;

use ferrymcp_test_helpers::schema::{Spec, assert_valid};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Sends raw lines to the demo over stdio and collects every answer.
async fn stdio_exchange(lines: &[String], expected_answers: usize) -> Vec<Value> {
    let mut child = tokio::process::Command::new(common::demo_binary())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the demo");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    for line in lines {
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
    }
    stdin.flush().await.expect("flush");
    let mut answers = Vec::new();
    while answers.len() < expected_answers {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer after {answers:?}"))
            .expect("read")
            .expect("the server closed stdout: it crashed or stopped answering");
        answers.push(serde_json::from_str(&line).expect("the server writes JSON"));
    }
    answers
}

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: i64, params: Value) -> String {
    request(id, "tools/call", params)
}

#[tokio::test]
async fn malformed_input_over_stdio_gets_json_rpc_errors() {
    let initialize = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let lines = vec![
        initialize,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        call(2, json!({"name": "add", "arguments": [1, 2]})),
        call(3, json!({"name": "add", "arguments": "x"})),
        call(4, json!({"name": "add", "arguments": {"a": "x", "b": 1}})),
        call(5, json!({"name": "add", "arguments": {"a": 1e30, "b": 1}})),
        call(6, json!({"arguments": {}})),
        request(7, "no/such/method", json!({})),
        call(8, json!({"name": "no_such_tool", "arguments": {}})),
        request(9, "tasks/get", json!({"taskId": "x"})),
        call(10, json!({"name": "add", "arguments": {"a": i64::MAX, "b": 1}})),
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"add","arguments":{"a":1e400,"b":1}}}"#.to_owned(),
        "not json at all".to_owned(),
        r#"{"foo": 1, "id": "abc"}"#.to_owned(),
        // Ids MCP does not allow (a string or an integer): answered without one.
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1e30,"method":"ping"}"#.to_owned(),
        call(12, json!({"name": "add", "arguments": {"a": 2, "b": 3}})),
    ];
    let answers = stdio_exchange(&lines, 16).await;

    let mut by_id: HashMap<String, Value> = HashMap::new();
    let mut anonymous = Vec::new();
    for answer in answers {
        if answer.get("error").is_some() {
            assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &answer);
        }
        match &answer["id"] {
            Value::Null => anonymous.push(answer),
            id => {
                by_id.insert(id.to_string(), answer);
            }
        }
    }
    let code = |id: &str| by_id[id]["error"]["code"].as_i64();
    assert_eq!(code("2"), Some(-32602), "array arguments");
    assert_eq!(code("3"), Some(-32602), "string arguments");
    assert_eq!(code("4"), Some(-32602), "a wrong type");
    assert!(
        by_id["4"]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("a:")
    );
    assert_eq!(code("5"), Some(-32602), "a number beyond i64");
    assert_eq!(code("6"), Some(-32602), "a missing name");
    assert_eq!(code("7"), Some(-32601), "an unknown method");
    assert_eq!(code("8"), Some(-32602), "an unknown tool");
    assert_eq!(
        code("9"),
        Some(-32601),
        "tasks/get without the tasks extension"
    );
    assert_eq!(
        by_id["10"]["result"]["isError"], true,
        "overflow is a tool error, not a panic"
    );
    assert_eq!(code("\"abc\""), Some(-32600), "JSON that is not JSON-RPC");
    let mut anonymous_errors: Vec<_> = anonymous
        .iter()
        .map(|a| a["error"]["code"].as_i64())
        .collect();
    anonymous_errors.sort();
    assert_eq!(
        anonymous_errors,
        [Some(-32700), Some(-32700), Some(-32600), Some(-32600)],
        "1e400 and plain text, then the ids 1.5 and 1e30"
    );
    assert_eq!(
        by_id["12"]["result"]["structuredContent"],
        json!({"result": 5}),
        "the server still works afterwards"
    );
}

/// Lists come in one page, so no cursor is valid: the spec's `-32602`, with a short
/// message, on each of the four lists; an empty cursor and none are answered.
#[tokio::test]
async fn a_list_with_a_cursor_the_server_never_gave_is_invalid_params() {
    let initialize = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let huge = "c".repeat(100_000);
    let lines = vec![
        initialize,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        request(2, "tools/list", json!({"cursor": "bogus"})),
        request(3, "resources/list", json!({"cursor": huge})),
        request(4, "resources/templates/list", json!({"cursor": "bogus"})),
        request(5, "prompts/list", json!({"cursor": "bogus"})),
        request(6, "tools/list", json!({"cursor": ""})),
        request(7, "tools/list", json!({})),
    ];
    let answers = stdio_exchange(&lines, 7).await;
    let by_id: HashMap<String, Value> = answers
        .into_iter()
        .map(|a| (a["id"].to_string(), a))
        .collect();
    for id in ["2", "3", "4", "5"] {
        let answer = &by_id[id];
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", answer);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("cursor"), "{message}");
        assert!(
            message.len() < 300,
            "a short message: {} bytes",
            message.len()
        );
    }
    for id in ["6", "7"] {
        let tools = by_id[id]["result"]["tools"].as_array().map(Vec::len);
        assert!(tools.is_some_and(|n| n > 0), "{}", by_id[id]);
    }
}

/// Invalid input to a mounted child's tool, prompt or template names what the client sent
/// (`child_multiply`, `child_greet`, `users://child/…`), not the child's own name or URI.
#[tokio::test]
async fn invalid_arguments_through_a_mount_name_what_the_client_asked_for() {
    let initialize = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let lines = vec![
        initialize,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        call(
            2,
            json!({"name": "child_multiply", "arguments": {"a": "x", "b": 1}}),
        ),
        request(
            3,
            "prompts/get",
            json!({"name": "child_greet", "arguments": {}}),
        ),
        request(
            4,
            "resources/read",
            json!({"uri": "users://child/notanumber/profile"}),
        ),
    ];
    let answers = stdio_exchange(&lines, 4).await;
    let by_id: HashMap<String, Value> = answers
        .into_iter()
        .map(|a| (a["id"].to_string(), a))
        .collect();
    for (id, named) in [
        ("2", "Invalid arguments for tool 'child_multiply': a: "),
        ("3", "Invalid arguments for prompt 'child_greet': "),
        (
            "4",
            "Invalid arguments for resource template 'users://child/notanumber/profile': id: ",
        ),
    ] {
        let answer = &by_id[id];
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", answer);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(named), "{message}");
    }
}

#[tokio::test]
async fn malformed_input_over_http_gets_json_rpc_errors() {
    let demo = common::spawn_demo_http().await;
    let client = reqwest::Client::new();
    let post = |body: String, headers: &[(&str, &str)]| {
        let mut request = client
            .post(&demo.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };

    for (body, expected_code, expected_id) in [
        ("not json".to_owned(), -32700, Value::Null),
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1e400}}}"#.to_owned(), -32700, Value::Null),
        (r#"{"foo":1,"id":7}"#.to_owned(), -32600, json!(7)),
        (r#"{"foo":1,"id":"seven"}"#.to_owned(), -32600, json!("seven")),
        // Ids MCP does not allow (a string or an integer): answered without one.
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_owned(), -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":1e30,"method":"ping"}"#.to_owned(), -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}"#.to_owned(), -32600, Value::Null),
    ] {
        let response = post(body.clone(), &[]).await.expect("POST");
        assert_eq!(response.status(), 400, "{body}");
        let answer: Value = response.json().await.expect("a JSON body");
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &answer);
        assert_eq!(answer["error"]["code"], expected_code, "{body}: {answer}");
        assert_eq!(answer.get("id").cloned().unwrap_or(Value::Null), expected_id, "{body}");
    }

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    let modern = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "add"),
    ];
    for (arguments, what) in [
        (json!([1, 2]), "array arguments"),
        (json!({"a": "x", "b": 1}), "a wrong type"),
        (json!({"a": 1e30, "b": 1}), "a number beyond i64"),
        (json!({"b": 1}), "a missing argument"),
    ] {
        let body = call(
            3,
            json!({"name": "add", "arguments": arguments, "_meta": meta}),
        );
        let answer: Value = post(body, &modern)
            .await
            .expect("POST")
            .json()
            .await
            .expect("a JSON body");
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &answer);
        assert_eq!(answer["error"]["code"], -32602, "{what}: {answer}");
    }
}

/// What rmcp's service refuses with plain text (an `Accept` without both media types, an
/// unknown session, a method the endpoint does not serve, a body that is not JSON by its
/// media type) reaches the client as a JSON-RPC error with the same status and headers.
#[tokio::test]
async fn transport_refusals_over_http_are_json_rpc_errors() {
    let demo = common::spawn_demo_http().await;
    let client = reqwest::Client::new();
    let initialize = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let both = "application/json, text/event-stream";
    let cases = [
        (
            "an Accept without text/event-stream",
            client
                .post(&demo.url)
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .body(initialize.clone()),
            406,
            "Not Acceptable",
        ),
        (
            "an unknown session",
            client
                .post(&demo.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .header("mcp-session-id", "no-such-session")
                .header("mcp-protocol-version", "2025-11-25")
                .body(request(2, "tools/list", json!({}))),
            404,
            "Session not found",
        ),
        (
            "the end of an unknown session",
            client
                .delete(&demo.url)
                .header("mcp-session-id", "no-such-session")
                .header("mcp-protocol-version", "2025-11-25"),
            404,
            "Session not found",
        ),
        (
            "a stream without text/event-stream",
            client.get(&demo.url).header("accept", "application/json"),
            406,
            "Not Acceptable",
        ),
        (
            "a method the endpoint does not serve",
            client.put(&demo.url).body("x"),
            405,
            "Method Not Allowed",
        ),
        (
            "a JSON body sent as text",
            client
                .post(&demo.url)
                .header("content-type", "text/plain")
                .header("accept", both)
                .body(initialize),
            415,
            "Unsupported Media Type",
        ),
    ];
    for (what, request, status, wording) in cases {
        let response = request.send().await.expect("the request");
        assert_eq!(response.status(), status, "{what}");
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{what}"
        );
        if status == 405 {
            assert!(response.headers().contains_key("allow"), "{what}");
        }
        let answer: Value = response.json().await.expect("a JSON body");
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &answer);
        assert_eq!(answer["error"]["code"], -32000, "{what}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(wording), "{what}: {answer}");
    }
}
