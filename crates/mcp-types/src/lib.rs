//! The MCP wire, in one crate.
//!
//! `ferrymcp-types` re-exports all of [`rmcp::model`] at its root, so downstream code names a
//! single crate for every protocol type (`Tool`, `CallToolResult`, `ErrorData`, the SEP-2663
//! task types, ...), and adds the few things rmcp 3.11 does not model:
//!
//! * [`TaskSupport`] and [`ToolExecution`]: the `execution.taskSupport` declaration of a tool
//!   (`forbidden` / `optional` / `required`), which rmcp's [`Tool`] silently drops.
//! * [`ToolDescriptor`]: a tool listing entry that keeps `execution`, with lossless conversion
//!   to and from rmcp's [`Tool`].
//! * [`codes`]: the JSON-RPC error codes the framework answers with.
//! * [`meta`]: the `_meta` keys the framework reads and writes.
//! * [`TASKS_EXTENSION_ID`] (re-exported from rmcp): `io.modelcontextprotocol/tasks`.
//!
//! This crate does no I/O and does not depend on tokio.
//!
//! ```
//! use ferrymcp_types::{TaskSupport, Tool, ToolDescriptor, ToolExecution};
//!
//! let tool = Tool::new("multiply", "Multiplies two numbers", serde_json::Map::new());
//! let listed = ToolDescriptor::new(tool).with_task_support(TaskSupport::Optional);
//! let wire = serde_json::to_value(&listed).unwrap();
//! assert_eq!(wire["execution"]["taskSupport"], "optional");
//! ```

#![warn(missing_docs)]

pub use rmcp::model::*;

pub mod codes;
mod descriptor;
mod execution;
pub mod meta;

pub use descriptor::ToolDescriptor;
pub use execution::{TaskSupport, ToolExecution};
