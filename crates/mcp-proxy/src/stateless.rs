//! 2026-07-28 calls to an HTTP upstream, each as one POST of its own.
//!
//! On 2026-07-28 a request carries its whole context in `_meta` (protocol version, client
//! info and capabilities), so it needs no session: one POST, one answer. rmcp's client sends
//! every request through its session worker instead: a hand-off to the serving task and on
//! to the transport worker and back, a clone of the message, and a JSON copy of it to compute
//! the SEP-2243 headers. On the proxy's hot path that costs more than the HTTP exchange
//! itself (BENCHMARKS.md, "Proxy hop"). [`Poster`] posts the request from the caller's own
//! task: the URL parsed and the fixed headers built once per session, the message serialized
//! once, and the answer read straight into the result its method returns ([`answer`]), from
//! a JSON body or an SSE stream, each bounded by the upstream's message limit.
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
use bytes::Bytes;
use ferrymcp_core::ResultRelay;
use ferrymcp_types::{
    ClientCapabilities, ErrorData, Implementation, ProtocolVersion, ServerResult,
};
use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use http_body_util::BodyExt as _;
use rmcp::{
    model::{
        CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, GetExtensions as _,
        GetMeta as _, InputResponses, JsonObject, RequestId, RequestMetaObject, Tool,
    },
    transport::common::http_header::{BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX},
};
use serde::Serialize;

use crate::{
    answer::{self, Reading},
    event_stream,
    forwarding::{ForwardedHeaders, ForwardingClient},
    post_client::{AnswerBody, PostClient},
    upstream_auth::{Credentials, RequestToken},
};

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

const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// How much of a refused answer's body an error quotes.
const QUOTED_BODY: usize = 512;

/// Posts 2026-07-28 calls to one HTTP upstream.
pub(crate) struct Poster {
    client: PostClient,
    credentials: Option<Arc<Credentials>>,
    /// The endpoint, parsed once.
    url: http::Uri,
    /// The endpoint as configured, whose password (if any) errors redact.
    uri: Arc<str>,
    /// The target's configured headers, and those every call carries (`Accept`,
    /// `Content-Type`, the protocol version, the method and name).
    headers: HeaderMap,
    /// `_meta` of a plain request, and of one that opts in to the tasks extension.
    meta: RequestMetaObject,
    meta_tasks: RequestMetaObject,
    /// The same as JSON members (`"_meta":{…},`), rendered once.
    meta_json: Vec<u8>,
    meta_tasks_json: Vec<u8>,
    next_id: AtomicI64,
    /// Tools whose schema has `x-mcp-header` annotations (their calls stay on the session).
    param_header_tools: RwLock<HashSet<String>>,
    /// The largest JSON body or SSE event an answer may have.
    max_message: usize,
}

impl Poster {
    /// Posts to `uri` with `client` (which holds the upstream's credentials), adding the
    /// target's `configured` headers; an answer's JSON body or SSE event may have at most
    /// `max_message` bytes.
    pub(crate) fn new(
        client: ForwardingClient,
        uri: Arc<str>,
        configured: &HashMap<HeaderName, HeaderValue>,
        max_message: usize,
        client_info: Implementation,
        capabilities: ClientCapabilities,
        capabilities_tasks: ClientCapabilities,
    ) -> Result<Self, String> {
        let meta_of = |capabilities| {
            RequestMetaObject::with_client_context(
                ProtocolVersion::V_2026_07_28,
                client_info.clone(),
                capabilities,
            )
        };
        let url = endpoint(&uri)
            .map_err(|e| crate::url_secrets::redact(format!("the URL {uri}: {e}"), &uri))?;
        let mut headers = HeaderMap::with_capacity(configured.len() + 6);
        for (name, value) in configured {
            headers.insert(name.clone(), value.clone());
        }
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            MCP_PROTOCOL_VERSION,
            HeaderValue::from_static(ProtocolVersion::V_2026_07_28.as_str()),
        );
        // Set on every post: in the template already, so that a post's copy of it is
        // written over in place and never grows.
        headers.insert(MCP_METHOD, HeaderValue::from_static("tools/call"));
        headers.insert(MCP_NAME, HeaderValue::from_static(""));
        let meta = meta_of(capabilities);
        let meta_tasks = meta_of(capabilities_tasks);
        let member = |meta: &RequestMetaObject| {
            let mut json = b"\"_meta\":".to_vec();
            serde_json::to_writer(&mut json, meta)
                .map_err(|e| format!("the request metadata could not be serialized: {e}"))?;
            json.push(b',');
            Ok::<_, String>(json)
        };
        Ok(Self {
            meta_json: member(&meta)?,
            meta_tasks_json: member(&meta_tasks)?,
            client: client.post,
            credentials: client.credentials,
            url,
            uri,
            headers,
            meta,
            meta_tasks,
            next_id: AtomicI64::new(1),
            param_header_tools: RwLock::new(HashSet::new()),
            max_message,
        })
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

