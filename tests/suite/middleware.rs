//! Middleware (behavior catalog section B), driven through the in-process API.
//!
//! Not covered here: `on_initialize` / `on_discover` (B01, B05) and `on_notification` only
//! fire for messages that arrive over a transport (an in-process caller cannot build an
//! `Initialize`, `Discover` or `Notification` message), so they belong to transport tests.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicUsize, Ordering},
};

use async_trait::async_trait;
use ferrymcp::{
    Args, CallTool, Context, CurrentServer, Extension, ListTools, Middleware, Next, Server,
    ToolCall, ToolCallNext, ToolDef, ToolError, ToolInfo,
    types::{
        CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, ErrorData, Task,
        TaskStatus,
    },
    version::{Version, VersionSpec},
};
use ferrymcp_test_helpers::middleware::{CallTrace, HookRecorder, Log};
use serde_json::{Value, json};

// ------------------------------------------------------------------------------ helpers

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

async fn add(Args(Pair { a, b }): Args<Pair>) -> i64 {
    a + b
}

/// A tool `compute` that records `tool` in `log` and returns 42.
fn traced_tool(name: &str, log: &Log) -> ToolDef {
    let log = log.clone();
    ToolDef::new(name, move || {
        let log = log.clone();
        async move {
            log.push("tool");
            42i64
        }
    })
}

fn complete(reply: Result<CallToolResponse, ErrorData>) -> CallToolResult {
    match reply.expect("tools/call succeeds") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn task_reply(reply: Result<CallToolResponse, ErrorData>) -> CreateTaskResult {
    match reply.expect("tools/call succeeds") {
        CallToolResponse::Task(task) => task,
        other => panic!("expected a task handle, got {other:?}"),
    }
}

fn result_of(result: &CallToolResult) -> Value {
    result
        .structured_content
        .as_ref()
        .expect("structured content")["result"]
        .clone()
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(ContentBlock::as_text)
        .expect("a text block")
        .text
        .clone()
}

fn sample_task(id: &str) -> CreateTaskResult {
    CreateTaskResult::new(
        Task::new(
            id,
            TaskStatus::Working,
            "2026-07-28T00:00:00Z",
            "2026-07-28T00:00:00Z",
        )
        .with_ttl_ms(900_000)
        .with_poll_interval_ms(5_000),
    )
}

fn befores(log: &Log, label: &str) -> Vec<String> {
    log.entries()
        .into_iter()
        .filter(|e| e.starts_with(&format!("{label}:")) && e.ends_with(":before"))
        .collect()
}

/// An extension tracing `label:before` / `label:after` around `tools/call`.
struct ExtTrace {
    id: &'static str,
    log: Log,
}

#[async_trait]
impl Extension for ExtTrace {
    fn id(&self) -> &str {
        self.id
    }

    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.log.push(format!("{}:before", self.id));
        let reply = next.run(call).await;
        self.log.push(format!("{}:after", self.id));
        reply
    }
}

/// An extension answering every `tools/call` (or only `only`) with a task handle.
struct TaskingExt {
    only: Option<&'static str>,
    intercepted: Arc<AtomicUsize>,
}

impl TaskingExt {
    fn new() -> (Self, Arc<AtomicUsize>) {
        let intercepted = Arc::new(AtomicUsize::new(0));
        (
            Self {
                only: None,
                intercepted: intercepted.clone(),
            },
            intercepted,
        )
    }
}

#[async_trait]
impl Extension for TaskingExt {
    fn id(&self) -> &str {
        "com.example/tasking"
    }

    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.intercepted.fetch_add(1, Ordering::SeqCst);
        match self.only {
            Some(name) if call.name != name => next.run(call).await,
            _ => Ok(CallToolResponse::Task(sample_task("task-1"))),
        }
    }
}

// ------------------------------------------------------------------------------ B01, B02, B04

