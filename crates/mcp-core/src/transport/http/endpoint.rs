//! The middleware in front of rmcp's Streamable HTTP service on the MCP path: `Host` and
//! `Origin` checks, reading the body once (bounded in size and time), the session limit,
//! plain 2026-07-28 calls answered on our own path (see [`super::modern`]), and JSON-RPC
//! answers where rmcp would answer plain text.

use std::{sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use http_body_util::BodyExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::{
    config::Access,
    connection::InFlightSlot,
    origin::{self, Refusal},
    probe::Probe,
    reject_log::{Kind, RejectLog},
    reply::{TRANSPORT_REFUSED, busy, json_rpc_error, unknown_session},
};

/// What the endpoint middleware checks against.
pub(super) struct Endpoint {
    pub(super) access: Access,
    pub(super) max_body_bytes: usize,
    pub(super) body_timeout: Duration,
    pub(super) max_sessions: usize,
    pub(super) sessions: Arc<LocalSessionManager>,
    pub(super) log: Arc<RejectLog>,
    /// The root's extensions, asked to adjust each POST's headers.
    pub(super) extensions: Arc<Vec<Arc<dyn crate::Extension>>>,
    /// The 2026-07-28 `tools/call` path that does not go through rmcp's service.
    pub(super) modern: Arc<super::modern::Modern>,
    /// The resource server, when the endpoint needs bearer tokens.
    #[cfg(feature = "auth")]
    pub(super) gate: Option<Arc<super::bearer::Gate>>,
    /// Keeps the open sessions' gauge read while the endpoint is served.
    pub(super) _sessions_gauge: crate::metrics::ScrapeGuard,
}

/// The middleware function, mounted with `axum::middleware::from_fn_with_state`.
pub(super) async fn guard(
    State(endpoint): State<Arc<Endpoint>>,
    request: Request,
    next: Next,
) -> Response {
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let (mut parts, body) = request.into_parts();
    // Held by this function, or by a call left running after its client hung up; never by
    // rmcp's service, which may keep a request's parts.
    let in_flight = parts.extensions.remove::<InFlightSlot>();
    if let Err(refusal) = origin::check(&endpoint.access, &parts) {
        return refused(&endpoint.log, refusal);
    }
    #[cfg(feature = "auth")]
    let caller = match &endpoint.gate {
        Some(gate) => match gate.authenticate(&mut parts, &endpoint.log).await {
            Ok(caller) => {
                if let Some(response) = gate.refuse_session(&caller, &parts.headers) {
                    return response;
                }
                Some((gate, caller))
            }
            Err(response) => return response,
        },
        None => None,
    };
    if parts.method != http::Method::POST {
        #[cfg(feature = "auth")]
        if let Some((gate, _)) = &caller
            && parts.method == http::Method::DELETE
        {
            gate.closed(&parts.headers);
        }
        // rmcp accepts the end of a session it does not know: answered as any other use of
        // an unknown session (and as the end of another caller's) is.
        let unknown = match parts.headers.get("mcp-session-id") {
            Some(id) if parts.method == http::Method::DELETE => {
                let id = id.to_str().unwrap_or_default();
                !endpoint.sessions.sessions.read().await.contains_key(id)
            }
            _ => false,
        };
        let response = next.run(Request::from_parts(parts, body)).await;
        if unknown && response.status() == http::StatusCode::ACCEPTED {
            return unknown_session();
        }
        return json_rpc_refusal(response).await;
    }
    let bytes = match read_body(&endpoint, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    // A plain 2026-07-28 call is parsed once, here, and answered on our own path below.
    let call = endpoint.modern.parse(&parts.headers, &bytes);
    #[cfg(feature = "auth")]
    let gated = caller.is_some();
    #[cfg(not(feature = "auth"))]
    let gated = false;
    let probe = match &call {
        // What a call targets is only read by the auth gate.
        Some(call) if gated => Ok(call.probe()),
        Some(_) => Ok(Probe::default()),
        None => Probe::scan(&bytes),
    };
    #[cfg(feature = "auth")]
    if let (Some((gate, caller)), Ok(probe)) = (&caller, &probe)
        && let Some(response) = gate.refuse_operation(caller, probe)
    {
        return response;
    }
    if let Ok(Probe {
        initialize: true, ..
    }) = &probe
        && !parts.headers.contains_key("mcp-session-id")
    {
        let open = endpoint.sessions.sessions.read().await.len();
        if open >= endpoint.max_sessions {
            endpoint.log.refused(
                Kind::Sessions,
                &format_args!("initialize over max_sessions ({open} open)"),
            );
            return busy(format!(
                "the server has reached its limit of {} sessions; retry later",
                endpoint.max_sessions
            ));
        }
    }
    let mut parts = parts;
    for extension in endpoint.extensions.iter() {
        extension.prepare_http_request(&mut parts.headers, &bytes);
    }
    let bytes = match &probe {
        Ok(Probe {
            method: Some(method),
            ..
        }) if method == "subscriptions/listen" => reroute_listen(&mut parts.headers, bytes),
        _ => bytes,
    };
    if let Some(call) = call
        && call.fits(&parts.headers)
    {
        return Arc::clone(&endpoint.modern)
            .answer(call, parts, in_flight)
            .await;
    }
    let json_content = is_json_content(&parts.headers);
    // The body moves into rmcp's request: no copy of it is kept while rmcp parses it.
    let response = next.run(Request::from_parts(parts, bytes.into())).await;
    #[cfg(feature = "auth")]
    if let (
        Some((gate, caller)),
        Ok(Probe {
            initialize: true, ..
        }),
    ) = (&caller, &probe)
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    {
        gate.opened(caller, &id, &endpoint.sessions).await;
    }
    if response.status() == http::StatusCode::BAD_REQUEST && is_json_content(response.headers()) {
        let tasks_request = matches!(
            &probe,
            Ok(Probe { method: Some(method), .. })
                if matches!(method.as_str(), "tasks/get" | "tasks/update" | "tasks/cancel")
        );
        // rmcp's refusals quote at most the request back: twice the body is room enough.
        let limit = endpoint.max_body_bytes.saturating_mul(2) + MAX_REFUSAL_BYTES;
        return word_json_refusal(response, tasks_request, limit).await;
    }
    if response.status() != http::StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return json_rpc_refusal(response).await;
    }
    match probe {
        Err(error) => json_rpc_error(
            http::StatusCode::BAD_REQUEST,
            serde_json::Value::Null,
            ferrymcp_types::codes::PARSE_ERROR,
            format!("Parse error: {error}"),
        ),
        // rmcp refused a body with a JSON media type: it is JSON but not a JSON-RPC message.
        Ok(probe) if json_content => {
            let reason = rmcp_reason(response).await;
            json_rpc_error(
                http::StatusCode::BAD_REQUEST,
                probe.id.unwrap_or(serde_json::Value::Null),
                ferrymcp_types::codes::INVALID_REQUEST,
                format!("Invalid Request: {reason}"),
            )
        }
        // A JSON body refused for its media type: rmcp's reason.
        Ok(_) => json_rpc_refusal(response).await,
    }
}

pub(super) fn refused(log: &RejectLog, refusal: Refusal) -> Response {
    let (status, kind, message) = match refusal {
        Refusal::BadHost(why) => (http::StatusCode::BAD_REQUEST, Kind::Host, why.to_owned()),
        Refusal::Host(host) => (
            http::StatusCode::FORBIDDEN,
            Kind::Host,
            format!("Forbidden: the Host {host:?} is not allowed"),
        ),
        Refusal::Origin(origin) => (
            http::StatusCode::FORBIDDEN,
            Kind::Origin,
            format!("Forbidden: the Origin {origin:?} is not allowed"),
        ),
    };
    log.refused(kind, &message);
    json_rpc_error(status, serde_json::Value::Null, TRANSPORT_REFUSED, message)
}

/// The whole body, read into one buffer sized from `Content-Length`, bounded by
/// `max_body_bytes` and `body_timeout`.
async fn read_body(
    endpoint: &Endpoint,
    headers: &http::HeaderMap,
    body: Body,
) -> Result<Bytes, Response> {
    let max = endpoint.max_body_bytes;
    let too_large = || {
        endpoint.log.refused(
            Kind::BodyTooLarge,
            &format_args!("a body over max_body_bytes ({max})"),
        );
        json_rpc_error(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            serde_json::Value::Null,
            ferrymcp_types::codes::INVALID_REQUEST,
            format!("Invalid Request: the body exceeds {max} bytes"),
        )
    };
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max as u64) {
        return Err(too_large());
    }
    let capacity = declared.map_or(0, |length| length as usize);
    let collect = async {
        let mut buffer = Vec::with_capacity(capacity);
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| None)?;
            if let Ok(data) = frame.into_data() {
                if data.len() > max - buffer.len() {
                    return Err(Some(()));
                }
                buffer.extend_from_slice(&data);
            }
        }
        Ok(buffer)
    };
    match tokio::time::timeout(endpoint.body_timeout, collect).await {
        Ok(Ok(buffer)) => Ok(Bytes::from(buffer)),
        Ok(Err(Some(()))) => Err(too_large()),
        Ok(Err(None)) => Err(json_rpc_error(
            http::StatusCode::BAD_REQUEST,
            serde_json::Value::Null,
            ferrymcp_types::codes::INVALID_REQUEST,
            "Invalid Request: the body could not be read".to_owned(),
        )),
        Err(_) => {
            endpoint.log.refused(
                Kind::BodyTimeout,
                &format_args!("a body not received within {:?}", endpoint.body_timeout),
            );
            let mut response = json_rpc_error(
                http::StatusCode::REQUEST_TIMEOUT,
                serde_json::Value::Null,
                TRANSPORT_REFUSED,
                format!(
                    "Request Timeout: the body was not received within {} s",
                    endpoint.body_timeout.as_secs_f64()
                ),
            );
            // The rest of the body may still be on its way: do not read it.
            response.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
            Err(response)
        }
    }
}

