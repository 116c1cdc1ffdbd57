//! What the server tells the client on its own: log messages at the client's level,
//! progress tied to the request's token (or a task's statusMessage, R50), and list-changed
//! announcements when anything in the mounted tree changes. Over the real wire (an
//! in-memory duplex) in both eras, with rmcp's client.

use std::{sync::Arc, time::Duration};

use ferrymcp::{
    Context, LogLevel, PromptDef, ResourceDef, Server, State, ToolDef,
    tasks::TasksExtension,
    types::{CallToolRequestParams, ClientRequest, ServerNotification, SubscriptionFilter},
};
use ferrymcp_test_helpers::{
    client::{ClientEvent, Lifecycle, RecordingClient, recording_in_memory},
    tasks::TaskClient,
};
use rmcp::{RoleClient, service::RunningService};
use serde_json::json;
use tokio::sync::{Notify, mpsc::UnboundedReceiver};

type Client = RunningService<RoleClient, RecordingClient>;

const PATIENCE: Duration = Duration::from_secs(5);

async fn connect(server: Server, lifecycle: Lifecycle) -> (Client, UnboundedReceiver<ClientEvent>) {
    recording_in_memory(server, lifecycle)
        .await
        .expect("connect")
}

/// The next event, within [`PATIENCE`].
async fn next_event(events: &mut UnboundedReceiver<ClientEvent>) -> ClientEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("an event in time")
        .expect("the client is alive")
}

/// Events until `last` arrives (included).
async fn events_until(
    events: &mut UnboundedReceiver<ClientEvent>,
    last: &ClientEvent,
) -> Vec<ClientEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(events).await;
        let done = &event == last;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// A tool that logs at four levels, the last (`error: done`) marking the end.
async fn chatty(cx: Context) -> &'static str {
    cx.log(LogLevel::Debug, "debug line").await;
    cx.log(LogLevel::Info, "info line").await;
    cx.log(LogLevel::Warning, "warning line").await;
    cx.log(LogLevel::Error, "done").await;
    "ok"
}

fn chatty_server() -> Server {
    let server = Server::new("s");
    server.tool("chatty", chatty).unwrap();
    server
}

fn levels(events: &[ClientEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ClientEvent::Log(level, _) => Some(level.clone()),
            _ => None,
        })
        .collect()
}

/// A `tools/call` whose request `_meta` carries `meta`.
async fn call_with_meta(client: &Client, name: &str, meta: serde_json::Value) {
    let params = CallToolRequestParams::new(name.to_owned());
    let options = rmcp::service::PeerRequestOptions::no_options()
        .with_meta(serde_json::from_value(meta).expect("a meta object"));
    client
        .send_request_with_option(
            ClientRequest::CallToolRequest(rmcp::model::Request::new(params)),
            options,
        )
        .await
        .expect("send")
        .await_response()
        .await
        .expect("a response");
}

#[tokio::test]
async fn logging_on_2025_11_25_follows_set_level_and_sends_everything_before_it() {
    let (client, mut events) = connect(chatty_server(), Lifecycle::Legacy).await;
    let done = ClientEvent::Log("error".into(), json!("done"));

    client
        .call_tool(CallToolRequestParams::new("chatty"))
        .await
        .unwrap();
    let before = events_until(&mut events, &done).await;
    assert_eq!(levels(&before), ["debug", "info", "warning", "error"]);

    #[allow(deprecated)]
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Warning,
        ))
        .await
        .expect("logging/setLevel");
    client
        .call_tool(CallToolRequestParams::new("chatty"))
        .await
        .unwrap();
    let after = events_until(&mut events, &done).await;
    assert_eq!(levels(&after), ["warning", "error"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn logging_on_2026_07_28_is_sent_only_when_the_request_opts_in_with_its_level() {
    let (client, mut events) = connect(chatty_server(), Lifecycle::Modern).await;
    let done = ClientEvent::Log("error".into(), json!("done"));

    // No opt-in: nothing is sent. The next call's logs come after, in order.
    client
        .call_tool(CallToolRequestParams::new("chatty"))
        .await
        .unwrap();
    call_with_meta(
        &client,
        "chatty",
        json!({"io.modelcontextprotocol/logLevel": "info"}),
    )
    .await;
    let seen = events_until(&mut events, &done).await;
    assert_eq!(levels(&seen), ["info", "warning", "error"]);
    client.cancel().await.unwrap();
}

async fn two_steps(cx: Context) -> &'static str {
    cx.report_progress(1.0, Some(2.0), Some("first step".into()))
        .await;
    cx.report_progress(2.0, Some(2.0), None).await;
    "ok"
}

#[tokio::test]
async fn progress_notifications_follow_the_requests_progress_token_in_both_eras() {
    for lifecycle in Lifecycle::ALL {
        let server = Server::new("s");
        server.tool("two_steps", two_steps).unwrap();
        let (client, mut events) = connect(server, lifecycle).await;
        call_with_meta(&client, "two_steps", json!({"progressToken": "p-1"})).await;
        assert_eq!(
            next_event(&mut events).await,
            ClientEvent::Progress(1.0, Some(2.0), Some("first step".into())),
            "{lifecycle:?}"
        );
        assert_eq!(
            next_event(&mut events).await,
            ClientEvent::Progress(2.0, Some(2.0), None)
        );
        client.cancel().await.unwrap();
    }
}

#[derive(Clone)]
struct Gate(Arc<Notify>);

async fn report_then_wait(cx: Context, State(Gate(gate)): State<Gate>) -> &'static str {
    cx.report_progress(1.0, Some(2.0), Some("copying".into()))
        .await;
    gate.notified().await;
    "ok"
}