#[tokio::test]
async fn b01_b04_tools_call_fires_message_request_and_call_tool_with_its_method() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(HookRecorder::new("s", &log));
    server.tool("add", add).expect("add tool");

    let result = complete(server.call_tool("add", json!({"a": 1, "b": 2})).await);
    assert_eq!(result_of(&result), json!(3));

    assert_eq!(
        befores(&log, "s"),
        [
            "s:on_message:tools/call:before",
            "s:on_request:tools/call:before",
            "s:on_call_tool:tools/call:before",
        ]
    );
    assert!(
        log.entries()
            .iter()
            .all(|e| e.contains(":tools/call:") && !e.contains("on_list_tools")),
        "only tools/call hooks fire: {:?}",
        log.entries()
    );
}

#[tokio::test]
async fn b01_b04_tools_list_fires_message_request_and_on_list_tools() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(HookRecorder::new("s", &log));
    server.tool("add", add).expect("add tool");

    let tools = server.list_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 1);

    assert_eq!(
        log.entries(),
        [
            "s:on_message:tools/list:before",
            "s:on_request:tools/list:before",
            "s:on_list_tools:tools/list:before",
            "s:on_list_tools:tools/list:after",
            "s:on_request:tools/list:after",
            "s:on_message:tools/list:after",
        ]
    );
}

#[tokio::test]
async fn b02_on_message_wraps_on_request_wraps_on_call_tool() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(HookRecorder::new("s", &log));
    server
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");

    complete(server.call_tool("compute", Value::Null).await);

    assert_eq!(
        log.entries(),
        [
            "s:on_message:tools/call:before",
            "s:on_request:tools/call:before",
            "s:on_call_tool:tools/call:before",
            "tool",
            "s:on_call_tool:tools/call:after",
            "s:on_request:tools/call:after",
            "s:on_message:tools/call:after",
        ]
    );
}

// ------------------------------------------------------------------------------ B03, B28

#[tokio::test]
async fn b03_first_added_middleware_is_outermost() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(CallTrace::new("first", &log));
    server.add_middleware(CallTrace::new("second", &log));
    server
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");

    complete(server.call_tool("compute", Value::Null).await);

    assert_eq!(
        log.entries(),
        [
            "first:before",
            "second:before",
            "tool",
            "second:after",
            "first:after"
        ]
    );
}

#[tokio::test]
async fn b28_middleware_runs_in_the_order_added_including_later_additions() {
    let log = Log::new();
    let server = Server::new("s");
    server
        .add_middleware(CallTrace::new("a", &log))
        .add_middleware(CallTrace::new("b", &log));
    server
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");

    complete(server.call_tool("compute", Value::Null).await);
    assert_eq!(
        log.entries(),
        ["a:before", "b:before", "tool", "b:after", "a:after"]
    );

    // A middleware added after the first call joins the end of the same list (innermost).
    log.clear();
    server.add_middleware(CallTrace::new("c", &log));
    complete(server.call_tool("compute", Value::Null).await);
    assert_eq!(
        log.entries(),
        [
            "a:before", "b:before", "c:before", "tool", "c:after", "b:after", "a:after"
        ]
    );
}

// ------------------------------------------------------------------------------ B06, B27

/// Keeps only tools tagged `public`.
struct PublicOnly;

#[async_trait]
impl Middleware for PublicOnly {
    async fn on_list_tools(
        &self,
        list: ListTools,
        next: Next<'_, ListTools>,
    ) -> Result<Vec<ToolInfo>, ErrorData> {
        let tools = next.run(list).await?;
        Ok(tools
            .into_iter()
            .filter(|t| t.tags().contains("public"))
            .collect())
    }
}

#[tokio::test]
async fn b06_on_list_tools_can_filter_the_listing() {
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("public_tool", || async { 1 }).tag("public"))
        .expect("public tool");
    server
        .add_tool(ToolDef::new("private_tool", || async { 2 }).tag("private"))
        .expect("private tool");

    let before: Vec<String> = server
        .list_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(before, ["public_tool", "private_tool"]);

    server.add_middleware(PublicOnly);
    let after: Vec<String> = server
        .list_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(after, ["public_tool"]);
}

