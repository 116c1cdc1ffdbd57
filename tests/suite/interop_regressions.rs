//! Regressions found by third-party clients, one test per finding, named after the client
//! and the scenario that exposed it. Each drives a server over real Streamable HTTP with raw
//! 2026-07-28 requests, as the client did, and validates the answer against the official
//! schemas.
//!
//! | client, scenario | finding |
//! |---|---|
//! | official conformance suite `input-required-result-*`, `caching` | a complete result a handler built without `resultType` went out without it (the 2026-07-28 schema requires it) |
//! | official conformance suite `server-stateless` | `initialize`, `logging/setLevel`, `resources/(un)subscribe` with 2026-07-28 `_meta` answered HTTP 200 / `-32602` instead of 404 / `-32601` |
//! | official conformance suite `sep-2164-resource-not-found` | an unknown resource's error had no `data.uri` |
//! | FastMCP's Python client 4.1.7 (`fastmcp_tasks`), any task over HTTP | it sends no `Mcp-Name` on `tasks/*`, which was refused with `-32020`, so no task could be polled |

use ferrymcp::{
    Context, InputRequired, Outcome, PromptDef, ResourceDef, Server, ToolDef, ToolError,
    types::{CallToolResult, GetPromptResult, InputRequest, ReadResourceResult},
};
use ferrymcp_test_helpers::{
    http::LoopbackHttp,
    schema::{Spec, assert_valid},
};
use serde_json::{Value, json};

/// A server on a loopback port and a raw client for it.
struct Http(LoopbackHttp);

impl Http {
    async fn serve(server: Server) -> Http {
        Http(LoopbackHttp::serve(server).await)
    }

    /// Sends one 2026-07-28 request as a conforming client does (`_meta`, `Mcp-Method`,
    /// `Mcp-Name` when the body names a target) and returns the HTTP status and message.
    async fn send(&self, method: &str, params: Value) -> (u16, Value) {
        let name = params["name"].as_str().or(params["uri"].as_str());
        let name = name.map(str::to_owned);
        self.send_with(method, params, json!({"elicitation": {}}), name.as_deref())
            .await
    }

    /// [`send`](Self::send) with these client capabilities and this `Mcp-Name` (or none).
    async fn send_with(
        &self,
        method: &str,
        params: Value,
        capabilities: Value,
        name: Option<&str>,
    ) -> (u16, Value) {
        self.0.post_2026(method, params, capabilities, name).await
    }

    async fn shutdown(self) {
        self.0.shutdown().await;
    }
}

fn ask() -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Name?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
        }}
    }))
    .expect("an elicitation request")
}

/// Results written as JSON without `resultType`, as a proxy relaying a 2025-11-25 upstream
/// (or the conformance fixtures) produce them, behind one input round.
fn hand_built_results() -> Server {
    async fn tool(cx: Context) -> Result<Outcome<CallToolResult>, ToolError> {
        if cx.input_responses().is_some() {
            let done = serde_json::from_value(json!({"content": [{"type": "text", "text": "hi"}]}))
                .map_err(ToolError::internal)?;
            return Ok(Outcome::Done(done));
        }
        Ok(Outcome::InputRequired(
            InputRequired::new().request("name", ask()),
        ))
    }
    async fn prompt(cx: Context) -> Result<Outcome<GetPromptResult>, ToolError> {
        if cx.input_responses().is_some() {
            let done = serde_json::from_value(json!({"messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}}
            ]}))
            .map_err(ToolError::internal)?;
            return Ok(Outcome::Done(done));
        }
        Ok(Outcome::InputRequired(
            InputRequired::new().request("name", ask()),
        ))
    }
    async fn resource() -> Result<ReadResourceResult, ToolError> {
        serde_json::from_value(json!({"contents": [{"uri": "data://raw", "text": "raw"}]}))
            .map_err(ToolError::internal)
    }
    let server = Server::new("raw");
    server
        .add_tool(ToolDef::new("raw_tool", tool))
        .expect("tool");
    server
        .add_prompt(PromptDef::new("raw_prompt", prompt))
        .expect("prompt");
    server
        .add_resource(ResourceDef::new("data://raw", resource))
        .expect("resource");
    server
}

