//! Typed elicitation (`Context::elicit::<T>`) on the real stack: a 2026-07-28 client over an
//! in-memory duplex (input round, retry with `inputResponses` and the sealed state), a
//! 2025-11-25 client asked over its session, and a background task parked `input_required`.
//! Accepted, declined and cancelled answers, content that does not fit `T`, two questions in
//! one tool, a client that cannot be asked and a type that cannot be asked for.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use ferrymcp::{
    Context, ElicitError, Elicitation, PromptDef, ResourceDef, Server, ToolDef, ToolError,
    elicitation::requested_schema,
    tasks::TasksExtension,
    types::{
        CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
        InputResponses, ReadResourceRequestParams, ReadResourceResponse, TaskStatus,
    },
};
use ferrymcp_test_helpers::{
    client::{Lifecycle, client_config, connect_with},
    schema::{Spec, assert_valid},
    tasks::{TERMINAL, TaskClient},
};
use rmcp::{
    RoleClient, ServiceError,
    model::{ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability},
    service::{RequestContext, RunningService},
};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// A unit-only enum: a single-select of string options.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

/// What the `profile` tool asks for.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Profile {
    /// Your name
    name: String,
    age: u32,
    color: Color,
    nickname: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

#[derive(schemars::JsonSchema, serde::Deserialize)]
struct Address {
    #[allow(dead_code)]
    city: String,
}

/// Not expressible as a `requestedSchema`: a nested object.
#[derive(schemars::JsonSchema, serde::Deserialize)]
struct Nested {
    #[allow(dead_code)]
    address: Address,
}

/// How many times `profile` ran on a server.
#[derive(Clone)]
struct Runs(Arc<AtomicUsize>);

async fn profile(cx: Context) -> Result<String, ToolError> {
    if let Some(Runs(runs)) = cx.server().state::<Runs>() {
        runs.fetch_add(1, Ordering::SeqCst);
    }
    Ok(match cx.elicit::<Profile>("Your profile?").await? {
        Elicitation::Accepted(p) => format!(
            "{} is {}, likes {:?}, nickname {:?}",
            p.name, p.age, p.color, p.nickname
        ),
        Elicitation::Declined => "declined".into(),
        Elicitation::Cancelled => "cancelled".into(),
    })
}

async fn two_questions(cx: Context) -> Result<String, ToolError> {
    let name = cx.elicit::<Profile>("Your profile?").await?;
    let confirm = cx.elicit::<Confirm>("Save it?").await?;
    let name = name.accepted().map_or("nobody".into(), |p| p.name);
    let ok = confirm.accepted().is_some_and(|c| c.ok);
    Ok(format!("{name} saved={ok}"))
}

async fn nested(cx: Context) -> String {
    match cx.elicit::<Nested>("Your address?").await {
        Err(error @ ElicitError::UnsupportedSchema { .. }) => format!("unsupported: {error}"),
        other => format!("unexpected: {:?}", other.map(|_| ())),
    }
}

fn server() -> Server {
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("profile", profile).task(true))
        .unwrap();
    server
        .add_tool(ToolDef::new("two_questions", two_questions).task(true))
        .unwrap();
    server.add_tool(ToolDef::new("nested", nested)).unwrap();
    server
        .add_resource(ResourceDef::new("data://profile", profile))
        .unwrap();
    server
        .add_prompt(PromptDef::new("profile", profile))
        .unwrap();
    server.add_extension(TasksExtension::new()).unwrap();
    server
}

/// A client that answers every `elicitation/create` with a scripted result and keeps the
/// requests it got.
#[derive(Clone)]
struct Scripted {
    config: ClientConfig,
    answer: Value,
    asked: Arc<Mutex<Vec<Value>>>,
    /// The runs of the server's `profile` tool.
    runs: Arc<AtomicUsize>,
}

impl Scripted {
    fn new(answer: Value) -> Self {
        let mut config = client_config(false);
        config.capabilities.elicitation = Some(ElicitationCapability::default());
        Self {
            config,
            answer,
            asked: Arc::default(),
            runs: Arc::default(),
        }
    }
}

impl rmcp::ClientHandler for Scripted {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.asked
            .lock()
            .await
            .push(serde_json::to_value(&request).expect("serializable"));
        Ok(serde_json::from_value(self.answer.clone()).expect("a scripted ElicitResult"))
    }
}

