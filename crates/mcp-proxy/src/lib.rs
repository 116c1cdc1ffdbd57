//! Proxy tools (and, with the proxy work, whole servers) over a remote MCP server.
//!
//! A [`ProxyTool`] is built from a remote tool's listing entry, keeping every field,
//! `execution.taskSupport` included (rmcp's `Tool` drops it, so listings are read as
//! [`ToolDescriptor`]s). Register it on a server with [`ProxyTool::into_tool_def`]; calls go
//! to the upstream through a client the [`ClientFactory`] provides.
//!
//! Connection management (child processes, HTTP, reconnects), proxy servers that mount like
//! local ones, and task passthrough arrive with the proxy work.
//!
//! ```
//! use mcp_proxy::{ClientFactory, ProxyTool};
//! use mcp_types::{TaskSupport, ToolDescriptor};
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

use std::sync::Arc;

use mcp_core::{BoxFuture, Context, ToolDef, ToolError, ToolHandler};
use mcp_types::{CallToolRequestParams, CallToolResult, JsonObject, ToolDescriptor};
use rmcp::{RoleClient, service::Peer};

type MakeClient = dyn Fn() -> BoxFuture<'static, Result<Peer<RoleClient>, ToolError>> + Send + Sync;

/// Where a proxy tool gets the client it calls the upstream with.
///
/// ```
/// let _ = mcp_proxy::ClientFactory::unavailable();
/// ```
#[derive(Clone)]
pub struct ClientFactory(Arc<MakeClient>);

impl ClientFactory {
    /// A factory that calls `make` for each call (it may hand out one shared client).
    ///
    /// ```
    /// let factory = mcp_proxy::ClientFactory::new(|| async {
    ///     Err(mcp_core::ToolError::new("not connected"))
    /// });
    /// ```
    pub fn new<F, Fut>(make: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Peer<RoleClient>, ToolError>> + Send + 'static,
    {
        Self(Arc::new(move || Box::pin(make())))
    }

    /// One connected client, shared by every call (never a session per call).
    pub fn shared(peer: Peer<RoleClient>) -> Self {
        Self::new(move || {
            let peer = peer.clone();
            async move { Ok(peer) }
        })
    }

    /// A factory with no upstream: every call fails with a clear tool error. For tool
    /// definitions inspected without calling them.
    pub fn unavailable() -> Self {
        Self::new(|| async { Err(ToolError::new("this proxy tool has no upstream connection")) })
    }
}

/// A tool whose body runs on a remote MCP server.
#[derive(Clone)]
pub struct ProxyTool {
    descriptor: ToolDescriptor,
    factory: ClientFactory,
}

impl ProxyTool {
    /// A proxy for the upstream tool `tool`, as the upstream listed it.
    pub fn from_mcp_tool(factory: ClientFactory, tool: ToolDescriptor) -> Self {
        Self {
            descriptor: tool,
            factory,
        }
    }

    /// The upstream's listing entry, unchanged (`execution` included).
    pub fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    /// A [`ToolDef`] to register on a server: same name, title, description, schemas,
    /// annotations, icons, `_meta` and task mode as upstream.
    pub fn into_tool_def(self) -> ToolDef {
        let tool = self.descriptor.tool.clone();
        let task = self.descriptor.task_support();
        let mut def = ToolDef::dynamic(
            tool.name.to_string(),
            JsonObject::clone(&tool.input_schema),
            self,
        )
        .task(task);
        if let Some(title) = tool.title {
            def = def.title(title);
        }
        if let Some(description) = tool.description {
            def = def.description(description);
        }
        if let Some(annotations) = tool.annotations {
            def = def.annotations(annotations);
        }
        if let Some(icons) = tool.icons {
            def = def.icons(icons);
        }
        if let Some(meta) = tool.meta {
            def = def.meta(meta);
        }
        if let Some(schema) = tool.output_schema {
            def = def.output_schema(JsonObject::clone(&schema));
        }
        def
    }
}

impl ToolHandler for ProxyTool {
    fn call(
        &self,
        _cx: Context,
        arguments: JsonObject,
    ) -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
        let factory = self.factory.clone();
        let name = self.descriptor.tool.name.to_string();
        Box::pin(async move {
            let peer = (factory.0)().await?;
            let params = CallToolRequestParams::new(name).with_arguments(arguments);
            peer.call_tool(params).await.map_err(|error| match error {
                rmcp::ServiceError::McpError(error) => ToolError::protocol(error),
                other => ToolError::internal(other),
            })
        })
    }
}
