//! End to end, the rest of the MCP surface: the demo as a real stdio child process and over
//! real HTTP, driven by rmcp's client in both protocol eras. Resources, templates and
//! prompts list and read through the mounted child; an unknown resource gets each era's
//! code; `ask_name` completes an input round with an elicitation answer (an
//! `InputRequiredResult` and a retry on 2026-07-28, a server-to-client `elicitation/create`
//! on 2025-11-25); forged and tampered `requestState` values are rejected. Every message the
//! server sent is validated against the official 2026-07-28 schema.

use crate::common;

use ferrymcp::types::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    InputResponses, JsonObject, ReadResourceRequestParams, ReadResourceResponse, ResourceContents,
};
use ferrymcp_test_helpers::{
    client::{ClientEvent, Lifecycle, RecordingClient, connect_with},
    wire::WireLog,
};
use rmcp::{
    RoleClient, ServiceError, service::RunningService, transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

type Client = RunningService<RoleClient, RecordingClient>;

fn args(value: Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

fn error_code<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> (i32, String) {
    match result {
        Err(ServiceError::McpError(error)) => (error.code.0, error.message.to_string()),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn read_text(read: ReadResourceResponse) -> String {
    let ReadResourceResponse::Complete(result) = read else {
        panic!("expected contents, got {read:?}")
    };
    match result.contents.as_slice() {
        [ResourceContents::TextResourceContents { text, .. }] => text.clone(),
        other => panic!("expected one text content, got {other:?}"),
    }
}

fn call_text(reply: CallToolResponse) -> String {
    let CallToolResponse::Complete(result) = reply else {
        panic!("expected a completed call, got {reply:?}")
    };
    result.structured_content.expect("structured content")["result"]
        .as_str()
        .expect("a string result")
        .to_owned()
}

async fn read(client: &Client, uri: &str) -> Result<ReadResourceResponse, ServiceError> {
    client
        .read_resource_once(ReadResourceRequestParams::new(uri))
        .await
}

/// Resources, templates and prompts list and read through the mount.
async fn surface(client: &Client, legacy: bool) {
    let resources: Vec<String> = client
        .list_all_resources()
        .await
        .expect("resources/list")
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(resources, ["demo://readme"]);
    let templates: Vec<String> = client
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list")
        .into_iter()
        .map(|t| t.uri_template.clone())
        .collect();
    assert_eq!(
        templates,
        ["users://child/{id}/profile"],
        "the child's template carries the namespace (A05)"
    );
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "child_greet", "prefixed like a tool (A09)");

    let readme = read_text(
        read(client, "demo://readme")
            .await
            .expect("read the readme"),
    );
    assert!(readme.starts_with("# ferrymcp demo"), "{readme}");
    let profile = read_text(
        read(client, "users://child/7/profile")
            .await
            .expect("read a profile through the template"),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&profile).expect("JSON"),
        json!({"id": 7, "name": "user-7", "admin": false})
    );

    let greeting = client
        .get_prompt_once(
            GetPromptRequestParams::new("child_greet")
                .with_arguments(args(json!({"name": "Ada", "style": "formal"}))),
        )
        .await
        .expect("prompts/get");
    let GetPromptResponse::Complete(greeting) = greeting else {
        panic!("expected a rendered prompt, got {greeting:?}")
    };
    let rendered = serde_json::to_value(&greeting).expect("serializable");
    assert_eq!(
        rendered["messages"][0]["content"]["text"],
        "Write a formal greeting to Ada."
    );

    let (code, message) = error_code(read(client, "demo://nothing-here").await);
    let expected = if legacy { -32002 } else { -32602 };
    assert_eq!(code, expected, "an unknown resource, per era: {message}");
    assert!(message.contains("demo://nothing-here"), "{message}");
}

/// `ask_name` on 2026-07-28: an input round on the wire, answered by a retry.
async fn modern_input_round(client: &Client) {
    let reply = client
        .call_tool_once(CallToolRequestParams::new("ask_name"))
        .await
        .expect("ask_name");
    let CallToolResponse::InputRequired(round) = reply else {
        panic!("expected an input round, got {reply:?}")
    };
    let requests = round.input_requests.expect("input requests");
    let request = serde_json::to_value(&requests["name"]).expect("serializable");
    assert_eq!(request["method"], "elicitation/create");
    let state = round.request_state.expect("a requestState");
    assert!(
        !state.contains("asked-name"),
        "the tool's state is sealed, not sent as is: {state}"
    );

    let mut answers = InputResponses::new();
    answers.insert(
        "name".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let retry = |state: Option<String>, tool: &str| {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.input_responses = Some(answers.clone());
        params.request_state = state;
        client.call_tool_once(params)
    };
    let done = retry(Some(state.clone()), "ask_name")
        .await
        .expect("the retry");
    assert_eq!(call_text(done), "Hello, Ada!");

    // Tampered: one character of the signed token changed.
    let mut tampered = state.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    let (code, message) = error_code(retry(Some(tampered), "ask_name").await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("requestState"), "{message}");

    // Forged from scratch, and a genuine one replayed against another tool.
    let (code, _) = error_code(retry(Some("rs2.Zm9yZ2Vk.Zm9yZ2Vk".into()), "ask_name").await);
    assert_eq!(code, -32602);
    let (code, _) = error_code(retry(Some(state), "add").await);
    assert_eq!(code, -32602, "state is bound to the tool it was issued for");
}

/// `ask_name` on 2025-11-25: the framework asks the client with `elicitation/create` and
/// finishes the call in one request; forged state is still rejected.
async fn legacy_input_round(client: &Client, events: &mut UnboundedReceiver<ClientEvent>) {
    let done = client
        .call_tool_once(CallToolRequestParams::new("ask_name"))
        .await
        .expect("ask_name");
    assert_eq!(call_text(done), "Hello, Ada!");
    let mut asked = false;
    while let Ok(event) = events.try_recv() {
        asked |= event == ClientEvent::Elicited("What is your name?".into());
    }
    assert!(asked, "the client was asked through elicitation/create");

    let mut params = CallToolRequestParams::new("ask_name");
    params.request_state = Some("rs2.Zm9yZ2Vk.Zm9yZ2Vk".into());
    let (code, _) = error_code(client.call_tool_once(params).await);
    assert_eq!(code, -32602, "forged state is rejected in this era too");
}

async fn scenario(
    transport_client: Client,
    mut events: UnboundedReceiver<ClientEvent>,
    log: WireLog,
    lifecycle: Lifecycle,
) {
    let legacy = lifecycle == Lifecycle::Legacy;
    surface(&transport_client, legacy).await;
    if legacy {
        legacy_input_round(&transport_client, &mut events).await;
    } else {
        modern_input_round(&transport_client).await;
    }
    transport_client.cancel().await.expect("close the client");

    let counts = log.assert_valid(legacy);
    assert!(counts.resources >= 1, "{counts:?}");
    assert!(counts.templates >= 1, "{counts:?}");
    assert!(counts.prompts >= 1, "{counts:?}");
    assert!(counts.reads >= 2, "{counts:?}");
    assert!(counts.prompt_results >= 1, "{counts:?}");
    assert!(counts.errors >= 2, "{counts:?}");
    if !legacy {
        assert!(counts.input_rounds >= 1, "{counts:?}");
    }
}

fn handler() -> (RecordingClient, UnboundedReceiver<ClientEvent>) {
    let (client, events) = RecordingClient::new(false);
    (client.answering(json!({"name": "Ada"})), events)
}

async fn over_stdio(lifecycle: Lifecycle) {
    let child = common::demo_stdio();
    let (handler, events) = handler();
    let client = connect_with(handler, child.transport, lifecycle)
        .await
        .expect("connect over stdio");
    scenario(client, events, child.log, lifecycle).await;
}

async fn over_http(lifecycle: Lifecycle) {
    let http = common::demo_http_recorded().await;
    let recorder = &http.recorder;
    let transport = StreamableHttpClientTransport::from_uri(recorder.url.clone());
    let (handler, events) = handler();
    let client = connect_with(handler, transport, lifecycle)
        .await
        .expect("connect over HTTP");
    scenario(client, events, recorder.log.clone(), lifecycle).await;
}

#[tokio::test]
async fn stdio_2025_11_25_resources_prompts_and_input_rounds() {
    over_stdio(Lifecycle::Legacy).await;
}

#[tokio::test]
async fn stdio_2026_07_28_resources_prompts_and_input_rounds() {
    over_stdio(Lifecycle::Modern).await;
}

#[tokio::test]
async fn http_2025_11_25_resources_prompts_and_input_rounds() {
    over_http(Lifecycle::Legacy).await;
}

#[tokio::test]
async fn http_2026_07_28_resources_prompts_and_input_rounds() {
    over_http(Lifecycle::Modern).await;
}
