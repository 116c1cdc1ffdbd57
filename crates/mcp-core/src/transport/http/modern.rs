//! The 2026-07-28 `tools/call` path of our own: one POST, one JSON answer, no session.
//!
//! rmcp's Streamable HTTP service answers a stateless request by re-serializing the parsed
//! message to check its headers, then spawning a one-shot serve loop with a channel for
//! the answer. A plain 2026-07-28 `tools/call` needs none of that: its body is parsed once
//! straight into the request type, its headers are compared with it, the root server's
//! chain answers it in the handler's own future (on a task of its own only if the client
//! hangs up first, so that it can see its cancellation), and the answer is serialized once.
//!
//! Only a request that needs nothing more takes this path: a JSON-answered `tools/call`
//! whose `Mcp-Method` and `Mcp-Name` agree with the body, whose `_meta` carries the
//! protocol version, client capabilities and client info, and that asks for no progress
//! or log notifications (those need a stream) and names no tool with `Mcp-Param-*`
//! headers. Anything else, malformed or not, goes on to rmcp's service unchanged, so every
//! error keeps rmcp's code, status and wording.

use std::{borrow::Cow, pin::Pin, sync::Arc, task::Poll};

use axum::response::Response;
use ferrymcp_types::{
    CallToolRequestParams, ClientCapabilities, ErrorCode, ErrorData, JsonObject, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use http::{
    HeaderName,
    header::{ACCEPT, CONTENT_TYPE},
};
use rmcp::{ServerHandler as _, model::CallToolResponse};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{connection::InFlightSlot, probe::Probe};
use crate::{McpService, RequestScope, ResultRelay};

const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
const PROGRESS_TOKEN: &str = "progressToken";

const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// What the path serves with.
pub(super) struct Modern {
    service: McpService,
    /// Off when the server answers with SSE only, or does not speak 2026-07-28.
    enabled: bool,
}

/// A `tools/call` envelope, parsed in one pass; `jsonrpc` and `method` are only compared,
/// so they are borrowed from the body rather than copied.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: CallToolRequestParams,
}

/// A plain call, parsed: what the path needs to answer it.
pub(super) struct Call {
    id: RequestId,
    /// Without its `_meta`, which is in `meta`.
    params: CallToolRequestParams,
    meta: JsonObject,
    /// Whether the client declared the tasks extension.
    tasks: bool,
}

/// The longest tool name the path takes (the edge's body probe notes no longer names).
const MAX_NAME: usize = 256;

impl Modern {
    /// The path for `service`; `json_response` is the HTTP config's choice of JSON answers.
    pub(super) fn new(service: McpService, json_response: bool) -> Self {
        let speaks_2026 = service
            .supported_protocol_versions()
            .contains(&ProtocolVersion::V_2026_07_28);
        Self {
            service,
            enabled: json_response && speaks_2026,
        }
    }

    /// The call in `body`, when the headers announce a `tools/call` and the body is a plain
    /// one: a valid envelope whose `_meta` carries the protocol version, the client's
    /// capabilities and info and asks for no notifications, naming a tool that takes no
    /// `Mcp-Param-*` headers.
    pub(super) fn parse(&self, headers: &http::HeaderMap, body: &[u8]) -> Option<Call> {
        if !self.enabled || single(headers, &MCP_METHOD) != Some(b"tools/call") {
            return None;
        }
        let Envelope {
            jsonrpc,
            id,
            method,
            mut params,
        } = serde_json::from_slice(body).ok()?;
        if jsonrpc != "2.0" || method != "tools/call" || params.name.len() > MAX_NAME {
            return None;
        }
        let meta = params.meta.take()?.0.0;
        if meta.get(PROTOCOL_VERSION)?.as_str()? != ProtocolVersion::V_2026_07_28.as_str()
            || !meta.get(CLIENT_INFO)?.is_object()
            || meta.contains_key(LOG_LEVEL)
            || meta.contains_key(PROGRESS_TOKEN)
        {
            return None;
        }
        let capabilities = ClientCapabilities::deserialize(meta.get(CLIENT_CAPABILITIES)?).ok()?;
        if let Some(tool) = self.service.server().resolve(&params.name, None)
            && tool.tool.param_headers
        {
            return None;
        }
        Some(Call {
            id,
            params,
            meta,
            tasks: capabilities.supports_tasks(),
        })
    }