#[tokio::test]
async fn r50_inside_a_task_progress_becomes_the_status_message() {
    let server = Server::new("s");
    let gate = Arc::new(Notify::new());
    server.insert_state(Gate(Arc::clone(&gate)));
    server
        .add_tool(ToolDef::new("copy", report_then_wait).task(true))
        .unwrap();
    server.add_extension(TasksExtension::new()).unwrap();
    let running = server.start().await.unwrap();
    let tasks = TaskClient::new(&server);
    let created = tasks.submit("copy", json!({})).await.unwrap();
    let id = created.task.task_id.clone();

    let mut changes = server
        .extension_as::<TasksExtension>()
        .and_then(|e| e.engine())
        .and_then(|engine| engine.backend().changes())
        .expect("the memory engine announces changes");
    let status = loop {
        let current = tasks.get(&id).await.unwrap();
        if let Some(message) = current.task.task.status_message.clone() {
            break message;
        }
        tokio::time::timeout(PATIENCE, changes.recv())
            .await
            .expect("a change in time")
            .ok();
    };
    assert_eq!(status, "copying (1/2)");
    gate.notify_one();
    let done = tasks
        .wait(&id, &ferrymcp_test_helpers::tasks::TERMINAL, PATIENCE)
        .await
        .unwrap();
    assert_eq!(
        done.task.task.status,
        ferrymcp::types::TaskStatus::Completed
    );
    running.stop().await;
}

/// A parent with a mounted child, the child changed after the client connected.
async fn change_the_child(child: &Server) {
    child.tool("late_tool", || async { "late" }).unwrap();
    child
        .add_resource(ResourceDef::new("data://late", || async { "late" }))
        .unwrap();
    child
        .add_prompt(PromptDef::new("late_prompt", || async { "late" }))
        .unwrap();
}

#[tokio::test]
async fn list_changed_on_2025_11_25_reaches_the_session_when_a_mounted_child_changes() {
    let child = Server::new("child");
    let parent = Server::new("parent");
    parent.mount(&child, "child").unwrap();
    let (client, mut events) = connect(parent, Lifecycle::Legacy).await;
    // The session is live once a request went through.
    client.list_all_tools().await.unwrap();

    change_the_child(&child).await;
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = next_event(&mut events).await;
        if !seen.contains(&event) {
            seen.push(event);
        }
    }
    assert_eq!(
        seen,
        [
            ClientEvent::ToolsChanged,
            ClientEvent::ResourcesChanged,
            ClientEvent::PromptsChanged
        ]
    );
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "child_late_tool");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_changed_on_2026_07_28_arrives_on_a_subscriptions_listen_stream() {
    let child = Server::new("child");
    let parent = Server::new("parent");
    parent.mount(&child, "child").unwrap();
    let (client, _events) = connect(parent, Lifecycle::Modern).await;
    let mut filter = SubscriptionFilter::default();
    filter.tools_list_changed = Some(true);
    filter.resources_list_changed = Some(true);
    filter.prompts_list_changed = Some(true);
    let mut subscription = client.listen(filter).await.expect("subscriptions/listen");

    change_the_child(&child).await;
    let mut methods = Vec::new();
    while methods.len() < 3 {
        let notification = tokio::time::timeout(PATIENCE, subscription.next())
            .await
            .expect("a notification in time")
            .expect("the subscription is open")
            .expect("a notification");
        let method = match notification {
            ServerNotification::ToolListChangedNotification(_) => "tools",
            ServerNotification::ResourceListChangedNotification(_) => "resources",
            ServerNotification::PromptListChangedNotification(_) => "prompts",
            other => panic!("unexpected {other:?}"),
        };
        if !methods.contains(&method) {
            methods.push(method);
        }
    }
    assert_eq!(methods, ["tools", "resources", "prompts"]);
    client.cancel().await.unwrap();
}
