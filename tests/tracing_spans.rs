//! What a tool logs carries where it runs: inside an `mcp.request` span with the JSON-RPC
//! method and id when it answers a request (here over Streamable HTTP), inside an
//! `mcp.task_run` span with the task id and the tool when a worker runs it as a task.
//! Events are captured by a `tracing` layer installed for this test binary. With the `otel`
//! feature a second layer sits beside it behind a `RequestSampler` that keeps every trace its
//! caller did not decide: the request here comes with an unsampled `traceparent`, and its
//! span still reaches the capturing layer, never the sampled one.

use std::{
    collections::BTreeMap,
    fmt::Debug,
    sync::{Mutex, OnceLock, PoisonError},
    time::Duration,
};

use ferrymcp::{
    HttpConfig, HttpServer, Server, ToolDef, tasks::TasksExtension, types::TaskPayload,
};
use ferrymcp_test_helpers::tasks::{TERMINAL, TaskClient};
use serde_json::{Value, json};
use tracing::{
    Event, Subscriber,
    field::{Field, Visit},
    span::{Attributes, Id},
};
use tracing_subscriber::{Layer, layer::Context as LayerContext, prelude::*, registry::LookupSpan};

/// A span's name and fields, as recorded when it was created.
#[derive(Debug, Clone)]
struct SpanRecord {
    name: String,
    fields: BTreeMap<String, String>,
}

/// One event: its message and the spans it happened in, innermost first.
#[derive(Debug, Clone)]
struct EventRecord {
    message: String,
    spans: Vec<SpanRecord>,
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

struct Capture;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanRecord {
                name: attrs.metadata().name().to_owned(),
                fields: fields.0,
            });
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: LayerContext<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(message) = fields.0.remove("message") else {
            return;
        };
        let spans = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .filter_map(|span| span.extensions().get::<SpanRecord>().cloned())
                    .collect()
            })
            .unwrap_or_default();
        events()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(EventRecord { message, spans });
    }
}

/// The fields of the spans the layer behind the sampler was told of.
#[cfg(feature = "otel")]
static SAMPLED_SAW: Mutex<Vec<BTreeMap<String, String>>> = Mutex::new(Vec::new());

/// A layer that writes down the fields of the spans it is told of, in [`SAMPLED_SAW`].
#[cfg(feature = "otel")]
struct SampledSpans;

#[cfg(feature = "otel")]
impl<S: Subscriber> Layer<S> for SampledSpans {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: LayerContext<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        SAMPLED_SAW
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(fields.0);
    }
}

fn events() -> &'static Mutex<Vec<EventRecord>> {
    static EVENTS: OnceLock<Mutex<Vec<EventRecord>>> = OnceLock::new();
    EVENTS.get_or_init(|| {
        let subscriber = tracing_subscriber::registry().with(Capture);
        #[cfg(feature = "otel")]
        let subscriber = subscriber
            .with(SampledSpans.with_filter(ferrymcp::trace_context::RequestSampler::ratio(1.0)));
        subscriber.init();
        Mutex::default()
    })
}

/// With the `otel` feature: the layer behind the sampler never saw the request `id`.
fn assert_sampled_layer_never_saw(id: &str) {
    #[cfg(feature = "otel")]
    {
        let saw = SAMPLED_SAW.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(
            saw.iter()
                .all(|fields| fields.get("id").is_none_or(|seen| seen != id)),
            "a dropped trace's span reaches the logs, never the traces' layer: {saw:?}"
        );
    }
    #[cfg(not(feature = "otel"))]
    let _ = id;
}

/// The spans of the one event logged with `message`.
fn spans_of(message: &str) -> Vec<SpanRecord> {
    let events = events().lock().unwrap_or_else(PoisonError::into_inner);
    let found: Vec<_> = events.iter().filter(|e| e.message == message).collect();
    assert_eq!(found.len(), 1, "one event `{message}`, got {found:?}");
    found[0].spans.clone()
}

fn span<'a>(spans: &'a [SpanRecord], name: &str) -> &'a SpanRecord {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| panic!("no `{name}` span around the event: {spans:?}"))
}

#[tokio::test]
async fn a_tool_answering_a_request_logs_inside_its_request_span() {
    events();
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("shout", || async {
            tracing::info!("shouting in a request");
            "HEY"
        }))
        .expect("shout");
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::default())
        .await
        .expect("bind a loopback port");
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));

    let body = json!({
        "jsonrpc": "2.0",
        "id": "req-41",
        "method": "tools/call",
        "params": {
            "name": "shout",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            },
        },
    });
    let answer: Value = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "shout")
        // The caller did not sample its trace.
        .header(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
        )
        .body(body.to_string())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("POST")
        .text()
        .await
        .map(|text| {
            let json = text
                .lines()
                .find_map(|line| line.strip_prefix("data:"))
                .unwrap_or(&text)
                .trim()
                .to_owned();
            serde_json::from_str(&json).unwrap_or(Value::Null)
        })
        .expect("the answer");
    assert_eq!(answer["result"]["content"][0]["text"], "HEY", "{answer}");
    drop(stop);

    let spans = spans_of("shouting in a request");
    let request = span(&spans, "mcp.request");
    assert_eq!(request.fields["method"], "tools/call", "{request:?}");
    assert_eq!(request.fields["id"], "req-41", "{request:?}");
    assert_sampled_layer_never_saw("req-41");
}

#[tokio::test]
async fn a_task_run_logs_inside_its_task_run_span() {
    events();
    let server = Server::new("s");
    server
        .add_tool(
            ToolDef::new("crunch", || async {
                tracing::info!("crunching in a task");
                7
            })
            .task(true),
        )
        .expect("crunch");
    server
        .add_extension(TasksExtension::new())
        .expect("tasks extension");
    let running = server.start().await.expect("start");
    let client = TaskClient::new(&server);
    let created = client.submit("crunch", Value::Null).await.expect("a task");
    let id = created.task.task_id;
    let done = client
        .wait(&id, &TERMINAL, Duration::from_secs(5))
        .await
        .expect("finished");
    assert!(
        matches!(done.task.payload, TaskPayload::Completed { .. }),
        "{:?}",
        done.task.payload
    );
    running.stop().await;

    let spans = spans_of("crunching in a task");
    let run = span(&spans, "mcp.task_run");
    assert_eq!(run.fields["task"], id, "{run:?}");
    assert_eq!(run.fields["tool"], "crunch", "{run:?}");
    assert_eq!(run.fields["attempt"], "1", "{run:?}");
}
