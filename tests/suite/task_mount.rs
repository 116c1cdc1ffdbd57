//! SEP-2663 task execution through mounted servers (tools only), ported from FastMCP's
//! `tests/tasks/server/test_task_mount.py` (see the "Seed mapping" table at the end of
//! `docs/behaviors.md`).
//!
//! The parent (which registers [`TasksExtension`] and owns the engine) runs a mounted tool as
//! a task; the worker resolves back to the mounted child, extractors resolve, and the task
//! mode and listing metadata survive mounting.
//!
//! Two architectural notes, as in the seed:
//! - the tasks interceptor composes at the registering (root) server and short-circuits
//!   before delegating into a mounted child, so only the root's middleware wraps a tasked
//!   submission; the tool body runs later in the worker, without middleware;
//! - worker server resolution is single level: a tool reached through nested mounts
//!   resolves to the outermost mounted child.
//!
//! Every `CreateTaskResult` and every final `GetTaskResult` is also validated against the
//! official `ext-tasks` schema (inside the helpers below).

use std::{error::Error, sync::Arc, time::Duration};

use ferrymcp::{
    Args, Context, CurrentServer, Server, ToolDef,
    tasks::{Engine, TaskSnapshot, TasksExtension, resolve_owning_server},
    types::{
        CallToolResponse, CallToolResult, CreateTaskResult, ErrorData, GetTaskResult, JsonObject,
        TaskPayload, TaskStatus, TaskSupport, ToolDescriptor, codes,
    },
};
use ferrymcp_proxy::{ClientFactory, ProxyTool};
use ferrymcp_test_helpers::{
    middleware::{CallTrace, Log},
    reply,
    schema::{Spec, assert_valid},
    tasks::{
        TERMINAL, TaskClient, call_tool_without_optin, cancel_task, running_task_server,
        submit_task, wait_for_task,
    },
};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn Error>>;

// ------------------------------------------------------------------------------ helpers

/// How long any task may take to reach the awaited status.
const WAIT: Duration = Duration::from_secs(5);

/// An opted-in, anonymous `tools/call` that must become a task; the handle is checked
/// against the `CreateTaskResult` schema.
async fn submit(server: &Server, name: &str, arguments: Value) -> CreateTaskResult {
    let created = submit_task(server, name, arguments)
        .await
        .unwrap_or_else(|e| panic!("submitting `{name}`: {} ({})", e.message, e.code.0));
    assert_valid(
        Spec::Tasks,
        "CreateTaskResult",
        &serde_json::to_value(&created).expect("CreateTaskResult serializes"),
    );
    created
}

/// Waits until the task reaches one of `targets`; the final body is checked against the
/// `GetTaskResult` schema.
async fn wait_until(server: &Server, task_id: &str, targets: &[TaskStatus]) -> GetTaskResult {
    let done = wait_for_task(server, task_id, targets, WAIT).await;
    assert_valid(
        Spec::Tasks,
        "GetTaskResult",
        &serde_json::to_value(&done).expect("GetTaskResult serializes"),
    );
    done
}

/// Waits for a terminal status (the seed's default `wait_for_task`).
async fn wait(server: &Server, created: &CreateTaskResult) -> GetTaskResult {
    wait_until(server, &created.task.task_id, &TERMINAL).await
}

/// Submits `name` and waits for a terminal status.
async fn run(server: &Server, name: &str, arguments: Value) -> GetTaskResult {
    let created = submit(server, name, arguments).await;
    wait(server, &created).await
}

/// The stored `CallToolResult` JSON of a completed task (the seed's `final.result`).
fn completed_result(done: &GetTaskResult) -> &JsonObject {
    match &done.task.payload {
        TaskPayload::Completed { result } => result,
        other => panic!(
            "expected a completed task, got status {:?} with {other:?}",
            done.task.task.status
        ),
    }
}

/// `result["structuredContent"]["result"]` of a completed task.
fn structured_result(done: &GetTaskResult) -> &Value {
    &completed_result(done)["structuredContent"]["result"]
}

/// `result["content"][0]["text"]` of a completed task.
fn first_text(done: &GetTaskResult) -> &str {
    completed_result(done)["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no content[0].text in {:?}", completed_result(done)))
}

