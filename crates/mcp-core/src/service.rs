//! [`McpService`]: the one `rmcp::ServerHandler` adapter between rmcp and a [`Server`].
//!
//! rmcp's dispatcher stays in charge of protocol versions, required `_meta`, the `tasks/*`
//! capability gates and per-era result shaping; the adapter turns each request into a
//! [`RequestScope`] and hands it to the root server's middleware chain.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use mcp_types::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CustomNotification, CustomRequest, CustomResult, DiscoverResult, ErrorData, GetTaskParams,
    GetTaskResult, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerConfig, Tool, UpdateTaskParams, meta,
};
use rmcp::{
    RoleServer, ServerHandler,
    service::{NotificationContext, RequestContext},
};
use serde_json::Value;

use crate::{
    CallTool, Context, Discover, Initialize, Message, Notification, Reply, RequestScope, Server,
    ToolInfo,
    version::{Version, VersionSpec},
};

/// Serves a root [`Server`] through rmcp. Cheap to clone; the Streamable HTTP service makes
/// one per session or stateless request.
///
/// ```
/// let service = mcp_core::McpService::new(mcp_core::Server::new("demo"));
/// assert_eq!(service.server().name(), "demo");
/// ```
#[derive(Clone)]
pub struct McpService {
    root: Server,
    config: Arc<ServerConfig>,
    legacy_config: Arc<ServerConfig>,
    /// Set once this connection did the 2025-11-25 `initialize` handshake: from then on it
    /// is offered only the extensions that apply to that era.
    legacy: Arc<AtomicBool>,
}

impl McpService {
    /// An adapter for `root`. The server's identity and extension settings are read now.
    ///
    /// ```
    /// let _ = mcp_core::McpService::new(mcp_core::Server::new("demo"));
    /// ```
    pub fn new(root: Server) -> Self {
        let config = Arc::new(root.server_config());
        let legacy_config = Arc::new(root.legacy_server_config());
        Self {
            root,
            config,
            legacy_config,
            legacy: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The same service for a new connection (its own era).
    ///
    /// ```
    /// let service = mcp_core::McpService::new(mcp_core::Server::new("demo"));
    /// let _per_session = service.for_connection();
    /// ```
    pub fn for_connection(&self) -> Self {
        Self {
            legacy: Arc::new(AtomicBool::new(false)),
            ..self.clone()
        }
    }

    /// The root server.
    ///
    /// ```
    /// let s = mcp_core::Server::new("demo");
    /// assert!(mcp_core::McpService::new(s.clone()).server().ptr_eq(&s));
    /// ```
    pub fn server(&self) -> &Server {
        &self.root
    }

    fn context(&self, cx: RequestContext<RoleServer>) -> Context {
        Context::new(self.root.clone(), RequestScope::from_rmcp(cx))
    }

    async fn notify(&self, method: &str, params: Option<Value>, scope: RequestScope) {
        let message = Message::Notification(Notification {
            method: method.to_owned(),
            params,
            cx: Context::new(self.root.clone(), scope),
        });
        if let Err(error) = self.root.dispatch(message).await {
            tracing::debug!(method, error = %error.message, "notification middleware failed");
        }
    }

    async fn custom(
        &self,
        method: &str,
        params: Option<Value>,
        cx: RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let message = Message::Custom(crate::CustomRequest {
            method: method.to_owned(),
            params,
            cx: self.context(cx),
        });
        match self.root.dispatch(message).await? {
            Reply::Custom(value) => Ok(value),
            _ => Err(wrong_reply(method)),
        }
    }
}

fn wrong_reply(method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("a middleware answered {method} with a reply of another kind"),
        None,
    )
}

/// The version a request selects with `_meta.fastmcp.version` (H08).
fn requested_version(meta: &mcp_types::JsonObject) -> Result<Option<VersionSpec>, ErrorData> {
    let Some(requested) = meta.get(meta::FASTMCP).and_then(|f| f.get(meta::VERSION)) else {
        return Ok(None);
    };
    let raw = match requested {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(ErrorData::invalid_params(
                format!("_meta.fastmcp.version must be a string, not {other}"),
                None,
            ));
        }
    };
    Version::new(raw)
        .map(|v| Some(VersionSpec::exact(v)))
        .map_err(|e| ErrorData::invalid_params(format!("_meta.fastmcp.version: {e}"), None))
}

