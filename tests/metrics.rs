//! Metrics over the real HTTP stack (issue 18): a server with the Prometheus exporter merged at
//! `/metrics`, driven by raw 2026-07-28 and 2025-11-25 clients, then scraped. Counters must
//! move exactly as the traffic did (calls by tool and outcome, requests by method, refusals
//! by limit, tasks created, refused by a quota and run), gauges must read the state (sessions
//! open, runs held), and no client-chosen name may become a label.
//!
//! The recorder is process-wide, so this binary holds one test.

use std::sync::Arc;

use ferrymcp::{
    Args, HttpConfig, HttpServer, Server, ToolDef, ToolError,
    metrics::MetricsExporter,
    tasks::{TasksConfig, TasksExtension, backend::TaskLimits},
};
use ferrymcp_test_helpers::{http::post_2026_to, metrics::Scrape};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// `hold` tasks report their start on `started` and finish once `release` has a permit.
fn server(started: mpsc::UnboundedSender<()>, release: Arc<Semaphore>) -> Server {
    let server = Server::new("metered");
    server
        .add_tool(ToolDef::new("add", |Args(p): Args<Pair>| async move {
            p.a + p.b
        }))
        .unwrap();
    server
        .add_tool(ToolDef::new("fails", || async {
            Err::<String, _>(ToolError::new("it always fails"))
        }))
        .unwrap();
    server
        .add_tool(
            ToolDef::new("hold", move || {
                let (started, release) = (started.clone(), Arc::clone(&release));
                async move {
                    let _ = started.send(());
                    let _permit = release.acquire().await;
                    "released"
                }
            })
            .task(true),
        )
        .unwrap();
    let limits = TaskLimits {
        max_tasks_per_caller: 2,
        ..TaskLimits::default()
    };
    server
        .add_extension(TasksExtension::with_config(
            TasksConfig::default().with_limits(limits),
        ))
        .unwrap();
    server
}