/// `content[0].text` of a synchronous result.
fn first_text_of(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .unwrap_or_else(|| panic!("no text content[0] in {:?}", result.content))
        .text
        .clone()
}

/// How Python prints a bool, so the texts match the seed's.
fn python_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ValueArg {
    value: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Message {
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct X {
    x: i64,
}

/// The seed's `child_server` fixture.
fn child_server() -> Server {
    let mcp = Server::new("child-server");
    mcp.add_tool(
        ToolDef::new("multiply", |Args(Pair { a, b }): Args<Pair>| async move {
            a * b
        })
        .task(true),
    )
    .unwrap();
    mcp
        .add_tool(
            ToolDef::new(
                "sync_child_tool",
                |Args(Message { message }): Args<Message>| async move {
                    format!("child sync: {message}")
                },
            )
            .task(false),
        )
        .unwrap();
    mcp
}

/// The seed's `parent_server` fixture: tasks registered, `parent_tool`, the child under
/// `child`.
fn parent_server(child: &Server) -> Server {
    let parent = Server::new("parent-server");
    parent.add_extension(TasksExtension::new()).unwrap();
    parent
        .add_tool(
            ToolDef::new(
                "parent_tool",
                |Args(ValueArg { value }): Args<ValueArg>| async move { value * 10 },
            )
            .task(true),
        )
        .unwrap();
    parent.mount(child, "child").unwrap();
    parent
}

// ------------------------------------------------------------------ TestMountedToolTasks

#[tokio::test]
async fn mounted_tool_tasks_mounted_tool_task_returns_correct_result() -> TestResult {
    let parent = parent_server(&child_server());
    let running = running_task_server(&parent).await?;

    let created = submit(&parent, "child_multiply", json!({"a": 8, "b": 9})).await;
    assert_eq!(created.task.status, TaskStatus::Working);
    let done = wait(&parent, &created).await;
    assert_eq!(done.task.task.status, TaskStatus::Completed);
    assert_eq!(structured_result(&done), &json!(72));

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn mounted_tool_tasks_mounted_and_parent_tasks_both_work() -> TestResult {
    let parent = parent_server(&child_server());
    let running = running_task_server(&parent).await?;

    let parent_created = submit(&parent, "parent_tool", json!({"value": 5})).await;
    let child_created = submit(&parent, "child_multiply", json!({"a": 2, "b": 3})).await;
    let parent_done = wait(&parent, &parent_created).await;
    let child_done = wait(&parent, &child_created).await;
    assert_eq!(structured_result(&parent_done), &json!(50));
    assert_eq!(structured_result(&child_done), &json!(6));

    running.stop().await;
    Ok(())
}

/// A `task(false)` mounted tool runs synchronously even when the client opts in.
#[tokio::test]
async fn mounted_tool_tasks_sync_only_mounted_tool_runs_synchronously() -> TestResult {
    let parent = parent_server(&child_server());
    let running = running_task_server(&parent).await?;

    let response = TaskClient::new(&parent)
        .call("child_sync_child_tool", json!({"message": "hi"}))
        .await?;
    let result = match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("an opted-in call to a forbidden tool must not be tasked: {other:?}"),
    };
    assert!(
        first_text_of(&result).contains("child sync: hi"),
        "{:?}",
        result.content
    );

    running.stop().await;
    Ok(())
}

// ------------------------------------------------------ TestRemoteWorkerServerResolution

/// A worker (in any process) re-resolves the owning child from the root by the
/// snapshotted tool name instead of falling back to the root.
#[tokio::test]
async fn remote_worker_server_resolution_resolve_owning_server_recovers_mounted_child() -> TestResult
{
    let child = child_server();
    let parent = parent_server(&child);

    let tool = parent
        .get_tool("child_multiply", None)
        .expect("child_multiply is listed on the parent");
    assert!(tool.owner().ptr_eq(&child), "owner is {:?}", tool.owner());

    let snapshot = |tool: Option<&str>| TaskSnapshot {
        tool: tool.map(str::to_owned),
        ..Default::default()
    };
    let resolved = resolve_owning_server(&parent, &snapshot(Some("child_multiply")))
        .expect("the mounted child is recovered");
    assert!(resolved.ptr_eq(tool.owner()));
    assert!(resolved.ptr_eq(&child));

    // A parent-owned (unmounted) tool resolves to None so the caller falls back to the root,
    // and a missing name is likewise None.
    assert!(resolve_owning_server(&parent, &snapshot(Some("parent_tool"))).is_none());
    assert!(resolve_owning_server(&parent, &snapshot(Some("does_not_exist"))).is_none());
    assert!(resolve_owning_server(&parent, &TaskSnapshot::default()).is_none());
    Ok(())
}

/// Two versions of a mounted tool name resolve to their own child server.
#[tokio::test]
async fn remote_worker_server_resolution_resolve_owning_server_respects_version() -> TestResult {
    let child_v1 = Server::new("child-v1");
    child_v1.add_tool(
        ToolDef::new("calc", || async { "v1" })
            .version("1.0")
            .task(true),
    )?;
    let child_v2 = Server::new("child-v2");
    child_v2.add_tool(
        ToolDef::new("calc", || async { "v2" })
            .version("2.0")
            .task(true),
    )?;

    let parent = Server::new("parent-versions");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child_v1, None)?;
    parent.mount(&child_v2, None)?;

    let snapshot = |version: &str| TaskSnapshot {
        tool: Some("calc".to_owned()),
        version: Some(version.to_owned()),
        ..Default::default()
    };
    let resolved_v1 = resolve_owning_server(&parent, &snapshot("1.0")).expect("calc@1.0 resolves");
    let resolved_v2 = resolve_owning_server(&parent, &snapshot("2.0")).expect("calc@2.0 resolves");
    assert!(resolved_v1.ptr_eq(&child_v1), "calc@1.0 -> {resolved_v1:?}");
    assert!(resolved_v2.ptr_eq(&child_v2), "calc@2.0 -> {resolved_v2:?}");
    Ok(())
}

// -------------------------------------------------------- TestMountedToolTasksNoPrefix

#[tokio::test]
async fn mounted_tool_tasks_no_prefix_mounted_tool_without_prefix_works() -> TestResult {
    let parent = Server::new("parent-no-prefix");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child_server(), None)?; // no prefix
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "multiply", json!({"a": 5, "b": 6})).await;
    assert_eq!(structured_result(&done), &json!(30));

    running.stop().await;
    Ok(())
}