/// One entry per name, the highest version, with every version under
/// `_meta.fastmcp.versions`, highest first (H09). `execution` is never put on the wire
/// (2026-07-28 tools have none, SEP-2663 §3.2).
pub(crate) fn wire_tools(listed: Vec<ToolInfo>) -> Vec<Tool> {
    let mut order: Vec<Arc<str>> = Vec::new();
    let mut groups: std::collections::HashMap<Arc<str>, Vec<ToolInfo>> =
        std::collections::HashMap::new();
    for info in listed {
        let entry = groups.entry(Arc::clone(&info.name)).or_default();
        if entry.is_empty() {
            order.push(Arc::clone(&info.name));
        }
        entry.push(info);
    }
    order
        .into_iter()
        .filter_map(|name| {
            let mut versions = groups.remove(&name)?;
            // Stable: among equal versions the first provider stays first (A17).
            versions.sort_by(|a, b| b.version().cmp(&a.version()));
            let best = versions.first()?;
            let mut tool = best.descriptor().tool;
            if best.version().is_some() {
                let all: Vec<Value> = versions
                    .iter()
                    .filter_map(|v| v.version().map(|v| Value::String(v.to_string())))
                    .collect();
                if let Some(fastmcp) = tool
                    .meta
                    .as_mut()
                    .and_then(|m| m.get_mut(meta::FASTMCP))
                    .and_then(Value::as_object_mut)
                {
                    fastmcp.insert(meta::VERSIONS.into(), Value::Array(all));
                }
            }
            Some(tool)
        })
        .collect()
}

/// Known specification methods whose params rmcp could not parse arrive as custom requests;
/// they deserve `-32602`, not `-32601`.
fn malformed_known_method(method: &str, params: Option<Value>) -> Option<ErrorData> {
    use mcp_types::{
        CallToolRequestParams as Call, GetTaskParams as Get, ReadResourceRequestParams as Read,
        UpdateTaskParams as Update,
    };
    fn explain<T: serde::de::DeserializeOwned>(method: &str, params: Option<Value>) -> ErrorData {
        let detail = match serde_json::from_value::<T>(params.unwrap_or(Value::Null)) {
            Err(e) => e.to_string(),
            Ok(_) => "the params do not match the method".to_owned(),
        };
        ErrorData::invalid_params(format!("Invalid params for {method}: {detail}"), None)
    }
    Some(match method {
        "tools/call" => explain::<Call>(method, params),
        "tasks/get" | "tasks/cancel" => explain::<Get>(method, params),
        "tasks/update" => explain::<Update>(method, params),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            explain::<Read>(method, params)
        }
        m if crate::server::SPEC_METHODS.contains(&m) => {
            ErrorData::invalid_params(format!("Invalid params for {method}"), None)
        }
        _ => return None,
    })
}

impl ServerHandler for McpService {
    fn get_info(&self) -> ServerConfig {
        if self.legacy.load(Ordering::Acquire) {
            ServerConfig::clone(&self.legacy_config)
        } else {
            ServerConfig::clone(&self.config)
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.legacy.store(true, Ordering::Release);
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        let message = Message::Initialize(Box::new(Initialize {
            params: request,
            result,
            cx: self.context(context),
        }));
        match self.root.dispatch(message).await? {
            Reply::Initialize(result) => Ok(*result),
            _ => Err(wrong_reply("initialize")),
        }
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        let message = Message::Discover(Box::new(Discover {
            result,
            cx: self.context(context),
        }));
        match self.root.dispatch(message).await? {
            Reply::Discover(result) => Ok(*result),
            _ => Err(wrong_reply("server/discover")),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let version = requested_version(&context.meta)?;
        let cx = self.context(context);
        let scope = cx.scope_arc();
        let call = CallTool {
            name: request.name.into_owned(),
            arguments: request.arguments.unwrap_or_default(),
            version,
            cx,
            run_middleware: true,
        };
        let reply = self.root.dispatch_call(call).await;
        scope.finish(reply.is_ok());
        reply
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listed = self.root.list_with(self.context(context), true).await?;
        Ok(ListToolsResult::with_all_items(wire_tools(listed)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.root.get_tool(name, None).map(|t| t.descriptor().tool)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let CustomRequest { method, params, .. } = request;
        if let Some(error) = malformed_known_method(&method, params.clone()) {
            return Err(error);
        }
        self.custom(&method, params, context)
            .await
            .map(CustomResult)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let params = serde_json::to_value(request).ok();
        let value = self.custom("tasks/get", params, context).await?;
        serde_json::from_value(value).map_err(|e| {
            ErrorData::internal_error(format!("tasks/get produced an invalid result: {e}"), None)
        })
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let params = serde_json::to_value(request).ok();
        self.custom("tasks/update", params, context).await.map(drop)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let params = serde_json::to_value(request).ok();
        self.custom("tasks/cancel", params, context).await.map(drop)
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let params = serde_json::to_value(notification).ok();
        self.notify("notifications/cancelled", params, RequestScope::new())
            .await;
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let params = serde_json::to_value(notification).ok();
        self.notify("notifications/progress", params, RequestScope::new())
            .await;
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        self.notify("notifications/initialized", None, RequestScope::new())
            .await;
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.notify(
            "notifications/roots/list_changed",
            None,
            RequestScope::new(),
        )
        .await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleServer>,
    ) {
        let CustomNotification { method, params, .. } = notification;
        self.notify(&method, params, RequestScope::new()).await;
    }
}
