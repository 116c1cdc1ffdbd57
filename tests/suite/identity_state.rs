//! Identity and state (issue 12, scope 4), over real HTTP on 127.0.0.1: an in-test server
//! behind an auth layer that takes the caller from test headers, driven by raw 2026-07-28
//! JSON-RPC requests.
//!
//! * Principals whose old `client|sub` keys collided (`"a|b"` and `"a"` + `"b"`, `""` + `"x"`
//!   and `"|x"`, an empty client id and no principal) share neither tasks nor
//!   `requestState`.
//! * `requestState` is sealed with an AEAD: not readable, bound to the arguments, expiring,
//!   and opened by a rotated keyring that still holds the key it was sealed with.

use std::time::Duration;

use base64::Engine as _;
use ferrymcp::{
    Args, Context, InputRequired, Outcome, Server, ToolDef,
    auth::Principal,
    tasks::{TasksConfig, TasksExtension},
    types::{InputRequest, TASKS_EXTENSION_ID},
};
use serde_json::{Value, json};

/// What the handler keeps between rounds; it must never be readable by the client.
const HANDLER_STATE: &str = "handler-secret-state-42";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

fn ask() -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Confirm?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        }
    }))
    .expect("a valid elicitation request")
}

/// One input round, then the note and the state it got back.
async fn remember(cx: Context, Args(note): Args<Note>) -> Outcome<String> {
    if cx.input_responses().is_none() {
        return Outcome::InputRequired(
            InputRequired::new()
                .request("confirm", ask())
                .with_state(HANDLER_STATE),
        );
    }
    Outcome::Done(format!(
        "{}/{}",
        note.text,
        cx.request_state().unwrap_or("no state")
    ))
}

fn server() -> Server {
    let server = Server::new("identity");
    server
        .add_tool(ToolDef::new("remember", remember))
        .expect("remember");
    server
        .add_tool(ToolDef::new("later", || async { "done" }).task(true))
        .expect("later");
    server
        .add_extension(TasksExtension::with_config(TasksConfig::default()))
        .expect("tasks");
    server
}

/// Who a request comes from: `None` is anonymous.
type Caller<'a> = Option<(&'a str, Option<&'a str>)>;

/// The caller the test headers name, as an authentication layer would establish it.
async fn principal_from_headers(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(principal) = principal_of(request.headers()) {
        request.extensions_mut().insert(principal);
    }
    next.run(request).await
}

fn principal_of(headers: &axum::http::HeaderMap) -> Option<Principal> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let principal = Principal::new(header("x-test-client")?);
    Some(match header("x-test-subject") {
        Some(subject) => principal.with_subject(subject),
        None => principal,
    })
}

/// A started server on a loopback port behind the test auth layer.
struct Http {
    url: String,
    client: reqwest::Client,
    _running: ferrymcp::RunningServer,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Http {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve(server: Server) -> Http {
    let running = server.start().await.expect("start");
    let router = server
        .http_router(&ferrymcp::HttpConfig::new())
        .expect("the default HTTP configuration is valid")
        .layer(axum::middleware::from_fn(principal_from_headers));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    Http {
        url,
        client: reqwest::Client::new(),
        _running: running,
        stop: Some(stop),
    }
}

impl Http {
    /// One 2026-07-28 request (with the tasks opt-in) as `caller`; the JSON-RPC answer.
    async fn send(&self, caller: Caller<'_>, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {TASKS_EXTENSION_ID: {}},
                "elicitation": {}
            },
            "io.modelcontextprotocol/clientInfo": {"name": "identity-test", "version": "0"}
        });
        let name = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        if let Some((client, subject)) = caller {
            request = request.header("x-test-client", client);
            if let Some(subject) = subject {
                request = request.header("x-test-subject", subject);
            }
        }
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            request.body(body.to_string()).send(),
        )
        .await
        .expect("answered within 30 s")
        .expect("POST");
        let text = response.text().await.expect("the body");
        let json = text
            .lines()
            .find_map(|line| line.strip_prefix("data:"))
            .unwrap_or(&text);
        serde_json::from_str(json.trim()).unwrap_or_else(|_| panic!("not JSON: {text:?}"))
    }

    async fn call(&self, caller: Caller<'_>, tool: &str, arguments: Value) -> Value {
        self.send(
            caller,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .await
    }

    /// The first round of `remember`: its sealed `requestState`.
    async fn round(&self, caller: Caller<'_>, arguments: Value) -> String {
        let answer = self.call(caller, "remember", arguments).await;
        assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
        answer["result"]["requestState"]
            .as_str()
            .unwrap_or_else(|| panic!("a requestState: {answer}"))
            .to_owned()
    }

    /// The retry of `remember` with `state` and an answer.
    async fn retry(&self, caller: Caller<'_>, arguments: Value, state: &str) -> Value {
        self.send(
            caller,
            "tools/call",
            json!({
                "name": "remember",
                "arguments": arguments,
                "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
                "requestState": state,
            }),
        )
        .await
    }
}

