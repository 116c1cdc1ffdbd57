//! Tasks and authorization (AU18, AU19, AU20), in process on the memory engine: a task
//! belongs to the principal that submitted it, another principal's `tasks/*` requests are
//! answered exactly as for an unknown id, the worker runs the tool as the submitter (scopes
//! and claims included) without any raw token, and a task-augmented call of a tool the
//! caller may not use is refused before a task exists.

use std::{sync::Arc, time::Duration};

use ferrymcp::{
    MountOptions, Server, ToolCall, ToolDef,
    auth::{BearerToken, Principal},
    tasks::TasksExtension,
    types::{
        CallToolResponse, ErrorData, GetTaskResult, InputResponses, JsonObject, TaskPayload,
        TaskStatus,
    },
};
use ferrymcp_test_helpers::tasks::{TERMINAL, TaskClient, opted_in_scope, running_task_server};
use serde_json::{Value, json};
use tokio::sync::Notify;

const WAIT: Duration = Duration::from_secs(10);

fn alice() -> Principal {
    let mut claims = JsonObject::new();
    claims.insert("tenant".into(), "acme".into());
    claims.insert("email".into(), "alice@example.com".into());
    Principal::new("web-app")
        .with_issuer("https://as.example")
        .with_subject("alice")
        .with_scopes(["child", "tasks:run"])
        .with_claims(claims)
}

fn bob() -> Principal {
    Principal::new("web-app")
        .with_issuer("https://as.example")
        .with_subject("bob")
        .with_scopes(["child"])
}

/// The root (tasks registered) with a child mounted under `child` that requires `child`;
/// the child's `whoami` needs `tasks:run` too. `hold` waits for `release` before it ends.
fn server(release: Arc<Notify>) -> Server {
    let child = Server::new("child");
    child
        .add_tool(
            ToolDef::new("whoami", |p: Principal| async move {
                json!({
                    "issuer": p.issuer,
                    "client": p.client_id,
                    "subject": p.subject,
                    "scopes": p.scopes,
                    "claims": p.claims,
                })
            })
            .requires(["tasks:run"])
            .task(true),
        )
        .unwrap();
    child
        .add_tool(
            ToolDef::new("token", |t: Option<BearerToken>| async move { t.is_some() }).task(true),
        )
        .unwrap();
    let root = Server::new("root");
    root.add_extension(TasksExtension::new()).unwrap();
    root.add_tool(
        ToolDef::new("hold", move || {
            let release = Arc::clone(&release);
            async move {
                release.notified().await;
                "released"
            }
        })
        .task(true),
    )
    .unwrap();
    root.mount(
        &child,
        MountOptions::new().namespace("child").requires(["child"]),
    )
    .unwrap();
    root
}

fn completed(done: &GetTaskResult) -> &JsonObject {
    match &done.task.payload {
        TaskPayload::Completed { result } => result,
        other => panic!("expected a completed task, got {other:?}"),
    }
}

#[tokio::test]
async fn au19_another_principals_tasks_requests_answer_as_for_an_unknown_id() {
    let release = Arc::new(Notify::new());
    let root = server(Arc::clone(&release));
    let running = running_task_server(&root).await.unwrap();
    // A twin that never saw the task: what an unknown id gets.
    let twin = server(Arc::new(Notify::new()));
    let twin_running = running_task_server(&twin).await.unwrap();

    let created = TaskClient::new(&root)
        .as_caller(alice())
        .submit("hold", Value::Null)
        .await
        .unwrap();
    let id = created.task.task_id.as_str();

    for (who, client, unknown) in [
        (
            "bob",
            TaskClient::new(&root).as_caller(bob()),
            TaskClient::new(&twin).as_caller(bob()),
        ),
        ("anonymous", TaskClient::new(&root), TaskClient::new(&twin)),
    ] {
        let denied: ErrorData = client.get(id).await.unwrap_err();
        assert_eq!(
            denied,
            unknown.get(id).await.unwrap_err(),
            "{who}: tasks/get"
        );
        assert_eq!(denied.code.0, -32602, "{who}");
        assert_eq!(
            client
                .update(id, InputResponses::default())
                .await
                .unwrap_err(),
            unknown
                .update(id, InputResponses::default())
                .await
                .unwrap_err(),
            "{who}: tasks/update"
        );
        assert_eq!(
            client.cancel(id).await.unwrap_err(),
            unknown.cancel(id).await.unwrap_err(),
            "{who}: tasks/cancel"
        );
    }

    // Bob's cancel did nothing: alice's task is still hers and completes.
    let alice_client = TaskClient::new(&root).as_caller(alice());
    assert_eq!(
        alice_client.get(id).await.unwrap().task.task.status,
        TaskStatus::Working
    );
    release.notify_one();
    let done = alice_client.wait(id, &TERMINAL, WAIT).await.unwrap();
    assert_eq!(done.task.task.status, TaskStatus::Completed);

    twin_running.stop().await;
    running.stop().await;
}