    /// Answers `call`, whose request's headers are `parts`.
    pub(super) async fn answer(
        self: Arc<Self>,
        call: Call,
        parts: http::request::Parts,
        in_flight: Option<InFlightSlot>,
    ) -> Response {
        let Call {
            id,
            params,
            meta,
            tasks,
        } = call;
        let cancellation = CancellationToken::new();
        let relay = ResultRelay::open();
        let scope = RequestScope::from_http(id.clone(), meta, parts, cancellation.clone())
            .with_relay(relay.clone());
        let run = Box::pin(async move {
            let answer = self.service.call_tool_in(params, scope).await;
            // The tool handed its result over as JSON; what it returned stood in for it.
            if let (Ok(CallToolResponse::Complete(_)), Some(result)) = (&answer, relay.relayed()) {
                return Answer::Relayed(relayed_body(&id, result));
            }
            let message = match answer {
                // A client that did not declare the tasks extension cannot read a task
                // handle.
                Ok(CallToolResponse::Task(_)) if !tasks => ServerJsonRpcMessage::error(
                    ErrorData::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ),
                    Some(id),
                ),
                Ok(response) => {
                    let mut result = ServerResult::from(response);
                    result.fill_missing_cache_hints();
                    ServerJsonRpcMessage::response(result, id)
                }
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            };
            Answer::Message(message)
        });
        let message = FinishOnDrop {
            run: Some(run),
            cancellation,
            in_flight,
        }
        .await;
        match message {
            Answer::Message(message) => json_answer(&message),
            Answer::Relayed(body) => {
                let mut response = Response::new(axum::body::Body::from(body));
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/json"),
                );
                response
            }
        }
    }
}

/// A call's JSON-RPC answer: a message to write, or the JSON of one around a relayed
/// result.
#[allow(
    clippy::large_enum_variant,
    reason = "moved once per call; boxing the message would allocate on every call"
)]
enum Answer {
    Message(ServerJsonRpcMessage),
    Relayed(Vec<u8>),
}

type Run = Pin<Box<dyn Future<Output = Answer> + Send>>;

/// Polls a call in the request's own task; if the request is dropped first (the client
/// hung up), cancels the call's token and lets the call finish on a task of its own, as a
/// handler that watches its cancellation expects.
struct FinishOnDrop {
    run: Option<Run>,
    cancellation: CancellationToken,
    /// The request's share of `max_in_flight`, kept by the call until it ends.
    in_flight: Option<InFlightSlot>,
}

impl Future for FinishOnDrop {
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let Some(run) = self.run.as_mut() else {
            return Poll::Pending;
        };
        let answer = std::task::ready!(run.as_mut().poll(cx));
        self.run = None;
        Poll::Ready(answer)
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        self.cancellation.cancel();
        let in_flight = self.in_flight.take();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _answer = run.await;
                drop(in_flight);
            });
        }
    }
}

impl Call {
    /// What the edge's body probe would have noted of this call.
    pub(super) fn probe(&self) -> Probe {
        Probe {
            id: serde_json::to_value(&self.id).ok(),
            initialize: false,
            method: Some("tools/call".to_owned()),
            name: Some(self.params.name.to_string()),
            uri: None,
        }
    }

    /// Whether `headers` (as the extensions left them) are those of a plain 2026-07-28 call
    /// of this tool answered as JSON: no session, no `Mcp-Param-*` header, and once each the
    /// version, `Mcp-Method` and `Mcp-Name` (naming the tool as is), JSON in, and both media
    /// types accepted without weights. One pass over the headers, no lookup by name.
    pub(super) fn fits(&self, headers: &http::HeaderMap) -> bool {
        // How often each was seen: the version, `Mcp-Method`, `Mcp-Name`, `Content-Type`,
        // `Accept`.
        let mut seen = [0u8; 5];
        let mut json_body = false;
        let mut accepted = false;
        for (key, value) in headers {
            let seen_at = if key == CONTENT_TYPE {
                json_body = is_json(value.as_bytes());
                3
            } else if key == ACCEPT {
                accepted = accepts_json_and_sse(value.as_bytes());
                4
            } else if !key.as_str().starts_with("mcp-") {
                continue;
            } else if key == MCP_PROTOCOL_VERSION {
                if value.as_bytes() != b"2026-07-28" {
                    return false;
                }
                0
            } else if key == MCP_METHOD {
                if value.as_bytes() != b"tools/call" {
                    return false;
                }
                1
            } else if key == MCP_NAME {
                if value.as_bytes() != self.params.name.as_bytes() {
                    return false;
                }
                2
            } else if key == MCP_SESSION_ID || key.as_str().starts_with("mcp-param-") {
                return false;
            } else {
                continue;
            };
            seen[seen_at] = seen[seen_at].saturating_add(1);
        }
        seen == [1; 5] && json_body && accepted
    }
}

