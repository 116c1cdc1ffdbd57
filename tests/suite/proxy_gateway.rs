//! The gateway config (`ferrymcp_proxy::gateway`) composing two demos, one over stdio and one over
//! HTTP; local tasks for a proxied tool whose upstream has none.

use crate::common;
use crate::support::proxy as support;

use std::time::{Duration, Instant};

use ferrymcp::{
    Server,
    tasks::TasksExtension,
    types::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskStatus},
};
use ferrymcp_proxy::{ProxyServer, ProxyTasks, Upstream, gateway::GatewayConfig};
use ferrymcp_test_helpers::client::{
    ClientEvent, Lifecycle, connect, in_memory, recording_in_memory,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use support::{call, poll_until, submit};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_composes_a_stdio_and_an_http_server() {
    let http = common::spawn_demo_http().await;
    let config = GatewayConfig::from_toml(&format!(
        r#"
        name = "composed"
        [tasks]
        url = "memory://"

        [[upstream]]
        namespace = "local"
        command = {command:?}
        args = ["--stdio"]

        [[upstream]]
        namespace = "remote"
        url = {url:?}
        headers = {{ "X-Team" = "tests" }}
        call_timeout_ms = 5000
        "#,
        command = common::demo_binary().to_string_lossy(),
        url = http.url,
    ))
    .expect("a valid config");
    let server = config.build().await.expect("the gateway builds");
    let pair = in_memory(server, Lifecycle::Modern, false)
        .await
        .expect("connect");
    let names: Vec<String> = pair
        .client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for expected in [
        "local_add",
        "local_child_echo",
        "remote_add",
        "remote_sleep_task",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    for name in ["local_add", "remote_add"] {
        let reply = pair
            .client
            .call_tool_once(
                CallToolRequestParams::new(name).with_arguments(
                    json!({"a": 5, "b": 6})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            )
            .await
            .expect("tools/call");
        let CallToolResponse::Complete(result) = reply else {
            panic!("{name}: {reply:?}")
        };
        assert_eq!(result.structured_content.expect("structured")["result"], 11);
    }
    pair.client.cancel().await.ok();
}

#[tokio::test]
async fn a_bad_config_is_a_clear_error() {
    let error = GatewayConfig::from_toml("[[upstream]]\nnamespace = \"x\"")
        .expect("parses")
        .build()
        .await
        .expect_err("no command nor url");
    assert!(error.to_string().contains("upstream 'x'"), "{error}");
    let unreachable = GatewayConfig::from_toml(
        "[[upstream]]\nnamespace = \"x\"\ncommand = \"/nonexistent/mcp-server\"",
    )
    .expect("parses")
    .build()
    .await
    .expect_err("cannot spawn");
    assert!(
        unreachable.to_string().contains("could not connect"),
        "{unreachable}"
    );
}

/// A remote upstream that is down when the gateway starts does not stop it: the gateway serves
/// the others, and the late one's tools appear (with `tools/list_changed`) once it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a28_a_remote_upstream_down_at_start_is_mounted_once_it_answers() {
    let port = common::free_port();
    let config = GatewayConfig::from_toml(&format!(
        r#"
        [[upstream]]
        namespace = "local"
        command = {command:?}
        args = ["--stdio"]

        [[upstream]]
        namespace = "late"
        url = "http://127.0.0.1:{port}/mcp"
        call_timeout_ms = 5000
        "#,
        command = common::demo_binary().to_string_lossy(),
    ))
    .expect("a valid config");
    let server = config
        .build()
        .await
        .expect("the gateway builds while an upstream is down");
    let (client, mut events) = recording_in_memory(server, Lifecycle::Legacy)
        .await
        .expect("connect");
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let before = names(client.list_all_tools().await.expect("tools/list"));
    assert!(before.iter().any(|n| n == "local_add"), "{before:?}");
    assert!(!before.iter().any(|n| n.starts_with("late_")), "{before:?}");

    let _late = common::spawn_demo_http_on(port, &[], &[]).await;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("tools/list_changed once the upstream answers")
            .expect("the client is alive");
        if event == ClientEvent::ToolsChanged {
            break;
        }
    }
    let after = names(client.list_all_tools().await.expect("tools/list"));
    assert!(after.iter().any(|n| n == "late_add"), "{after:?}");
    let reply = client
        .call_tool(
            CallToolRequestParams::new("late_add")
                .with_arguments(support::args(json!({"a": 2, "b": 3}))),
        )
        .await
        .expect("tools/call");
    assert_eq!(reply.structured_content.expect("structured")["result"], 5);
    client.cancel().await.ok();
}

/// An upstream without tasks (a 2025-11-25 session) and a tool declared optional at the
/// proxy: an opted-in call runs as a local task whose body is the upstream call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxied_tools_run_as_local_tasks_when_the_upstream_has_none() {
    let http = common::spawn_demo_http().await;
    let legacy = connect(
        StreamableHttpClientTransport::from_uri(http.url.clone()),
        Lifecycle::Legacy,
        false,
    )
    .await
    .expect("a 2025-11-25 client");
    let upstream = Upstream::from_peer("legacy", legacy.peer().clone());
    assert!(!upstream.supports_tasks().await.expect("session"));
    let proxy = ProxyServer::new(upstream)
        .task_mode("add", true)
        .build()
        .await
        .expect("proxy");
    let root = Server::new("gateway");
    root.mount(&proxy, "old").expect("mount");
    root.add_extension(
        ProxyTasks::new()
            .expect("key")
            .with_local(TasksExtension::new()),
    )
    .expect("tasks");
    let pair = in_memory(root, Lifecycle::Modern, true)
        .await
        .expect("connect");
    let reply = pair
        .client
        .call_tool_once(
            CallToolRequestParams::new("old_add").with_arguments(
                json!({"a": 1, "b": 2})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = reply else {
        panic!("a local task, got {reply:?}")
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let current = pair
            .client
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .expect("tasks/get");
        if current.task.status() == TaskStatus::Completed {
            let value = serde_json::to_value(&current).expect("serialize");
            assert_eq!(value["result"]["structuredContent"]["result"], 3, "{value}");
            break;
        }
        assert!(!current.task.status().is_terminal(), "{current:?}");
        assert!(
            Instant::now() < deadline,
            "still {:?}",
            current.task.status()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pair.client.cancel().await.ok();
}

/// A parent's middleware wraps proxied calls, passthrough tasks included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_middleware_wraps_proxied_calls() {
    let log = ferrymcp_test_helpers::middleware::Log::new();
    let upstream = Upstream::command(
        "demo",
        ferrymcp_proxy::CommandTarget::new(common::demo_binary().to_string_lossy()).arg("--stdio"),
    );
    let proxy = ProxyServer::new(upstream.clone())
        .build()
        .await
        .expect("proxy");
    let root = Server::new("gateway");
    root.mount(&proxy, "up").expect("mount");
    root.add_middleware(ferrymcp_test_helpers::middleware::CallTrace::new(
        "parent", &log,
    ));
    let tasks = ProxyTasks::new().expect("key");
    tasks.register(&upstream);
    root.add_extension(tasks).expect("tasks");
    let pair = in_memory(root, Lifecycle::Modern, true)
        .await
        .expect("connect");

    let reply = call(&pair.client, "up_add", json!({"a": 1, "b": 1})).await;
    assert_eq!(
        reply["complete"]["structuredContent"]["result"], 2,
        "{reply}"
    );
    assert_eq!(log.entries(), ["parent:before", "parent:after"]);

    log.clear();
    let created = submit(&pair.client, "up_sleep_task", json!({"seconds": 0})).await;
    assert_eq!(log.entries(), ["parent:before", "parent:after"]);
    poll_until(&pair.client, &created.task.task_id, TaskStatus::Completed).await;
    pair.client.cancel().await.ok();
}
