//! Task status pushed on `subscriptions/listen` (SEP-2663 R12, R50, R51) on the memory engine,
//! over Streamable HTTP and over stdio: the acknowledgment lists the listened tasks the caller
//! has, each change of one arrives as `notifications/tasks` whose params are the task as
//! `tasks/get` shows it at that moment (without `resultType`), and progress a task reports
//! arrives as its status message, never as `notifications/progress`; with OAuth, another
//! caller naming a task is neither acknowledged it nor pushed it. The Redis engine across
//! processes is `tests/suite/redis_push.rs`.
//!
//! Every message is validated against the official schemas. Nothing sleeps: each step waits
//! for the next message on the listen.

use std::{sync::Arc, time::Duration};

use ferrymcp::{
    Context, Server, State, ToolDef,
    tasks::TasksExtension,
    types::{JsonObject, TASKS_EXTENSION_ID},
};
use ferrymcp_test_helpers::{
    http::{Listen, LoopbackHttp},
    schema::{Spec, assert_valid},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader},
    sync::Notify,
};

const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Clone)]
struct Gate(Arc<Notify>);

/// Reports progress, waits for the gate, answers `"copied"`.
async fn copy(cx: Context, State(Gate(gate)): State<Gate>) -> &'static str {
    cx.report_progress(1.0, Some(2.0), Some("copying".into()))
        .await;
    cx.log(ferrymcp::LogLevel::Info, json!("copy started"))
        .await;
    gate.notified().await;
    "copied"
}

fn server() -> (Server, Arc<Notify>) {
    let server = Server::new("push");
    let gate = Arc::new(Notify::new());
    server.insert_state(Gate(Arc::clone(&gate)));
    server
        .add_tool(ToolDef::new("copy", copy).task(true))
        .expect("copy");
    server
        .add_tool(ToolDef::new("quick", || async { "quick" }).task(true))
        .expect("quick");
    server
        .add_extension(TasksExtension::new())
        .expect("the tasks extension");
    (server, gate)
}

fn opted_in() -> Value {
    json!({"extensions": {TASKS_EXTENSION_ID: {}}})
}

async fn create(http: &LoopbackHttp, tool: &str) -> String {
    let (status, answer) = http
        .post_2026(
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            opted_in(),
            Some(tool),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    answer["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool} did not become a task: {answer}"))
        .to_owned()
}

/// The `tasks/get` body of `id`, without `resultType`.
async fn tasks_get(http: &LoopbackHttp, id: &str) -> Value {
    let (status, mut answer) = http
        .post_2026("tasks/get", json!({"taskId": id}), opted_in(), Some(id))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_valid(Spec::Tasks, "GetTaskResult", &answer["result"]);
    let body = answer["result"].as_object_mut().expect("an object");
    body.remove("resultType");
    Value::Object(body.clone())
}

/// The params of a `notifications/tasks` (schema-checked), without `_meta`, and its
/// subscription id.
fn task_params(message: &Value) -> (Value, Value) {
    assert_eq!(
        message["method"], "notifications/tasks",
        "R50: only task notifications on a task listen: {message}"
    );
    assert_valid(Spec::Tasks, "TaskStatusNotification", message);
    let mut params: JsonObject = message["params"].as_object().cloned().expect("params");
    let meta = params.remove("_meta").unwrap_or(Value::Null);
    (
        Value::Object(params),
        meta["io.modelcontextprotocol/subscriptionId"].clone(),
    )
}

async fn next(listen: &mut Listen, what: &str) -> Value {
    listen
        .next(PATIENCE)
        .await
        .unwrap_or_else(|| panic!("no {what} within {PATIENCE:?}"))
}

