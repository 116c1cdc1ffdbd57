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
//! | [`tool`](macro@tool), [`resource`](macro@resource), [`prompt`](macro@prompt) (feature `macros`, default) | `ferrymcp-macros` | plain `async fn`s as tools, resources and prompts |
//!
//! ```
//! use ferrymcp::{Server, tool};
//!
//! /// Adds two numbers.
//! #[tool]
//! async fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! let server = Server::new("demo");
//! server.add_tool(add).unwrap();
//! ```
//!
//! The same tool without the macro, with the builder it expands to:
//!
//! ```
//! use ferrymcp::{Args, Server, ToolDef};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Pair { a: i64, b: i64 }
//!
//! let server = Server::new("demo");
//! server.add_tool(ToolDef::new("add", |Args(p): Args<Pair>| async move { p.a + p.b })
//!     .description("Adds two numbers.")).unwrap();
//! ```

pub use ferrymcp_core::*;

#[cfg(feature = "macros")]
pub use ferrymcp_macros::{prompt, resource, tool};

/// serde, which the code `#[tool]` generates uses, so an application needs no serde
/// dependency of its own for it. Hand-written argument types can use it too with
/// `#[serde(crate = "ferrymcp::serde")]`.
pub use serde;

/// schemars, which the code `#[tool]` generates uses (hand-written argument types:
/// `#[schemars(crate = "ferrymcp::schemars")]`).
pub use schemars;

#[cfg(feature = "tasks")]
pub use ferrymcp_tasks as tasks;

#[cfg(feature = "proxy")]
pub use ferrymcp_proxy as proxy;