    /// Where `request` goes on this path (its `Mcp-Method` and `Mcp-Name`) when it is a
    /// call this path posts; `None` sends it through the session.
    pub(crate) fn routes(&self, request: &ClientRequest) -> Option<Route> {
        let (method, name) = match request {
            ClientRequest::CallToolRequest(call) => {
                let tools = self
                    .param_header_tools
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if tools.contains(call.params.name.as_ref()) {
                    return None;
                }
                ("tools/call", call.params.name.to_string())
            }
            ClientRequest::ReadResourceRequest(read) => ("resources/read", read.params.uri.clone()),
            ClientRequest::GetPromptRequest(get) => ("prompts/get", get.params.name.clone()),
            ClientRequest::GetTaskRequest(get) => ("tasks/get", get.params.task_id.clone()),
            ClientRequest::UpdateTaskRequest(update) => {
                ("tasks/update", update.params.task_id.clone())
            }
            ClientRequest::CancelTaskRequest(cancel) => {
                ("tasks/cancel", cancel.params.task_id.clone())
            }
            _ => return None,
        };
        Some(Route { method, name })
    }

    /// Posts `request` (which [`routes`](Self::routes) sends on `route`) and waits for its
    /// answer.
    pub(crate) async fn post(
        &self,
        mut request: ClientRequest,
        route: Route,
        tasks_opt_in: bool,
        relay: Option<&ResultRelay>,
    ) -> Result<ServerResult, PostError> {
        let Route { method, name } = route;
        let forwarded = request.extensions_mut().remove::<ForwardedHeaders>();
        let token = request.extensions_mut().remove::<RequestToken>();
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let body = Bytes::from(self.request_body(request, id.clone(), tasks_opt_in)?);

        let mut headers = self.headers.clone();
        headers.insert(MCP_METHOD, HeaderValue::from_static(method));
        match HeaderValue::try_from(header_value(name)) {
            Ok(value) => headers.insert(MCP_NAME, value),
            Err(_) => headers.remove(MCP_NAME),
        };
        if let Some(ForwardedHeaders(forwarded)) = forwarded {
            for (name, value) in forwarded {
                let Some(name) = name else { continue };
                if name == header::AUTHORIZATION || name == header::PROXY_AUTHORIZATION {
                    continue;
                }
                headers.entry(name).or_insert(value);
            }
        }

        // A token that can be renewed gets one more try after a `401`.
        let renewable = match (&self.credentials, &token) {
            (Some(credentials), Some(used)) if credentials.refreshable() => {
                Some((credentials, used, headers.clone(), body.clone()))
            }
            _ => None,
        };
        let mut response = self.send(headers, body, token.as_ref()).await?;
        if response.status() == StatusCode::UNAUTHORIZED
            && let Some((credentials, used, headers, body)) = renewable
        {
            tracing::debug!("the upstream refused its token (401); fetching a new one");
            if let Ok(fresh) = credentials.renew(used).await {
                response = self.send(headers, body, Some(&fresh)).await?;
            }
        }
        self.read(response, &id, method, relay).await
    }