#[tokio::test]
async fn b06_b27_child_list_filter_hides_from_parent_listing_but_not_from_calls() {
    let child = Server::new("child");
    child
        .add_tool(ToolDef::new("public_tool", || async { 1 }).tag("public"))
        .expect("public tool");
    child
        .add_tool(ToolDef::new("private_tool", || async { 2 }))
        .expect("private tool");
    child.add_middleware(PublicOnly);
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");

    let names: Vec<String> = parent
        .list_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["c_public_tool"]);

    // B27: lookup does not go through list middleware.
    let result = complete(parent.call_tool("c_private_tool", Value::Null).await);
    assert_eq!(result_of(&result), json!(2));
}

// ------------------------------------------------------------------------------ B07

/// `a += 100` before the tool, `result += 5` after it.
struct Rewrite;

#[async_trait]
impl Middleware for Rewrite {
    async fn on_call_tool(
        &self,
        mut call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        let a = call.arguments["a"].as_i64().expect("a is an integer");
        call.arguments.insert("a".into(), json!(a + 100));
        match next.run(call).await? {
            CallToolResponse::Complete(mut result) => {
                let structured = result
                    .structured_content
                    .as_mut()
                    .expect("structured content");
                let value = structured["result"].as_i64().expect("integer result");
                structured["result"] = json!(value + 5);
                Ok(CallToolResponse::Complete(result))
            }
            other => Ok(other),
        }
    }
}

#[tokio::test]
async fn b07_middleware_changes_arguments_before_and_result_after() {
    let server = Server::new("s");
    server.add_middleware(Rewrite);
    server.tool("add", add).expect("add tool");

    let result = complete(server.call_tool("add", json!({"a": 1, "b": 2})).await);
    assert_eq!(result_of(&result), json!(108));
}

/// Redirects `plus` to `add`, pins `calc` to version 1.0, and doubles `b` for everything.
struct Redirect;

#[async_trait]
impl Middleware for Redirect {
    async fn on_call_tool(
        &self,
        mut call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        if call.name == "plus" {
            call.name = "add".into();
        }
        if call.name == "calc" {
            call.version = Some(VersionSpec::exact(
                Version::new("1.0").expect("a valid version"),
            ));
        }
        if let Some(b) = call.arguments.get("b").and_then(Value::as_i64) {
            call.arguments.insert("b".into(), json!(b * 2));
        }
        next.run(call).await
    }
}

#[tokio::test]
async fn b07_middleware_can_change_name_version_and_arguments_seen_downstream() {
    let child = Server::new("child");
    child.tool("add", add).expect("add tool");
    let parent = Server::new("parent");
    parent.add_middleware(Redirect);
    parent.tool("add", add).expect("parent add");
    parent
        .add_tool(ToolDef::new("calc", || async { 7 }).version("1.0"))
        .expect("calc 1.0");
    parent
        .add_tool(ToolDef::new("calc", || async { 12 }).version("2.0"))
        .expect("calc 2.0");
    parent.mount(&child, "c").expect("mount");

    // `plus` does not exist; the middleware's rename makes the call resolve.
    let result = complete(parent.call_tool("plus", json!({"a": 1, "b": 2})).await);
    assert_eq!(result_of(&result), json!(5));
    // The highest version would answer 12; the middleware pins 1.0.
    let result = complete(parent.call_tool("calc", Value::Null).await);
    assert_eq!(result_of(&result), json!(7));
    // Arguments changed by the parent's middleware are what the mounted child receives.
    let result = complete(parent.call_tool("c_add", json!({"a": 1, "b": 3})).await);
    assert_eq!(result_of(&result), json!(7));
}

// ------------------------------------------------------------------------------ B08, B09

/// `a += 5` before the tool.
struct AddFive;

#[async_trait]
impl Middleware for AddFive {
    async fn on_call_tool(
        &self,
        mut call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        let a = call.arguments["a"].as_i64().expect("a is an integer");
        call.arguments.insert("a".into(), json!(a + 5));
        next.run(call).await
    }
}

#[tokio::test]
async fn b08_without_middleware_runs_no_middleware() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(HookRecorder::new("s", &log));
    server.add_middleware(AddFive);
    server.tool("add", add).expect("add tool");

    let with = complete(server.call_tool("add", json!({"a": 5, "b": 3})).await);
    assert_eq!(result_of(&with), json!(13));
    assert!(!log.entries().is_empty(), "middleware ran on a normal call");

    log.clear();
    let without = complete(
        server
            .call(
                ToolCall::new("add")
                    .arguments(json!({"a": 5, "b": 3}))
                    .without_middleware(),
            )
            .await,
    );
    assert_eq!(result_of(&without), json!(8));
    assert_eq!(log.entries(), Vec::<String>::new());
}

