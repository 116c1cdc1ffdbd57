//! Head sampling before the OpenTelemetry layer (issue 18): `RequestSampler` keeps one
//! request's trace in `1 / ratio` when the caller did not decide, always keeps a caller's
//! sampled `traceparent`, never an unsampled one, and keeps a span inside a request exactly
//! when it keeps the request's (never as a trace of its own), and a dropped request makes no
//! span at all when no other layer wants it. Over real HTTP, spans exported to memory. One
//! subscriber for the whole binary, so it holds one test.

use ferrymcp::{HttpConfig, HttpServer, Server, ToolDef, trace_context::RequestSampler};
use ferrymcp_test_helpers::http::post_2026_to;
use opentelemetry::trace::{TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use tracing_subscriber::{Layer as _, filter::LevelFilter, prelude::*};

/// The tool calls that ran inside a span the subscriber made.
static IN_A_SPAN: AtomicUsize = AtomicUsize::new(0);

async fn call_with(url: &str, traceparent: &str) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "sampled", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "work", "arguments": {}, "_meta": meta}});
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "work")
        .header("traceparent", traceparent)
        .body(body.to_string())
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("a JSON answer")
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|span| span.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_sampled_whole_before_the_layer() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing_subscriber::registry()
        // Logs at WARN, as a service runs: they want no request's span.
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::sink)
                .with_filter(LevelFilter::WARN),
        )
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("sampling-test"))
                .with_filter(RequestSampler::ratio(0.25)),
        )
        .init();

    let server = Server::new("sampled");
    server
        .add_tool(ToolDef::new("work", || async {
            if !tracing::Span::current().is_none() {
                IN_A_SPAN.fetch_add(1, Ordering::SeqCst);
            }
            let _inner = tracing::info_span!("inner_work").entered();
            "done"
        }))
        .unwrap();
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));

    // Eight calls that bring no trace: one in four is kept.
    for _ in 0..8 {
        let answer =
            post_2026_to(&url, None, "tools/call", json!({"name": "work"}), json!({})).await;
        assert_eq!(
            answer.body["result"]["content"][0]["text"], "done",
            "{}",
            answer.body
        );
    }
    // A caller that did not sample its trace, then one that did: their own decisions hold
    // (one in four of the calls so far would have kept the first and dropped the second).
    let (kept, dropped) = (
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "0af7651916cd43dd8448eb211c80319c",
    );
    call_with(&url, &format!("00-{dropped}-b7ad6b7169203331-00")).await;
    call_with(&url, &format!("00-{kept}-00f067aa0ba902b7-01")).await;

    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("the finished spans");
    let requests = named(&spans, "mcp.request");
    let inner = named(&spans, "inner_work");
    assert_eq!(
        requests.len(),
        3,
        "two of the eight, and the caller's sampled one: {:#?}",
        requests
            .iter()
            .map(|s| s.span_context.trace_id())
            .collect::<Vec<_>>()
    );
    assert!(
        requests
            .iter()
            .any(|span| span.span_context.trace_id() == TraceId::from_hex(kept).unwrap()),
        "the caller's sampled trace is kept"
    );
    assert!(
        spans
            .iter()
            .all(|span| span.span_context.trace_id() != TraceId::from_hex(dropped).unwrap()),
        "the caller's unsampled trace is dropped"
    );
    assert_eq!(inner.len(), 3, "a span inside a request is kept with it");
    assert_eq!(
        IN_A_SPAN.load(Ordering::SeqCst),
        3,
        "only the kept requests ran in a span: the subscriber made none for the seven dropped"
    );
    for span in inner {
        let parent = requests
            .iter()
            .find(|request| request.span_context.span_id() == span.parent_span_id);
        assert!(
            parent.is_some_and(|p| p.span_context.trace_id() == span.span_context.trace_id()),
            "an inner span is a child of its kept request, never a trace of its own"
        );
    }
}