// --------------------------------------------------------- TestMountedTaskDependencies

#[tokio::test]
async fn mounted_task_dependencies_mounted_task_receives_docket_dependency() -> TestResult {
    let child = Server::new("dep-child");
    // The seed's `CurrentDocket()` is the `Engine` extractor: the root's engine, even on a
    // mounted child, which owns none.
    child.add_tool(
        ToolDef::new(
            "tool_with_docket",
            |cx: Context, engine: Engine| async move {
                let root_engine = cx
                    .root()
                    .extension_as::<TasksExtension>()
                    .and_then(|extension| extension.engine());
                let available =
                    root_engine.is_some_and(|root| Arc::ptr_eq(root.backend(), engine.backend()));
                format!("docket available: {}", python_bool(available))
            },
        )
        .task(true),
    )?;

    let parent = Server::new("dep-parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child, "child")?;
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "child_tool_with_docket", json!({})).await;
    assert!(
        first_text(&done).contains("docket available: True"),
        "{:?}",
        completed_result(&done)
    );

    running.stop().await;
    Ok(())
}

// ------------------------------------------------------- TestMountedTaskServerContext

#[tokio::test]
async fn mounted_task_server_context_current_fastmcp_resolves_to_child_server() -> TestResult {
    let child = Server::new("child");
    child.add_tool(
        ToolDef::new(
            "whoami",
            |CurrentServer(server): CurrentServer| async move {
                format!("server name: {}", server.name())
            },
        )
        .task(true),
    )?;

    let parent = Server::new("parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child, "child")?;
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "child_whoami", json!({})).await;
    assert!(
        first_text(&done).contains("server name: child"),
        "{:?}",
        completed_result(&done)
    );

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn mounted_task_server_context_context_fastmcp_resolves_to_child_server() -> TestResult {
    let child = Server::new("child");
    child.add_tool(
        ToolDef::new("whoami_ctx", |cx: Context| async move {
            format!("context server: {}", cx.server().name())
        })
        .task(true),
    )?;

    let parent = Server::new("parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child, "child")?;
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "child_whoami_ctx", json!({})).await;
    assert!(
        first_text(&done).contains("context server: child"),
        "{:?}",
        completed_result(&done)
    );

    running.stop().await;
    Ok(())
}

// ------------------------------------------------------------------- TestMultipleMounts

#[tokio::test]
async fn multiple_mounts_tasks_work_with_multiple_mounts() -> TestResult {
    let child1 = Server::new("child1");
    let child2 = Server::new("child2");
    child1.add_tool(
        ToolDef::new(
            "add",
            |Args(Pair { a, b }): Args<Pair>| async move { a + b },
        )
        .task(true),
    )?;
    child2.add_tool(
        ToolDef::new("subtract", |Args(Pair { a, b }): Args<Pair>| async move {
            a - b
        })
        .task(true),
    )?;

    let parent = Server::new("multi-parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child1, "math1")?;
    parent.mount(&child2, "math2")?;
    let running = running_task_server(&parent).await?;

    let r1 = run(&parent, "math1_add", json!({"a": 10, "b": 5})).await;
    let r2 = run(&parent, "math2_subtract", json!({"a": 10, "b": 5})).await;
    assert_eq!(structured_result(&r1), &json!(15));
    assert_eq!(structured_result(&r2), &json!(5));

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn multiple_mounts_same_function_names_do_not_collide() -> TestResult {
    let child1 = Server::new("child1");
    let child2 = Server::new("child2");
    child1.add_tool(
        ToolDef::new(
            "process",
            |Args(ValueArg { value }): Args<ValueArg>| async move { value * 2 },
        )
        .task(true),
    )?;
    child2.add_tool(
        ToolDef::new(
            "process",
            |Args(ValueArg { value }): Args<ValueArg>| async move { value * 3 },
        )
        .task(true),
    )?;

    let parent = Server::new("parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child1, "c1")?;
    parent.mount(&child2, "c2")?;
    let running = running_task_server(&parent).await?;

    let r1 = run(&parent, "c1_process", json!({"value": 10})).await;
    let r2 = run(&parent, "c2_process", json!({"value": 10})).await;
    assert_eq!(structured_result(&r1), &json!(20));
    assert_eq!(structured_result(&r2), &json!(30));

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn multiple_mounts_nested_mount_prefix_accumulation() -> TestResult {
    let grandchild = Server::new("gc");
    let child = Server::new("child");
    let parent = Server::new("parent");
    parent.add_extension(TasksExtension::new())?;

    grandchild.add_tool(ToolDef::new("deep_tool", || async { "deep" }).task(true))?;
    child.mount(&grandchild, "gc")?;
    parent.mount(&child, "child")?;
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "child_gc_deep_tool", json!({})).await;
    assert_eq!(structured_result(&done), &json!("deep"));

    running.stop().await;
    Ok(())
}

// -------------------------------------------------------------- TestMountedTaskMetadata

#[tokio::test]
async fn mounted_task_metadata_mounted_tool_list_preserves_task_support_metadata() -> TestResult {
    let child = Server::new("child");
    child.add_tool(
        ToolDef::new("foo", || async {
            std::collections::BTreeMap::from([("ok".to_owned(), true)])
        })
        .task(true),
    )?;

    // No extension and no lifespan: the metadata comes from the declaration alone.
    let parent = Server::new("parent");
    parent.mount(&child, None)?;

    let child_tool = child
        .list_tools()
        .await?
        .into_iter()
        .find(|t| t.name() == "foo")
        .expect("foo is listed on the child");
    let parent_tool = parent
        .list_tools()
        .await?
        .into_iter()
        .find(|t| t.name() == "foo")
        .expect("foo is listed on the parent");

    let child_mcp = child_tool.descriptor();
    let parent_mcp = parent_tool.descriptor();
    let child_execution = child_mcp.execution.as_ref().expect("child execution");
    let parent_execution = parent_mcp.execution.as_ref().expect("parent execution");
    assert_eq!(child_execution.task_support, Some(TaskSupport::Optional));
    assert_eq!(parent_execution.task_support, Some(TaskSupport::Optional));
    assert_eq!(child_mcp.task_support(), TaskSupport::Optional);
    assert_eq!(parent_mcp.task_support(), TaskSupport::Optional);
    Ok(())
}

/// The seed builds `ProxyTool.from_mcp_tool(...)` from a backend tool definition and lists
/// it again: `execution.taskSupport` must survive, both on the proxy tool's own listing
/// entry and once it is registered on a server (rmcp's `Tool` would drop it).
#[tokio::test]
async fn mounted_task_metadata_proxy_tool_preserves_execution_metadata() -> TestResult {
    let mcp_tool = json!({
        "name": "remote_task_tool",
        "description": "A remote tool that supports tasks",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "optional"},
    });
    let remote: ToolDescriptor = serde_json::from_value(mcp_tool)?;
    let proxy = ProxyTool::from_mcp_tool(ClientFactory::unavailable(), remote);

    let result = proxy.descriptor();
    let execution = result.execution.as_ref().expect("execution survives");
    assert_eq!(execution.task_support, Some(TaskSupport::Optional));
    assert_eq!(
        serde_json::to_value(result)?["execution"]["taskSupport"],
        json!("optional")
    );

    let server = Server::new("proxy-host");
    server.add_tool(proxy.into_tool_def())?;
    let listed = server
        .get_tool("remote_task_tool", None)
        .expect("the proxy tool is registered")
        .descriptor();
    assert_eq!(listed.task_support(), TaskSupport::Optional);
    assert_eq!(
        serde_json::to_value(&listed)?["execution"]["taskSupport"],
        json!("optional")
    );
    Ok(())
}

// ----------------------------------------------------------- TestMountedTaskConfigModes

/// The seed's `parent_with_modes` fixture.
fn parent_with_modes() -> Server {
    let child = Server::new("child-modes");
    child
        .add_tool(
            ToolDef::new("optional_tool", || async { "optional result" })
                .task(TaskSupport::Optional),
        )
        .unwrap();
    child
        .add_tool(
            ToolDef::new("required_tool", || async { "required result" })
                .task(TaskSupport::Required),
        )
        .unwrap();
    child
        .add_tool(
            ToolDef::new("forbidden_tool", || async { "forbidden result" })
                .task(TaskSupport::Forbidden),
        )
        .unwrap();

    let parent = Server::new("parent-modes");
    parent.add_extension(TasksExtension::new()).unwrap();
    parent.mount(&child, "child").unwrap();
    parent
}

#[tokio::test]
async fn mounted_task_config_modes_optional_mode_sync_through_mount() -> TestResult {
    let parent = parent_with_modes();
    let running = running_task_server(&parent).await?;

    let result = reply::complete(
        call_tool_without_optin(&parent, "child_optional_tool", json!({})).await,
        "child_optional_tool without opt-in",
    );
    assert!(
        first_text_of(&result).contains("optional result"),
        "{:?}",
        result.content
    );

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn mounted_task_config_modes_optional_mode_task_through_mount() -> TestResult {
    let parent = parent_with_modes();
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "child_optional_tool", json!({})).await;
    assert_eq!(structured_result(&done), &json!("optional result"));

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn mounted_task_config_modes_required_mode_with_task_through_mount() -> TestResult {
    let parent = parent_with_modes();
    let running = running_task_server(&parent).await?;

    let done = run(&parent, "child_required_tool", json!({})).await;
    assert_eq!(structured_result(&done), &json!("required result"));

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn mounted_task_config_modes_required_mode_without_task_through_mount() -> TestResult {
    let parent = parent_with_modes();
    let running = running_task_server(&parent).await?;

    let error: ErrorData =
        match call_tool_without_optin(&parent, "child_required_tool", json!({})).await {
            Err(error) => error,
            Ok(other) => panic!("a required tool without opt-in must fail, got {other:?}"),
        };
    assert_eq!(error.code.0, codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(error.code.0, -32021);

    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn mounted_task_config_modes_forbidden_mode_sync_through_mount() -> TestResult {
    let parent = parent_with_modes();
    let running = running_task_server(&parent).await?;

    let result = reply::complete(
        call_tool_without_optin(&parent, "child_forbidden_tool", json!({})).await,
        "child_forbidden_tool without opt-in",
    );
    assert!(
        first_text_of(&result).contains("forbidden result"),
        "{:?}",
        result.content
    );

    running.stop().await;
    Ok(())
}

// ------------------------------------------------------ TestMiddlewareWithMountedTasks

/// The seed's `ToolTracingMiddleware` is `ferrymcp_test_helpers::middleware::CallTrace`:
/// `<name>:before` / `<name>:after` around `on_call_tool`.
/// For a tasked call, the root's middleware wraps the submission. The interceptor composes
/// at the registering (parent) server and short-circuits before delegating into the
/// mounted child, so child middleware does not wrap a tasked submission; the tool body runs
/// later in the worker.
#[tokio::test]
async fn middleware_with_mounted_tasks_root_middleware_wraps_task_submission() -> TestResult {
    let calls = Log::new();

    let grandchild = Server::new("Grandchild");
    let tool_calls = calls.clone();
    grandchild.add_tool(
        ToolDef::new("compute", move |Args(X { x }): Args<X>| {
            let calls = tool_calls.clone();
            async move {
                calls.push("grandchild:tool");
                x * 2
            }
        })
        .task(true),
    )?;
    grandchild.add_middleware(CallTrace::new("grandchild", &calls));
    let child = Server::new("Child");
    child.mount(&grandchild, "gc")?;
    child.add_middleware(CallTrace::new("child", &calls));
    let parent = Server::new("Parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child, "c")?;
    parent.add_middleware(CallTrace::new("parent", &calls));

    let running = running_task_server(&parent).await?;
    let created = submit(&parent, "c_gc_compute", json!({"x": 5})).await;
    let done = wait(&parent, &created).await;
    assert_eq!(structured_result(&done), &json!(10));
    running.stop().await;

    assert_eq!(
        calls.entries(),
        ["parent:before", "parent:after", "grandchild:tool"]
    );
    Ok(())
}

// ---------------------------------------------------------- TestMountedDocketOwnership

/// The parent owns the engine; the mounted child does not.
#[tokio::test]
async fn mounted_docket_ownership_mounted_child_does_not_own_docket() -> TestResult {
    let child = child_server();
    let parent = parent_server(&child);
    let running = running_task_server(&parent).await?;

    assert!(
        parent
            .extension_as::<TasksExtension>()
            .expect("the parent registers the tasks extension")
            .engine()
            .is_some()
    );
    assert!(child.extension_as::<TasksExtension>().is_none());

    running.stop().await;
    Ok(())
}

// ------------------------------------------------------ TestSlowMountedTaskCancellation

#[tokio::test]
async fn slow_mounted_task_cancellation_cancel_mounted_task() -> TestResult {
    let child = Server::new("child");
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = release.clone();
    child.add_tool(
        ToolDef::new("slow", move || {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                "done"
            }
        })
        .task(true),
    )?;

    let parent = Server::new("parent");
    parent.add_extension(TasksExtension::new())?;
    parent.mount(&child, "child")?;
    let running = running_task_server(&parent).await?;

    let created = submit(&parent, "child_slow", json!({})).await;
    cancel_task(&parent, &created.task.task_id).await?;
    // `notify_one` keeps a permit if the tool has not started waiting yet.
    release.notify_one();
    let done = wait_until(
        &parent,
        &created.task.task_id,
        &[TaskStatus::Cancelled, TaskStatus::Completed],
    )
    .await;
    assert!(
        matches!(
            done.task.task.status,
            TaskStatus::Cancelled | TaskStatus::Completed
        ),
        "final status {:?}",
        done.task.task.status
    );

    running.stop().await;
    Ok(())
}
