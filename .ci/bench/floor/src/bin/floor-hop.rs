//! The floor of a gateway hop: a 2026-07-28 endpoint that serves one upstream's tools under
//! a namespace with nothing of an MCP framework, doing only what any conforming hop must.
//!
//! For each `tools/call` it checks the transport headers as the floor does, parses the
//! envelope and the call's parameters (borrowed, the arguments left as raw JSON), strips the
//! namespace from the tool name, posts the call to the upstream over a kept-alive HTTP/1.1
//! connection (its own `_meta`, the SEP-2243 headers), reads the upstream's JSON answer
//! (envelope parsed, the id checked, the result left as raw JSON) and relays the result
//! under the caller's id. No typed result, no middleware, no limits: the least CPU a hop
//! over loopback TCP can cost on this machine, beside which `gateway_hop.sh` puts the
//! gateway's.
//!
//! `floor-hop 127.0.0.1:0 http://UPSTREAM/mcp demo` prints `listening on http://ADDR/mcp`
//! and serves until killed, on the runtime `ferrymcp-gateway` picks (one thread on one CPU).

use std::{
    borrow::Cow,
    sync::{
        Arc, Mutex,
        atomic::{AtomicI64, Ordering},
    },
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
    routing::post,
};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::value::RawValue;

#[path = "../wire.rs"]
mod wire;
use wire::{CallParams, Envelope, PROTOCOL, header, json};

/// The hop's own `_meta` on every upstream call (a client's, as the protocol asks).
const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor-hop","version":"1"}}"#;

#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Option<i64>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

struct Hop {
    upstream: hyper::Uri,
    authority: HeaderValue,
    /// The namespace with its `_`, stripped from tool names.
    prefix: String,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    next_id: AtomicI64,
}

fn failure(status: StatusCode, id: Option<&RawValue>, code: i32, message: &str) -> Response {
    let id = id.map_or("null", RawValue::get);
    let message = serde_json::to_string(message).unwrap_or_default();
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message}}}}}"#);
    json(status, body.into_bytes())
}

