//! The floor: a 2026-07-28 Streamable HTTP endpoint with one tool, `add`, and nothing of an
//! MCP framework. It does the work every conforming server must do for a stateless
//! `tools/call`, and no more: it checks the transport headers (`Content-Type`, `Accept`,
//! `Mcp-Protocol-Version`, `Mcp-Method`, `Mcp-Name` against the body), parses the JSON-RPC
//! envelope and the call's parameters with serde (the protocol version in `_meta` too),
//! routes by method and tool name, deserializes typed arguments, and serializes the same
//! result the demo answers. Errors are JSON-RPC errors with the codes the demo uses.
//!
//! `floor 127.0.0.1:0` prints `listening on http://ADDR/mcp` and serves until killed; it
//! runs on one thread (the benchmark pins each server to one CPU).

mod wire;

use axum::{
    Router, body::Bytes, http::HeaderMap, http::StatusCode, response::Response, routing::post,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use wire::{CallParams, Envelope, PROTOCOL, header, json};

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct Answer<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallResult {
    result_type: &'static str,
    content: [Text; 1],
    structured_content: Structured,
    is_error: bool,
}

#[derive(Serialize)]
struct Text {
    r#type: &'static str,
    text: String,
}

#[derive(Serialize)]
struct Structured {
    result: i64,
}

#[derive(Serialize)]
struct Failure<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RawValue>,
    error: ErrorBody,
}

#[derive(Serialize)]
struct ErrorBody {
    code: i32,
    message: String,
}

fn failure(status: StatusCode, id: Option<&RawValue>, code: i32, message: String) -> Response {
    let body = serde_json::to_vec(&Failure {
        jsonrpc: "2.0",
        id,
        error: ErrorBody { code, message },
    })
    .unwrap_or_default();
    json(status, body)
}

async fn mcp(headers: HeaderMap, body: Bytes) -> Response {
    let bad = |id, code, message: String| failure(StatusCode::BAD_REQUEST, id, code, message);
    if !header(&headers, "content-type").is_some_and(|v| v.starts_with("application/json")) {
        return failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            -32600,
            "Content-Type must be application/json".into(),
        );
    }
    if !header(&headers, "accept").is_some_and(|v| v.contains("application/json")) {
        return failure(
            StatusCode::NOT_ACCEPTABLE,
            None,
            -32600,
            "Accept must include application/json".into(),
        );
    }
    if header(&headers, "mcp-protocol-version") != Some(PROTOCOL) {
        return bad(None, -32600, "unsupported Mcp-Protocol-Version".into());
    }
    let envelope: Envelope = match serde_json::from_slice(&body) {
        Ok(envelope) => envelope,
        Err(error) => return bad(None, -32700, format!("Parse error: {error}")),
    };
    let id = Some(envelope.id);
    if envelope.jsonrpc != "2.0" {
        return bad(id, -32600, "jsonrpc must be \"2.0\"".into());
    }
    if header(&headers, "mcp-method") != Some(&*envelope.method) {
        return bad(
            id,
            -32020,
            "Mcp-Method header does not match the body".into(),
        );
    }
    if envelope.method != "tools/call" {
        return failure(
            StatusCode::OK,
            id,
            -32601,
            format!("Method not found: {}", envelope.method),
        );
    }
    let Some(params) = envelope.params else {
        return bad(id, -32602, "tools/call needs params".into());
    };
    let params: CallParams = match serde_json::from_str(params.get()) {
        Ok(params) => params,
        Err(error) => return bad(id, -32602, format!("Invalid params: {error}")),
    };
    if header(&headers, "mcp-name") != Some(&*params.name) {
        return bad(id, -32020, "Mcp-Name header does not match the body".into());
    }
    let version = params.meta.and_then(|meta| meta.protocol_version);
    if version.as_deref() != Some(PROTOCOL) {
        return bad(
            id,
            -32602,
            "_meta protocol version missing or unsupported".into(),
        );
    }
    if params.name != "add" {
        return failure(
            StatusCode::OK,
            id,
            -32602,
            format!("Unknown tool: {}", params.name),
        );
    }
    let arguments = params.arguments.map_or("{}", RawValue::get);
    let AddArgs { a, b } = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            return failure(
                StatusCode::OK,
                id,
                -32602,
                format!("Invalid arguments: {error}"),
            );
        }
    };
    let sum = a.saturating_add(b);
    let body = serde_json::to_vec(&Answer {
        jsonrpc: "2.0",
        id: envelope.id,
        result: CallResult {
            result_type: "complete",
            content: [Text {
                r#type: "text",
                text: sum.to_string(),
            }],
            structured_content: Structured { result: sum },
            is_error: false,
        },
    })
    .unwrap_or_default();
    json(StatusCode::OK, body)
}

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    wire::serve(
        &address,
        Router::new().route("/mcp", post(mcp)),
        wire::runtime(false),
    )
}
