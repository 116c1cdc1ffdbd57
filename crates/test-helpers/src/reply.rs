//! Unwrapping `tools/call` replies in tests, with failure messages that say what went wrong.

use ferrymcp_core::types::{CallToolResponse, CallToolResult, ErrorData};
use serde_json::Value;

/// What an in-process call returns.
pub type Reply = Result<CallToolResponse, ErrorData>;

/// The completed result of a call; panics, naming `what`, on an error or a task handle.
///
/// ```
/// use ferrymcp_core::types::{CallToolResponse, CallToolResult};
/// let reply = Ok(CallToolResponse::Complete(CallToolResult::success(vec![])));
/// assert_eq!(ferrymcp_test_helpers::reply::complete(reply, "call").is_error, Some(false));
/// ```
pub fn complete(reply: Reply, what: &str) -> CallToolResult {
    match reply {
        Ok(CallToolResponse::Complete(result)) => result,
        Ok(other) => panic!("{what}: expected a complete result, got {other:?}"),
        Err(error) => panic!(
            "{what}: expected success, got JSON-RPC error {} ({})",
            error.message, error.code.0
        ),
    }
}

/// `structuredContent["result"]` of a successful call (one that is not `isError`).
///
/// ```
/// use ferrymcp_core::types::{CallToolResponse, CallToolResult};
/// let mut result = CallToolResult::success(vec![]);
/// result.structured_content = Some(serde_json::json!({"result": 72}));
/// let value = ferrymcp_test_helpers::reply::result_of(Ok(CallToolResponse::Complete(result)), "multiply");
/// assert_eq!(value, 72);
/// ```
pub fn result_of(reply: Reply, what: &str) -> Value {
    let result = complete(reply, what);
    assert_ne!(
        result.is_error,
        Some(true),
        "{what}: the tool reported an error: {:?}",
        result.content
    );
    result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("result"))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{what}: no structuredContent.result in {:?}",
                result.structured_content
            )
        })
}

/// The text blocks of a result, joined.
///
/// ```
/// use ferrymcp_core::types::{CallToolResult, ContentBlock};
/// let result = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
/// assert_eq!(ferrymcp_test_helpers::reply::text_of(&result), "ab");
/// ```
pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// Asserts the call failed with `-32602 Unknown tool: '<name>'`.
///
/// ```
/// use ferrymcp_core::types::ErrorData;
/// let error = ErrorData::invalid_params("Unknown tool: 'nope'", None);
/// ferrymcp_test_helpers::reply::assert_unknown_tool(Err(error), "nope");
/// ```
pub fn assert_unknown_tool(reply: Reply, name: &str) {
    match reply {
        Err(error) => {
            assert_eq!(
                error.code.0, -32602,
                "calling {name:?}: wrong error code ({})",
                error.message
            );
            assert_eq!(
                error.message,
                format!("Unknown tool: '{name}'"),
                "calling {name:?}: wrong error message"
            );
        }
        Ok(reply) => panic!("calling {name:?} should fail with Unknown tool, got {reply:?}"),
    }
}
