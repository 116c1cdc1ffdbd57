//! Proxied task ids belong to the caller that created them (AU19): another principal's
//! `tasks/get`, `tasks/update` and `tasks/cancel` on one answer exactly as an unknown id
//! does. Real HTTP on both hops: a task-capable upstream, and a gateway whose front puts the
//! caller's principal into each request (standing in for its resource server).

use std::time::Duration;

use ferrymcp_core::{Context, HttpConfig, HttpServer, Server, ToolDef, ToolError, auth::Principal};
use ferrymcp_proxy::{HttpTarget, ProxyServer, ProxyTasks, Upstream};
use ferrymcp_test_helpers::http::LoopbackHttp;
use serde_json::{Value, json};

/// A caller: issuer and subject, sent to the test front in two headers.
type Caller = Option<(&'static str, &'static str)>;

/// The front's stand-in for a resource server: the principal named by the test headers.
async fn principal_from_headers(mut request: axum::extract::Request) -> axum::extract::Request {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    if let (Some(issuer), Some(subject)) = (header("x-test-issuer"), header("x-test-subject")) {
        let principal = Principal::new("app")
            .with_issuer(issuer)
            .with_subject(subject);
        request.extensions_mut().insert(principal);
    }
    request
}

/// Posts one 2026-07-28 request opted in to tasks, as `caller`; the JSON-RPC answer.
async fn post(url: &str, caller: Caller, method: &str, mut params: Value, name: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "task-binding", "version": "0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name);
    if let Some((issuer, subject)) = caller {
        request = request
            .header("x-test-issuer", issuer)
            .header("x-test-subject", subject);
    }
    let response = request
        .body(body.to_string())
        .send()
        .await
        .expect("POST to the gateway");
    let text = response.text().await.expect("the answer");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au19_another_principals_tasks_requests_on_a_proxied_task_answer_as_an_unknown_id() {
    let upstream = Server::new("upstream");
    upstream
        .add_tool(
            ToolDef::new("wait", |cx: Context| async move {
                tokio::select! {
                    () = cx.cancellation().cancelled() => Err(ToolError::new("cancelled")),
                    () = tokio::time::sleep(Duration::from_secs(60)) => Ok::<_, ToolError>("waited"),
                }
            })
            .task(true),
        )
        .expect("tool");
    upstream
        .add_extension(ferrymcp_tasks::TasksExtension::new())
        .expect("tasks");
    let upstream = LoopbackHttp::serve(upstream).await;

    let proxy = ProxyServer::new(Upstream::http("up", HttpTarget::new(upstream.url())))
        .build()
        .await
        .expect("proxy");
    let gateway = Server::new("gateway");
    gateway.mount(&proxy, "up").expect("mount");
    gateway
        .add_extension(ProxyTasks::new().expect("a task id key"))
        .expect("tasks");
    let front = HttpServer::bind(gateway, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind")
        .layer(axum::middleware::map_request(principal_from_headers));
    let url = format!("http://{}/mcp", front.local_addr());
    let stop = ferrymcp_core::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(front.run_until(stopped.cancelled_owned()));

    let alice: Caller = Some(("https://as-one", "alice"));
    let created = post(
        &url,
        alice,
        "tools/call",
        json!({"name": "up_wait", "arguments": {}}),
        "up_wait",
    )
    .await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    assert!(id.starts_with("mcpx2."), "a proxy task id: {id}");
    let get = |caller: Caller, id: String| {
        let url = url.clone();
        async move { post(&url, caller, "tasks/get", json!({"taskId": id}), &id).await }
    };
    let own = get(alice, id.clone()).await;
    assert!(own["result"].is_object(), "alice sees her task: {own}");

    // An id nobody minted, for comparison: the answer others must get.
    let mut unknown_id = id.clone();
    let last = unknown_id.pop().expect("a character");
    unknown_id.push(if last == 'A' { 'B' } else { 'A' });
    let unknown = |answer: &Value, asked: &str| {
        let error = &answer["error"];
        assert_eq!(error["code"], -32602, "{answer}");
        assert_eq!(
            error["message"].as_str(),
            Some(format!("Task {asked} not found").as_str()),
            "{answer}"
        );
        assert!(answer.get("result").is_none(), "{answer}");
    };
    unknown(&get(alice, unknown_id.clone()).await, &unknown_id);
    // A long forged id is repeated only in part.
    let long_id = format!("{id}{}", "A".repeat(4000));
    let long = get(alice, long_id.clone()).await;
    assert_eq!(long["error"]["code"], -32602, "{long}");
    let shown: String = long_id.chars().take(256).collect();
    assert_eq!(
        long["error"]["message"].as_str(),
        Some(format!("Task {shown}… not found").as_str()),
        "a long id is cut at 256 characters"
    );

    // Another subject of the same issuer, the same subject of another issuer, anonymous.
    let others: [Caller; 3] = [
        Some(("https://as-one", "mallory")),
        Some(("https://as-two", "alice")),
        None,
    ];
    for other in others {
        unknown(&get(other, id.clone()).await, &id);
        let update = post(
            &url,
            other,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {}}),
            &id,
        )
        .await;
        unknown(&update, &id);
        let cancel = post(&url, other, "tasks/cancel", json!({"taskId": id}), &id).await;
        unknown(&cancel, &id);
    }
    // The others' cancels did not reach the task; its owner's does.
    let still = get(alice, id.clone()).await;
    assert_eq!(still["result"]["status"], "working", "{still}");
    let cancel = post(&url, alice, "tasks/cancel", json!({"taskId": id}), &id).await;
    assert!(
        cancel.get("error").is_none(),
        "alice cancels her task: {cancel}"
    );

    stop.cancel();
    serving.await.expect("front task").expect("front stops");
    upstream.shutdown().await;
}
