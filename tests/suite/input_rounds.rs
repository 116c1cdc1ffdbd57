//! Input rounds (SEP-2322): one handler, written once, asks for input synchronously (a tool,
//! a resource, a prompt) and as a background task; 2025-11-25 clients are asked with
//! server-to-client requests, or get a clear error when they cannot answer.

use std::time::Duration;

use crate::support::input::{self, Client, ask_name, text_of};

use ferrymcp::{
    Context, InputRequired, Outcome, PromptDef, ResourceDef, Server, ToolCall, ToolDef,
    tasks::TasksExtension,
    types::{
        CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
        InputResponses, ReadResourceRequestParams, ReadResourceResponse, TaskStatus,
    },
};
use ferrymcp_test_helpers::{
    client::{Lifecycle, RecordingClient},
    tasks::{TERMINAL, TaskClient},
};
use rmcp::ServiceError;
use serde_json::{Value, json};

/// The name from the answer to "name", if there is one.
fn answered_name(cx: &Context) -> Option<String> {
    let answer = cx.input_responses()?.get("name")?;
    Some(match answer["action"].as_str() {
        Some("accept") => answer["content"]["name"]
            .as_str()
            .unwrap_or("stranger")
            .to_owned(),
        _ => "stranger".to_owned(),
    })
}

/// The one handler under test: the same code for every way it runs.
async fn greet(cx: Context) -> Outcome<String> {
    match answered_name(&cx) {
        Some(name) => {
            assert_eq!(
                cx.request_state(),
                Some("round-1"),
                "the tool gets its own state back"
            );
            Outcome::Done(format!("Hello, {name}!"))
        }
        None => Outcome::InputRequired(
            InputRequired::new()
                .request("name", ask_name())
                .with_state("round-1"),
        ),
    }
}

fn server() -> Server {
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("greet", greet).task(true))
        .unwrap();
    server
        .add_resource(ResourceDef::new("data://greeting", greet))
        .unwrap();
    server
        .add_prompt(PromptDef::new("greeting", greet))
        .unwrap();
    server.add_extension(TasksExtension::new()).unwrap();
    server
}

fn ada() -> InputResponses {
    let mut responses = InputResponses::new();
    responses.insert(
        "name".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    responses
}

#[tokio::test]
async fn the_same_tool_code_runs_an_input_round_synchronously_and_as_a_task() {
    let server = server();
    let running = server.start().await.unwrap();

    // Synchronously, in process: the round, then the retry with the answers.
    let first = server.call(ToolCall::new("greet")).await.unwrap();
    let CallToolResponse::InputRequired(round) = first else {
        panic!("expected an input round, got {first:?}")
    };
    assert_eq!(round.request_state.as_deref(), Some("round-1"));
    let scope = ferrymcp::RequestScope::new().with_input(ada(), round.request_state);
    let done = server
        .call(ToolCall::new("greet").scope(scope))
        .await
        .unwrap();
    assert_eq!(text_of(done), "Hello, Ada!");

    // As a task: input_required, tasks/update, completed.
    let tasks = TaskClient::new(&server);
    let created = tasks.submit("greet", json!({})).await.unwrap();
    let id = created.task.task_id.clone();
    let parked = tasks
        .wait(&id, &[TaskStatus::InputRequired], Duration::from_secs(5))
        .await
        .unwrap();
    let body = serde_json::to_value(&parked).unwrap();
    let key = body["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("one input request");
    let mut responses = InputResponses::new();
    responses.insert(key, ada()["name"].clone());
    tasks.update(&id, responses).await.unwrap();
    let finished = tasks
        .wait(&id, &TERMINAL, Duration::from_secs(5))
        .await
        .unwrap();
    let body = serde_json::to_value(&finished).unwrap();
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["result"]["structuredContent"]["result"], "Hello, Ada!");
    running.stop().await;
}

async fn connect(handler: RecordingClient, lifecycle: Lifecycle) -> Client {
    input::connect(server(), handler, lifecycle).await
}

#[tokio::test]
async fn resources_and_prompts_take_input_rounds_on_2026_07_28() {
    let (handler, _events) = RecordingClient::new(false);
    let client = connect(handler, Lifecycle::Modern).await;

    let read = client
        .read_resource_once(ReadResourceRequestParams::new("data://greeting"))
        .await
        .unwrap();
    let ReadResourceResponse::InputRequired(round) = read else {
        panic!("expected an input round, got {read:?}")
    };
    let mut retry = ReadResourceRequestParams::new("data://greeting");
    retry.input_responses = Some(ada());
    retry.request_state = round.request_state;
    let read = client.read_resource_once(retry).await.unwrap();
    let ReadResourceResponse::Complete(result) = read else {
        panic!("{read:?}")
    };
    assert_eq!(
        serde_json::to_value(&result.contents[0]).unwrap()["text"],
        "Hello, Ada!"
    );

    let rendered = client
        .get_prompt_once(GetPromptRequestParams::new("greeting"))
        .await
        .unwrap();
    let GetPromptResponse::InputRequired(round) = rendered else {
        panic!("expected an input round, got {rendered:?}")
    };
    let mut retry = GetPromptRequestParams::new("greeting");
    retry.input_responses = Some(ada());
    retry.request_state = round.request_state;
    let rendered = client.get_prompt_once(retry).await.unwrap();
    let GetPromptResponse::Complete(result) = rendered else {
        panic!("{rendered:?}")
    };
    assert_eq!(
        serde_json::to_value(&result.messages[0]).unwrap()["content"]["text"],
        "Hello, Ada!"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_2025_11_25_client_that_declines_is_answered_and_one_without_elicitation_gets_a_clear_error()
 {
    let (declining, _events) = RecordingClient::new(false);
    let client = connect(declining, Lifecycle::Legacy).await;
    let reply = client
        .call_tool_once(CallToolRequestParams::new("greet"))
        .await
        .unwrap();
    assert_eq!(text_of(reply), "Hello, stranger!");
    client.cancel().await.unwrap();

    let (unable, _events) = RecordingClient::new(false);
    let client = connect(unable.without_elicitation(), Lifecycle::Legacy).await;
    let error = client
        .call_tool_once(CallToolRequestParams::new("greet"))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error, got {error:?}")
    };
    assert_eq!(error.code.0, -32600);
    assert!(
        error.message.contains("elicitation"),
        "says what is missing: {}",
        error.message
    );
    // The server keeps serving.
    let listed: Vec<Value> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| json!(t.name))
        .collect();
    assert_eq!(listed, [json!("greet")]);
    client.cancel().await.unwrap();
}