type Client = RunningService<RoleClient, Scripted>;

async fn connect(handler: Scripted, lifecycle: Lifecycle) -> Client {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_end);
    let server = server();
    server.insert_state(Runs(Arc::clone(&handler.runs)));
    tokio::spawn(server.serve_io(read, write));
    connect_with(handler, client_end, lifecycle)
        .await
        .expect("connect")
}

fn ada() -> Value {
    json!({"action": "accept", "content": {"name": "Ada", "age": 36, "color": "red"}})
}

fn text_of(reply: &CallToolResponse) -> String {
    let CallToolResponse::Complete(result) = reply else {
        panic!("expected a result, got {reply:?}")
    };
    result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone()
}

fn is_error(reply: &CallToolResponse) -> bool {
    matches!(reply, CallToolResponse::Complete(r) if r.is_error == Some(true))
}

/// The round of a 2026-07-28 call: its one key, its request (valid against the spec) and the
/// sealed state.
fn round_of(reply: CallToolResponse) -> (String, Value, Option<String>) {
    let CallToolResponse::InputRequired(round) = reply else {
        panic!("expected an input round, got {reply:?}")
    };
    assert_valid(
        Spec::Mcp,
        "InputRequiredResult",
        &serde_json::to_value(&round).unwrap(),
    );
    let requests = round.input_requests.expect("input requests");
    assert_eq!(requests.len(), 1, "one question per round: {requests:?}");
    let (key, request) = requests.into_iter().next().unwrap();
    let request = serde_json::to_value(request).unwrap();
    assert_valid(Spec::Mcp, "ElicitRequest", &request);
    (key, request, round.request_state)
}

async fn call(
    client: &Client,
    tool: &str,
    answers: Option<InputResponses>,
    state: Option<String>,
) -> CallToolResponse {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.input_responses = answers;
    params.request_state = state;
    client.call_tool_once(params).await.expect("tools/call")
}

fn answer(key: &str, value: Value) -> Option<InputResponses> {
    let mut answers = InputResponses::new();
    answers.insert(key.to_owned(), value);
    Some(answers)
}

#[test]
fn the_requested_schema_is_a_flat_object_of_primitives_and_other_shapes_are_errors() {
    let schema = Value::Object(requested_schema::<Profile>().unwrap());
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "age": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "description": "A unit-only enum: a single-select of string options.", "enum": ["red", "green"]},
                "nickname": {"type": "string"}
            },
            "required": ["name", "age", "color"]
        })
    );
    let error = requested_schema::<Nested>().unwrap_err();
    assert!(
        matches!(&error, ElicitError::UnsupportedSchema { reason, .. } if reason.contains("address") && reason.contains("nested")),
        "{error}"
    );
    assert!(matches!(
        requested_schema::<Vec<String>>(),
        Err(ElicitError::UnsupportedSchema { .. })
    ));
    assert!(matches!(
        requested_schema::<std::collections::HashMap<String, i64>>(),
        Err(ElicitError::UnsupportedSchema { .. })
    ));
}

