//! Issue 17: a proxied plain result reaches a 2026-07-28 client as the upstream wrote it.
//! Over real HTTP on 127.0.0.1, an upstream's tools hand fixed JSON to the client
//! (`Context::result_relay`); a front server mounts the upstream through a `ProxyServer`.
//! A plain call through the front is answered with the upstream's bytes; a front middleware,
//! an extension that may change results, rmcp's path and results the relay cannot pass as
//! they are all get the result read and written again, as the schema has it.

use crate::support::{
    modern::{answered, post},
    proxy::serve,
};

use ferrymcp::{
    CallTool, Context, Extension, Next, Server, ToolCallNext, ToolDef, ToolError,
    middleware::from_fn,
    types::{CallToolResponse, CallToolResult, ContentBlock, ErrorData},
};
use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream};
use ferrymcp_test_helpers::schema::{Spec, assert_valid, assert_valid_call_tool_result};
use serde_json::{Value, json, value::RawValue};
use tokio_util::sync::DropGuard;

/// A plain result whose bytes a reading and a writing would change: an escaped `é`, an
/// exponent, a trailing zero, members out of order.
const FORMATTED: &str = r#"{"resultType":"complete","content":[{"type":"text","text":"caf\u00e9 \"5\""}],"structuredContent":{"z":1e2,"a":[0.10]},"isError":false,"_meta":{"k":"v"}}"#;
/// No `resultType`: a 2026-07-28 client must get one.
const UNTYPED: &str = r#"{"content":[{"type":"text","text":"x"}],"isError":false}"#;
/// A block with annotations and a `null` `isError`: not relayed, read as rmcp reads it.
const ANNOTATED: &str = r#"{"resultType":"complete","content":[{"type":"text","text":"x","annotations":{"priority":0.5}}],"isError":null}"#;
/// An error result: relayed, counted as an error.
const FAILED: &str =
    r#"{"resultType":"complete","content":[{"type":"text","text":"no"}],"isError":true}"#;

/// A tool answering `json`: relayed when the call allows it, read otherwise.
fn relaying(name: &str, json: &'static str) -> ToolDef {
    ToolDef::new(name, move |cx: Context| async move {
        let result = match cx.result_relay() {
            Some(relay) => {
                let is_error = json.contains(r#""isError":true"#);
                relay.relay(RawValue::from_string(json.to_owned())?, is_error)
            }
            None => serde_json::from_str::<CallToolResult>(json)?,
        };
        Ok::<_, ToolError>(result)
    })
}

fn upstream() -> Server {
    let server = Server::new("upstream");
    for (name, json) in [
        ("formatted", FORMATTED),
        ("untyped", UNTYPED),
        ("annotated", ANNOTATED),
        ("failed", FAILED),
    ] {
        server.add_tool(relaying(name, json)).expect(name);
    }
    server
}

/// The upstream, and a front mounting it as `up` after `configure` set the front up.
struct Stack {
    upstream_url: String,
    front_url: String,
    _guards: (DropGuard, DropGuard),
}

async fn stack(configure: impl FnOnce(&Server)) -> Stack {
    let (upstream_url, upstream_guard) = serve(upstream()).await;
    let proxy = ProxyServer::new(Upstream::http("up", HttpTarget::new(upstream_url.clone())))
        .build()
        .await
        .expect("the proxy lists the upstream");
    let front = Server::new("front");
    front.mount(&proxy, "up").expect("mount");
    configure(&front);
    let (front_url, front_guard) = serve(front).await;
    Stack {
        upstream_url,
        front_url,
        _guards: (upstream_guard, front_guard),
    }
}

/// A plain 2026-07-28 `tools/call` of `name` (id 1); `via_rmcp` weighs the `Accept` entries,
/// which leaves the request to rmcp's service. The answer's status, media type and body.
async fn call(url: &str, name: &str, via_rmcp: bool) -> (u16, String, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "relay", "version": "1"},
        }},
    });
    answered(post(url, name, &body, via_rmcp).await).await
}

