//! `Middleware::on_run_tool`: the hook around a task's background run, in process on the
//! embedded engine. It runs at every server from the root down to the tool's owner, with
//! the submitting principal and the tool's identity (name in each namespace, exact
//! version, tags); the submission's `on_call_tool` trace does not see it, and a
//! synchronous call never reaches it. The same over Redis with worker processes is in
//! `tests/suite/auth_redis.rs`. And `middleware::from_fn`: closures around one hook each.

use std::time::Duration;

use async_trait::async_trait;
use ferrymcp::{
    Args, CallTool, Message, Middleware, Next, RunTool, Server, ToolCall, ToolDef,
    auth::Principal,
    middleware::from_fn,
    tasks::TasksExtension,
    types::{CallToolResponse, ErrorData, GetTaskResult, TaskPayload},
};
use ferrymcp_test_helpers::{
    middleware::{CallTrace, Log, RunTrace},
    tasks::{TERMINAL, TaskClient},
};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
struct X {
    x: i64,
}

/// Parent (tasks extension) ⊃ child `c` ⊃ grandchild `gc` with the task tool `compute`
/// (version 2, tag `heavy`); each server traces its calls and its runs into `log`.
fn tree(log: &Log) -> Server {
    let grandchild = Server::new("grandchild");
    let tool_log = log.clone();
    grandchild
        .add_tool(
            ToolDef::new("compute", move |Args(X { x }): Args<X>| {
                let log = tool_log.clone();
                async move {
                    log.push("grandchild:tool");
                    x * 2
                }
            })
            .version(2)
            .tag("heavy")
            .task(true),
        )
        .expect("compute");
    grandchild.add_middleware(CallTrace::new("grandchild", log));
    grandchild.add_middleware(RunTrace::new("grandchild", log));
    let child = Server::new("child");
    child.mount(&grandchild, "gc").expect("mount gc");
    child.add_middleware(CallTrace::new("child", log));
    child.add_middleware(RunTrace::new("child", log));
    let parent = Server::new("parent");
    parent
        .add_extension(TasksExtension::new())
        .expect("tasks extension");
    parent.mount(&child, "c").expect("mount c");
    parent.add_middleware(CallTrace::new("parent", log));
    parent.add_middleware(RunTrace::new("parent", log));
    parent
}

async fn finish(client: &TaskClient<'_>, task: &str) -> GetTaskResult {
    client
        .wait(task, &TERMINAL, Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("task {task}: {}", e.message))
}

#[tokio::test]
async fn run_hook_wraps_the_run_at_every_level_with_principal_and_tool_identity() {
    let log = Log::new();
    let parent = tree(&log);
    let running = parent.start().await.expect("start");
    let client = TaskClient::new(&parent).as_caller(Principal::new("alice"));

    let created = client
        .submit("c_gc_compute", json!({"x": 5}))
        .await
        .expect("submitted");
    let id = created.task.task_id;
    let done = finish(&client, &id).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("completed, got {:?}", done.task.payload);
    };
    assert_eq!(result["structuredContent"]["result"], json!(10));
    running.stop().await;

    let entries = log.entries();
    let (runs, submission): (Vec<String>, Vec<String>) = entries
        .iter()
        .cloned()
        .partition(|entry| entry.contains(":run:"));
    // The seed's submission trace, unchanged by the run hooks.
    assert_eq!(
        submission,
        ["parent:before", "parent:after", "grandchild:tool"]
    );
    assert_eq!(
        runs,
        [
            format!("parent:run:before c_gc_compute {id} alice"),
            format!("child:run:before gc_compute {id} alice"),
            format!("grandchild:run:before compute {id} alice"),
            "grandchild:run:after compute ok".to_owned(),
            "child:run:after gc_compute ok".to_owned(),
            "parent:run:after c_gc_compute ok".to_owned(),
        ]
    );
    // The tool ran inside the innermost run hook.
    let at = |wanted: &str| entries.iter().position(|e| e == wanted).expect(wanted);
    let tool = at("grandchild:tool");
    assert!(at(&format!("grandchild:run:before compute {id} alice")) < tool);
    assert!(tool < at("grandchild:run:after compute ok"));
}

#[tokio::test]
async fn a_synchronous_call_never_reaches_the_run_hook() {
    let log = Log::new();
    let parent = tree(&log);
    let running = parent.start().await.expect("start");

    let reply = parent
        .call_tool("c_gc_compute", json!({"x": 4}))
        .await
        .expect("a synchronous call");
    assert!(matches!(reply, CallToolResponse::Complete(_)), "{reply:?}");
    running.stop().await;

    assert_eq!(
        log.entries(),
        [
            "parent:before",
            "child:before",
            "grandchild:before",
            "grandchild:tool",
            "grandchild:after",
            "child:after",
            "parent:after",
        ]
    );
}

