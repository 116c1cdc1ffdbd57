//! `mcpkit`: build Model Context Protocol servers in Rust.
//!
//! This facade re-exports the workspace crates so an application depends on one crate:
//!
//! | module | crate | what |
//! |---|---|---|
//! | (root) | `mcp-core` | [`Server`], tools, mounting, middleware, extensions, stdio and HTTP |
//! | [`types`] | `mcp-types` | the wire types (rmcp's model plus task support) |
//! | `tasks` (feature `tasks`, default) | `mcp-tasks` | the SEP-2663 Tasks extension |
//! | `proxy` (feature `proxy`) | `mcp-proxy` | remote servers mounted like local ones |
//!
//! ```
//! use mcpkit::{Args, Server, ToolDef};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Pair { a: i64, b: i64 }
//!
//! let server = Server::new("demo");
//! server.add_tool(ToolDef::new("add", |Args(p): Args<Pair>| async move { p.a + p.b })).unwrap();
//! ```

pub use mcp_core::*;

#[cfg(feature = "tasks")]
pub use mcp_tasks as tasks;

#[cfg(feature = "proxy")]
pub use mcp_proxy as proxy;