/// The answer `body` read, after checking it is a valid JSON-RPC result whose result is a
/// valid 2026-07-28 `CallToolResult`.
fn valid_result(body: &str) -> Value {
    let answer: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("JSON ({e}): {body}"));
    assert_valid(Spec::Mcp, "JSONRPCResultResponse", &answer);
    assert_valid_call_tool_result(&answer["result"], false);
    answer["result"].clone()
}

fn relayed(json: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"result":{json}}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue17_a_proxied_plain_result_reaches_the_client_as_the_upstream_wrote_it() {
    let stack = stack(|_| {}).await;
    // The upstream's own answer: the tool's JSON, as it wrote it.
    let direct = call(&stack.upstream_url, "formatted", false).await;
    assert_eq!(
        direct,
        (200, "application/json".to_owned(), relayed(FORMATTED))
    );
    // Through the front, the same bytes: the proxy relays them without reading them.
    let proxied = call(&stack.front_url, "up_formatted", false).await;
    assert_eq!(
        proxied,
        (200, "application/json".to_owned(), relayed(FORMATTED))
    );
    let result = valid_result(&proxied.2);
    // rmcp's path reads and writes the result: other bytes, the same answer.
    let (status, _, via_rmcp) = call(&stack.front_url, "up_formatted", true).await;
    assert_eq!(status, 200);
    assert_ne!(via_rmcp, proxied.2, "rmcp's path writes the result again");
    assert_eq!(valid_result(&via_rmcp), result);

    // An error result is relayed as well.
    let failed = call(&stack.front_url, "up_failed", false).await;
    assert_eq!(
        failed,
        (200, "application/json".to_owned(), relayed(FAILED))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue17_results_the_relay_cannot_pass_as_they_are_are_read_and_written_again() {
    let stack = stack(|_| {}).await;
    // No `resultType` upstream: the front's answer has one.
    let (status, _, untyped) = call(&stack.front_url, "up_untyped", false).await;
    assert_eq!(status, 200);
    let result = valid_result(&untyped);
    assert_eq!(result["resultType"], "complete", "{untyped}");
    assert_eq!(result["content"], json!([{"type": "text", "text": "x"}]));

    // Annotations and a `null` member: what rmcp reads (no `isError`), valid on the wire.
    let (status, _, annotated) = call(&stack.front_url, "up_annotated", false).await;
    assert_eq!(status, 200);
    let result = valid_result(&annotated);
    let theirs: CallToolResult = serde_json::from_str(ANNOTATED).expect("rmcp reads it");
    let mut expected = serde_json::to_value(&theirs).expect("JSON");
    expected["resultType"] = json!("complete");
    assert_eq!(result, expected);
    assert!(result.get("isError").is_none(), "{annotated}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue17_a_front_middleware_gets_the_proxied_result_and_may_change_it() {
    let stack = stack(|front| {
        front.add_middleware(from_fn(|call: CallTool, next: Next<'_, CallTool>| {
            Box::pin(async move {
                let mut reply = next.run(call).await;
                if let Ok(CallToolResponse::Complete(result)) = &mut reply {
                    result.content.push(ContentBlock::text("seen"));
                }
                reply
            })
        }));
    })
    .await;
    let (status, _, body) = call(&stack.front_url, "up_formatted", false).await;
    assert_eq!(status, 200);
    let result = valid_result(&body);
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "café \"5\""},
            {"type": "text", "text": "seen"},
        ]),
        "{body}"
    );
    assert_eq!(result["structuredContent"], json!({"a": [0.1], "z": 100.0}));
}

/// Appends a block to every complete result: it does not leave results unchanged.
struct Stamp;

#[async_trait::async_trait]
impl Extension for Stamp {
    fn id(&self) -> &str {
        "com.example/stamp"
    }

    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut reply = next.run(call).await;
        if let Ok(CallToolResponse::Complete(result)) = &mut reply {
            result.content.push(ContentBlock::text("stamped"));
        }
        reply
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue17_an_extension_that_may_change_results_gets_the_proxied_result() {
    let stack = stack(|front| front.add_extension(Stamp).expect("extension")).await;
    let (status, _, body) = call(&stack.front_url, "up_formatted", false).await;
    assert_eq!(status, 200);
    let result = valid_result(&body);
    assert_eq!(
        result["content"][1],
        json!({"type": "text", "text": "stamped"}),
        "{body}"
    );
}
