//! A foreign upstream: FastMCP (PyPI `fastmcp` 4.1.x, `tests/fastmcp/upstream.py`) over stdio,
//! proxied. Its 2025-11-25 listing carries `execution.taskSupport`, which must survive; calls,
//! tool errors and bad input behave as direct; on 2026-07-28 its tasks pass through with
//! signed ids; a tool it adds while serving is announced to the gateway's clients and
//! callable before any list (G18).
//!
//! The interpreter is `$FERRYMCP_FASTMCP_PYTHON`, else `target/fastmcp-venv/bin/python`, which
//! `.ci/setup` creates. A missing venv fails these tests with that instruction.

use crate::support::proxy as support;

use std::path::PathBuf;

use ferrymcp::{
    Server,
    types::{ErrorCode, GetTaskParams, TaskStatus, TaskSupport},
};
use ferrymcp_proxy::{
    CommandTarget, ProxyServer, ProxyTasks, Upstream, UpstreamOptions, task_ids::TaskIdSigner,
};
use ferrymcp_test_helpers::{
    client::{ClientEvent, Lifecycle, connect, in_memory, recording_in_memory},
    wire::spawn_stdio,
};
use rmcp::ServiceError;
use serde_json::{Value, json};
use support::{call, poll_until, submit};

/// The venv's interpreter. A missing venv fails the test (never a skip), saying how to get it.
fn python() -> PathBuf {
    let path = std::env::var_os("FERRYMCP_FASTMCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/fastmcp-venv/bin/python")
        });
    assert!(
        path.exists(),
        "{} is missing: run `bash .ci/setup` once (it creates the FastMCP venv), or point \
         FERRYMCP_FASTMCP_PYTHON at a Python with fastmcp[tasks] 4.1",
        path.display()
    );
    path
}

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fastmcp/upstream.py")
        .to_string_lossy()
        .into_owned()
}

fn upstream(python: &std::path::Path, options: UpstreamOptions) -> Upstream {
    Upstream::command(
        "fastmcp",
        CommandTarget::new(python.to_string_lossy()).arg(script()),
    )
    .with_options(options)
}

