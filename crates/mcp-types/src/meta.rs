//! `_meta` keys the framework reads and writes.
//!
//! ```
//! assert_eq!(ferrymcp_types::meta::CLIENT_CAPABILITIES, "io.modelcontextprotocol/clientCapabilities");
//! ```

/// Per-request client capabilities (2026-07-28): `{"extensions": {id: settings}}` opts in.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Per-request protocol version (2026-07-28).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Ties a message to a task (SEP-2663 §9.1).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The namespace FastMCP uses for its own `_meta` entries; we read and write the same shape so
/// FastMCP clients interoperate (version selection, wrapped results).
pub const FASTMCP: &str = "fastmcp";
/// Under [`FASTMCP`]: the version of a listed tool, or the version a request selects.
pub const VERSION: &str = "version";
/// Under [`FASTMCP`]: every version of a listed tool, highest first.
pub const VERSIONS: &str = "versions";
/// Under [`FASTMCP`]: `true` on a result whose `structuredContent` is `{"result": value}`.
pub const WRAP_RESULT: &str = "wrap_result";
/// Output-schema keyword marking a wrapped (`{"result": ...}`) output schema.
pub const WRAP_RESULT_SCHEMA_KEYWORD: &str = "x-fastmcp-wrap-result";
/// Where [`ToolDescriptor`](crate::ToolDescriptor) keeps `execution` when converted to rmcp's
/// `Tool`, which has no field for it; converting back restores it.
pub const EXECUTION: &str = "io.ferrymcp/execution";