impl Hop {
    /// A kept-alive connection to the upstream: an idle one, else a new one.
    async fn connection(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        loop {
            let idle = self.idle.lock().map_err(|e| e.to_string())?.pop();
            let Some(mut sender) = idle else { break };
            if sender.ready().await.is_ok() {
                return Ok(sender);
            }
        }
        let authority = self.upstream.authority().ok_or("no authority")?.as_str();
        let tcp = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// Posts `body` (a `tools/call` of `name`) upstream; the answer's body.
    async fn post(&self, name: &str, body: Vec<u8>) -> Result<Bytes, String> {
        let mut sender = self.connection().await?;
        let request = hyper::Request::post(self.upstream.path())
            .header(header::HOST, self.authority.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        self.idle.lock().map_err(|e| e.to_string())?.push(sender);
        if !status.is_success() {
            return Err(format!("the upstream answered {status}"));
        }
        Ok(body)
    }
}

async fn mcp(State(hop): State<Arc<Hop>>, headers: HeaderMap, body: Bytes) -> Response {
    let bad = |id, code, message: &str| failure(StatusCode::BAD_REQUEST, id, code, message);
    if !header(&headers, "content-type").is_some_and(|v| v.starts_with("application/json")) {
        let message = "Content-Type must be application/json";
        return failure(StatusCode::UNSUPPORTED_MEDIA_TYPE, None, -32600, message);
    }
    if !header(&headers, "accept").is_some_and(|v| v.contains("application/json")) {
        let message = "Accept must include application/json";
        return failure(StatusCode::NOT_ACCEPTABLE, None, -32600, message);
    }
    if header(&headers, "mcp-protocol-version") != Some(PROTOCOL) {
        return bad(None, -32600, "unsupported Mcp-Protocol-Version");
    }
    let envelope: Envelope = match serde_json::from_slice(&body) {
        Ok(envelope) => envelope,
        Err(_) => return bad(None, -32700, "Parse error"),
    };
    let id = Some(envelope.id);
    if envelope.jsonrpc != "2.0" {
        return bad(id, -32600, "jsonrpc must be \"2.0\"");
    }
    if header(&headers, "mcp-method") != Some(&*envelope.method) {
        return bad(id, -32020, "Mcp-Method header does not match the body");
    }
    if envelope.method != "tools/call" {
        return failure(StatusCode::OK, id, -32601, "Method not found");
    }
    let Some(params) = envelope.params else {
        return bad(id, -32602, "tools/call needs params");
    };
    let params: CallParams = match serde_json::from_str(params.get()) {
        Ok(params) => params,
        Err(_) => return bad(id, -32602, "Invalid params"),
    };
    if header(&headers, "mcp-name") != Some(&*params.name) {
        return bad(id, -32020, "Mcp-Name header does not match the body");
    }
    let version = params.meta.and_then(|meta| meta.protocol_version);
    if version.as_deref() != Some(PROTOCOL) {
        return bad(id, -32602, "_meta protocol version missing or unsupported");
    }
    let Some(name) = params.name.strip_prefix(hop.prefix.as_str()) else {
        return failure(StatusCode::OK, id, -32602, "Unknown tool");
    };
    let upstream_id = hop.next_id.fetch_add(1, Ordering::Relaxed);
    let mut call = Vec::with_capacity(256);
    call.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    call.extend_from_slice(upstream_id.to_string().as_bytes());
    call.extend_from_slice(br#","method":"tools/call","params":{"_meta":"#);
    call.extend_from_slice(META.as_bytes());
    call.extend_from_slice(br#","name":"#);
    if serde_json::to_writer(&mut call, name).is_err() {
        return bad(id, -32602, "Invalid params");
    }
    if let Some(arguments) = params.arguments {
        call.extend_from_slice(br#","arguments":"#);
        call.extend_from_slice(arguments.get().as_bytes());
    }
    call.extend_from_slice(b"}}");
    let answer = match hop.post(name, call).await {
        Ok(answer) => answer,
        Err(reason) => return failure(StatusCode::OK, id, -32603, &reason),
    };
    let relayed = serde_json::from_slice::<Answer>(&answer)
        .ok()
        .filter(|answer| answer.jsonrpc == "2.0" && answer.id == Some(upstream_id))
        .and_then(|answer| match (answer.result, answer.error) {
            (Some(result), None) => Some(("result", result)),
            (None, Some(error)) => Some(("error", error)),
            _ => None,
        });
    let Some((member, value)) = relayed else {
        let message = "the upstream's answer is no answer";
        return failure(StatusCode::OK, id, -32603, message);
    };
    let mut relayed = Vec::with_capacity(value.get().len() + 64);
    relayed.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    relayed.extend_from_slice(envelope.id.get().as_bytes());
    relayed.extend_from_slice(format!(r#","{member}":"#).as_bytes());
    relayed.extend_from_slice(value.get().as_bytes());
    relayed.push(b'}');
    json(StatusCode::OK, relayed)
}

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(address), Some(upstream), Some(namespace)) = (args.next(), args.next(), args.next())
    else {
        return Err("usage: floor-hop LISTEN_ADDRESS UPSTREAM_URL NAMESPACE".into());
    };
    let upstream: hyper::Uri = upstream.parse()?;
    if upstream.scheme_str() != Some("http") {
        return Err("the upstream URL must be http://".into());
    }
    let authority = HeaderValue::from_str(upstream.authority().ok_or("no authority")?.as_str())?;
    let hop = Arc::new(Hop {
        upstream,
        authority,
        prefix: format!("{namespace}_"),
        idle: Mutex::new(Vec::new()),
        next_id: AtomicI64::new(1),
    });
    wire::serve(
        &address,
        Router::new().route("/mcp", post(mcp)).with_state(hop),
        wire::runtime(true),
    )
}