#[tokio::test]
async fn on_2026_07_28_accepted_content_arrives_typed_after_the_retry() {
    let client = connect(Scripted::new(ada()), Lifecycle::Modern).await;
    let (key, request, state) = round_of(call(&client, "profile", None, None).await);
    assert_eq!(key, "elicit-1");
    assert_eq!(request["params"]["message"], "Your profile?");
    assert_eq!(
        request["params"]["requestedSchema"]["required"],
        json!(["name", "age", "color"])
    );
    assert!(state.is_some(), "the round carries a sealed state");

    let done = call(&client, "profile", answer(&key, ada()), state).await;
    assert_eq!(text_of(&done), "Ada is 36, likes Red, nickname None");
    assert_eq!(
        client.service().runs.load(Ordering::SeqCst),
        2,
        "the round, then the retry"
    );
    assert!(
        client.service().asked.lock().await.is_empty(),
        "2026-07-28 clients are never sent server-to-client requests"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn on_2026_07_28_declined_and_cancelled_are_told_apart() {
    let client = connect(Scripted::new(ada()), Lifecycle::Modern).await;
    for (action, expected) in [("decline", "declined"), ("cancel", "cancelled")] {
        let (key, _, state) = round_of(call(&client, "profile", None, None).await);
        let done = call(
            &client,
            "profile",
            answer(&key, json!({"action": action})),
            state,
        )
        .await;
        assert_eq!(text_of(&done), expected);
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn on_2026_07_28_content_that_does_not_match_the_type_is_an_error_naming_the_field() {
    let client = connect(Scripted::new(ada()), Lifecycle::Modern).await;
    let (key, _, state) = round_of(call(&client, "profile", None, None).await);
    let wrong =
        json!({"action": "accept", "content": {"name": "Ada", "age": "old", "color": "red"}});
    let done = call(&client, "profile", answer(&key, wrong), state).await;
    assert!(is_error(&done), "{done:?}");
    let message = text_of(&done);
    assert!(message.contains("age"), "names the field: {message}");
    assert!(message.contains("Profile"), "names the type: {message}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn on_2026_07_28_two_questions_get_their_own_keys_and_the_first_answer_survives() {
    let client = connect(Scripted::new(ada()), Lifecycle::Modern).await;
    let (first, _, state) = round_of(call(&client, "two_questions", None, None).await);
    assert_eq!(first, "elicit-1");
    let (second, request, state) =
        round_of(call(&client, "two_questions", answer(&first, ada()), state).await);
    assert_eq!(second, "elicit-2", "the second question has its own key");
    assert_eq!(request["params"]["message"], "Save it?");
    // Only the latest round's answer is sent: the first travels in the sealed state.
    let ok = json!({"action": "accept", "content": {"ok": true}});
    let done = call(&client, "two_questions", answer(&second, ok), state).await;
    assert_eq!(text_of(&done), "Ada saved=true");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn on_2025_11_25_the_client_is_asked_over_the_session() {
    for (answer, expected) in [
        (ada(), "Ada is 36, likes Red, nickname None"),
        (json!({"action": "decline"}), "declined"),
        (json!({"action": "cancel"}), "cancelled"),
    ] {
        let client = connect(Scripted::new(answer), Lifecycle::Legacy).await;
        let done = call(&client, "profile", None, None).await;
        assert_eq!(text_of(&done), expected);
        let asked = client.service().asked.lock().await.clone();
        assert_eq!(asked.len(), 1, "asked once: {asked:?}");
        assert_eq!(asked[0]["message"], "Your profile?");
        assert_eq!(
            asked[0]["requestedSchema"]["properties"]["age"]["type"],
            "integer"
        );
        assert_eq!(
            client.service().runs.load(Ordering::SeqCst),
            1,
            "asked from inside the one run, not by running the tool again"
        );
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn on_2025_11_25_content_that_does_not_match_and_two_questions() {
    let wrong = json!({"action": "accept", "content": {"name": 7, "age": 1, "color": "red"}});
    let client = connect(Scripted::new(wrong), Lifecycle::Legacy).await;
    let done = call(&client, "profile", None, None).await;
    assert!(is_error(&done), "{done:?}");
    assert!(text_of(&done).contains("name"), "{}", text_of(&done));
    client.cancel().await.unwrap();

    // Both questions asked in one request; the scripted answer has no `ok`: a mismatch
    // on the second.
    let client = connect(Scripted::new(ada()), Lifecycle::Legacy).await;
    let done = call(&client, "two_questions", None, None).await;
    assert!(is_error(&done), "{done:?}");
    assert!(text_of(&done).contains("ok"), "{}", text_of(&done));
    let asked = client.service().asked.lock().await.clone();
    let messages: Vec<&Value> = asked.iter().map(|a| &a["message"]).collect();
    assert_eq!(messages, [&json!("Your profile?"), &json!("Save it?")]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn on_2025_11_25_a_client_without_elicitation_gets_a_clear_error() {
    let mut handler = Scripted::new(ada());
    handler.config.capabilities.elicitation = None;
    let client = connect(handler, Lifecycle::Legacy).await;
    let error = client
        .call_tool_once(CallToolRequestParams::new("profile"))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error, got {error:?}")
    };
    assert_eq!(error.code.0, -32600);
    assert!(
        error.message.contains("did not declare form elicitation"),
        "{}",
        error.message
    );
    assert!(client.service().asked.lock().await.is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_type_that_cannot_be_asked_for_is_an_error_before_anything_is_sent() {
    for lifecycle in Lifecycle::ALL {
        let client = connect(Scripted::new(ada()), lifecycle).await;
        let done = call(&client, "nested", None, None).await;
        let text = text_of(&done);
        assert!(text.starts_with("unsupported: "), "{lifecycle:?}: {text}");
        assert!(text.contains("address"), "{text}");
        assert!(client.service().asked.lock().await.is_empty());
        client.cancel().await.unwrap();
    }
}

/// Waits for `id` to park `input_required` and answers its one question with `value`.
async fn answer_task(tasks: &TaskClient<'_>, id: &str, value: Value) -> Value {
    let mut targets = TERMINAL.to_vec();
    targets.push(TaskStatus::InputRequired);
    let parked = tasks
        .wait(id, &targets, Duration::from_secs(5))
        .await
        .unwrap();
    let body = serde_json::to_value(&parked).unwrap();
    assert_eq!(body["status"], "input_required", "{body}");
    let requests = body["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1, "{body}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    let mut responses = InputResponses::new();
    responses.insert(key.clone(), value);
    tasks.update(id, responses).await.unwrap();
    request.clone()
}

#[tokio::test]
async fn inside_a_task_the_task_waits_input_required_and_completes_with_the_typed_value() {
    let server = server();
    let running = server.start().await.unwrap();
    let tasks = TaskClient::new(&server);

    let created = tasks.submit("profile", json!({})).await.unwrap();
    let id = created.task.task_id.clone();
    let request = answer_task(&tasks, &id, ada()).await;
    assert_eq!(request["params"]["message"], "Your profile?");
    let finished = tasks
        .wait(&id, &TERMINAL, Duration::from_secs(5))
        .await
        .unwrap();
    let body = serde_json::to_value(&finished).unwrap();
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(
        body["result"]["content"][0]["text"],
        "Ada is 36, likes Red, nickname None"
    );

    // Two questions: the task parks twice, and the first answer reaches the last run.
    let created = tasks.submit("two_questions", json!({})).await.unwrap();
    let id = created.task.task_id.clone();
    answer_task(&tasks, &id, ada()).await;
    let request = answer_task(
        &tasks,
        &id,
        json!({"action": "accept", "content": {"ok": true}}),
    )
    .await;
    assert_eq!(request["params"]["message"], "Save it?");
    let finished = tasks
        .wait(&id, &TERMINAL, Duration::from_secs(5))
        .await
        .unwrap();
    let body = serde_json::to_value(&finished).unwrap();
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "Ada saved=true");
    running.stop().await;
}

#[tokio::test]
async fn resources_and_prompts_elicit_too() {
    let client = connect(Scripted::new(ada()), Lifecycle::Modern).await;
    let read = client
        .read_resource_once(ReadResourceRequestParams::new("data://profile"))
        .await
        .unwrap();
    let ReadResourceResponse::InputRequired(round) = read else {
        panic!("expected an input round, got {read:?}")
    };
    let mut retry = ReadResourceRequestParams::new("data://profile");
    retry.input_responses = answer("elicit-1", ada());
    retry.request_state = round.request_state;
    let read = client.read_resource_once(retry).await.unwrap();
    let ReadResourceResponse::Complete(result) = read else {
        panic!("{read:?}")
    };
    assert_eq!(
        serde_json::to_value(&result.contents[0]).unwrap()["text"],
        "Ada is 36, likes Red, nickname None"
    );

    let rendered = client
        .get_prompt_once(GetPromptRequestParams::new("profile"))
        .await
        .unwrap();
    let GetPromptResponse::InputRequired(round) = rendered else {
        panic!("expected an input round, got {rendered:?}")
    };
    let mut retry = GetPromptRequestParams::new("profile");
    retry.input_responses = answer("elicit-1", json!({"action": "decline"}));
    retry.request_state = round.request_state;
    let rendered = client.get_prompt_once(retry).await.unwrap();
    let GetPromptResponse::Complete(result) = rendered else {
        panic!("{rendered:?}")
    };
    assert_eq!(
        serde_json::to_value(&result.messages[0]).unwrap()["content"]["text"],
        "declined"
    );
    client.cancel().await.unwrap();
}
