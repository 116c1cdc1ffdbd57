//! A proxied tool that asks for input: the upstream (2026-07-28, over real HTTP on
//! 127.0.0.1) answers a `tools/call` with an input round; the front, mounting it through a
//! `ProxyServer`, passes the round on to a 2026-07-28 client with its state sealed and carries
//! the client's answers and the upstream's state back on the retry, and asks a 2025-11-25
//! client itself with `elicitation/create`.

use crate::support::{
    input::{ask_name, connect, text_of},
    proxy::serve,
};

use ferrymcp::{
    Context, InputRequired, Outcome, Server, ToolDef,
    types::{CallToolRequestParams, CallToolResponse, InputResponses},
};
use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream};
use ferrymcp_test_helpers::client::{ClientEvent, Lifecycle, RecordingClient};
use serde_json::json;
use tokio_util::sync::DropGuard;

/// The upstream's own state for its round: it must come back to it unchanged.
const UPSTREAM_STATE: &str = "upstream round 1";

/// Asks for a name, then greets it; says so when its state did not come back.
async fn greet(cx: Context) -> Outcome<String> {
    let Some(answer) = cx.input_responses().and_then(|answers| answers.get("name")) else {
        return Outcome::InputRequired(
            InputRequired::new()
                .request("name", ask_name())
                .with_state(UPSTREAM_STATE),
        );
    };
    if cx.request_state() != Some(UPSTREAM_STATE) {
        return Outcome::Done(format!("wrong state: {:?}", cx.request_state()));
    }
    let name = answer["content"]["name"].as_str().unwrap_or("stranger");
    Outcome::Done(format!("Hello, {name}!"))
}

/// The upstream served over HTTP until the guard drops, and a front mounting it as `up`.
async fn front() -> (Server, DropGuard) {
    let upstream = Server::new("upstream");
    upstream
        .add_tool(ToolDef::new("greet", greet))
        .expect("greet");
    let (url, guard) = serve(upstream).await;
    let proxy = ProxyServer::new(Upstream::http("up", HttpTarget::new(url)))
        .build()
        .await
        .expect("the proxy lists the upstream");
    let front = Server::new("front");
    front.mount(&proxy, "up").expect("mount");
    (front, guard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g31_a_proxied_tools_input_round_reaches_the_client_and_the_retry_the_upstream() {
    let (front, _upstream) = front().await;
    let (handler, _events) = RecordingClient::new(false);
    let client = connect(front, handler, Lifecycle::Modern).await;

    let first = client
        .call_tool_once(CallToolRequestParams::new("up_greet"))
        .await
        .expect("an answer, not an error");
    let CallToolResponse::InputRequired(round) = first else {
        panic!("expected the upstream's input round, got {first:?}")
    };
    let requests = round.input_requests.expect("input requests");
    assert_eq!(
        serde_json::to_value(&requests["name"]).expect("JSON"),
        serde_json::to_value(ask_name()).expect("JSON"),
        "the upstream's request, as it asked it"
    );
    let sealed = round.request_state.expect("a request state");
    assert!(
        !sealed.contains(UPSTREAM_STATE),
        "the front seals the upstream's state: {sealed}"
    );

    let mut answers = InputResponses::new();
    answers.insert(
        "name".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let mut retry = CallToolRequestParams::new("up_greet");
    retry.input_responses = Some(answers.clone());
    retry.request_state = Some(sealed);
    let done = client.call_tool_once(retry).await.expect("the retry");
    assert_eq!(text_of(done), "Hello, Ada!");

    // A state the front did not seal is refused before anything reaches the upstream.
    let mut forged = CallToolRequestParams::new("up_greet");
    forged.input_responses = Some(answers);
    forged.request_state = Some(UPSTREAM_STATE.to_owned());
    let error = client.call_tool_once(forged).await.expect_err("refused");
    let rmcp::ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error, got {error:?}")
    };
    assert_eq!(error.code.0, -32602, "{error:?}");
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g27_a_2025_11_25_client_is_asked_for_a_proxied_tools_input_and_its_answer_goes_upstream() {
    let (front, _upstream) = front().await;
    let (handler, mut events) = RecordingClient::new(false);
    let client = connect(
        front,
        handler.answering(json!({"name": "Ada"})),
        Lifecycle::Legacy,
    )
    .await;
    let reply = client
        .call_tool_once(CallToolRequestParams::new("up_greet"))
        .await
        .expect("a result");
    assert_eq!(text_of(reply), "Hello, Ada!");
    let mut asked = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let ClientEvent::Elicited(message) = event {
            asked.push(message);
        }
    }
    assert_eq!(
        asked,
        ["Your name?"],
        "asked once, with the upstream's words"
    );
    client.cancel().await.expect("close");
}
