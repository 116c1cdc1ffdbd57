//! 2026-07-28 calls to an HTTP upstream, each as one POST of its own.
//!
//! On 2026-07-28 a request carries its whole context in `_meta` (protocol version, client
//! info and capabilities), so it needs no session: one POST, one answer. rmcp's client sends
//! every request through its session worker instead: a hand-off to the serving task and on
//! to the transport worker and back, a clone of the message, and a JSON copy of it to compute
//! the SEP-2243 headers. On the proxy's hot path that costs more than the HTTP exchange itself
//! (BENCHMARKS.md, "Proxy hop"). [`Poster`] posts the request from the caller's own task with
//! rmcp's HTTP client ([`StreamableHttpClient`], which keeps its status, auth and size
//! handling), and reads the answer as a JSON body or from the SSE stream.
//!
//! Only calls take this path: `tools/call`, `resources/read`, `prompts/get` and
//! `tasks/get|update|cancel`. Listings stay on the session (rmcp learns the tools' schemas
//! from them), and so does a `tools/call` of a tool whose schema promotes arguments to
//! `Mcp-Param-*` headers, as does every request on a 2025-11-25 session.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, RwLock,
        atomic::{AtomicI64, Ordering},
    },
};

use base64::{Engine as _, prelude::BASE64_STANDARD};
use ferrymcp_types::{
    ClientCapabilities, ErrorData, Implementation, ProtocolVersion, ServerResult,
};
use futures::StreamExt as _;
use http::{HeaderName, HeaderValue};
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientRequest, GetMeta as _, RequestId, RequestMetaObject,
        ServerJsonRpcMessage, Tool,
    },
    transport::{
        common::http_header::{BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX},
        streamable_http_client::{
            StreamableHttpClient as _, StreamableHttpClientTransportConfig, StreamableHttpError,
            StreamableHttpPostResponse, StreamableHttpResponseLimits,
        },
    },
};

use crate::forwarding::ForwardingClient;

/// Why a posted call failed.
#[derive(Debug)]
pub(crate) enum PostError {
    /// The upstream answered with a JSON-RPC error.
    Upstream(ErrorData),
    /// The exchange broke off (connection refused or reset, stream cut short).
    Lost(String),
    /// The upstream answered something that is not an answer to this request.
    Protocol(String),
}

/// Posts 2026-07-28 calls to one HTTP upstream.
pub(crate) struct Poster {
    client: ForwardingClient,
    uri: Arc<str>,
    /// The target's configured headers.
    headers: HashMap<HeaderName, HeaderValue>,
    /// `_meta` of a plain request, and of one that opts in to the tasks extension.
    meta: RequestMetaObject,
    meta_tasks: RequestMetaObject,
    next_id: AtomicI64,
    /// Tools whose schema has `x-mcp-header` annotations (their calls stay on the session).
    param_header_tools: RwLock<HashSet<String>>,
    /// The largest JSON body or SSE event an answer may have.
    limits: StreamableHttpResponseLimits,
}

impl Poster {
    /// Posts to the endpoint of `transport` (its URI, headers and response size
    /// limits) with `client` (which adds the
    /// request's token).
    pub(crate) fn new(
        client: ForwardingClient,
        transport: StreamableHttpClientTransportConfig,
        client_info: Implementation,
        capabilities: ClientCapabilities,
        capabilities_tasks: ClientCapabilities,
    ) -> Self {
        let meta_of = |capabilities| {
            RequestMetaObject::with_client_context(
                ProtocolVersion::V_2026_07_28,
                client_info.clone(),
                capabilities,
            )
        };
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = transport.max_sse_event_size;
        limits.max_json_response_size = transport.max_json_response_size;
        Self {
            client,
            uri: transport.uri,
            headers: transport.custom_headers,
            meta: meta_of(capabilities),
            meta_tasks: meta_of(capabilities_tasks),
            next_id: AtomicI64::new(1),
            param_header_tools: RwLock::new(HashSet::new()),
            limits,
        }
    }

    /// Records which of the listed `tools` promote arguments to `Mcp-Param-*` headers.
    pub(crate) fn learn_tools(&self, tools: &[Tool]) {
        let mut set = self
            .param_header_tools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for tool in tools {
            if has_param_headers(&tool.input_schema) {
                set.insert(tool.name.to_string());
            } else {
                set.remove(tool.name.as_ref());
            }
        }
    }

    /// The `Mcp-Name` of `request` when it is a call this path posts; `None` sends it through
    /// the session.
    pub(crate) fn routes(&self, request: &ClientRequest) -> Option<String> {
        let name = match request {
            ClientRequest::CallToolRequest(call) => {
                let tools = self
                    .param_header_tools
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if tools.contains(call.params.name.as_ref()) {
                    return None;
                }
                call.params.name.to_string()
            }
            ClientRequest::ReadResourceRequest(read) => read.params.uri.clone(),
            ClientRequest::GetPromptRequest(get) => get.params.name.clone(),
            ClientRequest::GetTaskRequest(get) => get.params.task_id.clone(),
            ClientRequest::UpdateTaskRequest(update) => update.params.task_id.clone(),
            ClientRequest::CancelTaskRequest(cancel) => cancel.params.task_id.clone(),
            _ => return None,
        };
        Some(name)
    }

