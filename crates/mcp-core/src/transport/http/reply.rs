//! JSON-RPC error answers for requests the HTTP edge refuses itself.

use axum::response::{IntoResponse as _, Response};

/// The JSON-RPC code of refusals by the transport (limits, timeouts, forbidden origins),
/// from the implementation-defined server error range, as other MCP SDKs answer them.
pub(super) const TRANSPORT_REFUSED: i32 = -32000;

/// What a refused client is told to wait before trying again, in seconds.
pub(super) const RETRY_AFTER_SECS: u64 = 1;

/// A JSON-RPC error response with `status`. `id` is left out when unknown (`Null`): the MCP
/// schema allows only a string or integer id.
pub(super) fn json_rpc_error(
    status: http::StatusCode,
    id: serde_json::Value,
    code: i32,
    message: String,
) -> Response {
    let mut body =
        serde_json::json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    if !id.is_null() {
        body["id"] = id;
    }
    (status, axum::Json(body)).into_response()
}

/// `404` for a session the caller cannot use: one that does not exist, or another
/// caller's, worded as rmcp answers the first so that the two cannot be told apart.
pub(super) fn unknown_session() -> Response {
    json_rpc_error(
        http::StatusCode::NOT_FOUND,
        serde_json::Value::Null,
        TRANSPORT_REFUSED,
        "Not Found: Session not found".to_owned(),
    )
}

/// `503` with `Retry-After` and a JSON-RPC error saying which limit was reached.
pub(super) fn busy(message: String) -> Response {
    let mut response = json_rpc_error(
        http::StatusCode::SERVICE_UNAVAILABLE,
        serde_json::Value::Null,
        TRANSPORT_REFUSED,
        message,
    );
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from(RETRY_AFTER_SECS),
    );
    response
}

/// The raw HTTP/1.1 bytes of a `503` for a connection over the connection limit, written
/// before the connection is closed and before any request was read from it.
pub(super) fn over_connection_limit(max: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "error": {
            "code": TRANSPORT_REFUSED,
            "message": format!("the server has reached its limit of {max} connections; retry later"),
        }
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {RETRY_AFTER_SECS}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