async fn gateway(upstream: &Upstream) -> Server {
    let proxy = ProxyServer::new(upstream.clone())
        .build()
        .await
        .expect("proxy FastMCP");
    let root = Server::new("gateway");
    root.mount(&proxy, "py").expect("mount");
    let tasks = ProxyTasks::new()
        .expect("key")
        .with_local(ferrymcp::tasks::TasksExtension::new());
    tasks.register(upstream);
    root.add_extension(tasks).expect("tasks");
    root
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_fastmcp_listing_keeps_every_field_and_calls_behave_as_direct() {
    let python = python();
    let upstream = upstream(&python, UpstreamOptions::default().legacy_handshake());
    let root = gateway(&upstream).await;

    // execution.taskSupport survived rmcp's parser (the stdio reader keeps it).
    let slow = root.get_tool("py_slow_double", None).expect("proxied");
    assert_eq!(slow.descriptor().task_support(), TaskSupport::Optional);
    let greet = root
        .get_tool("py_greet", None)
        .expect("proxied")
        .descriptor();
    assert_eq!(greet.tool.title.as_deref(), Some("Greeter"));
    assert_eq!(
        greet.tool.annotations.and_then(|a| a.read_only_hint),
        Some(true)
    );
    assert_eq!(
        greet
            .tool
            .meta
            .as_ref()
            .map(|m| m["fastmcp"]["tags"].clone()),
        Some(json!(["people"]))
    );

    let mut command = tokio::process::Command::new(&python);
    command.arg(script()).stderr(std::process::Stdio::null());
    let child = spawn_stdio(&mut command).expect("spawn FastMCP");
    let direct = connect(child.transport, Lifecycle::Legacy, false)
        .await
        .expect("a direct client");
    let pair = in_memory(root, Lifecycle::Legacy, false)
        .await
        .expect("a front client");

    let mut direct_tools: Vec<Value> = direct
        .list_all_tools()
        .await
        .expect("direct tools/list")
        .iter()
        .map(|t| serde_json::to_value(t).expect("tool"))
        .collect();
    for tool in &mut direct_tools {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        tool["name"] = json!(format!("py_{name}"));
    }
    let proxied: Vec<Value> = pair
        .client
        .list_all_tools()
        .await
        .expect("proxied tools/list")
        .iter()
        .map(|t| serde_json::to_value(t).expect("tool"))
        .collect();
    assert_eq!(proxied, direct_tools);

    for (tool, arguments) in [
        ("greet", json!({"name": "Ada"})),
        ("divide", json!({"a": 1, "b": 4})),
        ("divide", json!({"a": 1, "b": 0})),
        ("divide", json!({"a": "one", "b": 4})),
        ("greet", json!({})),
        ("slow_double", json!({"value": 21})),
    ] {
        let expected = call(&direct, tool, arguments.clone()).await;
        let got = call(&pair.client, &format!("py_{tool}"), arguments.clone()).await;
        assert_eq!(got, expected, "{tool} {arguments}");
    }
    direct.cancel().await.ok();
    pair.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fastmcp_tasks_pass_through_on_2026_07_28() {
    let python = python();
    let upstream = upstream(&python, UpstreamOptions::default());
    assert!(
        upstream.supports_tasks().await.expect("connect"),
        "FastMCP advertises the tasks extension on 2026-07-28"
    );
    let root = gateway(&upstream).await;
    let pair = in_memory(root, Lifecycle::Modern, true)
        .await
        .expect("a front client");
    let id = submit(&pair.client, "py_slow_double", json!({"value": 21}))
        .await
        .task
        .task_id;
    assert!(TaskIdSigner::looks_like(&id), "{id}");
    let done = poll_until(&pair.client, &id, TaskStatus::Completed).await;
    let value = serde_json::to_value(&done).expect("serialize");
    assert_eq!(value["taskId"], json!(id));
    assert_eq!(
        value["result"]["structuredContent"]["result"], 42,
        "{value}"
    );
    match pair
        .client
        .get_task(GetTaskParams::new("mcpx2.forged"))
        .await
    {
        Err(ServiceError::McpError(error)) => assert_eq!(error.code, ErrorCode::INVALID_PARAMS),
        other => panic!("expected -32602, got {other:?}"),
    }
    pair.client.cancel().await.ok();
}

/// A tool FastMCP adds while serving: on 2025-11-25 its `notifications/tools/list_changed`
/// reaches the gateway's clients (the proxy reads the list again on it), and in both eras the
/// new tool can be called before anyone lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_a_tool_fastmcp_adds_while_serving_is_announced_and_callable_through_the_gateway() {
    let python = python();
    for legacy in [true, false] {
        let options = match legacy {
            true => UpstreamOptions::default().legacy_handshake(),
            false => UpstreamOptions::default(),
        };
        let upstream = upstream(&python, options);
        let root = gateway(&upstream).await;
        let (client, mut events) = recording_in_memory(root, Lifecycle::Legacy)
            .await
            .expect("a front client");
        let learned = call(&client, "py_learn", json!({"name": "echo_me"})).await;
        assert_eq!(
            learned["complete"]["content"][0]["text"], "learned echo_me",
            "{learned}"
        );
        if legacy {
            let announced = tokio::time::timeout(std::time::Duration::from_secs(20), async {
                while let Some(event) = events.recv().await {
                    if event == ClientEvent::ToolsChanged {
                        return true;
                    }
                }
                false
            })
            .await;
            assert_eq!(announced, Ok(true), "tools/list_changed reached the client");
        }
        let echoed = call(&client, "py_echo_me", json!({})).await;
        assert_eq!(
            echoed["complete"]["content"][0]["text"], "echo_me",
            "legacy: {legacy}: {echoed}"
        );
        client.cancel().await.ok();
    }
}