/// Whether the request says its body is `application/json`, as rmcp checks it.
fn is_json_content(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// An error rmcp answered as plain text (`406` for a missing media type in `Accept`, `404`
/// for an unknown session, `405`, `415` for a body that is not JSON by its media type, a
/// malformed header's `400`) as a JSON-RPC error with the same status, headers and
/// wording, as the transport's own refusals are: a client reads every refusal one way, and
/// cannot tell an unknown session from another caller's by its answer. Anything else is
/// returned as is.
async fn json_rpc_refusal(response: Response) -> Response {
    let status = response.status();
    let plain = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_none_or(|value| value.as_bytes().starts_with(b"text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !plain {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_REFUSAL_BYTES).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let message = match text.is_empty() {
        true => status.canonical_reason().unwrap_or("Refused").to_owned(),
        false => text,
    };
    let (answer, body) =
        json_rpc_error(status, serde_json::Value::Null, TRANSPORT_REFUSED, message).into_parts();
    parts.headers.remove(http::header::CONTENT_LENGTH);
    parts.headers.extend(answer.headers);
    Response::from_parts(parts, body)
}

/// The longest error message passed on from rmcp, in characters; a longer one (rmcp quotes
/// header and body values whole) is cut there.
const MAX_MESSAGE_CHARS: usize = 512;

/// A JSON-RPC error rmcp answered with `400`, worded as our own: its message cut at
/// [`MAX_MESSAGE_CHARS`], and the `-32021` rmcp gives a `tasks/*` request whose `_meta` does
/// not declare the tasks extension (`tasks_request`) worded as the tasks extension words
/// it. An answer that is not such an error is returned as it was.
async fn word_json_refusal(response: Response, tasks_request: bool, limit: usize) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return json_rpc_error(
            http::StatusCode::BAD_REQUEST,
            serde_json::Value::Null,
            ferrymcp_types::codes::INVALID_REQUEST,
            "Invalid Request: refused".to_owned(),
        );
    };
    let reworded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|mut answer| {
            let error = answer.get_mut("error")?;
            let mut changed = false;
            if tasks_request
                && error["code"] == ferrymcp_types::codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            {
                *error = serde_json::to_value(ferrymcp_types::codes::request_needs_tasks()).ok()?;
                changed = true;
            }
            if let Some(message) = error.get_mut("message")
                && let Some(text) = message.as_str()
                && let Some((cut, _)) = text.char_indices().nth(MAX_MESSAGE_CHARS)
            {
                *message = serde_json::Value::String(format!("{}…", &text[..cut]));
                changed = true;
            }
            changed.then(|| serde_json::to_vec(&answer).ok()).flatten()
        });
    let body = match reworded {
        Some(reworded) => {
            parts.headers.remove(http::header::CONTENT_LENGTH);
            Body::from(reworded)
        }
        None => Body::from(bytes),
    };
    Response::from_parts(parts, body)
}

/// The most of a plain-text refusal's body read to word its JSON-RPC error; rmcp's are one
/// line.
const MAX_REFUSAL_BYTES: usize = 64 * 1024;

/// rmcp's reason for refusing a body (its plain-text answer), without its prefix.
async fn rmcp_reason(response: Response) -> String {
    let text = match axum::body::to_bytes(response.into_body(), MAX_REFUSAL_BYTES).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => String::new(),
    };
    text.strip_prefix("fail to deserialize request body ")
        .unwrap_or(&text)
        .to_owned()
}

/// A `subscriptions/listen` whose filter rmcp would cut short goes to the service under
/// another name (see [`crate::subscription`]), its `Mcp-Method` header renamed with it.
fn reroute_listen(headers: &mut http::HeaderMap, body: Bytes) -> Bytes {
    let Some(rerouted) = crate::subscription::rerouted(&body) else {
        return body;
    };
    if headers.contains_key("mcp-method") {
        headers.insert(
            "mcp-method",
            http::HeaderValue::from_static(crate::subscription::EXTENDED_LISTEN),
        );
    }
    Bytes::from(rerouted)
}
