//! ferrymcp-proxy end to end: the demo server as a real upstream (a stdio child process, and over
//! HTTP), proxied through one and two hops (a gateway serving HTTP in front of another
//! gateway). Listings, calls, errors, bad input and tasks behave as direct; proxy task ids are
//! signed; a killed upstream gives a clear error and comes back. The first hop's wire output
//! is validated against the official schemas.

use crate::common;
use crate::support::proxy as support;

use std::time::{Duration, Instant};

use support::{args, call, poll_until, submit};

use ferrymcp::{
    HttpConfig, HttpServer, Server,
    types::{CallToolRequestParams, ErrorCode, GetTaskParams, TaskStatus},
};
use ferrymcp_proxy::{
    CommandTarget, HttpTarget, ProxyServer, ProxyTasks, Upstream, UpstreamOptions,
    task_ids::TaskIdSigner,
};
use ferrymcp_test_helpers::{
    client::{InMemory, Lifecycle, TestClient, connect, in_memory},
    wire::{record_http, spawn_stdio},
};
use rmcp::{ServiceError, transport::StreamableHttpClientTransport};
use serde_json::{Value, json};

fn demo_command() -> CommandTarget {
    CommandTarget::new(common::demo_binary().to_string_lossy()).arg("--stdio")
}

/// How the first hop reaches the demo.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Stdio,
    Http,
}

/// A running demo upstream and the handle the proxy uses for it.
struct Demo {
    upstream: Upstream,
    _http: Option<common::DemoHttp>,
}

async fn demo(kind: Kind) -> Demo {
    match kind {
        Kind::Stdio => Demo {
            upstream: Upstream::command("demo", demo_command()),
            _http: None,
        },
        Kind::Http => {
            let http = common::spawn_demo_http().await;
            Demo {
                upstream: Upstream::http("demo", HttpTarget::new(http.url.clone())),
                _http: Some(http),
            }
        }
    }
}

/// A gateway root: the upstream's proxy mounted under `namespace`, with task passthrough.
async fn gateway(upstream: &Upstream, namespace: &str) -> Server {
    let proxy = ProxyServer::new(upstream.clone())
        .build()
        .await
        .expect("build the proxy server");
    let root = Server::new("gateway");
    root.mount(&proxy, namespace).expect("mount");
    let tasks = ProxyTasks::new().expect("a task id key");
    tasks.register(upstream);
    root.add_extension(tasks).expect("the tasks extension");
    root
}

/// A client of the demo itself (the reference for "as direct").
async fn direct_client(tasks: bool) -> (TestClient, tokio::process::Child) {
    let mut command = tokio::process::Command::new(common::demo_binary());
    command.arg("--stdio");
    let ferrymcp_test_helpers::wire::StdioChild {
        child, transport, ..
    } = spawn_stdio(&mut command).expect("spawn the demo");
    let client = connect(transport, Lifecycle::Modern, tasks)
        .await
        .expect("connect to the demo");
    (client, child)
}

fn tool_values(tools: &[rmcp::model::Tool]) -> Vec<Value> {
    let mut values: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("a tool serializes"))
        .collect();
    values.sort_by_key(|t| t["name"].as_str().unwrap_or_default().to_owned());
    values
}

fn with_prefix(mut tools: Vec<Value>, prefix: &str) -> Vec<Value> {
    for tool in &mut tools {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        tool["name"] = Value::String(format!("{prefix}{name}"));
    }
    tools.sort_by_key(|t| t["name"].as_str().unwrap_or_default().to_owned());
    tools
}

async fn front(root: Server, tasks: bool) -> InMemory {
    in_memory(root, Lifecycle::Modern, tasks)
        .await
        .expect("connect to the gateway")
}