/// Refuses runs of tools tagged `heavy` at version 2 or later, naming what it saw.
struct HeavyPolicy;

#[async_trait]
impl Middleware for HeavyPolicy {
    async fn on_run_tool(
        &self,
        run: RunTool,
        next: Next<'_, RunTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = run.tool();
        let version = tool.version().map(|v| v.as_str().to_owned());
        if tool.tags().contains("heavy") && version.as_deref() == Some("2") {
            return Err(ErrorData::invalid_request(
                format!(
                    "policy: {} v{} is not run for {}",
                    tool.name(),
                    version.unwrap_or_default(),
                    run.principal().map_or("anyone", |p| p.client_id.as_str())
                ),
                None,
            ));
        }
        next.run(run).await
    }
}

#[tokio::test]
async fn a_run_hook_that_refuses_fails_the_task_with_its_error_and_the_tool_never_runs() {
    let log = Log::new();
    let parent = tree(&log);
    // On the child: it sees the tool under the child's namespace.
    let child = parent.mounted().into_iter().next().expect("the child");
    child.add_middleware(HeavyPolicy);
    let running = parent.start().await.expect("start");
    let client = TaskClient::new(&parent).as_caller(Principal::new("bob"));

    let created = client
        .submit("c_gc_compute", json!({"x": 1}))
        .await
        .expect("the submission is accepted: the policy judges runs");
    let done = finish(&client, &created.task.task_id).await;
    running.stop().await;

    let TaskPayload::Failed { error } = &done.task.payload else {
        panic!("failed, got {:?}", done.task.payload);
    };
    assert_eq!(error["code"], json!(-32600), "{error:?}");
    assert_eq!(
        error["message"],
        json!("policy: gc_compute v2 is not run for bob")
    );
    assert!(
        !log.entries().iter().any(|e| e == "grandchild:tool"),
        "{:?}",
        log.entries()
    );
}

#[tokio::test]
async fn run_in_background_without_middleware_skips_the_hooks() {
    let log = Log::new();
    let parent = tree(&log);

    let reply = parent
        .run_in_background(
            "run-1",
            ToolCall::new("c_gc_compute")
                .arguments(json!({"x": 3}))
                .without_middleware(),
        )
        .await
        .expect("ran");
    let CallToolResponse::Complete(result) = reply else {
        panic!("a result, got {reply:?}");
    };
    assert_eq!(result.structured_content, Some(json!({"result": 6})));
    assert_eq!(log.entries(), ["grandchild:tool"]);

    log.clear();
    let unknown = parent
        .run_in_background(
            "run-2",
            ToolCall::new("c_gc_nothing").arguments(Value::Null),
        )
        .await
        .expect_err("an unknown tool");
    assert!(unknown.message.contains("c_gc_nothing"), "{unknown:?}");
    assert!(log.entries().is_empty(), "{:?}", log.entries());
}

#[tokio::test]
async fn from_fn_closures_wrap_the_hook_their_message_type_names() {
    let log = Log::new();
    let parent = tree(&log);
    let (calls, runs, messages) = (log.clone(), log.clone(), log.clone());
    // Doubles `x` on the way in, at the parent's namespace.
    parent.add_middleware(from_fn(
        move |mut call: CallTool, next: Next<'_, CallTool>| {
            let log = calls.clone();
            Box::pin(async move {
                log.push(format!("fn:call {}", call.name));
                if let Some(x) = call.arguments.get("x").and_then(Value::as_i64) {
                    call.arguments.insert("x".into(), json!(x * 2));
                }
                next.run(call).await
            })
        },
    ));
    parent.add_middleware(from_fn(move |run: RunTool, next: Next<'_, RunTool>| {
        let log = runs.clone();
        Box::pin(async move {
            log.push(format!("fn:run {}", run.tool().name()));
            next.run(run).await
        })
    }));
    parent.add_middleware(from_fn(move |message: Message, next: Next<'_>| {
        let log = messages.clone();
        Box::pin(async move {
            if message.method() == "tools/call" {
                log.push("fn:message tools/call");
            }
            next.run(message).await
        })
    }));
    let running = parent.start().await.expect("start");
    let client = TaskClient::new(&parent);

    let created = client
        .submit("c_gc_compute", json!({"x": 5}))
        .await
        .expect("submitted");
    let done = finish(&client, &created.task.task_id).await;
    running.stop().await;

    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("completed, got {:?}", done.task.payload);
    };
    // 5, doubled by the call hook, then doubled by the tool.
    assert_eq!(result["structuredContent"]["result"], json!(20));
    let fns: Vec<String> = log
        .entries()
        .into_iter()
        .filter(|e| e.starts_with("fn:"))
        .collect();
    assert_eq!(
        fns,
        [
            "fn:call c_gc_compute",
            "fn:message tools/call",
            "fn:run c_gc_compute"
        ]
    );
}
