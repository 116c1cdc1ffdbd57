//! Input rounds (SEP-2322) for synchronous requests: a tool, resource or prompt returns
//! [`Outcome::InputRequired`](crate::Outcome) with `inputRequests` (elicitation, sampling,
//! roots) and optional state; the client answers and retries; the handler runs again with
//! the answers in [`Context::input_responses`](crate::Context::input_responses) and its
//! state in [`Context::request_state`](crate::Context::request_state). The handler's code
//! is the same whether it runs synchronously or as a task.
//!
//! **`requestState` is sealed.** What leaves the server is an HMAC-SHA256 token (rmcp's
//! [`RequestStateCodec`]) bound to the caller, the method and the target, with a TTL; a
//! forged, tampered, expired or replayed-elsewhere value is rejected with `-32602` before
//! any handler runs. The handler only ever sees its own state. The key is random per
//! process unless set with [`Server::with_request_state_key`](crate::Server::with_request_state_key)
//! (set it when several replicas serve one client).
//!
//! **2025-11-25 connections** have no input rounds on the wire but do have server-to-client
//! requests, so the framework drives the rounds itself: it sends each input request to the
//! client (`elicitation/create`, `sampling/createMessage`, `roots/list`), collects the
//! answers and runs the handler again. A client that did not declare the capability gets
//! a clear `-32600` error instead.

use std::time::Duration;

use mcp_types::{
    CallToolResponse, ClientCapabilities, ErrorData, GetPromptResponse, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, ReadResourceResponse, ResultType,
    ServerRequest,
};
use rmcp::{
    RoleServer,
    model::{RequestStateCodec, RequestStateError, SealOptions},
    service::Peer,
};
use serde_json::Value;

/// How long a sealed `requestState` stays valid.
const STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// How many rounds the framework drives for one legacy request before giving up.
pub(crate) const MAX_LEGACY_ROUNDS: usize = 16;

/// Seals and opens `requestState` values.
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
}

impl StateSeal {
    /// A seal with a fresh random key.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        if let Err(error) = getrandom::fill(&mut key) {
            // A guessable key would let clients forge state: refuse to run instead.
            panic!("the operating system's random number generator failed: {error}");
        }
        Self::with_key(key.to_vec()).expect("a 32-byte key meets the codec's minimum length")
    }

    /// A seal with `key` (at least 32 bytes).
    pub(crate) fn with_key(key: Vec<u8>) -> Result<Self, RequestStateError> {
        RequestStateCodec::try_new(key).map(|codec| Self { codec })
    }

    /// Seals the handler's `state` (possibly none) for `binding`.
    pub(crate) fn seal(&self, binding: &str, state: Option<&str>) -> String {
        let payload = serde_json::json!({ "s": state });
        let options = SealOptions::new()
            .associated_data(binding.as_bytes())
            .ttl(STATE_TTL);
        self.codec
            .seal_with(payload.to_string().as_bytes(), &options)
    }

    /// Opens a sealed value for `binding`, giving back the handler's own state.
    pub(crate) fn open(&self, binding: &str, sealed: &str) -> Result<Option<String>, ErrorData> {
        let rejected = |why: String| {
            ErrorData::invalid_params(format!("requestState was rejected: {why}"), None)
        };
        let payload = self
            .codec
            .open_with(sealed, binding.as_bytes())
            .map_err(|e| rejected(e.to_string()))?;
        let value: Value = serde_json::from_slice(&payload).map_err(|e| rejected(e.to_string()))?;
        Ok(value.get("s").and_then(Value::as_str).map(str::to_owned))
    }
}

/// What a sealed state is bound to: who asked, what, and of what.
pub(crate) fn binding(
    principal: Option<&crate::auth::Principal>,
    method: &str,
    target: &str,
) -> String {
    let who = principal.map_or_else(|| "anon".to_owned(), |p| format!("auth:{}", p.scope_key()));
    format!("{who}\n{method}\n{target}")
}

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