#[tokio::test]
async fn b08_b09_without_middleware_skips_nested_middleware_and_extension_interceptors() {
    let log = Log::new();
    let child = Server::new("child");
    child.tool("add", add).expect("add tool");
    child.add_middleware(HookRecorder::new("child", &log));
    child.add_middleware(AddFive);
    let (child_ext, child_intercepted) = TaskingExt::new();
    child.add_extension(child_ext).expect("child extension");

    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");
    parent.add_middleware(HookRecorder::new("parent", &log));
    let (parent_ext, parent_intercepted) = TaskingExt::new();
    parent.add_extension(parent_ext).expect("parent extension");

    // Through middleware the root's extension turns the call into a task.
    let task = task_reply(parent.call_tool("c_add", json!({"a": 5, "b": 3})).await);
    assert_eq!(task.task.task_id, "task-1");
    assert_eq!(parent_intercepted.load(Ordering::SeqCst), 1);
    log.clear();

    let reply = complete(
        parent
            .call(
                ToolCall::new("c_add")
                    .arguments(json!({"a": 5, "b": 3}))
                    .without_middleware(),
            )
            .await,
    );
    assert_eq!(result_of(&reply), json!(8));
    assert_eq!(log.entries(), Vec::<String>::new());
    assert_eq!(parent_intercepted.load(Ordering::SeqCst), 1);
    assert_eq!(child_intercepted.load(Ordering::SeqCst), 0);
}

// ------------------------------------------------------------------------------ B10, B11, B19

#[tokio::test]
async fn b10_middleware_then_extensions_first_registered_outermost() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(CallTrace::new("mw", &log));
    server
        .add_extension(ExtTrace {
            id: "ext1",
            log: log.clone(),
        })
        .expect("ext1");
    server
        .add_extension(ExtTrace {
            id: "ext2",
            log: log.clone(),
        })
        .expect("ext2");
    server
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");

    complete(server.call_tool("compute", Value::Null).await);

    assert_eq!(
        log.entries(),
        [
            "mw:before",
            "ext1:before",
            "ext2:before",
            "tool",
            "ext2:after",
            "ext1:after",
            "mw:after"
        ]
    );
}

/// Records what `next` returned: `task:<id>` or `complete`.
struct SeeReply {
    log: Log,
}

#[async_trait]
impl Middleware for SeeReply {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        let reply = next.run(call).await?;
        match &reply {
            CallToolResponse::Task(task) => self.log.push(format!("task:{}", task.task.task_id)),
            CallToolResponse::Complete(_) => self.log.push("complete"),
            _ => self.log.push("other"),
        }
        Ok(reply)
    }
}

#[tokio::test]
async fn b10_extension_short_circuit_with_a_task_is_what_middleware_next_returns() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(SeeReply { log: log.clone() });
    let (ext, intercepted) = TaskingExt::new();
    server.add_extension(ext).expect("extension");
    server
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");

    let task = task_reply(server.call_tool("compute", Value::Null).await);

    assert_eq!(task, sample_task("task-1"));
    assert_eq!(intercepted.load(Ordering::SeqCst), 1);
    assert_eq!(log.entries(), ["task:task-1"], "the tool never ran");
}

#[tokio::test]
async fn b11_root_extension_short_circuit_never_runs_child_or_grandchild_middleware() {
    let log = Log::new();
    let grandchild = Server::new("grandchild");
    grandchild
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");
    grandchild.add_middleware(CallTrace::new("grandchild", &log));
    let child = Server::new("child");
    child.add_middleware(CallTrace::new("child", &log));
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent.add_middleware(CallTrace::new("parent", &log));
    parent.mount(&child, "c").expect("mount child");
    let (ext, _) = TaskingExt::new();
    parent.add_extension(ext).expect("extension");

    let task = task_reply(parent.call_tool("c_gc_compute", Value::Null).await);
    assert_eq!(task.task.task_id, "task-1");
    assert_eq!(log.entries(), ["parent:before", "parent:after"]);
}

