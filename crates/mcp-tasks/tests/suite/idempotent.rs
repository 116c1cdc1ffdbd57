//! Which tasks run again when their worker is lost: the tool's `LostWorker` policy decides
//! when set, else the tool's `idempotentHint` annotation; everything else fails with the
//! lost-worker message (issue 5, crash recovery).

use std::time::Duration;

use ferrymcp_core::{Server, ToolDef, types::ToolAnnotations};
use ferrymcp_tasks::{
    LostWorker, TasksConfig, TasksExtension,
    backend::{WorkerId, WriteAck},
};
use ferrymcp_test_helpers::tasks::TaskClient;
use ferrymcp_types::TaskStatus;
use serde_json::json;

fn server() -> Server {
    let server = Server::new("root");
    let tool = |name: &str| ToolDef::new(name.to_owned(), || async { "ran" });
    server
        .add_tool(tool("declared").task(true).data(LostWorker::Rerun))
        .unwrap();
    server
        .add_tool(
            tool("hinted")
                .annotations(ToolAnnotations::new().idempotent(true))
                .task(true),
        )
        .unwrap();
    server
        .add_tool(
            tool("overridden")
                .annotations(ToolAnnotations::new().idempotent(true))
                .task(true)
                .data(LostWorker::Fail),
        )
        .unwrap();
    server.add_tool(tool("plain").task(true)).unwrap();
    // No embedded worker: the test plays the worker that is lost.
    let config = TasksConfig {
        embedded_worker: false,
        ..TasksConfig::default()
    };
    server
        .add_extension(TasksExtension::with_config(config))
        .unwrap();
    server
}

#[tokio::test]
async fn a_lost_run_is_repeated_only_for_idempotent_tools() {
    let server = server();
    let running = server.start().await.unwrap();
    let tasks = TaskClient::new(&server);
    let backend = server
        .extension_as::<TasksExtension>()
        .and_then(|e| e.engine())
        .expect("a started engine")
        .backend()
        .clone();

    let mut ids = Vec::new();
    for tool in ["declared", "hinted", "overridden", "plain"] {
        let created = tasks.submit(tool, json!({})).await.unwrap();
        ids.push((tool, created.task.task_id));
    }
    let lost = WorkerId::new();
    let mut claimed = Vec::new();
    while claimed.len() < ids.len() {
        let batch = backend
            .claim(&lost, ids.len(), Duration::from_secs(5))
            .await
            .unwrap();
        assert!(!batch.is_empty(), "the submissions become claimable");
        claimed.extend(batch);
    }
    for run in &claimed {
        assert_eq!(run.attempt, 1);
        assert_eq!(
            backend.hand_back(&run.lease).await.unwrap(),
            WriteAck::Recorded
        );
    }

    for (tool, id) in &ids {
        let task = tasks.get(id).await.unwrap().task.task;
        match *tool {
            "declared" | "hinted" => assert_eq!(
                task.status,
                TaskStatus::Working,
                "{tool} is queued for another start"
            ),
            _ => {
                assert_eq!(task.status, TaskStatus::Failed, "{tool} is not re-run");
                assert_eq!(
                    task.status_message.as_deref(),
                    Some(ferrymcp_tasks::lost_worker::LOST_WORKER_MESSAGE),
                    "{tool}"
                );
            }
        }
    }
    let again = backend
        .claim(&WorkerId::new(), 4, Duration::from_secs(5))
        .await
        .unwrap();
    let mut rerun: Vec<String> = again.iter().map(|run| run.tool.clone()).collect();
    rerun.sort();
    assert_eq!(rerun, ["declared", "hinted"]);
    assert!(again.iter().all(|run| run.attempt == 2));
    running.stop().await;
}
