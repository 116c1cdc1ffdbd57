//! Traces across processes' boundaries (issue 18), with spans exported to memory through
//! `tracing-opentelemetry`: a client's `traceparent` on a task-augmented `tools/call` over
//! real HTTP; the request's span continues the client's trace, and the task's run (on the
//! engine's worker, after the answer left) continues the request's. Then a call through a
//! proxy hop to an upstream over real HTTP: the upstream's request span continues the proxy's.
//! One subscriber for the whole binary, so it holds one test.

use std::time::Duration;

use ferrymcp::{
    Args, HttpConfig, HttpServer, Server, ToolDef,
    proxy::{HttpTarget, ProxyServer, Upstream},
    tasks::TasksExtension,
};
use ferrymcp_test_helpers::http::post_2026_to;
use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// Serves `server` on a free loopback port until the returned sender is dropped.
async fn serve(server: Server) -> (String, tokio::sync::oneshot::Sender<()>) {
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    (url, stop)
}

/// Posts a 2026-07-28 `tools/call` with the client's `traceparent`.
async fn traced_call(url: &str, traceparent: &str, name: &str, arguments: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "traced", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta}});
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .header("traceparent", traceparent)
        .body(body.to_string())
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("a JSON answer")
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// The one finished span named `name` whose attribute `tool` is `tool`.
fn span_of<'a>(spans: &'a [SpanData], name: &str, tool: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == name && attribute(span, "tool").as_deref() == Some(tool))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {name} span of {tool}, among {:#?}",
        spans
            .iter()
            .map(|span| (span.name.clone(), attribute(span, "tool")))
            .collect::<Vec<_>>()
    );
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_spans_the_request_the_task_run_and_the_proxy_hop() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("traces-test")))
        .init();

    // The upstream, and a front that runs tasks and mounts the upstream through a proxy.
    let upstream = Server::new("upstream");
    upstream
        .add_tool(ToolDef::new("add", |Args(p): Args<Pair>| async move {
            p.a + p.b
        }))
        .unwrap();
    let (upstream_url, _stop_upstream) = serve(upstream).await;
    let front = Server::new("front");
    front
        .add_tool(ToolDef::new("double", |Args(p): Args<Pair>| async move { 2 * p.a }).task(true))
        .unwrap();
    front.add_extension(TasksExtension::new()).unwrap();
    let proxied = ProxyServer::new(Upstream::http("up", HttpTarget::new(&upstream_url)))
        .build()
        .await
        .expect("the proxy lists the upstream");
    front.mount(&proxied, "up").unwrap();
    let (front_url, _stop_front) = serve(front).await;

    // A task, submitted in the client's trace.
    let (client_trace, client_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let created = traced_call(
        &front_url,
        &format!("00-{client_trace}-{client_span}-01"),
        "double",
        json!({"a": 21, "b": 0}),
    )
    .await;
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    let opt_in = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let got = post_2026_to(
            &front_url,
            None,
            "tasks/get",
            json!({"taskId": task_id}),
            opt_in.clone(),
        )
        .await;
        if got.body["result"]["status"] == "completed" {
            break;
        }
        assert_eq!(got.body["result"]["status"], "working", "{}", got.body);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never completed"
        );
        tokio::task::yield_now().await;
    }

    // A call through the proxy hop, in another client trace.
    let (hop_trace, hop_span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let answer = traced_call(
        &front_url,
        &format!("00-{hop_trace}-{hop_span}-01"),
        "up_add",
        json!({"a": 2, "b": 3}),
    )
    .await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 5,
        "{answer}"
    );

    provider.force_flush().expect("flush the spans");
    let spans = exporter.get_finished_spans().expect("the finished spans");

    let submit = span_of(&spans, "mcp.request", "double");
    assert_eq!(
        submit.span_context.trace_id(),
        TraceId::from_hex(client_trace).unwrap(),
        "the request continues the client's trace"
    );
    assert_eq!(
        submit.parent_span_id,
        SpanId::from_hex(client_span).unwrap()
    );
    let run = span_of(&spans, "mcp.task_run", "double");
    assert_eq!(
        run.span_context.trace_id(),
        submit.span_context.trace_id(),
        "the worker's run joins the submitting request's trace"
    );
    assert_eq!(run.parent_span_id, submit.span_context.span_id());
    assert_eq!(attribute(run, "task").as_deref(), Some(task_id.as_str()));
    assert_eq!(attribute(run, "attempt").as_deref(), Some("1"));

    let front_hop = span_of(&spans, "mcp.request", "up_add");
    assert_eq!(
        front_hop.span_context.trace_id(),
        TraceId::from_hex(hop_trace).unwrap()
    );
    let at_upstream = span_of(&spans, "mcp.request", "add");
    assert_eq!(
        at_upstream.span_context.trace_id(),
        front_hop.span_context.trace_id(),
        "the upstream's request continues the proxy's trace"
    );
    assert_eq!(at_upstream.parent_span_id, front_hop.span_context.span_id());
}