/// Truncates the text of complete results to 5 characters; passes anything else through.
struct LimitSize {
    log: Log,
}

#[async_trait]
impl Middleware for LimitSize {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        match next.run(call).await? {
            CallToolResponse::Complete(mut result) => {
                self.log.push("limited");
                for block in &mut result.content {
                    if let Some(text) = block.as_text() {
                        let short: String = text.text.chars().take(5).collect();
                        *block = ContentBlock::text(short);
                    }
                }
                Ok(CallToolResponse::Complete(result))
            }
            other => {
                self.log.push("passed");
                Ok(other)
            }
        }
    }
}

#[tokio::test]
async fn b19_result_inspecting_middleware_passes_a_task_through_untouched() {
    let log = Log::new();
    let server = Server::new("s");
    server.add_middleware(LimitSize { log: log.clone() });
    let intercepted = Arc::new(AtomicUsize::new(0));
    server
        .add_extension(TaskingExt {
            only: Some("square"),
            intercepted: intercepted.clone(),
        })
        .expect("extension");
    server
        .add_tool(ToolDef::new("square", || async { 81 }))
        .expect("square tool");
    server
        .add_tool(ToolDef::new("long", || async { "a long answer" }))
        .expect("long tool");

    // The middleware really inspects complete results...
    let long = complete(server.call_tool("long", Value::Null).await);
    assert_eq!(text_of(&long), "a lon");
    // ...and leaves a task handle exactly as the extension made it.
    let task = task_reply(server.call_tool("square", Value::Null).await);
    assert_eq!(task, sample_task("task-1"));
    assert_eq!(log.entries(), ["limited", "passed"]);
}

// ------------------------------------------------------------------------------ B12, B13, B15, B16

#[tokio::test]
async fn b12_mounted_call_runs_the_parent_chain_then_the_child_chain() {
    let log = Log::new();
    let child = Server::new("child");
    child.add_tool(traced_tool("compute", &log)).expect("tool");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");
    parent.add_middleware(HookRecorder::new("parent", &log));

    complete(parent.call_tool("c_compute", Value::Null).await);

    assert_eq!(
        log.entries(),
        [
            "parent:on_message:tools/call:before",
            "parent:on_request:tools/call:before",
            "parent:on_call_tool:tools/call:before",
            "child:on_message:tools/call:before",
            "child:on_request:tools/call:before",
            "child:on_call_tool:tools/call:before",
            "tool",
            "child:on_call_tool:tools/call:after",
            "child:on_request:tools/call:after",
            "child:on_message:tools/call:after",
            "parent:on_call_tool:tools/call:after",
            "parent:on_request:tools/call:after",
            "parent:on_message:tools/call:after",
        ]
    );
}

/// THE KEY ACCEPTANCE TEST.
#[tokio::test]
async fn b03_b12_trace_grandchild_under_child_under_parent() {
    let log = Log::new();
    let grandchild = Server::new("grandchild");
    grandchild.add_middleware(CallTrace::new("grandchild", &log));
    grandchild
        .add_tool(traced_tool("compute", &log))
        .expect("compute tool");
    let child = Server::new("child");
    child.add_middleware(CallTrace::new("child", &log));
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent.add_middleware(CallTrace::new("parent", &log));
    parent.mount(&child, "c").expect("mount child");

    let result = complete(parent.call_tool("c_gc_compute", Value::Null).await);
    assert_eq!(result_of(&result), json!(42));

    assert_eq!(
        log.entries(),
        [
            "parent:before",
            "child:before",
            "grandchild:before",
            "tool",
            "grandchild:after",
            "child:after",
            "parent:after",
        ]
    );
}

#[tokio::test]
async fn b13_parent_own_tool_call_records_no_child_hooks() {
    let log = Log::new();
    let child = Server::new("child");
    child.tool("add", add).expect("child tool");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = Server::new("parent");
    parent.tool("add", add).expect("parent tool");
    parent.mount(&child, "c").expect("mount");
    parent.add_middleware(HookRecorder::new("parent", &log));

    let result = complete(parent.call_tool("add", json!({"a": 2, "b": 2})).await);
    assert_eq!(result_of(&result), json!(4));

    let all = log.entries();
    assert!(
        all.iter().any(|e| e.starts_with("parent:")),
        "the parent's middleware ran: {all:?}"
    );
    assert!(
        all.iter().all(|e| !e.starts_with("child:")),
        "no child hook fires for a parent tool: {all:?}"
    );
}

