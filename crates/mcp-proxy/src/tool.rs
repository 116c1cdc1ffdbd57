//! [`ProxyTool`]: one upstream tool, registered on a local server, whose body runs upstream.

use std::sync::Arc;

use ferrymcp_core::{BoxFuture, Context, TaskConfig, ToolDef, ToolError, ToolHandler};
use ferrymcp_types::{
    CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject, ToolDescriptor,
};
use rmcp::{RoleClient, service::Peer};

use crate::{ProxyError, RequestOptions, Upstream};

type MakeClient = dyn Fn() -> BoxFuture<'static, Result<Peer<RoleClient>, ToolError>> + Send + Sync;

#[derive(Clone)]
enum Caller {
    /// A caller-supplied way to get a client.
    Factory(Arc<MakeClient>),
    /// A managed upstream: one session, timeouts, reconnects.
    Upstream(Upstream),
}

/// Where a proxy tool sends its calls: a managed [`Upstream`] (one reused session,
/// reconnects, timeouts) or a closure handing out rmcp clients.
///
/// ```
/// let _ = ferrymcp_proxy::ClientFactory::unavailable();
/// let _ = ferrymcp_proxy::ClientFactory::upstream(ferrymcp_proxy::Upstream::command("u", ferrymcp_proxy::CommandTarget::new("srv")));
/// ```
#[derive(Clone)]
pub struct ClientFactory(Caller);

impl ClientFactory {
    /// A factory that calls `make` for each call (it may hand out one shared client).
    ///
    /// ```
    /// let factory = ferrymcp_proxy::ClientFactory::new(|| async {
    ///     Err(ferrymcp_core::ToolError::new("not connected"))
    /// });
    /// ```
    pub fn new<F, Fut>(make: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Peer<RoleClient>, ToolError>> + Send + 'static,
    {
        Self(Caller::Factory(Arc::new(move || Box::pin(make()))))
    }

    /// One connected client, shared by every call (never a session per call).
    ///
    /// ```no_run
    /// # fn f(peer: rmcp::service::Peer<rmcp::RoleClient>) {
    /// let _ = ferrymcp_proxy::ClientFactory::shared(peer);
    /// # }
    /// ```
    pub fn shared(peer: Peer<RoleClient>) -> Self {
        Self::new(move || {
            let peer = peer.clone();
            async move { Ok(peer) }
        })
    }

    /// Calls go through `upstream`'s shared session.
    ///
    /// ```
    /// let u = ferrymcp_proxy::Upstream::http("api", ferrymcp_proxy::HttpTarget::new("http://127.0.0.1:1/mcp"));
    /// let _ = ferrymcp_proxy::ClientFactory::upstream(u);
    /// ```
    pub fn upstream(upstream: Upstream) -> Self {
        Self(Caller::Upstream(upstream))
    }

    /// A factory with no upstream: every call fails with a clear tool error. For tool
    /// definitions inspected without calling them.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::ClientFactory::unavailable();
    /// ```
    pub fn unavailable() -> Self {
        Self::new(|| async { Err(ToolError::new("this proxy tool has no upstream connection")) })
    }
}

/// A tool whose body runs on a remote MCP server.
///
/// ```
/// use ferrymcp_proxy::{ClientFactory, ProxyTool};
/// use ferrymcp_types::{TaskSupport, ToolDescriptor};
///
/// let remote: ToolDescriptor = serde_json::from_value(serde_json::json!({
///     "name": "remote_task_tool",
///     "description": "A remote tool that supports tasks",
///     "inputSchema": {"type": "object", "properties": {}},
///     "execution": {"taskSupport": "optional"}
/// })).unwrap();
/// let proxy = ProxyTool::from_mcp_tool(ClientFactory::unavailable(), remote);
/// assert_eq!(proxy.descriptor().task_support(), TaskSupport::Optional);
/// ```
#[derive(Clone)]
pub struct ProxyTool {
    descriptor: ToolDescriptor,
    factory: ClientFactory,
    task: Option<TaskConfig>,
}

impl ProxyTool {
    /// A proxy for the upstream tool `tool`, as the upstream listed it.
    ///
    /// ```
    /// let tool = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::new("t", "", serde_json::Map::new()));
    /// let proxy = ferrymcp_proxy::ProxyTool::from_mcp_tool(ferrymcp_proxy::ClientFactory::unavailable(), tool);
    /// assert_eq!(proxy.descriptor().name(), "t");
    /// ```
    pub fn from_mcp_tool(factory: ClientFactory, tool: ToolDescriptor) -> Self {
        Self {
            descriptor: tool,
            factory,
            task: None,
        }
    }

