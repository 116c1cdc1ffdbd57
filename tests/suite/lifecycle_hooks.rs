//! Lifecycle middleware hooks over a real (in-memory) rmcp connection (B01, B05), and the
//! `Context` a background task run sees (E14, E15).
//!
//! `on_initialize`, `on_discover` and `on_notification` only fire for messages that arrive
//! over a transport, so these tests drive the server with an rmcp client over a duplex.
//!
//! Ordering note: rmcp's serve loop spawns one task per incoming request *and* per incoming
//! notification, so a later request on the same connection is not guaranteed to be handled
//! after an earlier notification. The tests therefore wait for `notifications/initialized`
//! on a `Notify` the recording middleware signals, bounded by a timeout, instead of relying
//! on message order or sleeping.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use ferrymcp::{
    Context, Discover, Initialize, Message, Middleware, Next, Reply, Server, ToolDef,
    tasks::TasksExtension,
    types::{DiscoverResult, ErrorData, GetTaskResult, InitializeResult, JsonObject, TaskPayload},
};
use ferrymcp_test_helpers::{
    client::{InMemory, Lifecycle, in_memory},
    reply,
    tasks::{call_tool_without_optin, run_task, running_task_server},
};
use serde_json::json;
use tokio::sync::Notify;

/// How long a test waits for a hook that should fire; only there so a broken server fails
/// the test instead of hanging it.
const WAIT: Duration = Duration::from_secs(5);

// ------------------------------------------------------------------------------ helpers

/// What the recording middleware saw, with a signal on every new entry.
#[derive(Clone, Default)]
struct Record {
    entries: Arc<Mutex<Vec<String>>>,
    changed: Arc<Notify>,
}

impl Record {
    fn push(&self, entry: String) {
        self.entries.lock().expect("record lock").push(entry);
        // `notify_one` stores a permit when nobody waits yet, so no wake-up is lost.
        self.changed.notify_one();
    }

    fn entries(&self) -> Vec<String> {
        self.entries.lock().expect("record lock").clone()
    }

    fn contains(&self, entry: &str) -> bool {
        self.entries().iter().any(|e| e == entry)
    }

