//! The extension API (C40, C46, C47, B10) proven with a small in-test extension, and
//! dependency injection of `Context` / `CurrentServer` (E01, E02, E13, E21, E23).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use ferrymcp::{
    Args, BoxError, CallTool, CancellationToken, Context, CurrentServer, Extension, Message,
    Middleware, Next, Reply, RequestScope, Server, ServerError, State, ToolCallNext, ToolDef,
    types::{
        CallToolResponse, CallToolResult, ContentBlock, ErrorData, JsonObject, TASKS_EXTENSION_ID,
        TaskSupport,
    },
};
use serde_json::{Value, json};

// ------------------------------------------------------------------------------ helpers

const ECHO_ID: &str = "com.example/echo";

/// What the echo extension observed.
#[derive(Default)]
struct Probe {
    starts: AtomicUsize,
    stops: AtomicUsize,
    started_with: Mutex<Option<Server>>,
    intercepted: Mutex<Vec<String>>,
}

/// A small extension: settings, one method (`ext/echo`), a `tools/call` interceptor that
/// refuses `blocked`, and start/stop hooks.
struct Echo {
    probe: Arc<Probe>,
}

fn echo() -> (Echo, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    (
        Echo {
            probe: probe.clone(),
        },
        probe,
    )
}

fn echo_settings() -> JsonObject {
    json!({"version": 2, "modes": ["loud", "quiet"]})
        .as_object()
        .expect("an object")
        .clone()
}

#[async_trait]
impl Extension for Echo {
    fn id(&self) -> &str {
        ECHO_ID
    }

    fn settings(&self) -> JsonObject {
        echo_settings()
    }

    fn methods(&self) -> Vec<String> {
        vec!["ext/echo".into()]
    }

    async fn handle_request(
        &self,
        cx: Context,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorData> {
        Ok(json!({"method": method, "params": params, "server": cx.server().name()}))
    }

    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.probe
            .intercepted
            .lock()
            .expect("probe lock")
            .push(call.name.clone());
        if call.name == "blocked" {
            return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text("blocked by com.example/echo"),
            ])));
        }
        next.run(call).await
    }

    async fn on_start(&self, server: &Server) -> Result<(), BoxError> {
        self.probe.starts.fetch_add(1, Ordering::SeqCst);
        *self.probe.started_with.lock().expect("probe lock") = Some(server.clone());
        Ok(())
    }

    async fn on_stop(&self, _server: &Server) {
        self.probe.stops.fetch_add(1, Ordering::SeqCst);
    }
}

/// An extension with a given id and methods, and nothing else (or, with `runs_tasks`, one
/// that says it runs task tools).
struct Bare {
    id: &'static str,
    methods: Vec<String>,
    runs_tasks: bool,
}

#[async_trait]
impl Extension for Bare {
    fn id(&self) -> &str {
        self.id
    }

    fn methods(&self) -> Vec<String> {
        self.methods.clone()
    }

    fn runs_task_tools(&self) -> bool {
        self.runs_tasks
    }
}

fn bare(id: &'static str) -> Bare {
    Bare {
        id,
        methods: Vec::new(),
        runs_tasks: false,
    }
}

/// A stand-in for a tasks extension: the core asks whether an extension runs task tools,
/// whatever its id.
fn task_runner() -> Bare {
    Bare {
        id: "com.example/background",
        methods: Vec::new(),
        runs_tasks: true,
    }
}