#[tokio::test]
async fn b15_parent_list_fires_the_child_and_grandchild_list_hooks() {
    let log = Log::new();
    let grandchild = Server::new("grandchild");
    grandchild.tool("compute", || async { 1 }).expect("tool");
    grandchild.add_middleware(HookRecorder::new("grandchild", &log));
    let child = Server::new("child");
    child.add_middleware(HookRecorder::new("child", &log));
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount child");

    let names: Vec<String> = parent
        .list_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["c_gc_compute"]);

    for label in ["child", "grandchild"] {
        assert_eq!(
            befores(&log, label),
            [
                format!("{label}:on_message:tools/list:before"),
                format!("{label}:on_request:tools/list:before"),
                format!("{label}:on_list_tools:tools/list:before"),
            ]
        );
    }
}

/// Records `label:<name>@<server of the context>`.
struct Names {
    label: &'static str,
    log: Log,
}

#[async_trait]
impl Middleware for Names {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.log.push(format!(
            "{}:{}@{}",
            self.label,
            call.name,
            call.context().server().name()
        ));
        next.run(call).await
    }
}

#[tokio::test]
async fn b16_each_server_sees_names_in_its_own_namespace() {
    let log = Log::new();
    let grandchild = Server::new("grandchild");
    grandchild
        .add_middleware(Names {
            label: "grandchild",
            log: log.clone(),
        })
        .tool("compute", || async { 1 })
        .expect("tool");
    let child = Server::new("child");
    child.add_middleware(Names {
        label: "child",
        log: log.clone(),
    });
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent.add_middleware(Names {
        label: "parent",
        log: log.clone(),
    });
    parent.mount(&child, "c").expect("mount child");

    complete(parent.call_tool("c_gc_compute", Value::Null).await);

    assert_eq!(
        log.entries(),
        [
            "parent:c_gc_compute@parent",
            "child:gc_compute@child",
            "grandchild:compute@grandchild",
        ]
    );
}

// ------------------------------------------------------------------------------ B17

/// Denies `secret` with an `isError` result, and `admin_*` with a [`ToolError`].
struct Deny;

#[async_trait]
impl Middleware for Deny {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        if call.name == "secret" {
            return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text("Access denied: secret is off limits"),
            ])));
        }
        if call.name.starts_with("admin_") {
            return ToolError::new(format!("Access denied: {} needs admin", call.name))
                .into_failure(&call.name, true)
                .into_response();
        }
        next.run(call).await
    }
}

#[tokio::test]
async fn b17_middleware_denies_a_call_and_other_tools_keep_working() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = Server::new("s");
    server.add_middleware(Deny);
    for name in ["secret", "admin_reset"] {
        let ran = ran.clone();
        server
            .add_tool(ToolDef::new(name, move || {
                let ran = ran.clone();
                async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    "should not run"
                }
            }))
            .expect("guarded tool");
    }
    server.tool("add", add).expect("add tool");

    let denied = complete(server.call_tool("secret", Value::Null).await);
    assert_eq!(denied.is_error, Some(true));
    assert_eq!(text_of(&denied), "Access denied: secret is off limits");

    let denied = complete(server.call_tool("admin_reset", Value::Null).await);
    assert_eq!(denied.is_error, Some(true));
    assert_eq!(text_of(&denied), "Access denied: admin_reset needs admin");

    assert_eq!(ran.load(Ordering::SeqCst), 0, "denied tools never ran");

    let ok = complete(server.call_tool("add", json!({"a": 20, "b": 22})).await);
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(result_of(&ok), json!(42));
}

