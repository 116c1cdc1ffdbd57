//! Issue 12, scope 2 (a per-tool and server-wide call timeout that answers an error and
//! cancels the handler), behavior I19: over real Streamable HTTP on 127.0.0.1, against
//! servers built here. The limits are short real durations (200 ms): each test proves that
//! a call *ends* with the right answer, never how fast; every wait is bounded at 30 s.

use std::{sync::Arc, time::Duration};

use ferrymcp::{
    Args, Context, Server, ToolDef,
    tasks::{TasksConfig, TasksExtension},
    types::TASKS_EXTENSION_ID,
};
use ferrymcp_test_helpers::http::LoopbackHttp;
use ferrymcp_test_helpers::schema::{Spec, assert_valid};
use serde_json::{Value, json};
use tokio::sync::Notify;

const LIMIT: Duration = Duration::from_millis(200);
const BOUND: Duration = Duration::from_secs(30);

/// A server on a loopback port and a raw 2026-07-28 JSON-RPC client for it.
struct Http(LoopbackHttp);

impl Http {
    async fn serve(server: Server) -> Http {
        Http(LoopbackHttp::serve(server).await)
    }

    async fn shutdown(self) {
        self.0.shutdown().await;
    }

    /// One JSON-RPC request; its answer. `opt_in` declares the tasks extension.
    async fn request(&self, method: &str, params: Value, opt_in: bool) -> Value {
        let capabilities = if opt_in {
            json!({"extensions": {TASKS_EXTENSION_ID: {}}})
        } else {
            json!({})
        };
        let name = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let posted = self
            .0
            .post_2026(method, params, capabilities, name.as_deref());
        let (_, answer) = tokio::time::timeout(BOUND, posted)
            .await
            .expect("the server answered in time");
        answer
    }

    async fn call(&self, name: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            false,
        )
        .await
    }
}

fn assert_timed_out(answer: &Value, name: &str, after: &str) {
    assert_valid(Spec::Mcp, "JSONRPCErrorResponse", answer);
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        format!("Tool '{name}' execution timed out after {after}"),
        "{answer}"
    );
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer}"))
}

/// What a handler that never finishes on its own lets the test see.
#[derive(Default)]
struct Signals {
    /// Fired from a drop guard inside the handler's future.
    dropped: Notify,
    /// Fired when the handler's cancellation token fires.
    cancelled: Notify,
}

struct FireOnDrop(Arc<Signals>);

impl Drop for FireOnDrop {
    fn drop(&mut self) {
        self.0.dropped.notify_one();
    }
}

/// A tool that waits forever, reporting its end through `signals`.
fn stuck(name: &str, signals: &Arc<Signals>) -> ToolDef {
    let signals = Arc::clone(signals);
    ToolDef::new(name, move |cx: Context| {
        let signals = Arc::clone(&signals);
        async move {
            let token = cx.cancellation().clone();
            let watcher = Arc::clone(&signals);
            tokio::spawn(async move {
                token.cancelled().await;
                watcher.cancelled.notify_one();
            });
            let _guard = FireOnDrop(signals);
            std::future::pending::<()>().await;
            "never"
        }
    })
}