    /// Overrides the task mode the local server declares for this tool (the upstream's by
    /// default). With a local `TasksExtension`, a mode other than forbidden makes opted-in
    /// calls run as local tasks whose body is the upstream call.
    ///
    /// ```
    /// use ferrymcp_types::TaskSupport;
    /// let tool = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::new("t", "", serde_json::Map::new()));
    /// let proxy = ferrymcp_proxy::ProxyTool::from_mcp_tool(ferrymcp_proxy::ClientFactory::unavailable(), tool)
    ///     .with_task(TaskSupport::Optional);
    /// assert_eq!(proxy.into_tool_def().name(), "t");
    /// ```
    pub fn with_task(mut self, task: impl Into<TaskConfig>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// The upstream's listing entry, unchanged (`execution` included).
    ///
    /// ```
    /// let tool = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::new("t", "", serde_json::Map::new()));
    /// let proxy = ferrymcp_proxy::ProxyTool::from_mcp_tool(ferrymcp_proxy::ClientFactory::unavailable(), tool.clone());
    /// assert_eq!(proxy.descriptor(), &tool);
    /// ```
    pub fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    /// A [`ToolDef`] to register on a server: same name, title, description, schemas,
    /// annotations, icons, `_meta` and task mode as upstream.
    ///
    /// ```
    /// let tool = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::new("t", "d", serde_json::Map::new()));
    /// let def = ferrymcp_proxy::ProxyTool::from_mcp_tool(ferrymcp_proxy::ClientFactory::unavailable(), tool).into_tool_def();
    /// assert_eq!(def.name(), "t");
    /// ```
    pub fn into_tool_def(self) -> ToolDef {
        let tool = self.descriptor.tool.clone();
        let task = self
            .task
            .unwrap_or_else(|| TaskConfig::from(self.descriptor.task_support()));
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

/// A clear JSON-RPC error for anything but an upstream `CallToolResult`.
fn not_a_result(name: &str, reply: &CallToolResponse) -> ToolError {
    let kind = match reply {
        CallToolResponse::Task(_) => "a task",
        CallToolResponse::InputRequired(_) => "an input request",
        _ => "an unknown result",
    };
    ToolError::protocol(
        ProxyError::Protocol {
            upstream: name.to_owned(),
            method: "tools/call".to_owned(),
            detail: format!("{kind}, which this call cannot return"),
        }
        .into_error_data(),
    )
}

impl ToolHandler for ProxyTool {
    fn call(
        &self,
        cx: Context,
        arguments: JsonObject,
    ) -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
        let reply = self.respond(cx, arguments);
        let factory = self.factory.clone();
        Box::pin(async move {
            match reply.await? {
                CallToolResponse::Complete(result) => Ok(result),
                other => {
                    let upstream = match &factory.0 {
                        Caller::Upstream(upstream) => upstream.name(),
                        Caller::Factory(_) => "the upstream",
                    };
                    Err(not_a_result(upstream, &other))
                }
            }
        })
    }

    /// The upstream's result, or the input round it asked for: the framework hands that to
    /// the client (or, for a 2025-11-25 client, asks it itself) and the retry carries the
    /// client's answers and the upstream's `requestState` back to it.
    fn respond(
        &self,
        cx: Context,
        arguments: JsonObject,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>> {
        let factory = self.factory.clone();
        let name = self.descriptor.tool.name.to_string();
        Box::pin(async move {
            match factory.0 {
                Caller::Upstream(upstream) => {
                    let mut params = CallToolRequestParams::new(name).with_arguments(arguments);
                    params.input_responses = cx.input_responses().cloned();
                    params.request_state = cx.request_state().map(str::to_owned);
                    let mut options = RequestOptions::from_context(&cx);
                    // The stand-in it answers with goes back unchanged.
                    options.relay = cx.result_relay();
                    match upstream.call_tool_with(params, options).await {
                        Ok(
                            reply @ (CallToolResponse::Complete(_)
                            | CallToolResponse::InputRequired(_)),
                        ) => Ok(reply),
                        Ok(other) => Err(not_a_result(upstream.name(), &other)),
                        Err(error) => Err(ToolError::protocol(error.into_error_data())),
                    }
                }
                Caller::Factory(make) => {
                    let peer = make().await?;
                    let params = CallToolRequestParams::new(name).with_arguments(arguments);
                    // Boxed, so that this branch does not size the managed upstream's future.
                    Box::pin(peer.call_tool(params))
                        .await
                        .map(CallToolResponse::Complete)
                        .map_err(|error| match error {
                            rmcp::ServiceError::McpError(error) => ToolError::protocol(error),
                            other => ToolError::internal(other),
                        })
                }
            }
        })
    }
}