#[tokio::test]
async fn au20_the_worker_runs_the_tool_as_the_submitter_with_scopes_and_claims() {
    let root = server(Arc::new(Notify::new()));
    let running = running_task_server(&root).await.unwrap();

    let done = TaskClient::new(&root)
        .as_caller(alice())
        .run("child_whoami", Value::Null)
        .await
        .unwrap();
    assert_eq!(done.task.task.status, TaskStatus::Completed);
    assert_eq!(
        completed(&done)["structuredContent"],
        json!({
            "issuer": "https://as.example",
            "client": "web-app",
            "subject": "alice",
            "scopes": ["child", "tasks:run"],
            "claims": { "tenant": "acme", "email": "alice@example.com" },
        })
    );
    running.stop().await;
}

#[tokio::test]
async fn au20_the_worker_never_gets_the_submitters_raw_token() {
    let root = server(Arc::new(Notify::new()));
    let running = running_task_server(&root).await.unwrap();

    // The submission carries a token, as the HTTP resource server leaves it.
    let scope = opted_in_scope(Some(&alice()), JsonObject::new())
        .with_extension(BearerToken::new("raw-access-token"));
    let submitted = root
        .call(ToolCall::new("child_token").scope(scope))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = submitted else {
        panic!("expected a task, got {submitted:?}");
    };
    // Run by the worker, the tool has no token: nothing stored it with the task.
    let done = TaskClient::new(&root)
        .as_caller(alice())
        .wait(&created.task.task_id, &TERMINAL, WAIT)
        .await
        .unwrap();
    assert_eq!(completed(&done)["structuredContent"]["result"], false);
    assert!(
        !serde_json::to_string(&done)
            .unwrap()
            .contains("raw-access-token")
    );

    // The same tool called directly with a token sees it.
    let direct = root
        .call(
            ToolCall::new("child_token")
                .scope(
                    ferrymcp::RequestScope::new()
                        .with_principal(alice())
                        .with_extension(BearerToken::new("t")),
                )
                .without_middleware(),
        )
        .await
        .unwrap();
    let CallToolResponse::Complete(direct) = direct else {
        panic!("expected a result");
    };
    assert_eq!(direct.structured_content.unwrap()["result"], true);
    running.stop().await;
}

#[tokio::test]
async fn au18_a_task_call_of_a_tool_the_caller_may_not_use_is_refused_and_creates_no_task() {
    let root = server(Arc::new(Notify::new()));
    let running = running_task_server(&root).await.unwrap();
    let twin = Server::new("root");
    twin.add_extension(TasksExtension::new()).unwrap();
    let twin_running = running_task_server(&twin).await.unwrap();
    let mut changes = root
        .extension_as::<TasksExtension>()
        .and_then(|e| e.engine())
        .and_then(|engine| engine.backend().changes())
        .expect("the memory engine announces changes");

    // Bob has `child` but not `tasks:run`: as if the tool did not exist.
    let refused = TaskClient::new(&root)
        .as_caller(bob())
        .call("child_whoami", Value::Null)
        .await
        .unwrap_err();
    let unknown = TaskClient::new(&twin)
        .as_caller(bob())
        .call("child_whoami", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(refused, unknown);

    // The first task event after the refusal is alice's task: bob's call made none.
    let created = TaskClient::new(&root)
        .as_caller(alice())
        .submit("child_whoami", Value::Null)
        .await
        .unwrap();
    let first = tokio::time::timeout(WAIT, changes.recv())
        .await
        .expect("a task event")
        .unwrap();
    assert_eq!(first, created.task.task_id);

    twin_running.stop().await;
    running.stop().await;
}
