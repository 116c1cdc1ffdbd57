//! The fixture server of the SEP-2663 suites (`sep2663.rs`, `sep2663_wire.rs`): one tool per
//! behavior under test, and a [`Probe`] of what the tools observed.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use ferrymcp::{
    Args, Context, InputRequired, Json, Outcome, Server, ToolDef, ToolError,
    tasks::{TasksConfig, TasksExtension},
    types::{ErrorData, InputRequest, TaskSupport},
};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// What the test tools observed.
#[derive(Default)]
pub struct Probe {
    pub greet_runs: AtomicUsize,
    pub two_runs: AtomicUsize,
    pub name_runs: AtomicUsize,
    pub slow_started: Notify,
    pub slow_release: Notify,
    pub slow_finished: AtomicUsize,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Pair {
    pub a: i64,
    pub b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Totals {
    pub count: u32,
    pub total: u32,
}

/// A form elicitation asking for one string `field`.
pub fn elicit(message: &str, field: &str) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field]
            }
        }
    }))
    .expect("a valid elicitation request")
}

pub fn input_request(request: Value) -> InputRequest {
    serde_json::from_value(request.clone())
        .unwrap_or_else(|e| panic!("not an InputRequest: {e}: {request}"))
}

/// `content[field]` of the accepted answer under the tool's own `key`.
pub fn answer(cx: &Context, key: &str, field: &str) -> Option<String> {
    cx.input_responses()?
        .get(key)?
        .get("content")?
        .get(field)?
        .as_str()
        .map(str::to_owned)
}

/// The client's accepted answer `{field: value}`.
pub fn accept(field: &str, value: &str) -> Value {
    json!({"action": "accept", "content": {field: value}})
}