#[tokio::test]
async fn r12_listening_for_tasks_without_the_opt_in_is_32021() {
    let (server, _gate) = server();
    let http = LoopbackHttp::serve(server).await;
    let id = create(&http, "quick").await;
    let mut listen = Listen::open(http.url(), json!({"taskIds": [id]}), json!({})).await;
    let answer = next(&mut listen, "answer").await;
    assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &answer);
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
    // Nothing was acknowledged first: the error is the whole answer.
    assert!(listen.next(Duration::from_millis(200)).await.is_none());

    // Ids that are not an array of strings, or too many, are invalid params.
    let many: Vec<String> = (0..=ferrymcp::tasks::push::MAX_WATCHED_TASKS)
        .map(|i| format!("t{i}"))
        .collect();
    for ids in [json!("one"), json!([1, 2]), json!(many)] {
        let mut listen = Listen::open(http.url(), json!({"taskIds": ids}), opted_in()).await;
        let answer = next(&mut listen, "answer").await;
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &answer);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    http.shutdown().await;
}

#[tokio::test]
async fn r50_r51_a_listened_task_is_pushed_as_tasks_get_shows_it_and_progress_is_its_status() {
    let (server, gate) = server();
    let http = LoopbackHttp::serve(server).await;
    let id = create(&http, "copy").await;
    let mut listen = Listen::open(
        http.url(),
        json!({"taskIds": [id, "no-such-task", id], "toolsListChanged": true}),
        opted_in(),
    )
    .await;
    assert_eq!(listen.status, 200);
    let ack = next(&mut listen, "acknowledgment").await;
    assert_valid(Spec::Mcp, "SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(
        ack["params"]["notifications"],
        json!({"taskIds": [id], "toolsListChanged": true}),
        "only the caller's existing tasks are acknowledged, each once: {ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );

    // The task's state now, then each change, until the tool waits at the gate with its
    // progress as the status message (R50: never as notifications/progress or message).
    let mut seen = Vec::new();
    let waiting = loop {
        let (params, subscription) = task_params(&next(&mut listen, "task notification").await);
        assert_eq!(subscription, 1);
        assert_eq!(params["taskId"], json!(id));
        assert_eq!(params["status"], "working", "{params}");
        seen.push(params.clone());
        if params["statusMessage"] == "copying (1/2)" {
            break params;
        }
    };
    // R51: equal to what tasks/get says meanwhile (the tool is held at the gate).
    assert_eq!(waiting, tasks_get(&http, &id).await, "R51 while working");

    gate.notify_one();
    let (done, _) = task_params(&next(&mut listen, "the completion").await);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "copied", "{done}");
    assert_eq!(done, tasks_get(&http, &id).await, "R51 once completed");
    assert!(
        seen.windows(2).all(|pair| pair[0] != pair[1]),
        "no state is pushed twice: {seen:?}"
    );
    // A task that ended is not pushed again; the listen itself stays open.
    assert!(listen.next(Duration::from_millis(200)).await.is_none());
    http.shutdown().await;
}

#[tokio::test]
async fn r51_a_task_that_ended_before_the_listen_is_pushed_at_once() {
    let (server, _gate) = server();
    let http = LoopbackHttp::serve(server).await;
    let id = create(&http, "quick").await;
    // Wait for the end by polling: this task is not listened to yet.
    let done = loop {
        let body = tasks_get(&http, &id).await;
        if body["status"] != "working" {
            break body;
        }
        tokio::task::yield_now().await;
    };
    let mut listen = Listen::open(http.url(), json!({"taskIds": [id]}), opted_in()).await;
    let ack = next(&mut listen, "acknowledgment").await;
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    let (params, _) = task_params(&next(&mut listen, "the task").await);
    assert_eq!(params, done);
    http.shutdown().await;
}

type ServerLines = tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;

/// The next line of JSON from the server that is not a log or progress notification (a
/// synchronous part of the exchange may send those).
async fn read_message(lines: &mut ServerLines) -> Value {
    let line = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("a line in time")
        .expect("readable")
        .expect("a line");
    serde_json::from_str(&line).expect("JSON")
}