/// Listing, calls, errors, bad input and tasks through `client`, whose tools carry `prefix`.
async fn behaves_as_direct(client: &TestClient, prefix: &str) {
    let (direct, _child) = direct_client(false).await;

    let direct_tools = tool_values(&direct.list_all_tools().await.expect("direct tools/list"));
    let proxied = tool_values(&client.list_all_tools().await.expect("proxied tools/list"));
    assert_eq!(
        proxied,
        with_prefix(direct_tools, prefix),
        "listing through {prefix}"
    );

    for (tool, arguments) in [
        ("add", json!({"a": 2, "b": 40})),
        ("add", json!({"a": "two", "b": 40})),
        ("add", json!({"a": 2})),
        ("add", json!({"a": i64::MAX, "b": 1})),
        ("child_echo", json!({"message": "through the proxy"})),
        ("sleep_task", json!({"seconds": -1})),
        ("required_task", json!({"value": 1})),
    ] {
        let mut expected = call(&direct, tool, arguments.clone()).await;
        // An error naming the tool names it as the client called it.
        if let Some(message) = expected["error"]["message"].as_str() {
            let renamed = message.replacen(&format!("'{tool}'"), &format!("'{prefix}{tool}'"), 1);
            expected["error"]["message"] = Value::String(renamed);
        }
        let got = call(client, &format!("{prefix}{tool}"), arguments.clone()).await;
        assert_eq!(got, expected, "{tool} {arguments} through {prefix}");
    }
    surface_as_direct(&direct, client, prefix).await;
    direct.cancel().await.ok();
}

/// The namespaces a tool prefix stands for, outermost first (`b_a_` is `["b", "a"]`).
fn namespaces(prefix: &str) -> Vec<&str> {
    prefix.split('_').filter(|ns| !ns.is_empty()).collect()
}

/// `uri` as a client of the front sees it: each hop puts its namespace first in the path.
fn through(uri: &str, prefix: &str) -> String {
    namespaces(prefix)
        .into_iter()
        .rev()
        .fold(uri.to_owned(), |uri, ns| {
            ferrymcp::uri_template::namespace_uri(&uri, ns)
        })
}