/// The `-32602` message of a rejected answer.
fn rejected(answer: &Value) -> String {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    answer["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn done_text(answer: &Value) -> &str {
    answer["result"]["structuredContent"]["result"]
        .as_str()
        .unwrap_or_else(|| panic!("a completed call: {answer}"))
}

/// Pairs of callers whose keys collided when the key was `client|sub` unescaped, or that
/// an empty client id could confuse with anonymous.
const COLLIDING: [(Caller<'static>, Caller<'static>); 3] = [
    (Some(("a|b", None)), Some(("a", Some("b")))),
    (Some(("", Some("x"))), Some(("|x", None))),
    (Some(("", None)), None),
];

/// Issue 12 scope 4: an unambiguous principal key. A task submitted by one caller of each
/// colliding pair is not found by the other, in both directions.
#[tokio::test]
async fn issue12_colliding_principals_do_not_share_tasks() {
    let http = serve(server()).await;
    for (one, other) in COLLIDING {
        for (owner, intruder) in [(one, other), (other, one)] {
            let created = http.call(owner, "later", json!({})).await;
            let id = created["result"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("a task for {owner:?}: {created}"))
                .to_owned();
            let own = http.send(owner, "tasks/get", json!({"taskId": id})).await;
            assert!(
                own.get("result").is_some(),
                "{owner:?} reads its task: {own}"
            );
            let foreign = http
                .send(intruder, "tasks/get", json!({"taskId": id}))
                .await;
            let message = rejected(&foreign);
            assert!(
                message.contains("not found"),
                "{intruder:?} must not see {owner:?}'s task: {message}"
            );
        }
    }
}

/// Issue 12 scope 4: an unambiguous principal key. `requestState` issued to one caller of
/// each colliding pair is rejected for the other, and still works for its own caller.
#[tokio::test]
async fn issue12_colliding_principals_do_not_share_request_state() {
    let http = serve(server()).await;
    let args = json!({"text": "hi"});
    for (one, other) in COLLIDING {
        for (owner, intruder) in [(one, other), (other, one)] {
            let state = http.round(owner, args.clone()).await;
            let message = rejected(&http.retry(intruder, args.clone(), &state).await);
            assert!(
                message.contains("not for this request"),
                "{intruder:?} replaying {owner:?}'s state: {message}"
            );
            let done = http.retry(owner, args.clone(), &state).await;
            assert_eq!(done_text(&done), format!("hi/{HANDLER_STATE}"));
        }
    }
}

/// Issue 12 scope 4: `requestState` is confidential. Neither the token nor any base64
/// decoding of its parts contains the handler's state.
#[tokio::test]
async fn issue12_request_state_is_not_readable() {
    let http = serve(server()).await;
    let state = http.round(None, json!({"text": "hi"})).await;
    assert!(!state.contains(HANDLER_STATE), "{state}");
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut decoded_any = false;
    for part in state.split(['.', ':']) {
        for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
            if let Ok(bytes) = engine.decode(part) {
                decoded_any |= bytes.len() > HANDLER_STATE.len();
                let text = String::from_utf8_lossy(&bytes);
                assert!(
                    !text.contains(HANDLER_STATE),
                    "the handler's state is readable in {state}"
                );
            }
        }
    }
    assert!(decoded_any, "the token's body is base64: {state}");
}

/// Issue 12 scope 4: `requestState` is bound to the arguments. Replayed with other
/// arguments it is rejected; the same arguments in another member order are the same.
#[tokio::test]
async fn issue12_request_state_replayed_with_other_arguments_is_rejected() {
    let http = serve(server()).await;
    let state = http.round(None, json!({"text": "pay 10"})).await;
    let message = rejected(&http.retry(None, json!({"text": "pay 1000"}), &state).await);
    assert!(message.contains("requestState"), "{message}");
    assert!(
        message.contains("arguments"),
        "says what may differ: {message}"
    );
    let done = http.retry(None, json!({"text": "pay 10"}), &state).await;
    assert_eq!(done_text(&done), format!("pay 10/{HANDLER_STATE}"));
}

/// Issue 12 scope 4: a keyring. A server whose ring is [new, old] opens state sealed by a
/// server holding only [old]; a server that dropped the old key rejects it with -32602.
#[tokio::test]
async fn issue12_a_rotated_keyring_keeps_rounds_in_flight_and_a_dropped_key_is_rejected() {
    let (old, new) = ([1u8; 32], [2u8; 32]);
    let keyed = |keys: &[[u8; 32]]| {
        let server = server();
        server.set_request_state_keys(keys).expect("ring");
        server
    };
    let before = serve(keyed(&[old])).await;
    let rotated = serve(keyed(&[new, old])).await;
    let dropped = serve(keyed(&[new])).await;
    let args = json!({"text": "hi"});

    let state = before.round(None, args.clone()).await;
    let done = rotated.retry(None, args.clone(), &state).await;
    assert_eq!(done_text(&done), format!("hi/{HANDLER_STATE}"));

    let message = rejected(&dropped.retry(None, args.clone(), &state).await);
    assert!(message.contains("no longer accepts"), "{message}");
    assert!(
        !message.contains(&base64::engine::general_purpose::STANDARD.encode(old)),
        "never the key: {message}"
    );

    // The rotated server seals with its new key, which the dropped-old server opens.
    let state = rotated.round(None, args.clone()).await;
    let done = dropped.retry(None, args.clone(), &state).await;
    assert_eq!(done_text(&done), format!("hi/{HANDLER_STATE}"));
}

/// Issue 12 scope 4: `requestState` expires. With a TTL of zero every value has expired
/// by the time it comes back.
#[tokio::test]
async fn issue12_expired_request_state_is_rejected() {
    let expiring = server();
    expiring.set_request_state_ttl(Duration::ZERO);
    let http = serve(expiring).await;
    let args = json!({"text": "hi"});
    let state = http.round(None, args.clone()).await;
    let message = rejected(&http.retry(None, args, &state).await);
    assert!(message.contains("expired"), "{message}");
}
