//! Extensions: protocol features that plug into a server (the tasks extension is one).
//!
//! An [`Extension`] registered with [`Server::add_extension`] can
//!
//! * advertise settings under `capabilities.extensions[id]` ([`Extension::settings`]);
//! * add request methods ([`Extension::methods`], [`Extension::handle_request`]);
//! * push notifications on a `subscriptions/listen` for filter members of its own
//!   ([`Extension::subscribe`]);
//! * intercept `tools/call` at the server that registered it, after that server's middleware
//!   and before the tool, and short-circuit ([`Extension::intercept_call_tool`]);
//! * run code when the server starts and stops ([`Extension::on_start`],
//!   [`Extension::on_stop`]).
//!
//! Extensions belong to the server they are registered on: a child's extensions are not
//! advertised or served by its parent, and only the root's start and stop hooks run.
//!
//! ```
//! use ferrymcp_core::{CallTool, Extension, Server, ToolCallNext, types::{CallToolResponse, ErrorData}};
//!
//! /// Refuses every tool whose name starts with `admin_`.
//! struct Guard;
//!
//! #[async_trait::async_trait]
//! impl Extension for Guard {
//!     fn id(&self) -> &str { "com.example/guard" }
//!
//!     async fn intercept_call_tool(
//!         &self,
//!         call: CallTool,
//!         next: ToolCallNext<'_>,
//!     ) -> Result<CallToolResponse, ErrorData> {
//!         if call.name.starts_with("admin_") {
//!             return Err(ErrorData::invalid_request("admin tools are disabled", None));
//!         }
//!         next.run(call).await
//!     }
//! }
//!
//! Server::new("s").add_extension(Guard).unwrap();
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use ferrymcp_types::{CallToolResponse, ErrorCode, ErrorData, JsonObject};
use serde_json::Value;

use crate::{BoxFuture, CallTool, Context, Server};

/// A protocol extension. See the [module docs](self).
#[async_trait]
pub trait Extension: Send + Sync + 'static {
    /// The identifier, e.g. `io.modelcontextprotocol/tasks`.
    fn id(&self) -> &str;

    /// The settings advertised under `capabilities.extensions[id]` (default `{}`).
    fn settings(&self) -> JsonObject {
        JsonObject::new()
    }

    /// Whether the extension applies to 2025-11-25 (`initialize`) connections too. An
    /// extension defined only for 2026-07-28, such as tasks (SEP-2663), returns `false`: it
    /// is then neither advertised nor served on a legacy connection, whose requests proceed
    /// as if it did not exist (its methods answer `-32601`).
    fn legacy_era(&self) -> bool {
        true
    }

    /// The request methods this extension answers, e.g. `["tasks/get"]`.
    fn methods(&self) -> Vec<String> {
        Vec::new()
    }

    /// Answers one of [`methods`](Self::methods). `cx` is bound to the registering server.
    async fn handle_request(
        &self,
        cx: Context,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorData> {
        let _ = (cx, params);
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            method.to_owned(),
            None,
        ))
    }

    /// Whether [`intercept_call_tool`](Self::intercept_call_tool) gives back every complete
    /// tool result (`CallToolResponse::Complete`) exactly as `next` returned it. With `true`
    /// on every extension on the way, a tool may hand its result to the client as JSON,
    /// unread ([`ResultRelay`](crate::ResultRelay)); the default, `false`, is always safe.
    ///
    /// ```
    /// use ferrymcp_core::Extension;
    ///
    /// struct Audit;
    ///
    /// #[async_trait::async_trait]
    /// impl Extension for Audit {
    ///     fn id(&self) -> &str { "com.example/audit" }
    ///     // Only logs the calls it lets through: results pass untouched.
    ///     fn leaves_results_unchanged(&self) -> bool { true }
    /// }
    /// assert!(Audit.leaves_results_unchanged());
    /// ```
    fn leaves_results_unchanged(&self) -> bool {
        false
    }

    /// Wraps `tools/call` at the registering server; call `next` to continue, or return
    /// without calling it to short-circuit.
    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        next.run(call).await
    }

    /// Serves this extension's members of a `subscriptions/listen` filter (`requested` is the
    /// whole filter, e.g. `{"taskIds": [...]}`): `None` when it has none of them, an error
    /// to refuse the listen before it is acknowledged, or what it accepted and the
    /// notifications to push (see [`subscription`](crate::subscription)). Only the root's
    /// extensions are asked.
    async fn subscribe(
        &self,
        cx: Context,
        requested: &JsonObject,
    ) -> Result<Option<crate::subscription::Subscription>, ErrorData> {
        let _ = (cx, requested);
        Ok(None)
    }

    /// Adjusts the headers of an HTTP `POST` to the root's endpoint before rmcp reads it,
    /// given its body: for clients that send a routing header the extension's methods need
    /// incompletely. Only the root's extensions are asked; the default does nothing.
    ///
    /// ```
    /// struct Ext;
    /// impl ferrymcp_core::Extension for Ext {
    ///     fn id(&self) -> &str { "com.example/ext" }
    ///     fn prepare_http_request(&self, headers: &mut http::HeaderMap, _body: &[u8]) {
    ///         headers.remove("x-legacy");
    ///     }
    /// }
    /// ```
    fn prepare_http_request(&self, headers: &mut http::HeaderMap, body: &[u8]) {
        let _ = (headers, body);
    }

    /// Whether this extension runs the tools that declare a task mode
    /// ([`ToolDef::task`](crate::ToolDef::task), `execution.taskSupport` on the wire). A
    /// server with such tools and no extension that runs them fails to start
    /// ([`ServerError::TasksExtensionMissing`](crate::ServerError::TasksExtensionMissing)),
    /// rather than refusing every task later. The default is `false`.
    ///
    /// ```
    /// struct Background;
    /// impl ferrymcp_core::Extension for Background {
    ///     fn id(&self) -> &str { "com.example/background" }
    ///     fn runs_task_tools(&self) -> bool { true }
    /// }
    /// ```
    fn runs_task_tools(&self) -> bool {
        false
    }

    /// Called once when the (root) server starts, before it serves anything.
    async fn on_start(&self, server: &Server) -> Result<(), BoxError> {
        let _ = server;
        Ok(())
    }

    /// Called once when the (root) server stops.
    async fn on_stop(&self, server: &Server) {
        let _ = server;
    }
}

/// A boxed error, as start hooks return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The rest of the `tools/call` interceptors, then the tool.
pub struct ToolCallNext<'a> {
    pub(crate) server: &'a Server,
    pub(crate) extensions: &'a [Arc<dyn Extension>],
}

impl<'a> ToolCallNext<'a> {
    /// Continues with `call`.
    pub fn run(self, call: CallTool) -> BoxFuture<'a, Result<CallToolResponse, ErrorData>> {
        match self.extensions.split_first() {
            Some((first, rest)) => first.intercept_call_tool(
                call,
                ToolCallNext {
                    server: self.server,
                    extensions: rest,
                },
            ),
            None => Box::pin(self.server.call_resolved(call)),
        }
    }
}
