//! Mountable MCP servers: typed tools, resources, prompts, namespaced mounts, middleware,
//! extensions.
//!
//! A [`Server`] holds tools written as plain `async fn`s whose parameters are extractors, as
//! in axum: [`Args<T>`] for the arguments (its `JsonSchema` is the input schema),
//! [`Context`] and [`CurrentServer`] for the request. Resources and templates
//! ([`ResourceDef`]) and prompts ([`PromptDef`]) are functions the same way. Servers [`mount`](Server::mount) into
//! servers under a namespace (`child` + `multiply` = `child_multiply`), [`Middleware`] wraps
//! any level, and an [`Extension`] (such as `ferrymcp-tasks`) adds protocol features. The same
//! server serves stdio ([`Server::serve_stdio`]) and Streamable HTTP
//! ([`Server::serve_http`]), on both protocol eras (2026-07-28 and 2025-11-25), and can be
//! called in process ([`Server::call_tool`]). Over HTTP the `auth` feature makes it an OAuth
//! 2.1 resource server (`auth::ResourceServer`); tools, resources, prompts and mounts
//! [`require`](ToolDef::requires) scopes of the caller ([`auth::Principal`]).
//!
//! ```
//! use ferrymcp_core::{Args, Server, ToolDef};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Pair { a: i64, b: i64 }
//!
//! async fn multiply(Args(Pair { a, b }): Args<Pair>) -> i64 { a * b }
//!
//! let child = Server::new("child");
//! child.add_tool(ToolDef::new("multiply", multiply).description("a × b")).unwrap();
//!
//! let parent = Server::new("parent");
//! parent.mount(&child, "child").unwrap();
//! assert!(parent.get_tool("child_multiply", None).is_some());
//! // parent.serve_stdio().await  or  parent.serve_http("127.0.0.1:8000").await
//! ```
//!
//! The walk of a `tools/call`: rmcp's dispatcher → [`McpService`] builds a [`RequestScope`]
//! → the root's middleware (`on_message` → `on_request` → `on_call_tool`) → the access
//! check (the caller's [`Principal`](auth::Principal) against the requirements of the tool
//! and of every mount on the way to it) → the root's extension interceptors → name resolution (a local tool, or a mounted child, whose own
//! chain then runs) → the tool with its extractors → its return value becomes a
//! `CallToolResult` ([`output`]).

#![warn(missing_docs)]

pub mod auth;
mod builders;
pub mod coerce;
pub mod completion;
mod context;
pub mod elicitation;
mod error;
pub mod extension;
mod extract;
mod handler;
mod input_rounds;
pub mod logging;
pub mod metrics;
pub mod middleware;
pub mod mount;
pub mod output;
pub mod prompt;
mod registry;
mod relay;
mod request_state;
pub mod resource;
mod schema;
pub mod secrets;
mod served;
mod server;
mod service;
mod shutdown;
pub mod subscription;
mod tool;
pub mod trace_context;
pub mod transport;
pub mod uri_template;
pub mod version;

pub use ferrymcp_types as types;

pub use context::{Context, Era, RequestScope};
pub use elicitation::{ElicitError, Elicitation};
pub use error::{ServerError, ToolError, ToolFailure, masked_internal_error};
pub use extension::{BoxError, Extension, ToolCallNext};
pub use extract::{
    Args, CurrentServer, FromCall, FromContext, RawArgs, State, StateNeed, Target, ViaArguments,
    ViaContext,
};
pub use handler::{BoxFuture, Handler, HandlerFn, ToolHandler};
pub use logging::{LogLevel, Progress, ProgressSink};
pub use middleware::{
    CallTool, CustomRequest, Discover, GetPrompt, Initialize, ListPrompts, ListResourceTemplates,
    ListResources, ListTools, Message, Middleware, Next, Notification, ReadResource, Reply,
    RunTool,
};
pub use mount::MountOptions;
pub use output::{
    Audio, Bytes, Contents, Image, InputRequired, IntoToolOutput, IntoToolResult, Json, Outcome,
    OutputSchema,
};
pub use prompt::{IntoPromptResult, PromptDef, PromptInfo};
pub use relay::ResultRelay;
pub use resource::{IntoResourceContents, ResourceDef, ResourceInfo, TemplateInfo};
pub use server::{
    ListKind, MAX_RESOURCE_SUBSCRIPTIONS, PromptGet, ResourceRead, RunningServer, Server, ToolCall,
    WeakServer,
};
pub use service::McpService;
pub use shutdown::shutdown_signal;
pub use tokio_util::sync::CancellationToken;
pub use tool::{TaskConfig, ToolDef, ToolInfo};
pub use transport::http::{
    DEFAULT_OPERATOR_SCOPE, HttpConfig, HttpConfigError, HttpServer, StartedHttpServer,
};
pub use transport::stdio::StdioConfig;

/// What the `#[tool]`, `#[resource]` and `#[prompt]` macros name in the code they
/// generate; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
}
