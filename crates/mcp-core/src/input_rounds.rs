//! Input rounds (SEP-2322) for synchronous requests: a tool, resource or prompt returns
//! [`Outcome::InputRequired`](crate::Outcome) with `inputRequests` (elicitation, sampling,
//! roots) and optional state; the client answers and retries; the handler runs again with
//! the answers in [`Context::input_responses`](crate::Context::input_responses) and its
//! state in [`Context::request_state`](crate::Context::request_state). The handler's code
//! is the same whether it runs synchronously or as a task.
//!
//! **`requestState` is sealed.** What leaves the server is encrypted and authenticated
//! (XChaCha20-Poly1305), bound to the caller, the method, the target and the request's
//! arguments, and expires (15 minutes unless
//! [`Server::set_request_state_ttl`](crate::Server::set_request_state_ttl) says
//! otherwise); a forged, tampered, expired or replayed-elsewhere value is rejected with
//! `-32602` before any handler runs. The client cannot read the handler's state, and the
//! handler only ever sees its own. The key is random per process unless set with
//! [`Server::set_request_state_key`](crate::Server::set_request_state_key) or, to rotate
//! keys without breaking rounds in flight,
//! [`Server::set_request_state_keys`](crate::Server::set_request_state_keys) (set them
//! when several replicas serve one client).
//!
//! **2025-11-25 connections** have no input rounds on the wire but do have server-to-client
//! requests, so the framework drives the rounds itself: it sends each input request to the
//! client (`elicitation/create`, `sampling/createMessage`, `roots/list`), collects the
//! answers and runs the handler again. A client that did not declare the capability gets
//! a clear `-32600` error instead.

use ferrymcp_types::{
    CallToolResponse, ClientCapabilities, ErrorData, GetPromptResponse, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, ReadResourceResponse, ResultType,
    ServerRequest,
};
use rmcp::{RoleServer, service::Peer};

/// How many rounds the framework drives for one legacy request before giving up.
pub(crate) const MAX_LEGACY_ROUNDS: usize = 16;

/// A response that may be an input round.
pub(crate) trait InputRound {
    fn input_round(&mut self) -> Option<&mut InputRequiredResult>;

    /// Gives a complete result without `resultType` its `"complete"`: the 2026-07-28 schema
    /// requires the field, and a handler may return a result it deserialized from a peer
    /// that never wrote it (a 2025-11-25 upstream, or JSON written by hand). rmcp strips it
    /// again for 2025-11-25 clients.
    fn fill_result_type(&mut self);
}

impl InputRound for CallToolResponse {
    fn input_round(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            CallToolResponse::InputRequired(round) => Some(round),
            _ => None,
        }
    }

    fn fill_result_type(&mut self) {
        if let CallToolResponse::Complete(result) = self {
            result.result_type.get_or_insert(ResultType::COMPLETE);
        }
    }
}

impl InputRound for ReadResourceResponse {
    fn input_round(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            ReadResourceResponse::InputRequired(round) => Some(round),
            _ => None,
        }
    }

    fn fill_result_type(&mut self) {
        if let ReadResourceResponse::Complete(result) = self {
            result.result_type.get_or_insert(ResultType::COMPLETE);
        }
    }
}

impl InputRound for GetPromptResponse {
    fn input_round(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            GetPromptResponse::InputRequired(round) => Some(round),
            _ => None,
        }
    }

    fn fill_result_type(&mut self) {
        if let GetPromptResponse::Complete(result) = self {
            result.result_type.get_or_insert(ResultType::COMPLETE);
        }
    }
}

/// Answers `requests` by asking the client over a 2025-11-25 connection.
pub(crate) async fn ask_client(
    peer: &Peer<RoleServer>,
    requests: InputRequests,
) -> Result<InputResponses, ErrorData> {
    let capabilities = peer
        .peer_info()
        .map(|info| info.capabilities.clone())
        .unwrap_or_default();
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let request = into_server_request(request, &capabilities)?;
        let result = peer.send_request(request).await.map_err(|error| {
            ErrorData::internal_error(
                format!("the client did not answer the input request '{key}': {error}"),
                None,
            )
        })?;
        let value = serde_json::to_value(result).map_err(|e| {
            ErrorData::internal_error(format!("unreadable answer to '{key}': {e}"), None)
        })?;
        responses.insert(key, value);
    }
    Ok(responses)
}

/// The server-to-client request for one input request, if the client declared the
/// capability it needs.
fn into_server_request(
    request: InputRequest,
    capabilities: &ClientCapabilities,
) -> Result<ServerRequest, ErrorData> {
    let (request, declared, capability) = match request {
        InputRequest::Elicitation(r) => (
            ServerRequest::from(r),
            capabilities.elicitation.is_some(),
            "elicitation",
        ),
        InputRequest::CreateMessage(r) => (
            ServerRequest::from(r),
            capabilities.sampling.is_some(),
            "sampling",
        ),
        InputRequest::ListRoots(r) => (
            ServerRequest::from(r),
            capabilities.roots.is_some(),
            "roots",
        ),
        _ => {
            return Err(ErrorData::invalid_request(
                "this request needs a kind of client input that 2025-11-25 connections cannot carry",
                None,
            ));
        }
    };
    if declared {
        Ok(request)
    } else {
        Err(ErrorData::invalid_request(
            format!(
                "this request needs input from the client ({capability}), which this \
                 2025-11-25 client did not declare; connect with 2026-07-28 or enable \
                 {capability} on the client"
            ),
            None,
        ))
    }
}
