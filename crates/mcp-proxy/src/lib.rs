//! Remote MCP servers that mount like local ones.
//!
//! * [`Upstream`]: a child process over stdio, a Streamable HTTP URL (headers, bearer) or an
//!   rmcp client, behind one reused session with reconnects and timeouts. Calls to a
//!   2026-07-28 HTTP upstream skip the session: each is one POST from the caller's task.
//! * [`ProxyServer`]: an `ferrymcp_core::Server` built from the upstream's listing; each tool is a
//!   [`ProxyTool`] keeping every field, `execution.taskSupport` included. Mount it under a
//!   namespace like any server; parent middleware wraps the proxied calls.
//! * `ProxyTasks` (feature `tasks`): SEP-2663 task passthrough with signed proxy task ids,
//!   and local tasks for proxied tools whose upstream has none.
//! * [`HeaderPolicy`]: which client headers may reach an upstream (none by default; never
//!   `Authorization`).
//! * [`upstream_auth::UpstreamAuth`]: an HTTP upstream's own credentials (a static bearer,
//!   OAuth client credentials, or RFC 8693 token exchange of the caller's token).
//! * `gateway` (feature `gateway`, not on by default): the `ferrymcp-gateway` binary's config
//!   file and fronts; the feature adds its command line, config and log dependencies.
//!
//!
//! With metrics switched on in the process (`ferrymcp_core::metrics`), every request to an
//! upstream is counted in `mcp_upstream_requests_total` (labels `upstream`, `method`,
//! `outcome`: `ok`, `error` for a JSON-RPC error it answered, `timeout`, `unavailable`,
//! `protocol`, `credentials`) and timed in `mcp_upstream_request_duration_seconds`
//! (`upstream`); `mcp_upstream_up` (`upstream`) is 1 after an answer and 0 after a timeout
//! or a lost connection.
//!
//! ```
//! use ferrymcp_proxy::{ClientFactory, ProxyTool};
//! use ferrymcp_types::{TaskSupport, ToolDescriptor};
//!
//! let remote: ToolDescriptor = serde_json::from_value(serde_json::json!({
//!     "name": "remote_task_tool",
//!     "description": "A remote tool that supports tasks",
//!     "inputSchema": {"type": "object", "properties": {}},
//!     "execution": {"taskSupport": "optional"}
//! })).unwrap();
//! let proxy = ProxyTool::from_mcp_tool(ClientFactory::unavailable(), remote);
//! assert_eq!(proxy.descriptor().task_support(), TaskSupport::Optional);
//! ```

#![warn(missing_docs)]

mod announcements;
mod answer;
mod components;
mod connection;
mod error;
mod event_stream;
mod forwarding;
#[cfg(feature = "gateway")]
mod front_auth;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod headers;
mod http1_pool;
pub mod listing;
mod metrics;
mod mirror;
mod post_client;
mod server;
mod stateless;
mod stdout;
mod target;
#[cfg(feature = "tasks")]
pub mod task_ids;
#[cfg(feature = "tasks")]
mod tasks;
mod tls;
mod tool;
pub mod upstream_auth;
mod url_secrets;

pub use connection::{RequestOptions, Upstream};
pub use error::ProxyError;
pub use headers::HeaderPolicy;
pub use server::{ProxyServer, upstream_of};
pub use target::{BASE_ENV, CommandTarget, DEFAULT_MAX_MESSAGE_BYTES, HttpTarget, UpstreamOptions};
#[cfg(feature = "tasks")]
pub use tasks::ProxyTasks;
pub use tool::{ClientFactory, ProxyTool};