/// A server with one tool per behavior under test and the tasks extension configured with
/// `config`:
///
/// | tool | mode | does |
/// |---|---|---|
/// | `sync_only` | forbidden | `"sync only"` |
/// | `multiply` | optional | `a * b` |
/// | `totals` | optional | an object result |
/// | `required_answer` | required | `42` |
/// | `kaboom` | optional | tool error `kaboom` |
/// | `protocol_fault` | optional | JSON-RPC error -32603 `protocol fault` `{"x":1}` |
/// | `greet` | optional | asks `name`, then `Hello, {name}!` |
/// | `two_questions` | optional | asks `one` and `two` at once, then `{one}+{two}` |
/// | `full_name` | optional | asks `first`, then `last` (state carries `first`) |
/// | `slow` | optional | signals `slow_started`, waits for `slow_release` |
/// | `child_multiply` | optional | `a * b` on a mounted child |
/// | `ask_all` | optional | asks an elicitation, a sampling and a roots request at once |
pub fn build(config: TasksConfig) -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let server = Server::new("sep2663");
    server
        .add_tool(ToolDef::new("sync_only", || async { "sync only" }))
        .expect("sync_only");
    server
        .add_tool(
            ToolDef::new("multiply", |Args(p): Args<Pair>| async move { p.a * p.b }).task(true),
        )
        .expect("multiply");
    server
        .add_tool(
            ToolDef::new("totals", || async {
                Json(Totals {
                    count: 100,
                    total: 500,
                })
            })
            .task(true),
        )
        .expect("totals");
    server
        .add_tool(ToolDef::new("required_answer", || async { 42 }).task(TaskSupport::Required))
        .expect("required_answer");
    server
        .add_tool(
            ToolDef::new("kaboom", || async {
                Err::<String, _>(ToolError::new("kaboom"))
            })
            .task(true),
        )
        .expect("kaboom");
    server
        .add_tool(
            ToolDef::new("protocol_fault", || async {
                Err::<String, _>(ToolError::protocol(ErrorData::internal_error(
                    "protocol fault",
                    Some(json!({"x": 1})),
                )))
            })
            .task(true),
        )
        .expect("protocol_fault");
    let p = probe.clone();
    server
        .add_tool(
            ToolDef::new("greet", move |cx: Context| {
                let p = p.clone();
                async move {
                    p.greet_runs.fetch_add(1, Ordering::SeqCst);
                    match answer(&cx, "name", "name") {
                        Some(name) => Outcome::Done(format!("Hello, {name}!")),
                        None => Outcome::InputRequired(
                            InputRequired::new().request("name", elicit("Your name?", "name")),
                        ),
                    }
                }
            })
            .task(true),
        )
        .expect("greet");
    let p = probe.clone();
    server
        .add_tool(
            ToolDef::new("two_questions", move |cx: Context| {
                let p = p.clone();
                async move {
                    p.two_runs.fetch_add(1, Ordering::SeqCst);
                    match (answer(&cx, "one", "value"), answer(&cx, "two", "value")) {
                        (Some(one), Some(two)) => Outcome::Done(format!("{one}+{two}")),
                        _ => Outcome::InputRequired(
                            InputRequired::new()
                                .request("one", elicit("First value?", "value"))
                                .request("two", elicit("Second value?", "value")),
                        ),
                    }
                }
            })
            .task(true),
        )
        .expect("two_questions");
    let p = probe.clone();
    server
        .add_tool(
            ToolDef::new("full_name", move |cx: Context| {
                let p = p.clone();
                async move {
                    p.name_runs.fetch_add(1, Ordering::SeqCst);
                    let first_from_state = cx
                        .request_state()
                        .and_then(|s| s.strip_prefix("first="))
                        .map(str::to_owned);
                    match (
                        answer(&cx, "first", "first"),
                        first_from_state,
                        answer(&cx, "last", "last"),
                    ) {
                        (Some(first), _, _) => Outcome::InputRequired(
                            InputRequired::new()
                                .request("last", elicit("Last name?", "last"))
                                .with_state(format!("first={first}")),
                        ),
                        (None, Some(first), Some(last)) => Outcome::Done(format!("{first} {last}")),
                        _ => Outcome::InputRequired(
                            InputRequired::new().request("first", elicit("First name?", "first")),
                        ),
                    }
                }
            })
            .task(true),
        )
        .expect("full_name");
    let p = probe.clone();
    server
        .add_tool(
            ToolDef::new("slow", move || {
                let p = p.clone();
                async move {
                    p.slow_started.notify_one();
                    p.slow_release.notified().await;
                    p.slow_finished.fetch_add(1, Ordering::SeqCst);
                    "finished"
                }
            })
            .task(true),
        )
        .expect("slow");
    server
        .add_tool(
            ToolDef::new("ask_all", |cx: Context| async move {
                let answers = cx.input_responses();
                let pick = answers.and_then(|a| a.get("pick")).map(|a| a["content"]["choice"].clone());
                let draft = answers.and_then(|a| a.get("draft")).map(|a| a["content"]["text"].clone());
                let roots = answers.and_then(|a| a.get("roots")).map(|a| a["roots"][0]["uri"].clone());
                match (pick, draft, roots) {
                    (Some(pick), Some(draft), Some(roots)) => Outcome::Done(format!("{pick}|{draft}|{roots}")),
                    _ => Outcome::InputRequired(
                        InputRequired::new()
                            .request("pick", elicit("Pick one", "choice"))
                            .request("draft", input_request(json!({
                                "method": "sampling/createMessage",
                                "params": {
                                    "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize"}}],
                                    "maxTokens": 100
                                }
                            })))
                            .request("roots", input_request(json!({"method": "roots/list"}))),
                    ),
                }
            })
            .task(true),
        )
        .expect("ask_all");
    let child = Server::new("child");
    child
        .add_tool(
            ToolDef::new("multiply", |Args(p): Args<Pair>| async move { p.a * p.b }).task(true),
        )
        .expect("child multiply");
    server.mount(&child, "child").expect("mount child");
    server
        .add_extension(TasksExtension::with_config(config))
        .expect("tasks extension");
    (server, probe)
}