/// The one value of `name`, as bytes; `None` when it is absent or repeated.
fn single<'a>(headers: &'a http::HeaderMap, name: &HeaderName) -> Option<&'a [u8]> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then(|| value.as_bytes())
}

/// Whether a `Content-Type` is JSON (`application/json`, parameters allowed).
fn is_json(value: &[u8]) -> bool {
    std::str::from_utf8(value).is_ok_and(|value| {
        let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// Whether an `Accept` lists both `application/json` and `text/event-stream`, with no
/// parameters (weights are rmcp's to weigh).
fn accepts_json_and_sse(value: &[u8]) -> bool {
    let Ok(accept) = std::str::from_utf8(value) else {
        return false;
    };
    let (mut json, mut sse) = (false, false);
    for entry in accept.split(',') {
        let mut pieces = entry.split(';');
        let essence = pieces.next().unwrap_or_default().trim();
        if pieces.next().is_some() {
            return false;
        }
        json |= essence.eq_ignore_ascii_case("application/json");
        sse |= essence.eq_ignore_ascii_case("text/event-stream");
    }
    json && sse
}

/// The JSON-RPC answer to `id` around `result`, a result a tool relayed, as it came.
fn relayed_body(id: &RequestId, result: &serde_json::value::RawValue) -> Vec<u8> {
    let result = result.get();
    let mut body = Vec::with_capacity(result.len() + 64);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // A request id is a number or a string, which always serializes.
    if serde_json::to_writer(&mut body, id).is_err() {
        body.extend_from_slice(b"null");
    }
    body.extend_from_slice(br#","result":"#);
    body.extend_from_slice(result.as_bytes());
    body.push(b'}');
    body
}

/// The HTTP answer for a JSON-RPC answer, with the status a 2026-07-28 client reads first.
fn json_answer(message: &ServerJsonRpcMessage) -> Response {
    let status = match message {
        ServerJsonRpcMessage::Error(error) => match error.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => http::StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => http::StatusCode::NOT_FOUND,
            _ => http::StatusCode::OK,
        },
        _ => http::StatusCode::OK,
    };
    // Sized for a small answer up front, so most are written without growing the buffer.
    let mut body = Vec::with_capacity(512);
    match serde_json::to_writer(&mut body, message) {
        Ok(()) => {
            let mut response = Response::new(axum::body::Body::from(body));
            *response.status_mut() = status;
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => super::reply::json_rpc_error(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            Value::Null,
            ferrymcp_types::codes::INTERNAL_ERROR,
            format!("Internal error: the answer could not be serialized: {error}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> Call {
        Call {
            id: RequestId::Number(1),
            params: CallToolRequestParams::new(name.to_owned()),
            meta: JsonObject::new(),
            tasks: false,
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    http::HeaderValue::from_str(value).unwrap(),
                )
            })
            .collect()
    }

    const PLAIN: [(&str, &str); 5] = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "add"),
    ];

    /// Only the headers of a plain call of this very tool take the path; anything else
    /// (a session, a parameter header, a header missing, repeated or different, weights)
    /// is left to rmcp's service.
    #[test]
    fn only_a_plain_calls_headers_fit() {
        let add = call("add");
        assert!(add.fits(&headers(&PLAIN)));
        let mut charset = PLAIN;
        charset[0].1 = "Application/JSON; charset=utf-8";
        assert!(add.fits(&headers(&charset)));
        assert!(!call("sub").fits(&headers(&PLAIN)));
        for extra in [
            ("mcp-session-id", "s1"),
            ("mcp-param-region", "eu"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "add"),
            ("mcp-protocol-version", "2026-07-28"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ] {
            let mut pairs = PLAIN.to_vec();
            pairs.push(extra);
            assert!(!add.fits(&headers(&pairs)), "with {extra:?}");
        }
        for (at, value) in [
            (0, "text/plain"),
            (1, "application/json"),
            (1, "application/json;q=1, text/event-stream"),
            (2, "2025-11-25"),
            (3, "tools/list"),
            (4, "ADD"),
        ] {
            let mut pairs = PLAIN;
            pairs[at].1 = value;
            assert!(!add.fits(&headers(&pairs)), "with {value:?}");
        }
        for (at, missing) in PLAIN.iter().enumerate() {
            let mut pairs = PLAIN.to_vec();
            pairs.remove(at);
            assert!(!add.fits(&headers(&pairs)), "without {missing:?}");
        }
        let mut other = PLAIN.to_vec();
        other.push(("mcp-other", "x"));
        other.push(("x-request-id", "7"));
        assert!(add.fits(&headers(&other)));
    }
}
