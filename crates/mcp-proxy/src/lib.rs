//! Proxy tools and whole servers over a remote MCP server.
//!
//! This crate is a placeholder in the current release: upstream connections, proxy tools
//! that keep `execution.taskSupport`, and task passthrough land with the proxy work.
//!
//! ```
//! let _ = mcp_proxy::CRATE;
//! ```

/// The crate's name, so the shell has a documented public item.
pub const CRATE: &str = "mcp-proxy";