    /// The JSON of `request` with the id `id` and the session's `_meta` (the plain one, or
    /// the one that opts in to the tasks extension).
    ///
    /// A request without `_meta` of its own (every call the proxy makes, unless the caller
    /// asked for progress) gets the session's `_meta` rendered once, as the first member of
    /// `params`; rmcp would clone and serialize it again for every call. A `tools/call` is
    /// written straight out around it, any other such request has it spliced into its JSON.
    /// A request with `_meta` of its own has the session's members merged into its own and
    /// is serialized whole.
    fn request_body(
        &self,
        request: ClientRequest,
        id: RequestId,
        tasks_opt_in: bool,
    ) -> Result<Vec<u8>, PostError> {
        let (meta, rendered) = if tasks_opt_in {
            (&self.meta_tasks, &self.meta_tasks_json)
        } else {
            (&self.meta, &self.meta_json)
        };
        if let ClientRequest::CallToolRequest(call) = &request
            && call.params.meta.is_none()
            && request.get_meta().is_empty()
        {
            return call_body(&call.params, &id, rendered);
        }
        let message = if request.get_meta().is_empty() {
            let message = ClientJsonRpcMessage::request(request, id);
            if let Some(body) = with_meta(&to_json(&message)?, rendered) {
                return Ok(body);
            }
            message
        } else {
            ClientJsonRpcMessage::request(request, id)
        };
        // The merge: the session's members inserted into the request's own `_meta`.
        let ClientJsonRpcMessage::Request(mut message) = message else {
            return Err(PostError::Protocol("the message is no request".to_owned()));
        };
        let request_meta = message.request.get_meta_mut();
        for (key, value) in meta.iter() {
            request_meta.insert(key.clone(), value.clone());
        }
        to_json(&ClientJsonRpcMessage::Request(message))
    }

    /// One POST of `body`.
    async fn send(
        &self,
        headers: HeaderMap,
        body: Bytes,
        token: Option<&RequestToken>,
    ) -> Result<http::Response<AnswerBody>, PostError> {
        let mut request = http::Request::new(body);
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = self.url.clone();
        *request.headers_mut() = headers;
        if let Some(token) = token {
            let mut value =
                HeaderValue::try_from(format!("Bearer {}", token.token)).map_err(|_| {
                    PostError::Protocol("the upstream token is not a valid header value".to_owned())
                })?;
            value.set_sensitive(true);
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        self.client
            .send(request)
            .await
            .map_err(|reason| PostError::Lost(self.redact(reason)))
    }

    /// The answer to request `id` in `response`.
    async fn read(
        &self,
        response: http::Response<AnswerBody>,
        id: &RequestId,
        method: &str,
        relay: Option<&ResultRelay>,
    ) -> Result<ServerResult, PostError> {
        let status = response.status();
        let content_type = MediaType::of(response.headers());
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Err(PostError::Protocol(format!(
                "{status}, with no answer to the request"
            )));
        }
        if !status.is_success() {
            return Err(Box::pin(self.refused(response, content_type, id)).await);
        }
        match content_type {
            MediaType::Json => {
                let body = self.body(response).await?;
                match answer::read(&body, id, method, relay) {
                    Ok(Reading::Answer(answer)) => answer.map_err(PostError::Upstream),
                    Ok(Reading::Other) => Err(PostError::Protocol(format!(
                        "the JSON body does not answer request {id}"
                    ))),
                    Err(detail) => Err(PostError::Protocol(detail)),
                }
            }
            MediaType::EventStream => Box::pin(self.read_events(response, id, method, relay)).await,
            MediaType::Other(content_type) => Err(PostError::Protocol(format!(
                "HTTP {status} with the content type {content_type:?}, neither JSON nor SSE"
            ))),
        }
    }