async fn call(url: &str, name: &str, arguments: Value, capabilities: Value) -> Value {
    let answer = post_2026_to(
        url,
        None,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        capabilities,
    )
    .await;
    answer.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_as_the_traffic_did() {
    let exporter = MetricsExporter::install().expect("the only recorder of this process");
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let config = HttpConfig::new().max_body_bytes(16 * 1024);
    let http = HttpServer::bind(
        server(started_tx, Arc::clone(&release)),
        "127.0.0.1:0",
        config,
    )
    .await
    .expect("bind")
    .merge(exporter.router("/metrics"));
    let base = format!("http://{}", http.local_addr());
    let (url, metrics_url) = (format!("{base}/mcp"), format!("{base}/metrics"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));

    // Ten calls at once, three tool errors, two calls of tools that do not exist.
    let adds = (0..10).map(|i| call(&url, "add", json!({"a": i, "b": 1}), json!({})));
    for answer in futures::future::join_all(adds).await {
        assert!(answer["result"]["content"].is_array(), "{answer}");
    }
    for _ in 0..3 {
        let answer = call(&url, "fails", json!({}), json!({})).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
    }
    for _ in 0..2 {
        let answer = call(&url, "no_such_tool_from_a_client", json!({}), json!({})).await;
        assert!(answer["error"].is_object(), "{answer}");
    }
    // One body over max_body_bytes.
    let oversized = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(format!(r#"{{"pad":"{}"}}"#, "x".repeat(32 * 1024)))
        .send()
        .await
        .expect("post");
    assert_eq!(oversized.status(), 413);

    // Tasks: two accepted, three refused by the per-caller quota (one anonymous client).
    let opt_in = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut task_ids = Vec::new();
    let mut refused = 0;
    for _ in 0..5 {
        let answer = call(&url, "hold", json!({}), opt_in.clone()).await;
        if let Some(id) = answer["result"]["taskId"].as_str() {
            task_ids.push(id.to_owned());
        } else {
            assert_eq!(
                answer["error"]["data"]["limit"], "MCP_TASKS_MAX_TASKS_PER_CALLER",
                "{answer}"
            );
            refused += 1;
        }
    }
    assert_eq!((task_ids.len(), refused), (2, 3));
    started.recv().await.expect("a run started");
    started.recv().await.expect("a run started");

    // A 2025-11-25 session, open during the scrape.
    let client = reqwest::Client::new();
    let initialized = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "legacy", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .expect("initialize");
    let session = initialized
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .expect("ASCII")
        .to_owned();

    let during = Scrape::fetch(&metrics_url).await;
    let text = during.text();
    let calls = |tool: &str, outcome: &str| {
        during.value(
            "mcp_tool_calls_total",
            &[("tool", tool), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("add", "ok"), Some(10.0), "{text}");
    assert_eq!(calls("fails", "tool_error"), Some(3.0), "{text}");
    assert_eq!(calls("hold", "task"), Some(2.0), "{text}");
    assert_eq!(calls("hold", "error"), Some(3.0), "{text}");
    assert_eq!(
        during.value("mcp_tool_call_duration_seconds", &[("tool", "add")]),
        Some(10.0),
        "a duration per call: {text}"
    );
    // The durations are a histogram with fixed buckets: cumulative counts by bound, the
    // last (`+Inf`) and the count agreeing, every call under 5 minutes.
    let buckets: Vec<(&str, u64)> = text
        .lines()
        .filter(|line| line.starts_with("mcp_tool_call_duration_seconds_bucket{tool=\"add\","))
        .filter_map(|line| {
            let le = line.split("le=\"").nth(1)?.split('"').next()?;
            Some((le, line.rsplit(' ').next()?.parse().ok()?))
        })
        .collect();
    assert_eq!(buckets.len(), 20, "19 bounds and +Inf: {text}");
    assert!(
        buckets.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "buckets not cumulative: {text}"
    );
    assert_eq!(
        buckets.first().map(|bucket| bucket.0),
        Some("0.0001"),
        "{text}"
    );
    assert_eq!(buckets.get(18), Some(&("300", 10)), "{text}");
    assert_eq!(buckets.last(), Some(&("+Inf", 10)), "{text}");
    assert!(
        text.contains("# TYPE mcp_tool_call_duration_seconds histogram"),
        "{text}"
    );
    let sum = during
        .value("mcp_tool_call_duration_seconds_sum", &[("tool", "add")])
        .unwrap_or_default();
    assert!(sum > 0.0 && sum < 10.0 * 300.0, "sum {sum}: {text}");
    assert!(
        !during
            .label_values("mcp_tool_calls_total", "tool")
            .iter()
            .any(|tool| tool.contains("no_such_tool")),
        "a client's made-up tool name became a label: {text}"
    );
    let requests = |outcome: &str| {
        during.value(
            "mcp_requests_total",
            &[("method", "tools/call"), ("outcome", outcome)],
        )
    };
    // ok: 10 adds, 3 tool errors, 2 tasks; error: 2 unknown tools, 3 refused tasks.
    assert_eq!(requests("ok"), Some(15.0), "{text}");
    assert_eq!(requests("error"), Some(5.0), "{text}");
    assert_eq!(
        during.value("mcp_http_rejections_total", &[("limit", "max_body_bytes")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(during.value("mcp_http_sessions", &[]), Some(1.0), "{text}");
    assert!(
        during.value("mcp_http_connections", &[]) >= Some(1.0),
        "{text}"
    );
    assert_eq!(
        during.value(
            "mcp_task_rejections_total",
            &[("limit", "MCP_TASKS_MAX_TASKS_PER_CALLER")]
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        during.value("mcp_tasks_created_total", &[("tool", "hold")]),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        during.value("mcp_tasks", &[("state", "running")]),
        Some(2.0),
        "{text}"
    );

    // The runs end; the session closes.
    release.add_permits(2);
    for id in &task_ids {
        loop {
            let answer = post_2026_to(
                &url,
                None,
                "tasks/get",
                json!({"taskId": id}),
                opt_in.clone(),
            )
            .await;
            let status = answer.body["result"]["status"].as_str().map(str::to_owned);
            if status.as_deref() == Some("completed") {
                break;
            }
            assert_eq!(status.as_deref(), Some("working"), "{}", answer.body);
            tokio::task::yield_now().await;
        }
    }
    let closed = client
        .delete(&url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("DELETE the session");
    assert!(closed.status().is_success(), "{}", closed.status());

    let after = Scrape::fetch(&metrics_url).await;
    let text = after.text();
    assert_eq!(
        after.value(
            "mcp_task_runs_total",
            &[("tool", "hold"), ("outcome", "completed")]
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        after.value("mcp_task_wait_seconds", &[]),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        after.value("mcp_tasks", &[("state", "running")]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        after.value("mcp_tasks", &[("state", "finished")]),
        Some(2.0),
        "{text}"
    );
    assert_eq!(after.value("mcp_http_sessions", &[]), Some(0.0), "{text}");
    assert!(
        after.value(
            "mcp_requests_total",
            &[("method", "tasks/get"), ("outcome", "ok")]
        ) >= Some(2.0),
        "{text}"
    );

    let _ = stop.send(());
    serving
        .await
        .expect("the server task")
        .expect("stops cleanly");
}