fn complete(reply: Result<CallToolResponse, ErrorData>) -> CallToolResult {
    match reply.expect("tools/call succeeds") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn result_of(result: &CallToolResult) -> Value {
    result
        .structured_content
        .as_ref()
        .expect("structured content")["result"]
        .clone()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct N {
    n: i64,
}

// ------------------------------------------------------------------------------ C46: the API

#[tokio::test]
async fn c46_extension_settings_are_advertised_under_capabilities_extensions() {
    let server = Server::new("s");
    assert!(
        server.server_config().capabilities.extensions.is_none(),
        "no extension, no extensions capability"
    );

    let (ext, _) = echo();
    server.add_extension(ext).expect("extension");
    server
        .add_extension(bare("com.example/plain"))
        .expect("plain");

    let extensions = server
        .server_config()
        .capabilities
        .extensions
        .expect("an extensions capability");
    assert_eq!(extensions.get(ECHO_ID), Some(&echo_settings()));
    assert_eq!(
        extensions.get("com.example/plain"),
        Some(&JsonObject::new()),
        "default settings are {{}}"
    );
    assert_eq!(extensions.len(), 2);

    // And on the wire.
    let wire = serde_json::to_value(server.server_config()).expect("serializes");
    assert_eq!(
        wire["capabilities"]["extensions"][ECHO_ID],
        json!({"version": 2, "modes": ["loud", "quiet"]})
    );
}

#[tokio::test]
async fn c46_extension_method_is_served_by_request() {
    let server = Server::new("s");
    let (ext, _) = echo();
    server.add_extension(ext).expect("extension");

    let reply = server
        .request("ext/echo", Some(json!({"x": 1})), RequestScope::new())
        .await
        .expect("ext/echo answers");
    assert_eq!(
        reply,
        json!({"method": "ext/echo", "params": {"x": 1}, "server": "s"})
    );

    let error = server
        .request("ext/other", None, RequestScope::new())
        .await
        .expect_err("an unknown method");
    assert_eq!(error.code.0, -32601);
}

/// Records `hook:method` for every hook.
struct Record {
    log: Arc<Mutex<Vec<String>>>,
}

impl Record {
    fn push(&self, entry: String) {
        self.log.lock().expect("log lock").push(entry);
    }
}

#[async_trait]
impl Middleware for Record {
    async fn on_message(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        self.push(format!("on_message:{}", message.method()));
        next.run(message).await
    }

    async fn on_request(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        self.push(format!("on_request:{}", message.method()));
        if let Message::Custom(request) = &message {
            self.push(format!(
                "params:{}",
                request.params.clone().unwrap_or(Value::Null)
            ));
        }
        next.run(message).await
    }

    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.push(format!("on_call_tool:{}", call.name));
        next.run(call).await
    }
}

#[tokio::test]
async fn c46_b01_extension_method_runs_through_middleware_on_request() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let server = Server::new("s");
    server.add_middleware(Record { log: log.clone() });
    let (ext, _) = echo();
    server.add_extension(ext).expect("extension");

    server
        .request("ext/echo", Some(json!({"y": true})), RequestScope::new())
        .await
        .expect("ext/echo answers");
    assert_eq!(
        *log.lock().expect("log lock"),
        [
            "on_message:ext/echo",
            "on_request:ext/echo",
            r#"params:{"y":true}"#
        ]
    );
}

#[tokio::test]
async fn c46_b10_extension_intercepts_tools_call_and_short_circuits() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = Server::new("s");
    let (ext, probe) = echo();
    server.add_extension(ext).expect("extension");
    for name in ["blocked", "open"] {
        let ran = ran.clone();
        server
            .add_tool(ToolDef::new(name, move || {
                let ran = ran.clone();
                async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    "ran"
                }
            }))
            .expect("tool");
    }

    let blocked = complete(server.call_tool("blocked", Value::Null).await);
    assert_eq!(blocked.is_error, Some(true));
    assert_eq!(
        blocked.content,
        vec![ContentBlock::text("blocked by com.example/echo")]
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the blocked tool never ran");

    let open = complete(server.call_tool("open", Value::Null).await);
    assert_eq!(result_of(&open), json!("ran"));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(
        *probe.intercepted.lock().expect("probe lock"),
        ["blocked", "open"]
    );
}