    /// The answer to request `id` in the SSE stream of `response`: the first event that
    /// answers it (notifications about the call are not forwarded, as on the session).
    async fn read_events(
        &self,
        response: http::Response<AnswerBody>,
        id: &RequestId,
        method: &str,
        relay: Option<&ResultRelay>,
    ) -> Result<ServerResult, PostError> {
        let body = response.into_body().into_data_stream();
        let mut events = event_stream::events(body, self.max_message);
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| {
                let reason = self.redact(error.to_string());
                if event_stream::broke_off(&error) {
                    PostError::Lost(reason)
                } else {
                    PostError::Protocol(format!("the SSE answer: {reason}"))
                }
            })?;
            let Some(data) = event.data.filter(|d| !d.is_empty()) else {
                continue;
            };
            // Notifications about the call (progress, logs) are not forwarded, as on
            // the session.
            match answer::read(data.as_bytes(), id, method, relay) {
                Ok(Reading::Answer(answer)) => return answer.map_err(PostError::Upstream),
                Ok(Reading::Other) => {}
                Err(detail) => {
                    return Err(PostError::Protocol(format!("an SSE event: {detail}")));
                }
            }
        }
        Err(PostError::Lost(format!(
            "the SSE stream ended before the answer to request {id}"
        )))
    }

    /// The whole body of `response`, at most the message limit.
    async fn body(&self, response: http::Response<AnswerBody>) -> Result<Bytes, PostError> {
        let too_large = || {
            PostError::Protocol(format!(
                "HTTP response body exceeded the maximum size of {} bytes",
                self.max_message
            ))
        };
        if content_length(response.headers()).is_some_and(|n| n > self.max_message as u64) {
            return Err(too_large());
        }
        let mut body = response.into_body();
        let mut first: Option<Bytes> = None;
        let mut joined = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|error| PostError::Lost(self.redact(crate::tls::chain(&*error))))?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            let read = first.as_ref().map_or(0, Bytes::len) + joined.len() + chunk.len();
            if read > self.max_message {
                return Err(too_large());
            }
            // Most answers arrive in one chunk, which is kept as it is.
            match first.take() {
                None if joined.is_empty() => first = Some(chunk),
                earlier => {
                    if let Some(earlier) = earlier {
                        joined.extend_from_slice(&earlier);
                    }
                    joined.extend_from_slice(&chunk);
                }
            }
        }
        Ok(first.unwrap_or_else(|| Bytes::from(joined)))
    }

    /// The error for an answer to request `id` with a status other than 2xx: the JSON-RPC
    /// error its JSON body holds, else the status with the start of the body.
    async fn refused(
        &self,
        response: http::Response<AnswerBody>,
        content_type: MediaType,
        id: &RequestId,
    ) -> PostError {
        let status = response.status();
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= 128)
            .map(str::to_owned);
        let refused_token = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
        let mut quoted = Vec::new();
        if matches!(content_type, MediaType::Json) && !refused_token {
            match self.body(response).await {
                Ok(body) => {
                    if let Ok(Reading::Answer(Err(error))) = answer::read(&body, id, "", None) {
                        return PostError::Upstream(error);
                    }
                    quoted = body.to_vec();
                }
                Err(error) => return error,
            }
        } else {
            let mut body = response.into_body();
            while quoted.len() < QUOTED_BODY
                && let Some(Ok(frame)) = body.frame().await
            {
                if let Some(chunk) = frame.data_ref() {
                    quoted.extend_from_slice(chunk);
                }
            }
        }
        quoted.truncate(QUOTED_BODY);
        let mut detail = match (refused_token, challenge) {
            (true, Some(challenge)) => {
                format!("the upstream refused the proxy's token (HTTP {status}, {challenge})")
            }
            _ => format!("HTTP {status}"),
        };
        if let Some(retry_after) = retry_after {
            detail.push_str(&format!(", Retry-After: {retry_after}"));
        }
        let quoted = String::from_utf8_lossy(&quoted);
        let quoted = quoted.trim();
        if !quoted.is_empty() {
            detail.push_str(": ");
            detail.push_str(quoted);
        }
        PostError::Protocol(self.redact(detail))
    }

    /// `text` without the secrets of the endpoint's URL.
    fn redact(&self, text: String) -> String {
        crate::url_secrets::redact(text, &self.uri)
    }
}

/// The JSON of `message`.
fn to_json(message: &ClientJsonRpcMessage) -> Result<Vec<u8>, PostError> {
    serde_json::to_vec(message)
        .map_err(|e| PostError::Protocol(format!("the request could not be serialized: {e}")))
}

/// The JSON of a `tools/call` request whose `params` carry no `_meta` of their own, with
/// the member `meta` (`"_meta":{…},`) first in its `params`, written straight out: rmcp's
/// serializer copies the params, arguments and all, into a `Value` tree to merge `_meta`
/// into them.
fn call_body(
    params: &CallToolRequestParams,
    id: &RequestId,
    meta: &[u8],
) -> Result<Vec<u8>, PostError> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Params<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<&'a JsonObject>,
        #[serde(skip_serializing_if = "Option::is_none")]
        input_responses: Option<&'a InputResponses>,
        #[serde(skip_serializing_if = "Option::is_none")]
        request_state: Option<&'a str>,
    }
    let unserializable = |e: serde_json::Error| {
        PostError::Protocol(format!("the request could not be serialized: {e}"))
    };
    let mut body = Vec::with_capacity(192 + meta.len());
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut body, id).map_err(unserializable)?;
    body.extend_from_slice(br#","method":"tools/call","params":{"#);
    body.extend_from_slice(meta);
    let opened = body.len();
    serde_json::to_writer(
        &mut body,
        &Params {
            name: &params.name,
            arguments: params.arguments.as_ref(),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
        },
    )
    .map_err(unserializable)?;
    // `params` was opened above, before the `_meta` member: drop the `{` that `Params`
    // opened its object with (it always has `name`, so no member is left dangling).
    body.remove(opened);
    body.push(b'}');
    Ok(body)
}

