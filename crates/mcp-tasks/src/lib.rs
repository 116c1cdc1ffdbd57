//! The SEP-2663 Tasks extension (`io.modelcontextprotocol/tasks`) for `mcp-core` servers.
//!
//! This crate is a placeholder in the current release: the extension, its engine and its
//! backends land with the tasks work. Until then a server that declares a task tool fails at
//! start with a message that names this crate.
//!
//! ```
//! assert_eq!(mcp_tasks::EXTENSION_ID, "io.modelcontextprotocol/tasks");
//! ```

/// The extension identifier advertised under `capabilities.extensions`.
pub const EXTENSION_ID: &str = mcp_types::TASKS_EXTENSION_ID;