#[tokio::test]
async fn conformance_input_required_result_and_caching_complete_results_carry_result_type() {
    let http = Http::serve(hand_built_results()).await;
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});

    // input-required-result-basic-elicitation: the retry's complete CallToolResult.
    let (_, first) = http.send("tools/call", json!({"name": "raw_tool"})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let (_, retry) = http
        .send(
            "tools/call",
            json!({"name": "raw_tool", "inputResponses": answer.clone()}),
        )
        .await;
    assert_eq!(retry["result"]["resultType"], "complete", "{retry}");
    assert_valid(Spec::Mcp, "CallToolResult", &retry["result"]);

    // input-required-result-non-tool-request: the retry's complete GetPromptResult.
    let (_, retry) = http
        .send(
            "prompts/get",
            json!({"name": "raw_prompt", "inputResponses": answer}),
        )
        .await;
    assert_eq!(retry["result"]["resultType"], "complete", "{retry}");
    assert_valid(Spec::Mcp, "GetPromptResult", &retry["result"]);

    // caching: a ReadResourceResult the handler built.
    let (_, read) = http
        .send("resources/read", json!({"uri": "data://raw"}))
        .await;
    assert_eq!(read["result"]["resultType"], "complete", "{read}");
    assert_valid(Spec::Mcp, "ReadResourceResult", &read["result"]);
    http.shutdown().await;
}

#[tokio::test]
async fn conformance_server_stateless_removed_methods_are_404_method_not_found() {
    let http = Http::serve(hand_built_results()).await;
    // The scenario sends each with nothing but `_meta`, so rmcp cannot parse their params.
    for method in [
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let (status, message) = http.send(method, json!({})).await;
        assert_eq!(status, 404, "{method}: {message}");
        assert_eq!(message["error"]["code"], -32601, "{method}: {message}");
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &message);
    }
    // Well-formed ones too: a 2026-07-28 request cannot set a log level this way.
    for (method, params) in [
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/subscribe", json!({"uri": "data://raw"})),
        ("resources/unsubscribe", json!({"uri": "data://raw"})),
    ] {
        let (status, message) = http.send(method, params).await;
        assert_eq!(status, 404, "{method}: {message}");
        assert_eq!(message["error"]["code"], -32601, "{method}: {message}");
    }
    // A malformed request for a method 2026-07-28 has is still -32602.
    let (_, message) = http.send("resources/read", json!({})).await;
    assert_eq!(message["error"]["code"], -32602, "{message}");
    http.shutdown().await;
}

#[tokio::test]
async fn conformance_sep_2164_unknown_resource_error_names_the_uri() {
    let http = Http::serve(hand_built_results()).await;
    let (_, message) = http
        .send("resources/read", json!({"uri": "data://missing"}))
        .await;
    assert_eq!(message["error"]["code"], -32602, "{message}");
    assert_eq!(
        message["error"]["data"]["uri"], "data://missing",
        "{message}"
    );
    http.shutdown().await;
}

#[tokio::test]
async fn fastmcp_client_tasks_get_without_mcp_name() {
    let server = Server::new("tasks");
    server
        .add_tool(ToolDef::new("now", || async { "done" }).task(true))
        .expect("tool");
    server
        .add_extension(ferrymcp::tasks::TasksExtension::new())
        .expect("the tasks extension");
    let http = Http::serve(server).await;
    let opt_in = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (_, created) = http
        .send_with(
            "tools/call",
            json!({"name": "now"}),
            opt_in.clone(),
            Some("now"),
        )
        .await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    // As FastMCP's client sends it: Mcp-Method, no Mcp-Name.
    for method in ["tasks/get", "tasks/cancel"] {
        let (status, answer) = http
            .send_with(method, json!({"taskId": id}), opt_in.clone(), None)
            .await;
        assert_eq!(status, 200, "{method}: {answer}");
        assert_eq!(
            answer["result"]["resultType"], "complete",
            "{method}: {answer}"
        );
    }
    // A header that disagrees with the body is still refused (SEP-2663 R48).
    let (status, answer) = http
        .send_with(
            "tasks/get",
            json!({"taskId": id}),
            opt_in,
            Some("another-task"),
        )
        .await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (400, &json!(-32020)),
        "{answer}"
    );
    http.shutdown().await;
}