/// `plain`, the JSON of a request without `_meta`, with the `"_meta":{…},` member `meta`
/// first in its `params`; `None` when `plain` has no non-empty `params` object or mentions
/// `_meta` anywhere (then the caller merges and serializes instead).
fn with_meta(plain: &[u8], meta: &[u8]) -> Option<Vec<u8>> {
    const PARAMS: &[u8] = b"\"params\":{";
    if memchr::memmem::find(plain, b"\"_meta\"").is_some() {
        return None;
    }
    // The envelope's members before `params` (`jsonrpc`, `id`, `method`) cannot hold this
    // text, so the first match is the `params` member.
    let at = memchr::memmem::find(plain, PARAMS)? + PARAMS.len();
    if plain.get(at).is_none_or(|&next| next == b'}') {
        return None;
    }
    let mut body = Vec::with_capacity(plain.len() + meta.len());
    body.extend_from_slice(&plain[..at]);
    body.extend_from_slice(meta);
    body.extend_from_slice(&plain[at..]);
    Some(body)
}

/// The URI of the endpoint `url`, as the session's client reads it: parsed as a URL first,
/// so that a host in Unicode becomes its ASCII (punycode) form, which `http::Uri` requires.
fn endpoint(url: &str) -> Result<http::Uri, String> {
    let url = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    http::Uri::try_from(url.as_str()).map_err(|e| e.to_string())
}

/// The `Content-Length` in `headers`, when there is one.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// The media type of an answer, as far as the path tells them apart.
enum MediaType {
    Json,
    EventStream,
    Other(Option<String>),
}

impl MediaType {
    fn of(headers: &HeaderMap) -> Self {
        let Some(value) = headers.get(header::CONTENT_TYPE) else {
            return Self::Other(None);
        };
        let text = String::from_utf8_lossy(value.as_bytes());
        let essence = text.split(';').next().unwrap_or_default().trim();
        if essence.eq_ignore_ascii_case("application/json") {
            Self::Json
        } else if essence.eq_ignore_ascii_case("text/event-stream") {
            Self::EventStream
        } else {
            Self::Other(Some(text.chars().take(100).collect()))
        }
    }
}

/// Where a request goes on the direct path: its `Mcp-Method` and `Mcp-Name`.
pub(crate) struct Route {
    method: &'static str,
    name: String,
}

impl Route {
    /// The method of the request posted on this route.
    pub(crate) fn method(&self) -> &'static str {
        self.method
    }
}