    /// Posts `request` (whose `Mcp-Name` is `name`) and waits for its answer.
    pub(crate) async fn post(
        &self,
        mut request: ClientRequest,
        name: &str,
        tasks_opt_in: bool,
    ) -> Result<ServerResult, PostError> {
        let method = request.method().to_owned();
        let meta = if tasks_opt_in {
            &self.meta_tasks
        } else {
            &self.meta
        };
        let request_meta = request.get_meta_mut();
        for (key, value) in meta.iter() {
            request_meta.insert(key.clone(), value.clone());
        }
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let message = ClientJsonRpcMessage::request(request, id.clone());

        let mut headers = self.headers.clone();
        headers.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_static(ProtocolVersion::V_2026_07_28.as_str()),
        );
        if let Ok(value) = HeaderValue::from_str(&method) {
            headers.insert(HeaderName::from_static("mcp-method"), value);
        }
        if let Ok(value) = HeaderValue::from_str(&header_value(name)) {
            headers.insert(HeaderName::from_static("mcp-name"), value);
        }

        let response = self
            .client
            .post_message_with_response_limits(
                Arc::clone(&self.uri),
                message,
                None,
                // The client picks the request's token (its extensions carry it).
                None,
                headers,
                self.limits,
            )
            .await
            .map_err(|error| match lost_or_protocol(error) {
                PostError::Lost(reason) => {
                    PostError::Lost(crate::tls::redact_url_password(reason, &self.uri))
                }
                PostError::Protocol(reason) => {
                    PostError::Protocol(crate::tls::redact_url_password(reason, &self.uri))
                }
                upstream => upstream,
            })?;
        match response {
            StreamableHttpPostResponse::Json(message, _) => {
                answer_to(&id, message).unwrap_or_else(|| {
                    Err(PostError::Protocol(format!(
                        "the JSON body does not answer request {id}"
                    )))
                })
            }
            StreamableHttpPostResponse::Sse(mut stream, _) => {
                while let Some(event) = stream.next().await {
                    let event = event.map_err(|e| PostError::Lost(e.to_string()))?;
                    let Some(data) = event.data.filter(|d| !d.is_empty()) else {
                        continue;
                    };
                    let message: ServerJsonRpcMessage = serde_json::from_str(&data)
                        .map_err(|e| PostError::Protocol(format!("an SSE event: {e}")))?;
                    // Notifications about the call (progress, logs) are not forwarded, as on
                    // the session.
                    if let Some(answer) = answer_to(&id, message) {
                        return answer;
                    }
                }
                Err(PostError::Lost(format!(
                    "the SSE stream ended before the answer to request {id}"
                )))
            }
            StreamableHttpPostResponse::Accepted => Err(PostError::Protocol(
                "202 Accepted, with no answer to the request".to_owned(),
            )),
            other => Err(PostError::Protocol(format!(
                "an unknown kind of answer: {other:?}"
            ))),
        }
    }
}

/// The answer in `message` when it answers request `id`.
fn answer_to(
    id: &RequestId,
    message: ServerJsonRpcMessage,
) -> Option<Result<ServerResult, PostError>> {
    match message {
        ServerJsonRpcMessage::Response(response) if &response.id == id => Some(Ok(response.result)),
        ServerJsonRpcMessage::Error(error) if error.id.as_ref().is_none_or(|e| e == id) => {
            Some(Err(PostError::Upstream(error.error)))
        }
        _ => None,
    }
}

/// A transport failure: lost when the exchange broke off, a protocol error otherwise.
fn lost_or_protocol(error: StreamableHttpError<reqwest::Error>) -> PostError {
    match error {
        StreamableHttpError::Client(error) if !error.is_status() && !error.is_decode() => {
            PostError::Lost(crate::tls::chain(&error))
        }
        StreamableHttpError::Io(error) => PostError::Lost(error.to_string()),
        StreamableHttpError::Sse(error) => PostError::Lost(error.to_string()),
        StreamableHttpError::UnexpectedEndOfStream => {
            PostError::Lost("the response ended early".to_owned())
        }
        StreamableHttpError::AuthRequired(challenge) => PostError::Protocol(format!(
            "the upstream refused the proxy's token (HTTP 401, {})",
            challenge.www_authenticate_header
        )),
        other => PostError::Protocol(other.to_string()),
    }
}

/// `value` as a header value: as is when it is visible ASCII, else base64 in the SEP-2243
/// sentinel (`=?base64?…?=`).
fn header_value(value: &str) -> String {
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let invisible = value.chars().any(|c| !(' '..='~').contains(&c));
    let ambiguous =
        value.starts_with(BASE64_HEADER_PREFIX) && value.ends_with(BASE64_HEADER_SUFFIX);
    if padded || invisible || ambiguous {
        format!(
            "{BASE64_HEADER_PREFIX}{}{BASE64_HEADER_SUFFIX}",
            BASE64_STANDARD.encode(value)
        )
    } else {
        value.to_owned()
    }
}

/// Whether an input schema promotes an argument to an `Mcp-Param-*` header anywhere.
fn has_param_headers(schema: &serde_json::Map<String, serde_json::Value>) -> bool {
    schema.iter().any(|(key, value)| {
        key == "x-mcp-header"
            || match value {
                serde_json::Value::Object(inner) => has_param_headers(inner),
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(serde_json::Value::as_object)
                    .any(has_param_headers),
                _ => false,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_wrapped_only_when_they_must_be() {
        assert_eq!(header_value("up_add"), "up_add");
        assert_eq!(header_value("users://7/profile"), "users://7/profile");
        assert_eq!(header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
    }

    #[test]
    fn annotated_schemas_are_found_at_any_depth() {
        let schema = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert!(!has_param_headers(&schema(serde_json::json!({
            "type": "object", "properties": {"a": {"type": "integer"}}
        }))));
        assert!(has_param_headers(&schema(serde_json::json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
        }))));
    }
}