/// Resources, templates and prompts list, read and render as direct, with only the
/// namespace added.
async fn surface_as_direct(direct: &TestClient, client: &TestClient, prefix: &str) {
    let sorted = |mut values: Vec<Value>, key: &str| {
        values.sort_by_key(|v| v[key].as_str().unwrap_or_default().to_owned());
        values
    };

    let mut expected: Vec<Value> = direct
        .list_all_resources()
        .await
        .expect("direct resources/list")
        .iter()
        .map(|r| serde_json::to_value(r).expect("serializes"))
        .collect();
    for resource in &mut expected {
        let uri = resource["uri"].as_str().unwrap_or_default().to_owned();
        resource["uri"] = Value::String(through(&uri, prefix));
    }
    let got: Vec<Value> = client
        .list_all_resources()
        .await
        .expect("proxied resources/list")
        .iter()
        .map(|r| serde_json::to_value(r).expect("serializes"))
        .collect();
    assert_eq!(
        sorted(got, "uri"),
        sorted(expected, "uri"),
        "resources through {prefix}"
    );

    let mut expected: Vec<Value> = direct
        .list_all_resource_templates()
        .await
        .expect("direct templates")
        .iter()
        .map(|t| serde_json::to_value(t).expect("serializes"))
        .collect();
    for template in &mut expected {
        let uri = template["uriTemplate"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        template["uriTemplate"] = Value::String(through(&uri, prefix));
    }
    let got: Vec<Value> = client
        .list_all_resource_templates()
        .await
        .expect("proxied templates")
        .iter()
        .map(|t| serde_json::to_value(t).expect("serializes"))
        .collect();
    assert_eq!(
        sorted(got, "uriTemplate"),
        sorted(expected, "uriTemplate"),
        "templates through {prefix}"
    );

    let mut expected: Vec<Value> = direct
        .list_all_prompts()
        .await
        .expect("direct prompts")
        .iter()
        .map(|p| serde_json::to_value(p).expect("serializes"))
        .collect();
    for prompt in &mut expected {
        let name = prompt["name"].as_str().unwrap_or_default().to_owned();
        prompt["name"] = Value::String(format!("{prefix}{name}"));
    }
    let got: Vec<Value> = client
        .list_all_prompts()
        .await
        .expect("proxied prompts")
        .iter()
        .map(|p| serde_json::to_value(p).expect("serializes"))
        .collect();
    assert_eq!(
        sorted(got, "name"),
        sorted(expected, "name"),
        "prompts through {prompt_prefix}",
        prompt_prefix = prefix
    );

    for uri in ["demo://readme", "users://child/7/profile", "demo://missing"] {
        let expected = direct
            .read_resource_once(ferrymcp::types::ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| e.to_string());
        let got = client
            .read_resource_once(ferrymcp::types::ReadResourceRequestParams::new(through(
                uri, prefix,
            )))
            .await
            .map_err(|e| e.to_string());
        assert_eq!(
            format!("{got:?}").replace(&through(uri, prefix), uri),
            format!("{expected:?}"),
            "read {uri} through {prefix}"
        );
    }
    let arguments = json!({"name": "Ada", "style": "formal"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let expected = direct
        .get_prompt_once(
            ferrymcp::types::GetPromptRequestParams::new("child_greet")
                .with_arguments(arguments.clone()),
        )
        .await
        .map_err(|e| e.to_string());
    let got = client
        .get_prompt_once(
            ferrymcp::types::GetPromptRequestParams::new(format!("{prefix}child_greet"))
                .with_arguments(arguments),
        )
        .await
        .map_err(|e| e.to_string());
    assert_eq!(
        format!("{got:?}"),
        format!("{expected:?}"),
        "child_greet through {prefix}"
    );
}

/// A task through the proxy: signed id, polled to completion through the proxy.
async fn task_completes(client: &TestClient, prefix: &str) {
    let created = submit(
        client,
        &format!("{prefix}sleep_task"),
        json!({"seconds": 0.05}),
    )
    .await;
    let id = created.task.task_id.clone();
    assert!(TaskIdSigner::looks_like(&id), "a proxy task id, got {id}");
    let done = poll_until(client, &id, TaskStatus::Completed).await;
    assert_eq!(done.task.task.task_id, id);
    let result = serde_json::to_value(&done).expect("serialize");
    assert_eq!(
        result["result"]["structuredContent"]["result"], "slept 0.05",
        "{result}"
    );
    assert!(
        result.get("pollIntervalMs").is_some(),
        "pollIntervalMs passes through: {result}"
    );
}

/// A cancel through the proxy reaches the upstream task.
async fn task_cancels(client: &TestClient, prefix: &str) {
    let created = submit(
        client,
        &format!("{prefix}sleep_task"),
        json!({"seconds": 30}),
    )
    .await;
    let id = created.task.task_id.clone();
    client
        .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel through the proxy");
    poll_until(client, &id, TaskStatus::Cancelled).await;
}

/// Forged, foreign and upstream-shaped ids are -32602.
async fn forged_ids_refused(client: &TestClient) {
    let foreign = TaskIdSigner::random()
        .expect("a key")
        .mint("demo", "some-task", "")
        .expect("minted");
    for id in [
        foreign.as_str(),
        "mcpx2.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "plain-upstream-id",
    ] {
        match client.get_task(GetTaskParams::new(id)).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{id}: {error:?}")
            }
            other => panic!("{id}: expected -32602, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hop_over_stdio_and_http_behaves_as_direct() {
    for kind in [Kind::Stdio, Kind::Http] {
        let demo = demo(kind).await;
        let root = gateway(&demo.upstream, "up").await;
        let plain = front(root, false).await;
        behaves_as_direct(&plain.client, "up_").await;
        plain.client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hop_tasks_pass_through_with_signed_ids() {
    for kind in [Kind::Stdio, Kind::Http] {
        let demo = demo(kind).await;
        let root = gateway(&demo.upstream, "up").await;
        let pair = front(root, true).await;
        task_completes(&pair.client, "up_").await;
        task_cancels(&pair.client, "up_").await;
        forged_ids_refused(&pair.client).await;
        // Without the opt-in, a required task tool is refused as upstream refuses it.
        pair.client.cancel().await.ok();
    }
}

/// Hop 1 serves HTTP (recorded and schema-checked); hop 2 proxies hop 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hops_behave_as_direct_and_pass_tasks_through() {
    let first = Upstream::command("demo", demo_command());
    let hop1 = gateway(&first, "a").await;
    let http = HttpServer::bind(hop1, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("serve hop 1");
    let url = format!("http://{}/mcp", http.local_addr());
    let stop = ferrymcp::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(async move { http.run_until(stopped.cancelled_owned()).await });
    let recorder = record_http(&url).await.expect("recorder");

    let second = Upstream::http("hop1", HttpTarget::new(recorder.url.clone()));
    let hop2 = gateway(&second, "b").await;
    let plain = front(hop2, false).await;
    behaves_as_direct(&plain.client, "b_a_").await;
    plain.client.cancel().await.ok();

    // A server serves one connection at a time in process: a second root over the same
    // upstream session for the opted-in client.
    let opted = front(gateway(&second, "b").await, true).await;
    task_completes(&opted.client, "b_a_").await;
    task_cancels(&opted.client, "b_a_").await;
    forged_ids_refused(&opted.client).await;
    opted.client.cancel().await.ok();

    let counts = recorder.log.assert_valid(false);
    assert!(
        counts.tools > 0 && counts.call_results > 0 && counts.tasks > 0,
        "{counts:?}"
    );
    hop_two_posts_as_a_2026_client(&recorder.posts.posts());
    stop.cancel();
    serving.await.ok();
}

/// What hop 2 sent hop 1, as a client of the Tasks extension: SEP-2243's `Mcp-Method` and
/// `Mcp-Name` on every call (R57: the `taskId` for `tasks/*`), the opt-in in the `_meta` of
/// every `tasks/*` request (R56), and never `notifications/cancelled` for a task (R60).
fn hop_two_posts_as_a_2026_client(posts: &[ferrymcp_test_helpers::wire::RecordedPost]) {
    let mut tasks_requests = 0;
    for post in posts {
        let method = post.body["method"].as_str().unwrap_or_default();
        let params = &post.body["params"];
        assert_ne!(method, "notifications/cancelled", "R60: {:?}", post.body);
        let name = match method {
            "tools/call" | "prompts/get" => &params["name"],
            "resources/read" => &params["uri"],
            "tasks/get" | "tasks/update" | "tasks/cancel" => &params["taskId"],
            _ => continue,
        };
        assert_eq!(post.header("mcp-method"), Some(method), "{:?}", post.body);
        assert_eq!(
            post.header("mcp-name"),
            name.as_str(),
            "R57: {:?}",
            post.body
        );
        if method.starts_with("tasks/") {
            tasks_requests += 1;
            let extensions =
                &params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"];
            assert!(
                extensions.get("io.modelcontextprotocol/tasks").is_some(),
                "R56: {:?}",
                post.body
            );
        }
    }
    assert!(tasks_requests > 0, "no tasks/* request reached hop 1");
}

/// A 30 s `up_sleep_task` call, in flight on its own task.
fn long_call(
    client: &TestClient,
) -> tokio::task::JoinHandle<Result<ferrymcp::types::CallToolResponse, ServiceError>> {
    let client = client.peer().clone();
    tokio::spawn(async move {
        client
            .call_tool_once(
                CallToolRequestParams::new("up_sleep_task")
                    .with_arguments(args(json!({"seconds": 30}))),
            )
            .await
    })
}

/// The in-flight call failed with an error naming the upstream, before its timeout.
async fn assert_fails_clearly(
    in_flight: tokio::task::JoinHandle<Result<ferrymcp::types::CallToolResponse, ServiceError>>,
    started: Instant,
    timeout: Duration,
) {
    match in_flight.await.expect("the call task") {
        Err(ServiceError::McpError(error)) => assert!(
            error.message.contains("upstream 'demo'"),
            "a clear error naming the upstream: {error:?}"
        ),
        other => panic!("expected an error, got {other:?}"),
    }
    let elapsed = started.elapsed();
    assert!(elapsed < timeout, "failed after {elapsed:?}");
}

/// Killing the upstream during a call: a clear error well within the call's timeout; the
/// next call respawns it and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_upstream_fails_the_call_clearly_then_recovers() {
    let timeout = Duration::from_secs(20);
    let upstream = Upstream::command("demo", demo_command())
        .with_options(UpstreamOptions::default().call_timeout(timeout));
    let root = gateway(&upstream, "up").await;
    let pair = front(root, false).await;
    let pid = upstream.process_id().expect("the child runs");

    let started = Instant::now();
    let in_flight = long_call(&pair.client);
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    assert_fails_clearly(in_flight, started, timeout).await;

    let again = call(&pair.client, "up_add", json!({"a": 1, "b": 2})).await;
    assert_eq!(
        again["complete"]["structuredContent"]["result"], 3,
        "{again}"
    );
    assert_ne!(upstream.process_id(), Some(pid), "a new child");
    pair.client.cancel().await.ok();
}

/// An upstream slower than the call timeout: a clear timeout error, not a hang; the session
/// stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upstream_times_out_clearly() {
    let upstream = Upstream::command("demo", demo_command())
        .with_options(UpstreamOptions::default().call_timeout(Duration::from_millis(300)));
    let root = gateway(&upstream, "up").await;
    let pair = front(root, false).await;
    let started = Instant::now();
    let reply = call(&pair.client, "up_sleep_task", json!({"seconds": 10})).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(
        reply["error"]["message"], "upstream 'demo' did not answer tools/call within 300 ms",
        "{reply}"
    );
    let again = call(&pair.client, "up_add", json!({"a": 1, "b": 1})).await;
    assert_eq!(
        again["complete"]["structuredContent"]["result"], 2,
        "{again}"
    );
    pair.client.cancel().await.ok();
}

/// The demo serving HTTP on `port`, and its process.
async fn demo_http_on(port: u16) -> tokio::process::Child {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(common::demo_binary())
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the demo");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Some(line) = lines.next_line().await.expect("the demo's stderr") {
        if line.starts_with("listening on ") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// The same over HTTP: the upstream process dies during a call and comes back on its port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_http_upstream_is_used_again() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut first = demo_http_on(port).await;
    let timeout = Duration::from_secs(20);
    let upstream = Upstream::http(
        "demo",
        HttpTarget::new(format!("http://127.0.0.1:{port}/mcp")),
    )
    .with_options(UpstreamOptions::default().call_timeout(timeout));
    let root = gateway(&upstream, "up").await;
    let pair = front(root, false).await;

    let started = Instant::now();
    let in_flight = long_call(&pair.client);
    first.kill().await.expect("kill the demo");
    assert_fails_clearly(in_flight, started, timeout).await;

    let _second = demo_http_on(port).await;
    let again = call(&pair.client, "up_add", json!({"a": 1, "b": 2})).await;
    assert_eq!(
        again["complete"]["structuredContent"]["result"], 3,
        "{again}"
    );
    pair.client.cancel().await.ok();
}

/// A 2025-11-25 session an upstream forgot when it restarted: the first request after it
/// is refused with 404 (not run), sent again on a new session, and answered; the caller
/// never sees the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_the_restarted_upstream_forgot_is_replaced_without_failing_a_request() {
    let port = common::free_port();
    let mut first = demo_http_on(port).await;
    let upstream = Upstream::http(
        "demo",
        HttpTarget::new(format!("http://127.0.0.1:{port}/mcp")),
    )
    .with_options(UpstreamOptions::default().legacy_handshake());
    let before = upstream.list_tools().await.expect("tools/list before");
    first.kill().await.expect("kill the demo");
    first.wait().await.expect("the demo exited");

    let _second = demo_http_on(port).await;
    let after = upstream
        .list_tools()
        .await
        .expect("tools/list after the restart, on a new session");
    assert_eq!(after.len(), before.len());
}

/// Proxying the demo through an rmcp client the caller already has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_rmcp_client_is_proxied() {
    let transport = {
        let http = common::spawn_demo_http().await;
        let url = http.url.clone();
        (http, StreamableHttpClientTransport::from_uri(url))
    };
    let (_http, transport) = transport;
    let mine = connect(transport, Lifecycle::Modern, false)
        .await
        .expect("my client");
    let upstream = Upstream::from_peer("mine", mine.peer().clone());
    let root = gateway(&upstream, "m").await;
    let pair = front(root, false).await;
    let reply = call(&pair.client, "m_add", json!({"a": 20, "b": 22})).await;
    assert_eq!(
        reply["complete"]["structuredContent"]["result"], 42,
        "{reply}"
    );
    pair.client.cancel().await.ok();
}

/// The next `notifications/tasks` on a listen, schema-checked, its params without `_meta`.
async fn next_task_push(listen: &mut ferrymcp_test_helpers::http::Listen) -> Value {
    let message = listen
        .next(std::time::Duration::from_secs(30))
        .await
        .expect("a task notification in time");
    assert_eq!(message["method"], "notifications/tasks", "{message}");
    ferrymcp_test_helpers::schema::assert_valid(
        ferrymcp_test_helpers::schema::Spec::Tasks,
        "TaskStatusNotification",
        &message,
    );
    let mut params = message["params"].clone();
    params.as_object_mut().map(|p| p.remove("_meta"));
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r51_a_listen_on_the_proxy_is_pushed_the_upstream_task_under_its_proxy_id() {
    use ferrymcp_test_helpers::http::{Listen, LoopbackHttp, post_2026_to};
    let opted_in = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let demo = demo(Kind::Http).await;
    let http = LoopbackHttp::serve(gateway(&demo.upstream, "demo").await).await;
    let created = post_2026_to(
        http.url(),
        None,
        "tools/call",
        json!({"name": "demo_sleep_task", "arguments": {"seconds": 60}}),
        opted_in.clone(),
    )
    .await;
    let id = created.body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task through the proxy: {created:?}"))
        .to_owned();
    assert!(TaskIdSigner::looks_like(&id), "{id}");
    // Ids that are not an array of strings are refused as the tasks extension refuses them.
    let mut refused = Listen::open(http.url(), json!({"taskIds": id}), opted_in.clone()).await;
    let answer = refused
        .next(std::time::Duration::from_secs(30))
        .await
        .expect("an answer");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let mut listen = Listen::open(
        http.url(),
        json!({"taskIds": [id, "ferrymcp-proxy-task-forged"]}),
        opted_in.clone(),
    )
    .await;
    let ack = listen
        .next(std::time::Duration::from_secs(30))
        .await
        .expect("acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    let first = next_task_push(&mut listen).await;
    assert_eq!(
        first["taskId"],
        json!(id),
        "the proxy id, not the upstream's: {first}"
    );
    assert_eq!(first["status"], "working", "{first}");
    // Cancelled through the proxy: the listen is told, under the proxy id.
    let cancelled = post_2026_to(
        http.url(),
        None,
        "tasks/cancel",
        json!({"taskId": id}),
        opted_in.clone(),
    )
    .await;
    assert_eq!(cancelled.status, 200, "{cancelled:?}");
    let last = loop {
        let pushed = next_task_push(&mut listen).await;
        if pushed["status"] != "working" {
            break pushed;
        }
    };
    assert_eq!(last["status"], "cancelled", "{last}");
    let got = post_2026_to(
        http.url(),
        None,
        "tasks/get",
        json!({"taskId": id}),
        opted_in,
    )
    .await;
    let mut body = got.body["result"].clone();
    body.as_object_mut().map(|b| b.remove("resultType"));
    assert_eq!(
        last, body,
        "the push is what tasks/get through the proxy shows"
    );
    http.shutdown().await;
}