    /// Waits (at most [`WAIT`]) until `entry` has been recorded.
    async fn wait_for(&self, entry: &str) {
        let waited = tokio::time::timeout(WAIT, async {
            while !self.contains(entry) {
                self.changed.notified().await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "`{entry}` was not recorded within {WAIT:?}; record: {:?}",
            self.entries()
        );
    }
}

/// Records every hook it runs, as `hook` or `hook:method`.
struct Recorder(Record);

#[async_trait]
impl Middleware for Recorder {
    async fn on_message(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        self.0.push(format!("on_message:{}", message.method()));
        next.run(message).await
    }

    async fn on_request(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        self.0.push(format!("on_request:{}", message.method()));
        next.run(message).await
    }

    async fn on_notification(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        self.0.push(format!("on_notification:{}", message.method()));
        next.run(message).await
    }

    async fn on_initialize(
        &self,
        init: Initialize,
        next: Next<'_, Initialize>,
    ) -> Result<InitializeResult, ErrorData> {
        self.0.push("on_initialize".to_owned());
        next.run(init).await
    }

    async fn on_discover(
        &self,
        discover: Discover,
        next: Next<'_, Discover>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.0.push("on_discover".to_owned());
        next.run(discover).await
    }
}

/// A server with one tool and the recording middleware.
fn recorded_server(record: &Record) -> Server {
    let server = Server::new("recorded");
    server
        .tool("ping", || async { "pong" })
        .expect("tool registers");
    server.add_middleware(Recorder(record.clone()));
    server
}

/// Connects an rmcp client in `lifecycle` and makes one request, so the connection is known
/// to be fully up.
async fn connect_and_list(server: Server, lifecycle: Lifecycle) -> InMemory {
    let pair = in_memory(server, lifecycle, false)
        .await
        .unwrap_or_else(|e| panic!("{lifecycle:?} handshake failed: {e}"));
    let tools = pair
        .client
        .list_all_tools()
        .await
        .expect("tools/list after the handshake");
    assert_eq!(
        tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(),
        ["ping"]
    );
    pair
}

async fn disconnect(pair: InMemory) {
    pair.client.cancel().await.expect("client shuts down");
    let served = tokio::time::timeout(WAIT, pair.server)
        .await
        .expect("the server ends after the client disconnects")
        .expect("the server task does not panic");
    if let Err(error) = served {
        // A closed transport is the normal end; only report, the test is about the hooks.
        eprintln!("server ended with: {error}");
    }
}

/// The stored `CallToolResult` of a completed task.
fn completed(done: &GetTaskResult) -> &JsonObject {
    match &done.task.payload {
        TaskPayload::Completed { result } => result,
        other => panic!(
            "expected a completed task, got {:?} with {other:?}",
            done.task.task.status
        ),
    }
}

/// `content[0].text` of a completed task.
fn task_text(done: &GetTaskResult) -> &str {
    completed(done)["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no content[0].text in {:?}", completed(done)))
}

// ------------------------------------------------------------------------------ B01 / B05

#[tokio::test]
async fn b01_b05_legacy_connection_fires_on_initialize() {
    let record = Record::default();
    let pair = connect_and_list(recorded_server(&record), Lifecycle::Legacy).await;
    // The client sends `notifications/initialized` after the initialize answer; rmcp handles
    // it on its own task, so wait for it rather than rely on the tools/list round trip.
    record
        .wait_for("on_notification:notifications/initialized")
        .await;

    let entries = record.entries();
    for expected in [
        "on_message:initialize",
        "on_request:initialize",
        "on_initialize",
        "on_message:notifications/initialized",
        "on_notification:notifications/initialized",
    ] {
        assert!(
            entries.iter().any(|e| e == expected),
            "missing `{expected}` in {entries:?}"
        );
    }
    // B02: inside one middleware, on_message(on_request(on_initialize)).
    let position = |entry: &str| entries.iter().position(|e| e == entry);
    assert!(
        position("on_message:initialize") < position("on_request:initialize")
            && position("on_request:initialize") < position("on_initialize"),
        "initialize hooks out of order: {entries:?}"
    );
    // A notification takes on_notification, never on_request.
    assert!(
        !record.contains("on_request:notifications/initialized"),
        "{entries:?}"
    );
    assert!(
        !entries
            .iter()
            .any(|e| e == "on_discover" || e.ends_with(":server/discover")),
        "a legacy connection must not fire on_discover: {entries:?}"
    );

    disconnect(pair).await;
}

#[tokio::test]
async fn b01_b05_modern_connection_fires_on_discover() {
    let record = Record::default();
    let pair = connect_and_list(recorded_server(&record), Lifecycle::Modern).await;

    let entries = record.entries();
    for expected in [
        "on_message:server/discover",
        "on_request:server/discover",
        "on_discover",
    ] {
        assert!(
            entries.iter().any(|e| e == expected),
            "missing `{expected}` in {entries:?}"
        );
    }
    assert!(
        !entries
            .iter()
            .any(|e| e == "on_initialize" || e.ends_with(":initialize")),
        "a modern connection must not fire on_initialize: {entries:?}"
    );

    disconnect(pair).await;
}

/// Replaces the instructions of the `server/discover` answer.
struct RewriteInstructions;

#[async_trait]
impl Middleware for RewriteInstructions {
    async fn on_discover(
        &self,
        discover: Discover,
        next: Next<'_, Discover>,
    ) -> Result<DiscoverResult, ErrorData> {
        let mut result = next.run(discover).await?;
        let original = result.instructions.take().unwrap_or_default();
        result.instructions = Some(format!("rewritten by middleware (was: {original})"));
        Ok(result)
    }
}

#[tokio::test]
async fn b05_middleware_can_change_the_discover_answer() {
    let server = Server::new("discoverable");
    server.set_instructions("original instructions");
    server
        .tool("ping", || async { "pong" })
        .expect("tool registers");
    server.add_middleware(RewriteInstructions);
    let pair = connect_and_list(server, Lifecycle::Modern).await;

    let info = pair
        .client
        .peer_info()
        .expect("the client keeps the server/discover answer");
    assert_eq!(
        info.instructions.as_deref(),
        Some("rewritten by middleware (was: original instructions)"),
        "the client must see the instructions as the middleware changed them: {info:?}"
    );

    disconnect(pair).await;
}

// ------------------------------------------------------------------------------ E14 / E15

#[tokio::test]
async fn e14_task_run_context_is_a_background_task() {
    let server = Server::new("s");
    server
        .add_tool(
            ToolDef::new("whoami", |cx: Context| async move {
                format!(
                    "{}|{}",
                    cx.is_background_run(),
                    cx.background_run().unwrap_or("none")
                )
            })
            .task(true),
        )
        .expect("tool registers");
    server
        .add_extension(TasksExtension::new())
        .expect("extension registers");
    let running = running_task_server(&server).await.expect("server starts");

    let done = run_task(&server, "whoami", json!({})).await;
    let task_id = done.task.task.task_id.clone();
    assert!(!task_id.is_empty(), "a task has an id: {done:?}");
    assert_eq!(task_text(&done), format!("true|{task_id}"));

    let sync = reply::complete(
        call_tool_without_optin(&server, "whoami", json!({})).await,
        "whoami without the opt-in",
    );
    assert_eq!(reply::text_of(&sync), "false|none");

    running.stop().await;
}

#[tokio::test]
async fn e15_task_run_context_root_is_the_root_and_server_is_the_owner() {
    let child = Server::new("child");
    child
        .add_tool(
            ToolDef::new("where", |cx: Context| async move {
                format!("{}/{}", cx.root().name(), cx.server().name())
            })
            .task(true),
        )
        .expect("tool registers");
    let parent = Server::new("parent");
    parent
        .add_extension(TasksExtension::new())
        .expect("extension registers");
    parent.mount(&child, "child").expect("child mounts");
    let running = running_task_server(&parent).await.expect("server starts");

    let done = run_task(&parent, "child_where", json!({})).await;
    assert_eq!(task_text(&done), "parent/child", "tasked: {done:?}");

    let sync = reply::complete(
        call_tool_without_optin(&parent, "child_where", json!({})).await,
        "child_where without the opt-in",
    );
    assert_eq!(reply::text_of(&sync), "parent/child", "synchronous");

    running.stop().await;
}