#[tokio::test]
async fn c46_on_start_and_on_stop_run_once_each() {
    let server = Server::new("s");
    let (ext, probe) = echo();
    server.add_extension(ext).expect("extension");
    assert_eq!(probe.starts.load(Ordering::SeqCst), 0);

    let running = server.start().await.expect("start");
    assert_eq!(probe.starts.load(Ordering::SeqCst), 1);
    assert_eq!(probe.stops.load(Ordering::SeqCst), 0);
    let started_with = probe
        .started_with
        .lock()
        .expect("probe lock")
        .clone()
        .expect("on_start got the server");
    assert!(started_with.ptr_eq(&server));

    // A second start while running fails and runs no hook.
    assert!(matches!(
        server.start().await,
        Err(ServerError::AlreadyStarted(_))
    ));
    assert_eq!(probe.starts.load(Ordering::SeqCst), 1);

    running.stop().await;
    assert_eq!(probe.starts.load(Ordering::SeqCst), 1);
    assert_eq!(probe.stops.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn c46_duplicate_extension_id_is_rejected() {
    let server = Server::new("s");
    server.add_extension(bare(ECHO_ID)).expect("first");
    let (ext, _) = echo();
    let error = server
        .add_extension(ext)
        .expect_err("a duplicate identifier");
    assert!(
        matches!(&error, ServerError::DuplicateExtension(id) if id == ECHO_ID),
        "{error:?}"
    );
    assert!(error.to_string().contains("already registered"), "{error}");
    // The first one stays; the duplicate's method was not registered.
    let reply = server
        .request("ext/echo", None, RequestScope::new())
        .await
        .expect_err("the rejected extension's method is not served");
    assert_eq!(reply.code.0, -32601);
}

#[tokio::test]
async fn c46_extension_method_named_like_a_spec_method_is_rejected() {
    let server = Server::new("s");
    let error = server
        .add_extension(Bare {
            id: "com.example/hijack",
            methods: vec!["ext/fine".into(), "tools/call".into()],
            runs_tasks: false,
        })
        .expect_err("tools/call is a spec method");
    assert!(
        matches!(&error, ServerError::ReservedMethod { method, .. } if method == "tools/call"),
        "{error:?}"
    );
    assert!(server.extension("com.example/hijack").is_none());
    let error = server
        .request("ext/fine", None, RequestScope::new())
        .await
        .expect_err("nothing of the rejected extension is registered");
    assert_eq!(error.code.0, -32601);
}

#[tokio::test]
async fn c46_add_extension_after_start_is_rejected() {
    let server = Server::new("s");
    let running = server.start().await.expect("start");
    let error = server
        .add_extension(bare(ECHO_ID))
        .expect_err("the server is running");
    assert!(matches!(error, ServerError::AlreadyStarted(_)), "{error:?}");
    assert!(server.extension(ECHO_ID).is_none());
    running.stop().await;
}

/// An extension whose `on_start` fails or succeeds, counting its hooks.
struct Flaky {
    id: &'static str,
    fail: bool,
    probe: Arc<Probe>,
}

#[async_trait]
impl Extension for Flaky {
    fn id(&self) -> &str {
        self.id
    }

    async fn on_start(&self, _server: &Server) -> Result<(), BoxError> {
        self.probe.starts.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err("backend unreachable".into());
        }
        Ok(())
    }

    async fn on_stop(&self, _server: &Server) {
        self.probe.stops.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn c46_a_failing_on_start_stops_the_extensions_already_started() {
    let (first, second) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
    let server = Server::new("s");
    server
        .add_extension(Flaky {
            id: "com.example/first",
            fail: false,
            probe: first.clone(),
        })
        .expect("first");
    server
        .add_extension(Flaky {
            id: "com.example/second",
            fail: true,
            probe: second.clone(),
        })
        .expect("second");

    let error = server
        .start()
        .await
        .err()
        .expect("the second extension fails to start");
    assert!(matches!(error, ServerError::Startup { .. }), "{error:?}");
    assert!(
        error.to_string().contains("com.example/second")
            && error.to_string().contains("backend unreachable"),
        "{error}"
    );
    assert_eq!(first.starts.load(Ordering::SeqCst), 1);
    assert_eq!(
        first.stops.load(Ordering::SeqCst),
        1,
        "the started one is stopped"
    );
    assert_eq!(second.starts.load(Ordering::SeqCst), 1);
    assert_eq!(
        second.stops.load(Ordering::SeqCst),
        0,
        "the failed one never started"
    );

    // The server is not left marked as running.
    assert!(
        !matches!(server.start().await, Err(ServerError::AlreadyStarted(_))),
        "a failed start does not leave the server running"
    );
}

// ------------------------------------------------------------------------------ C47

#[tokio::test]
async fn c47_child_extension_is_not_advertised_served_or_started_by_the_parent() {
    let child = Server::new("child");
    let (ext, probe) = echo();
    child.add_extension(ext).expect("child extension");
    child
        .tool("blocked", || async { "child tool ran" })
        .expect("tool");
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");

    assert!(
        parent
            .server_config()
            .capabilities
            .extensions
            .is_none_or(|e| !e.contains_key(ECHO_ID)),
        "the parent does not advertise the child's extension"
    );
    let error = parent
        .request("ext/echo", None, RequestScope::new())
        .await
        .expect_err("the parent does not serve the child's method");
    assert_eq!(error.code.0, -32601);
    // The child itself still serves it.
    let reply = child
        .request("ext/echo", None, RequestScope::new())
        .await
        .expect("the child serves its own method");
    assert_eq!(reply["server"], "child");

    // Extension lifespans run at the root only.
    let running = parent.start().await.expect("start the parent");
    running.stop().await;
    assert_eq!(probe.starts.load(Ordering::SeqCst), 0);
    assert_eq!(probe.stops.load(Ordering::SeqCst), 0);
}

// ------------------------------------------------------------------------------ C40

#[tokio::test]
async fn c40_task_tools_without_a_tasks_extension_fail_to_start() {
    let grandchild = Server::new("grandchild");
    grandchild
        .add_tool(ToolDef::new("deep", || async { 1 }).task(TaskSupport::Required))
        .expect("deep tool");
    let child = Server::new("child");
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent
        .add_tool(ToolDef::new("slow", || async { 2 }).task(true))
        .expect("slow tool");
    parent
        .add_tool(ToolDef::new("quick", || async { 3 }))
        .expect("quick tool");
    parent.mount(&child, "c").expect("mount child");

    let error = match parent.start().await {
        Ok(running) => {
            running.stop().await;
            panic!("start must fail without a tasks extension");
        }
        Err(error) => error,
    };
    assert!(
        matches!(error, ServerError::TasksExtensionMissing { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("tasks extension"), "{message}");
    assert!(message.contains(TASKS_EXTENSION_ID), "{message}");
    assert!(message.contains("slow"), "{message}");
    assert!(message.contains("c_gc_deep"), "{message}");
    assert!(!message.contains("quick"), "{message}");

    // What counts is an extension that runs task tools, not one that takes the id.
    parent
        .add_extension(bare(TASKS_EXTENSION_ID))
        .expect("an extension under the tasks id");
    assert!(
        matches!(
            parent.start().await,
            Err(ServerError::TasksExtensionMissing { .. })
        ),
        "an id alone does not run task tools"
    );

    // A failed start leaves the server startable.
    parent
        .add_extension(task_runner())
        .expect("fake tasks extension");
    let running = parent.start().await.expect("start with a tasks extension");
    running.stop().await;
}

#[tokio::test]
async fn c40_a_mounted_task_tool_is_enough_to_require_the_extension_at_the_root() {
    let child = Server::new("child");
    child
        .add_tool(ToolDef::new("slow", || async { 1 }).task(true))
        .expect("slow tool");
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");

    let error = parent
        .start()
        .await
        .err()
        .expect("start fails without a tasks extension");
    assert!(error.to_string().contains("tasks extension"), "{error}");
    assert!(error.to_string().contains("c_slow"), "{error}");
}

#[tokio::test]
async fn c40_c47_a_tasks_extension_on_the_child_does_not_cover_the_root() {
    let child = Server::new("child");
    child
        .add_tool(ToolDef::new("slow", || async { 1 }).task(true))
        .expect("slow tool");
    child
        .add_extension(task_runner())
        .expect("child tasks extension");
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");

    let error = parent
        .start()
        .await
        .err()
        .expect("the root needs its own tasks extension");
    assert!(error.to_string().contains("tasks extension"), "{error}");

    parent
        .add_extension(task_runner())
        .expect("root tasks extension");
    let running = parent.start().await.expect("start");
    running.stop().await;
}

#[tokio::test]
async fn c40_a_fake_tasks_extension_lets_start_succeed() {
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("slow", || async { 1 }).task(true))
        .expect("slow tool");
    server
        .add_extension(task_runner())
        .expect("fake tasks extension");
    let running = server.start().await.expect("start");
    running.stop().await;
}

// ------------------------------------------------------------------------------ E01, E02, E23

async fn whoami(cx: Context, CurrentServer(server): CurrentServer) -> String {
    format!(
        "context server: {}; server name: {}",
        cx.server().name(),
        server.name()
    )
}

#[tokio::test]
async fn e01_e02_e23_context_and_current_server_in_a_mounted_tool_are_the_owner() {
    let seen: Arc<Mutex<Vec<(Context, Server)>>> = Arc::default();
    let keep = seen.clone();
    let grandchild = Server::new("grandchild");
    grandchild
        .add_tool(ToolDef::new(
            "keep",
            move |cx: Context, CurrentServer(server): CurrentServer| {
                let keep = keep.clone();
                async move {
                    keep.lock().expect("seen lock").push((cx, server));
                }
            },
        ))
        .expect("keep tool");
    let child = Server::new("child");
    child.tool("whoami", whoami).expect("whoami tool");
    child.mount(&grandchild, "gc").expect("mount grandchild");
    let parent = Server::new("parent");
    parent.tool("whoami", whoami).expect("parent whoami");
    parent.mount(&child, "c").expect("mount child");

    let result = complete(parent.call_tool("c_whoami", Value::Null).await);
    assert_eq!(
        result_of(&result),
        json!("context server: child; server name: child")
    );
    let result = complete(parent.call_tool("whoami", Value::Null).await);
    assert_eq!(
        result_of(&result),
        json!("context server: parent; server name: parent")
    );

    complete(parent.call_tool("c_gc_keep", Value::Null).await);
    complete(child.call_tool("gc_keep", Value::Null).await);
    let seen = seen.lock().expect("seen lock").clone();
    assert_eq!(seen.len(), 2);
    for (cx, server) in &seen {
        assert!(cx.server().ptr_eq(&grandchild), "Context is the owner");
        assert!(server.ptr_eq(&grandchild), "CurrentServer is the owner");
        assert!(!server.ptr_eq(&child) && !server.ptr_eq(&parent));
    }
    // The very same instance, not a copy with the same name.
    assert!(!seen[0].1.ptr_eq(&Server::new("grandchild")));
}

// ------------------------------------------------------------------------------ E13

#[tokio::test]
async fn e13_concurrent_calls_get_distinct_contexts() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let seen: Arc<Mutex<Vec<(Context, CancellationToken)>>> = Arc::default();
    let child = Server::new("child");
    let (keep, wait) = (seen.clone(), barrier.clone());
    child
        .add_tool(ToolDef::new(
            "rendezvous",
            move |cx: Context, token: CancellationToken| {
                let (keep, wait) = (keep.clone(), wait.clone());
                async move {
                    keep.lock().expect("seen lock").push((cx, token));
                    // Both calls are in flight at once before either returns.
                    wait.wait().await;
                    1
                }
            },
        ))
        .expect("tool");
    let parent = Server::new("parent");
    parent.mount(&child, "c").expect("mount");

    let both = async {
        tokio::join!(
            parent.call_tool("c_rendezvous", Value::Null),
            parent.call_tool("c_rendezvous", Value::Null),
        )
    };
    let (a, b) = tokio::time::timeout(Duration::from_secs(10), both)
        .await
        .expect("both calls ran concurrently");
    complete(a);
    complete(b);

    let seen = seen.lock().expect("seen lock").clone();
    assert_eq!(seen.len(), 2);
    let ((cx_a, token_a), (cx_b, token_b)) = (&seen[0], &seen[1]);
    assert!(
        !std::ptr::eq(cx_a.scope(), cx_b.scope()),
        "each call has its own request scope"
    );
    assert!(cx_a.server().ptr_eq(&child) && cx_b.server().ptr_eq(&child));

    // Cancelling one call's token leaves the other alone.
    token_a.cancel();
    assert!(cx_a.cancellation().is_cancelled());
    assert!(!token_b.is_cancelled());
    assert!(!cx_b.cancellation().is_cancelled());
}

// ------------------------------------------------------------------------------ E21

#[derive(Clone)]
struct Db(&'static str);

async fn injected(
    cx: Context,
    CurrentServer(server): CurrentServer,
    token: CancellationToken,
    State(db): State<Db>,
    Args(N { n }): Args<N>,
) -> String {
    format!(
        "{} {} {} {} {n}",
        cx.server().name(),
        server.name(),
        token.is_cancelled(),
        db.0
    )
}

async fn context_only(cx: Context) -> String {
    cx.server().name().to_owned()
}

#[tokio::test]
async fn e21_injected_parameters_are_not_in_the_input_schema_nor_coerced() {
    let server = Server::new("s");
    server.insert_state(Db("primary"));
    server.tool("injected", injected).expect("injected tool");
    server
        .tool("context_only", context_only)
        .expect("context tool");

    let schema = server
        .get_tool("injected", None)
        .expect("injected tool")
        .input_schema()
        .clone();
    let properties = schema["properties"].as_object().expect("properties");
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        ["n"],
        "only the real argument: {schema:?}"
    );
    assert_eq!(schema["required"], json!(["n"]));

    let schema = server
        .get_tool("context_only", None)
        .expect("context tool")
        .input_schema()
        .clone();
    assert_eq!(
        Value::Object((*schema).clone()),
        json!({"type": "object", "properties": {}})
    );

    // The real argument is coerced; the injected ones come from the call.
    let result = complete(server.call_tool("injected", json!({"n": "7"})).await);
    assert_eq!(result_of(&result), json!("s s false primary 7"));
    let result = complete(server.call_tool("context_only", Value::Null).await);
    assert_eq!(result_of(&result), json!("s"));
}
