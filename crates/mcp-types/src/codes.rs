//! JSON-RPC error codes the framework answers with.
//!
//! ```
//! assert_eq!(ferrymcp_types::codes::MISSING_REQUIRED_CLIENT_CAPABILITY, -32021);
//! ```

/// Invalid JSON was received (`-32700`).
pub const PARSE_ERROR: i32 = -32700;
/// The JSON sent is not a valid request (`-32600`).
pub const INVALID_REQUEST: i32 = -32600;
/// The method does not exist or is not available (`-32601`).
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Invalid method parameters: bad arguments, an unknown tool, an unknown task (`-32602`).
pub const INVALID_PARAMS: i32 = -32602;
/// Internal error (`-32603`).
pub const INTERNAL_ERROR: i32 = -32603;
/// A resource was not found (`-32002`); mapped to `-32602` on 2026-07-28 connections.
pub const RESOURCE_NOT_FOUND: i32 = -32002;
/// The `Mcp-Name` (or `Mcp-Method`) header does not match the body (`-32020`).
pub const HEADER_MISMATCH: i32 = -32020;
/// The request needs a client capability the client did not declare on it (`-32021`).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
/// The requested protocol version is not supported (`-32022`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

/// The `-32021` refusal of a `tasks/*` request (or a task subscription) whose `_meta` does not
/// declare the tasks extension; `data.requiredCapabilities` names it.
///
/// ```
/// let error = ferrymcp_types::codes::request_needs_tasks();
/// assert_eq!(error.code.0, -32021);
/// assert!(error.message.contains("io.modelcontextprotocol/tasks"));
/// ```
pub fn request_needs_tasks() -> crate::ErrorData {
    needs_tasks(format!(
        "This request targets the tasks extension ({}); the client did not declare it for this request.",
        crate::TASKS_EXTENSION_ID
    ))
}

/// The `-32021` refusal of a `tools/call` of `tool`, a tool that only runs as a task, by a
/// client that did not declare the tasks extension on the request.
///
/// ```
/// let error = ferrymcp_types::codes::tool_needs_tasks("report");
/// assert_eq!(error.code.0, -32021);
/// assert!(error.message.starts_with("Tool 'report' requires the tasks extension"));
/// ```
pub fn tool_needs_tasks(tool: &str) -> crate::ErrorData {
    needs_tasks(format!(
        "Tool '{tool}' requires the tasks extension ({}); the client did not declare it for this request.",
        crate::TASKS_EXTENSION_ID
    ))
}

fn needs_tasks(message: String) -> crate::ErrorData {
    let required = crate::ClientCapabilities::builder().enable_tasks().build();
    crate::ErrorData::new(
        crate::ErrorCode(MISSING_REQUIRED_CLIENT_CAPABILITY),
        message,
        Some(serde_json::json!({ "requiredCapabilities": required })),
    )
}