async fn assert_handler_ended(signals: &Signals) {
    tokio::time::timeout(BOUND, signals.dropped.notified())
        .await
        .expect("the handler's future was dropped");
    tokio::time::timeout(BOUND, signals.cancelled.notified())
        .await
        .expect("the handler's cancellation token fired");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Millis {
    /// How long to work.
    millis: u64,
}

/// A tool that works for `millis` (real time: the work the limit is about), then answers.
fn working(name: &str) -> ToolDef {
    ToolDef::new(name, |Args(Millis { millis }): Args<Millis>| async move {
        tokio::time::sleep(Duration::from_millis(millis)).await;
        format!("worked {millis} ms")
    })
}

#[tokio::test]
async fn issue12_i19_a_tool_past_its_own_timeout_answers_32000_and_its_handler_is_cancelled() {
    let signals = Arc::new(Signals::default());
    let server = Server::new("s");
    server
        .add_tool(stuck("stuck", &signals).timeout(LIMIT))
        .expect("register");
    let http = Http::serve(server).await;
    let answer = http.call("stuck", json!({})).await;
    assert_timed_out(&answer, "stuck", "0.2s");
    assert_handler_ended(&signals).await;
    http.shutdown().await;
}

#[tokio::test]
async fn issue12_i19_the_server_wide_default_bounds_tools_without_their_own() {
    let signals = Arc::new(Signals::default());
    let server = Server::new("s");
    server.set_call_timeout(LIMIT);
    server
        .add_tool(stuck("stuck", &signals))
        .expect("register stuck");
    // Its own, longer limit wins over the default: it works past 200 ms and answers.
    server
        .add_tool(working("patient").timeout(BOUND))
        .expect("register patient");
    let http = Http::serve(server).await;
    assert_timed_out(&http.call("stuck", json!({})).await, "stuck", "0.2s");
    assert_handler_ended(&signals).await;
    let answer = http.call("patient", json!({"millis": 600})).await;
    assert_eq!(text_of(&answer), "worked 600 ms", "{answer}");
    http.shutdown().await;
}

#[tokio::test]
async fn issue12_i19_a_tool_under_its_limit_answers_normally() {
    let server = Server::new("s");
    server.set_call_timeout(BOUND);
    server
        .add_tool(working("quick").timeout(Duration::from_secs(2)))
        .expect("register");
    let http = Http::serve(server).await;
    let answer = http.call("quick", json!({"millis": 0})).await;
    assert_eq!(text_of(&answer), "worked 0 ms", "{answer}");
    http.shutdown().await;
}

#[tokio::test]
async fn issue12_i19_a_mounted_tool_keeps_its_own_timeout_and_the_error_names_the_called_tool() {
    let signals = Arc::new(Signals::default());
    let child = Server::new("child");
    child
        .add_tool(stuck("stuck", &signals).timeout(LIMIT))
        .expect("register");
    // The parent's default is far longer: the child's tool's own limit applies.
    let parent = Server::new("parent");
    parent.set_call_timeout(BOUND);
    parent.mount(&child, "child").expect("mount");
    let http = Http::serve(parent).await;
    assert_timed_out(
        &http.call("child_stuck", json!({})).await,
        "child_stuck",
        "0.2s",
    );
    assert_handler_ended(&signals).await;
    http.shutdown().await;
}

#[tokio::test]
async fn issue12_i19_a_task_run_is_not_bounded_by_the_call_timeout() {
    let server = Server::new("s");
    server.set_call_timeout(LIMIT);
    server
        .add_extension(TasksExtension::with_config(TasksConfig::default()))
        .expect("tasks");
    server
        .add_tool(working("slow").task(true).timeout(LIMIT))
        .expect("register");
    let http = Http::serve(server.clone()).await;
    // Answered once the server, and its task engine, runs.
    let discovered = http.request("server/discover", json!({}), false).await;
    assert!(discovered.get("result").is_some(), "{discovered}");
    let mut changes = server
        .extension_as::<TasksExtension>()
        .and_then(|extension| extension.engine())
        .and_then(|engine| engine.backend().changes())
        .expect("a started memory engine announces task changes");

    // Synchronously, the limit applies.
    assert_timed_out(
        &http.call("slow", json!({"millis": 600})).await,
        "slow",
        "0.2s",
    );

    // As a task, the same work runs to completion.
    let created = http
        .request(
            "tools/call",
            json!({"name": "slow", "arguments": {"millis": 600}}),
            true,
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task id: {created}"))
        .to_owned();
    let done = tokio::time::timeout(BOUND, async {
        loop {
            let got = http
                .request("tasks/get", json!({"taskId": task_id}), true)
                .await;
            let status = got["result"]["status"].as_str().unwrap_or_default();
            if ["completed", "failed", "cancelled"].contains(&status) {
                return got;
            }
            // Polled again on the engine's next change of any task.
            let _ = changes.recv().await;
        }
    })
    .await
    .expect("the task ended");
    assert_eq!(done["result"]["status"], "completed", "{done}");
    http.shutdown().await;
}

/// Over the wire rmcp also cancels a request's token once it is answered, so this one runs
/// in process, where nothing but the timeout can fire the token.
#[tokio::test]
async fn issue12_i19_the_timeout_itself_fires_the_handlers_cancellation_token() {
    let signals = Arc::new(Signals::default());
    let server = Server::new("s");
    server
        .add_tool(stuck("stuck", &signals).timeout(LIMIT))
        .expect("register");
    let error = tokio::time::timeout(BOUND, server.call_tool("stuck", Value::Null))
        .await
        .expect("the call ended")
        .expect_err("a timeout error");
    assert_eq!(error.code.0, -32000);
    assert_eq!(error.message, "Tool 'stuck' execution timed out after 0.2s");
    assert_handler_ended(&signals).await;
}
