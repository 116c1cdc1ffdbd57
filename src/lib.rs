//! `ferrymcp`: build Model Context Protocol servers in Rust.
//!
//! This facade re-exports the workspace crates so an application depends on one crate:
//!
//! | module | crate | what |
//! |---|---|---|
//! | (root) | `ferrymcp-core` | [`Server`], tools, mounting, middleware, extensions, stdio and HTTP |
//! | [`types`] | `ferrymcp-types` | the wire types (rmcp's model plus task support) |
//! | `tasks` (feature `tasks`, default) | `ferrymcp-tasks` | the SEP-2663 Tasks extension |
//! | `proxy` (feature `proxy`) | `ferrymcp-proxy` | remote servers mounted like local ones |
//!
//! ```
//! use ferrymcp::{Args, Server, ToolDef};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Pair { a: i64, b: i64 }
//!
//! let server = Server::new("demo");
//! server.add_tool(ToolDef::new("add", |Args(p): Args<Pair>| async move { p.a + p.b })).unwrap();
//! ```

pub use ferrymcp_core::*;

#[cfg(feature = "tasks")]
pub use ferrymcp_tasks as tasks;

#[cfg(feature = "proxy")]
pub use ferrymcp_proxy as proxy;
