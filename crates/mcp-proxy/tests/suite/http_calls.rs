//! Calls to a 2026-07-28 upstream over HTTP, which the proxy posts one by one outside rmcp's
//! session worker: JSON and SSE answers, errors, SEP-2243 header rules and cancellation all
//! behave as through the session.

use std::{net::SocketAddr, time::Duration};

use ferrymcp_core::{
    Args, CancellationToken, Context, HttpConfig, HttpServer, ResourceDef, Server, ToolDef,
    ToolError,
};
use ferrymcp_proxy::{HttpTarget, ProxyError, RequestOptions, Upstream};
use ferrymcp_types::{CallToolResponse, JsonObject};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::{sync::mpsc, task::JoinHandle};

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Routed {
    /// Promoted to an `Mcp-Param-Region` header (SEP-2243); the upstream checks it is there.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// An upstream with `add`, `fail` (a tool error), `region` (an annotated argument), `wait`
/// (reports its start and its cancellation) and the resource `notes://café`.
pub(crate) fn upstream(
    started: mpsc::UnboundedSender<()>,
    cancelled: mpsc::UnboundedSender<()>,
) -> Server {
    let server = Server::new("upstream");
    server
        .add_tool(ToolDef::new(
            "add",
            |Args(Pair { a, b }): Args<Pair>| async move { Ok::<_, ToolError>(a + b) },
        ))
        .expect("add");
    server
        .add_tool(ToolDef::new("fail", || async {
            Err::<i64, _>(ToolError::new("it failed upstream"))
        }))
        .expect("fail");
    server
        .add_tool(ToolDef::new(
            "region",
            |Args(Routed { region }): Args<Routed>| async move { Ok::<_, ToolError>(region) },
        ))
        .expect("region");
    server
        .add_tool(ToolDef::new("wait", move |cx: Context| {
            let (started, cancelled) = (started.clone(), cancelled.clone());
            async move {
                let _ = started.send(());
                cx.cancellation().cancelled().await;
                let _ = cancelled.send(());
                Err::<i64, _>(ToolError::new("cancelled"))
            }
        }))
        .expect("wait");
    server
        .add_resource(ResourceDef::new("notes://café", || async { "crème" }))
        .expect("resource");
    server
}

struct Running {
    upstream: Upstream,
    started: mpsc::UnboundedReceiver<()>,
    cancelled: mpsc::UnboundedReceiver<()>,
    _stop: tokio_util::sync::DropGuard,
}

/// Serves `server` at `addr` until the token is cancelled; the handle ends when it stopped.
async fn serve(
    server: Server,
    addr: SocketAddr,
    config: HttpConfig,
) -> (SocketAddr, CancellationToken, JoinHandle<()>) {
    let http = HttpServer::bind(server, addr, config).await.expect("bind");
    let addr = http.local_addr();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let handle = tokio::spawn(async move {
        let _ = http.run_until(stopped.cancelled_owned()).await;
    });
    (addr, stop, handle)
}

async fn running(config: HttpConfig) -> Running {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    let (addr, stop, _) = serve(upstream(started_tx, cancelled_tx), any_port, config).await;
    let upstream = Upstream::http("up", HttpTarget::new(format!("http://{addr}/mcp")));
    // Listing first, as a ProxyServer does: it tells the proxy which tools have annotations.
    let tools = upstream.list_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 4);
    Running {
        upstream,
        started,
        cancelled,
        _stop: stop.drop_guard(),
    }
}

