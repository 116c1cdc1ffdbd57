//! The SEP-2663 Tasks extension (`io.modelcontextprotocol/tasks`) for `ferrymcp-core` servers.
//!
//! Register [`TasksExtension`] on the root server and mark tools `task(true)` (optional) or
//! `task(TaskSupport::Required)`. A 2026-07-28 client that opts in on a `tools/call` then gets
//! a `CreateTaskResult` at once, and polls `tasks/get` for the outcome, or listens for it
//! (`subscriptions/listen` with `taskIds`, answered by `notifications/tasks`); the tool runs
//! in the background on the embedded engine.
//!
//! ```
//! use ferrymcp_core::{Args, Server, ToolDef};
//! use ferrymcp_tasks::TasksExtension;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Pair { a: i64, b: i64 }
//!
//! let child = Server::new("child");
//! child.add_tool(ToolDef::new("multiply", |Args(p): Args<Pair>| async move { p.a * p.b }).task(true)).unwrap();
//! let root = Server::new("root");
//! root.mount(&child, "child").unwrap();
//! root.add_extension(TasksExtension::new()).unwrap();
//! // root.serve_http("127.0.0.1:8000").await
//! ```
//!
//! How a `tools/call` is decided (at the root, after its middleware): the tool's mode,
//! the request's own opt-in and its era choose between a task, a synchronous run, and
//! `-32021`. A task is created durably (arguments validated first, no task on bad input),
//! and its work starts only after the `CreateTaskResult` has left the root's middleware. A
//! worker then runs the tool, through each server's `on_run_tool` middleware hook from the
//! root down to the tool's owner (and no other hook), and stores the exact
//! `CallToolResult` the synchronous call would have returned. A tool's [`LostWorker`]
//! policy says whether a run lost with its worker starts again.
//!
//! | module | holds |
//! |---|---|
//! | [`extension`] | [`TasksExtension`]: the interceptor, `tasks/*`, the engine's lifecycle |
//! | [`operator`] | [`Operator`](operator::Operator): status, listing, inspecting, cancelling and purging, for operators |
//! | [`admin`] | [`Admin`](admin::Admin): the operators' dashboard page and JSON API, as axum routes |
//! | [`backend`] | [`TaskBackend`](backend::TaskBackend), [`MemoryBackend`](backend::memory::MemoryBackend), and (feature `redis`) `RedisBackend` |
//! | [`worker`] | [`Worker`]: claims runs and runs tools on their owning server |
//! | [`owner`] | [`resolve_owning_server`] and the [`TaskSnapshot`] it reads |
//! | [`http_headers`] | the `Mcp-Name` header of `tasks/*`, filled in from the body when a client leaves it out |
//! | [`lost_worker`] | [`LostWorker`]: rerun or fail a run whose worker was lost |
//! | [`push`] | task status pushed on `subscriptions/listen` as `notifications/tasks` |
//! | [`engine`] | [`Engine`]: the running engine, also a tool extractor |
//! | [`config`] | [`TasksConfig`], from code and `MCP_TASKS_*` |
//! | [`connect`](mod@connect) | [`connect()`]: the backend a URL names (`memory://`, `redis://`) |
//! | `sealing` | (feature `redis`) `Sealer`: stored credentials encrypted at rest |
//!
//! # Metrics
//!
//! Once metrics are switched on in the process (`ferrymcp_core::metrics`: the Prometheus
//! `MetricsExporter`, or a `metrics` recorder of your own), the engine records these. Tool
//! labels are the root's tool names; limits are labelled by their setting.
//!
//! | metric | kind | labels | recorded by |
//! |---|---|---|---|
//! | `mcp_tasks_created_total` | counter | `tool` | the server that accepted the task |
//! | `mcp_task_rejections_total` | counter | `limit` (`MCP_TASKS_MAX_TASKS_PER_CALLER`, ...) | the server that refused it |
//! | `mcp_task_runs_total` | counter | `tool`, `outcome` (`completed`, `failed`, `input_required`, `stopped`) | the worker that ran it |
//! | `mcp_task_run_duration_seconds` | histogram | `tool` | that worker |
//! | `mcp_task_wait_seconds` | histogram | | that worker: from the task's creation to its first run |
//! | `mcp_task_retries_total` | counter | `tool` | that worker: a run started again after a lost worker |
//! | `mcp_task_lost_worker_recoveries_total` | counter | `action` (`rerun`, `fail`) | the process whose sweep found the lapsed lease |
//! | `mcp_tasks` | gauge | `state` (`queued`, `running`, `waiting`, `finished`) | every process that sweeps, read from the store at each scrape |
//! | `mcp_task_queue_depth` | gauge | | the same: runs waiting for a worker |

#![warn(missing_docs)]

pub mod admin;
pub mod backend;
pub mod config;
pub mod connect;
pub mod engine;
pub mod extension;
pub mod http_headers;
mod ids;
pub mod lost_worker;
mod metrics;
pub mod operator;
pub mod owner;
pub mod push;
#[cfg(feature = "redis")]
pub mod sealing;
pub mod worker;

pub use config::TasksConfig;
pub use connect::{ConnectError, Connected, connect};
pub use engine::Engine;
pub use extension::{TasksExtension, gate_tasks_request, task_not_found};
pub use ferrymcp_core::secrets::redacted_url;
pub use ids::new_task_id;
pub use lost_worker::LostWorker;
pub use owner::{TaskSnapshot, resolve_owning_server, resolve_tool};
pub use worker::Worker;

/// The extension identifier advertised under `capabilities.extensions`.
pub const EXTENSION_ID: &str = ferrymcp_types::TASKS_EXTENSION_ID;