/// `value` as a header value: as is when it is visible ASCII, else base64 in the SEP-2243
/// sentinel (`=?base64?…?=`). The header takes over `value`'s buffer when it can.
fn header_value(value: String) -> String {
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let invisible = value.chars().any(|c| !(' '..='~').contains(&c));
    let ambiguous =
        value.starts_with(BASE64_HEADER_PREFIX) && value.ends_with(BASE64_HEADER_SUFFIX);
    if padded || invisible || ambiguous {
        format!(
            "{BASE64_HEADER_PREFIX}{}{BASE64_HEADER_SUFFIX}",
            BASE64_STANDARD.encode(&value)
        )
    } else {
        value
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
    fn an_endpoint_with_a_unicode_host_is_posted_to_in_its_ascii_form() {
        let uri = endpoint("http://bücher.example:8080/mcp?x=1").expect("a valid URL");
        assert_eq!(uri.host(), Some("xn--bcher-kva.example"));
        assert_eq!(uri.port_u16(), Some(8080));
        assert_eq!(uri.path_and_query().map(|p| p.as_str()), Some("/mcp?x=1"));
        assert!(endpoint("not a url").is_err());
    }

    /// A proxy session's `_meta`, and the same as the member a post splices in.
    fn session_meta() -> (RequestMetaObject, Vec<u8>) {
        let meta = RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            Implementation::new("proxy", "1.0"),
            ClientCapabilities::default(),
        );
        let mut member = b"\"_meta\":".to_vec();
        serde_json::to_writer(&mut member, &meta).unwrap();
        member.push(b',');
        (meta, member)
    }

    /// A `tools/call` written straight out reads as rmcp's serialization of the request with
    /// the session's `_meta` inserted, whatever its arguments (`_meta` in them included),
    /// input responses, request state and id.
    #[test]
    fn written_calls_read_as_the_merged_request() {
        use rmcp::model::{CallToolRequest, CallToolRequestParams};
        let (meta, member) = session_meta();
        let object = |v: serde_json::Value| v.as_object().cloned().unwrap();
        let mut with_rounds = CallToolRequestParams::new("ask").with_arguments(object(
            serde_json::json!({"_meta": {"x": 1}, "q": "\"params\":{"}),
        ));
        with_rounds.input_responses = Some(
            object(serde_json::json!({"k": {"action": "accept"}}))
                .into_iter()
                .collect(),
        );
        with_rounds.request_state = Some("sealed \u{e9}".to_owned());
        let calls = [
            CallToolRequestParams::new("add")
                .with_arguments(object(serde_json::json!({"a": 1, "b": [2, {"c": null}]}))),
            CallToolRequestParams::new("no_arguments"),
            CallToolRequestParams::new("caf\u{e9} \"quoted\"")
                .with_arguments(serde_json::Map::new()),
            with_rounds,
        ];
        for (n, params) in calls.into_iter().enumerate() {
            let id = if n % 2 == 0 {
                RequestId::Number(9)
            } else {
                RequestId::String("r-9".into())
            };
            let written: serde_json::Value =
                serde_json::from_slice(&call_body(&params, &id, &member).unwrap()).unwrap();
            let mut merged = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            for (key, value) in meta.iter() {
                merged.get_meta_mut().insert(key.clone(), value.clone());
            }
            let merged = serde_json::to_value(ClientJsonRpcMessage::request(merged, id)).unwrap();
            assert_eq!(written, merged);
        }
    }

    /// The session's `_meta` spliced into a request's JSON reads as rmcp's serialization
    /// of the request with those members inserted; a request that mentions `_meta` is left
    /// to the merge.
    #[test]
    fn spliced_meta_reads_as_the_merged_request() {
        use rmcp::model::{
            CallToolRequest, CallToolRequestParams, GetTaskParams, GetTaskRequest,
            ReadResourceRequest, ReadResourceRequestParams,
        };
        let (meta, member) = session_meta();
        let arguments = |v: serde_json::Value| v.as_object().cloned().unwrap();
        let requests = [
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("add").with_arguments(arguments(
                    serde_json::json!({"a": 1, "b": "\"params\":{", "c": {"params": {}}}),
                )),
            )),
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
                "no_arguments",
            ))),
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
                ReadResourceRequestParams::new("notes://café"),
            )),
            ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new("t1"))),
        ];
        for request in requests {
            let id = RequestId::Number(9);
            let plain =
                serde_json::to_vec(&ClientJsonRpcMessage::request(request.clone(), id.clone()))
                    .unwrap();
            let spliced = with_meta(&plain, &member).expect("spliced");
            let mut merged = request;
            for (key, value) in meta.iter() {
                merged.get_meta_mut().insert(key.clone(), value.clone());
            }
            let merged = serde_json::to_value(ClientJsonRpcMessage::request(merged, id)).unwrap();
            let spliced: serde_json::Value = serde_json::from_slice(&spliced).unwrap();
            assert_eq!(spliced, merged);
        }
        let mentions_meta = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("add")
                .with_arguments(arguments(serde_json::json!({"_meta": 1}))),
        ));
        let plain = serde_json::to_vec(&ClientJsonRpcMessage::request(
            mentions_meta,
            RequestId::Number(1),
        ))
        .unwrap();
        assert_eq!(with_meta(&plain, &member), None);
        assert_eq!(
            with_meta(
                br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#,
                &member
            ),
            None
        );
    }

    #[test]
    fn header_values_are_wrapped_only_when_they_must_be() {
        assert_eq!(header_value("up_add".into()), "up_add");
        assert_eq!(
            header_value("users://7/profile".into()),
            "users://7/profile"
        );
        assert_eq!(header_value("héllo".into()), "=?base64?aMOpbGxv?=");
        assert_eq!(header_value(" padded".into()), "=?base64?IHBhZGRlZA==?=");
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