fn args(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

async fn structured(upstream: &Upstream, tool: &str, arguments: Value) -> Value {
    match upstream
        .call_tool(tool, args(arguments), RequestOptions::default())
        .await
        .expect("tools/call")
    {
        CallToolResponse::Complete(result) => {
            assert_ne!(result.is_error, Some(true), "{result:?}");
            result.structured_content.expect("structured content")["result"].clone()
        }
        other => panic!("{other:?}"),
    }
}

async fn every_answer_shape(config: HttpConfig) {
    let up = running(config).await;
    assert_eq!(
        structured(&up.upstream, "add", json!({"a": 40, "b": 2})).await,
        42
    );

    // A tool error is a result; bad input and an unknown tool are JSON-RPC errors, kept.
    let CallToolResponse::Complete(failed) = up
        .upstream
        .call_tool("fail", JsonObject::new(), RequestOptions::default())
        .await
        .expect("a tool error is a result")
    else {
        panic!("not a plain result")
    };
    assert_eq!(failed.is_error, Some(true));
    for (tool, arguments) in [("add", json!({"a": "forty"})), ("nope", json!({}))] {
        let error = up
            .upstream
            .call_tool(tool, args(arguments), RequestOptions::default())
            .await
            .expect_err("refused");
        let ProxyError::Upstream(error) = error else {
            panic!("{error:?}")
        };
        assert_eq!(error.code.0, -32602, "{tool}: {error:?}");
    }

    // `Mcp-Param-Region` must accompany an annotated argument: the upstream refuses the call
    // without it (-32020), so this passes only if the proxy sends it.
    assert_eq!(
        structured(&up.upstream, "region", json!({"region": "eu-west"})).await,
        "eu-west"
    );

    // A non-ASCII URI travels base64-wrapped in `Mcp-Name`; the upstream checks it matches.
    let read = up
        .upstream
        .request(
            rmcp::model::ClientRequest::ReadResourceRequest(rmcp::model::ReadResourceRequest::new(
                rmcp::model::ReadResourceRequestParams::new("notes://café"),
            )),
            RequestOptions::default(),
        )
        .await
        .expect("resources/read");
    assert!(
        serde_json::to_string(&read)
            .expect("json")
            .contains("crème"),
        "{read:?}"
    );
}

#[tokio::test]
async fn json_answers_errors_and_header_rules() {
    every_answer_shape(HttpConfig::new()).await;
}

#[tokio::test]
async fn sse_answers_errors_and_header_rules() {
    every_answer_shape(HttpConfig::new().sse_responses()).await;
}

#[tokio::test]
async fn a_cancelled_call_stops_the_upstream_handler() {
    let mut up = running(HttpConfig::new()).await;
    let cancel = CancellationToken::new();
    let call = {
        let upstream = up.upstream.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            upstream
                .call_tool(
                    "wait",
                    JsonObject::new(),
                    RequestOptions::default().cancel_on(&cancel),
                )
                .await
        })
    };
    up.started.recv().await.expect("the upstream tool started");
    cancel.cancel();
    let error = call.await.expect("join").expect_err("cancelled");
    assert!(error.to_string().contains("was cancelled"), "{error}");
    // The bound only turns a lost cancellation into a failure instead of a hang.
    tokio::time::timeout(Duration::from_secs(10), up.cancelled.recv())
        .await
        .expect("the upstream handler saw the cancellation")
        .expect("signal");
}

#[tokio::test]
async fn annotated_calls_keep_their_headers_on_a_new_session() {
    // An upstream that stops, fails a call (so the proxy drops its session), and comes back
    // on the same address: the new session must learn the tools' schemas again before an
    // annotated argument can travel as `Mcp-Param-Region`.
    let (started, _) = mpsc::unbounded_channel();
    let (cancelled, _) = mpsc::unbounded_channel();
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = upstream(started, cancelled);
    let (addr, stop, stopped) = serve(server.clone(), any_port, HttpConfig::new()).await;
    let upstream = Upstream::http("up", HttpTarget::new(format!("http://{addr}/mcp")));
    upstream.list_tools().await.expect("tools/list");
    assert_eq!(
        structured(&upstream, "region", json!({"region": "eu-west"})).await,
        "eu-west"
    );

    stop.cancel();
    stopped.await.expect("the upstream stopped");
    let down = upstream
        .call_tool(
            "add",
            args(json!({"a": 1, "b": 2})),
            RequestOptions::default(),
        )
        .await
        .expect_err("the upstream is down");
    assert!(down.to_string().contains("upstream 'up'"), "{down}");

    let (_, _stop, _) = serve(server, addr, HttpConfig::new()).await;
    assert_eq!(
        structured(&upstream, "region", json!({"region": "ap-south"})).await,
        "ap-south"
    );
}

#[tokio::test]
async fn posts_carry_the_proxys_meta_reuse_one_connection_and_replace_a_closed_one() {
    let (started, _) = mpsc::unbounded_channel();
    let (cancelled, _) = mpsc::unbounded_channel();
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    let (addr, stop, _) = serve(upstream(started, cancelled), any_port, HttpConfig::new()).await;
    let _stop = stop.drop_guard();
    let proxy = ferrymcp_test_helpers::fault_proxy::FaultProxy::start(addr)
        .await
        .expect("fault proxy");
    let upstream = Upstream::http(
        "up",
        HttpTarget::new(format!("http://{}/mcp", proxy.addr())),
    );
    upstream.list_tools().await.expect("tools/list");
    assert_eq!(
        structured(&upstream, "add", json!({"a": 1, "b": 1})).await,
        2
    );

    // One call at a time: each takes the connection the one before it gave back.
    let accepted = proxy.accepted();
    for n in 0..20 {
        assert_eq!(
            structured(&upstream, "add", json!({"a": n, "b": 1})).await,
            n + 1
        );
    }
    assert_eq!(proxy.accepted(), accepted, "a call opened a connection");
    // Arguments that mention `_meta` take the merge rather than the splice; the upstream
    // still gets the proxy's `_meta` (it refuses a 2026-07-28 call without it).
    assert_eq!(
        structured(&upstream, "add", json!({"a": 2, "b": 3, "_meta": {"x": 1}})).await,
        5
    );

    // The upstream closes every connection (as one does with those idle too long): the
    // next calls go through on a new one.
    proxy.cut();
    tokio::time::timeout(Duration::from_secs(10), async {
        while proxy.connections() > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the cut connections closed");
    for n in 0..5 {
        assert_eq!(
            structured(&upstream, "add", json!({"a": n, "b": 2})).await,
            n + 2
        );
    }
    assert!(proxy.accepted() > accepted);
}