#[tokio::test]
async fn r51_task_status_is_pushed_over_stdio_too() {
    let (server, gate) = server();
    let (client, served) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(served);
    let serving = tokio::spawn(server.serve_io(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": opted_in(),
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "0"},
    });
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        client_write
            .write_all(line.as_bytes())
            .await
            .expect("write");
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "copy", "arguments": {}, "_meta": meta}}))
    .await;
    let created = read_message(&mut lines).await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a task: {created}"))
        .to_owned();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [id]}, "_meta": meta}}),
    )
    .await;
    let ack = read_message(&mut lines).await;
    assert_valid(Spec::Mcp, "SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2
    );
    loop {
        let (params, subscription) = task_params(&read_message(&mut lines).await);
        assert_eq!(subscription, 2);
        if params["statusMessage"] == "copying (1/2)" {
            break;
        }
    }
    gate.notify_one();
    let (done, _) = task_params(&read_message(&mut lines).await);
    assert_eq!(done["status"], "completed", "{done}");
    // Cancelling the listen ends it (a cancelled request is not answered); then the input
    // ends, and the server with it.
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "_meta": meta}}),
    )
    .await;
    drop(client_write);
    drop(lines);
    tokio::time::timeout(PATIENCE, serving)
        .await
        .expect("the server ends with its input")
        .expect("the server task")
        .expect("served");
}

/// Tokens of two callers: `alice` and `bob`, both allowed everything here.
struct TwoCallers;

#[async_trait::async_trait]
impl ferrymcp::auth::verify::TokenVerifier for TwoCallers {
    async fn verify(
        &self,
        token: &str,
    ) -> Result<ferrymcp::auth::verify::Verified, ferrymcp::auth::verify::VerifyError> {
        match token {
            "alice" | "bob" => Ok(ferrymcp::auth::verify::Verified {
                principal: ferrymcp::auth::Principal::new("app")
                    .with_issuer("https://as.example")
                    .with_subject(token),
                expires_at: None,
            }),
            _ => Err(ferrymcp::auth::verify::VerifyError::Invalid(
                "unknown token".into(),
            )),
        }
    }
}

#[tokio::test]
async fn r51_only_the_owner_of_a_task_is_acknowledged_and_pushed_it() {
    let (server, gate) = server();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let resource = ferrymcp::auth::ResourceServer::new(&url, TwoCallers)
        .expect("resource")
        .authorization_server("https://as.example")
        .expect("issuer");
    let http = ferrymcp::HttpServer::bind(
        server,
        format!("127.0.0.1:{port}"),
        ferrymcp::HttpConfig::new().auth(resource),
    )
    .await
    .expect("bind");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    let created = ferrymcp_test_helpers::http::post_2026_to(
        &url,
        Some("alice"),
        "tools/call",
        json!({"name": "copy", "arguments": {}}),
        opted_in(),
    )
    .await;
    let id = created.body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("alice's task: {created:?}"))
        .to_owned();

    // Bob names Alice's task: nothing is acknowledged, nothing is pushed, even when it ends.
    let mut bob = Listen::open_as(&url, Some("bob"), json!({"taskIds": [id]}), opted_in()).await;
    let ack = next(&mut bob, "bob's acknowledgment").await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([]),
        "{ack}"
    );
    // Alice listens too, and sees her task run and end.
    let mut alice =
        Listen::open_as(&url, Some("alice"), json!({"taskIds": [id]}), opted_in()).await;
    let ack = next(&mut alice, "alice's acknowledgment").await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    loop {
        let (params, _) = task_params(&next(&mut alice, "alice's task").await);
        if params["statusMessage"] == "copying (1/2)" {
            break;
        }
    }
    gate.notify_one();
    let (done, _) = task_params(&next(&mut alice, "the completion").await);
    assert_eq!(done["status"], "completed");
    // Pushed to Alice, so Bob's listen had its chance: it got nothing.
    assert!(
        bob.next(Duration::from_millis(200)).await.is_none(),
        "another caller's task reached bob"
    );
    let _ = stop.send(());
    serving.await.expect("task").expect("clean stop");
}