#[tokio::test]
async fn b17_child_middleware_denial_reaches_the_parent_caller() {
    let child = Server::new("child");
    child.add_middleware(Deny);
    child.tool("secret", || async { "leaked" }).expect("secret");
    child.tool("add", add).expect("add");
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");

    let denied = complete(parent.call_tool("c_secret", Value::Null).await);
    assert_eq!(denied.is_error, Some(true));
    assert_eq!(text_of(&denied), "Access denied: secret is off limits");

    let ok = complete(parent.call_tool("c_add", json!({"a": 1, "b": 1})).await);
    assert_eq!(result_of(&ok), json!(2));
}

// ------------------------------------------------------------------------------ B25

#[tokio::test]
async fn b25_on_message_and_on_request_fire_once_per_call_per_server() {
    let log = Log::new();
    let grandchild = Server::new("grandchild");
    grandchild.tool("compute", || async { 1 }).expect("tool");
    grandchild.add_middleware(HookRecorder::new("grandchild", &log));
    let child = Server::new("child");
    child.mount(&grandchild, "gc").expect("mount grandchild");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount child");
    parent.add_middleware(HookRecorder::new("parent", &log));

    complete(parent.call_tool("c_gc_compute", Value::Null).await);
    let count = |entry: String| log.entries().iter().filter(|e| **e == entry).count();
    for label in ["parent", "child", "grandchild"] {
        for hook in ["on_message", "on_request", "on_call_tool"] {
            assert_eq!(
                count(format!("{label}:{hook}:tools/call:before")),
                1,
                "{label} {hook} once per call: {:?}",
                log.entries()
            );
        }
    }

    log.clear();
    parent.list_tools().await.expect("tools/list");
    for label in ["parent", "child", "grandchild"] {
        for hook in ["on_message", "on_request", "on_list_tools"] {
            assert_eq!(
                count(format!("{label}:{hook}:tools/list:before")),
                1,
                "{label} {hook} once per list: {:?}",
                log.entries()
            );
        }
    }
}

// ------------------------------------------------------------------------------ B26, E23

/// Keeps the `Context` each level's middleware sees.
struct KeepContext {
    seen: Arc<Mutex<Vec<Context>>>,
}

#[async_trait]
impl Middleware for KeepContext {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.seen
            .lock()
            .expect("context lock")
            .push(call.context().clone());
        next.run(call).await
    }
}

#[tokio::test]
async fn b26_e23_context_in_a_mounted_foreground_call_is_bound_to_each_level() {
    let seen: Arc<Mutex<Vec<Context>>> = Arc::default();
    let in_tool: Arc<Mutex<Vec<(Context, ferrymcp::Server)>>> = Arc::default();

    let grandchild = Server::new("grandchild");
    let keep = in_tool.clone();
    grandchild
        .add_tool(ToolDef::new(
            "whoami",
            move |cx: Context, CurrentServer(server): CurrentServer| {
                let keep = keep.clone();
                async move {
                    let name = format!("context server: {}", cx.server().name());
                    keep.lock().expect("tool lock").push((cx, server));
                    name
                }
            },
        ))
        .expect("tool");
    grandchild.add_middleware(KeepContext { seen: seen.clone() });
    let child = Server::new("child");
    child.add_middleware(KeepContext { seen: seen.clone() });
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent.add_middleware(KeepContext { seen: seen.clone() });
    parent.mount(&child, "c").expect("mount child");

    let result = complete(parent.call_tool("c_gc_whoami", Value::Null).await);
    assert_eq!(result_of(&result), json!("context server: grandchild"));

    let seen = seen.lock().expect("context lock").clone();
    assert_eq!(seen.len(), 3);
    assert!(seen[0].server().ptr_eq(&parent));
    assert!(seen[1].server().ptr_eq(&child));
    assert!(seen[2].server().ptr_eq(&grandchild));

    let in_tool = in_tool.lock().expect("tool lock").clone();
    let (cx, current) = in_tool.first().expect("the tool ran");
    assert!(cx.server().ptr_eq(&grandchild), "tool context is the owner");
    assert!(current.ptr_eq(&grandchild), "CurrentServer is the owner");
    assert!(!cx.server().ptr_eq(&parent));

    // Every level shares the one request scope.
    for level in &seen {
        assert!(std::ptr::eq(level.scope(), cx.scope()));
    }
}
