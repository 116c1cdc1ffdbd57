//! Recording middleware, for tests of hook order and of which server's chain ran.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use ferrymcp_core::Server;
//! use ferrymcp_test_helpers::middleware::{CallTrace, Log};
//!
//! let log = Log::default();
//! let server = Server::new("s");
//! server.add_middleware(CallTrace::new("outer", &log));
//! server.tool("ping", || async { "pong" }).unwrap();
//! server.call_tool("ping", serde_json::Value::Null).await.unwrap();
//! assert_eq!(log.entries(), ["outer:before", "outer:after"]);
//! # });
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use ferrymcp_core::{
    CallTool, Discover, GetPrompt, Initialize, ListPrompts, ListResourceTemplates, ListResources,
    ListTools, Message, Middleware, Next, PromptInfo, ReadResource, Reply, ResourceInfo, RunTool,
    TemplateInfo, ToolInfo,
    types::{
        CallToolResponse, DiscoverResult, ErrorData, GetPromptResponse, InitializeResult,
        ReadResourceResponse,
    },
};

/// An ordered log of entries, shared by clones (middleware, tools and the test).
///
/// ```
/// let log = ferrymcp_test_helpers::middleware::Log::default();
/// log.push("tool");
/// assert_eq!(log.entries(), ["tool"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    /// A new, empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `entry`.
    pub fn push(&self, entry: impl Into<String>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry.into());
    }

    /// Removes every entry.
    pub fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// A snapshot of the entries, in order.
    pub fn entries(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Records `label:before` and `label:after` around `on_call_tool`.
///
/// ```
/// let _ = ferrymcp_test_helpers::middleware::CallTrace::new("parent", &Default::default());
/// ```
pub struct CallTrace {
    label: String,
    log: Log,
}

impl CallTrace {
    /// A tracer writing to `log`.
    pub fn new(label: impl Into<String>, log: &Log) -> Self {
        Self {
            label: label.into(),
            log: log.clone(),
        }
    }
}

#[async_trait]
impl Middleware for CallTrace {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.log.push(format!("{}:before", self.label));
        let reply = next.run(call).await;
        self.log.push(format!("{}:after", self.label));
        reply
    }
}

/// Records a background run at one server: `label:run:before <tool> <run id> <client>`
/// (the submitter's client id, or `anonymous`) and `label:run:after <tool> <ok|error>`
/// around `on_run_tool`. It records nothing for requests.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ferrymcp_core::{Server, ToolCall};
/// use ferrymcp_test_helpers::middleware::{Log, RunTrace};
///
/// let log = Log::default();
/// let server = Server::new("s");
/// server.add_middleware(RunTrace::new("s", &log));
/// server.tool("ping", || async { "pong" }).unwrap();
/// server.call_tool("ping", serde_json::Value::Null).await.unwrap();
/// assert!(log.entries().is_empty());
/// server.run_in_background("t1", ToolCall::new("ping")).await.unwrap();
/// assert_eq!(log.entries(), ["s:run:before ping t1 anonymous", "s:run:after ping ok"]);
/// # });
/// ```
pub struct RunTrace {
    label: String,
    log: Log,
}

impl RunTrace {
    /// A tracer writing to `log`.
    pub fn new(label: impl Into<String>, log: &Log) -> Self {
        Self {
            label: label.into(),
            log: log.clone(),
        }
    }
}

#[async_trait]
impl Middleware for RunTrace {
    async fn on_run_tool(
        &self,
        run: RunTool,
        next: Next<'_, RunTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = run.tool().name().to_owned();
        let client = run
            .principal()
            .map_or_else(|| "anonymous".to_owned(), |p| p.client_id.clone());
        self.log.push(format!(
            "{}:run:before {tool} {} {client}",
            self.label,
            run.id()
        ));
        let reply = next.run(run).await;
        let ok = if reply.is_ok() { "ok" } else { "error" };
        self.log
            .push(format!("{}:run:after {tool} {ok}", self.label));
        reply
    }
}

/// Records every hook as `label:hook:method:before` and `…:after`.
///
/// ```
/// let _ = ferrymcp_test_helpers::middleware::HookRecorder::new("child", &Default::default());
/// ```
pub struct HookRecorder {
    label: String,
    log: Log,
}

impl HookRecorder {
    /// A recorder writing to `log`.
    pub fn new(label: impl Into<String>, log: &Log) -> Self {
        Self {
            label: label.into(),
            log: log.clone(),
        }
    }

    fn record(&self, hook: &str, method: &str, phase: &str) {
        self.log
            .push(format!("{}:{hook}:{method}:{phase}", self.label));
    }

    async fn around<T>(&self, hook: &str, method: &str, run: impl Future<Output = T>) -> T {
        self.record(hook, method, "before");
        let reply = run.await;
        self.record(hook, method, "after");
        reply
    }
}

#[async_trait]
impl Middleware for HookRecorder {
    async fn on_message(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        let method = message.method().to_owned();
        self.around("on_message", &method, next.run(message)).await
    }

    async fn on_request(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        let method = message.method().to_owned();
        self.around("on_request", &method, next.run(message)).await
    }

    async fn on_notification(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        let method = message.method().to_owned();
        self.around("on_notification", &method, next.run(message))
            .await
    }

    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.around("on_call_tool", "tools/call", next.run(call))
            .await
    }

    async fn on_list_tools(
        &self,
        list: ListTools,
        next: Next<'_, ListTools>,
    ) -> Result<Vec<ToolInfo>, ErrorData> {
        self.around("on_list_tools", "tools/list", next.run(list))
            .await
    }

    async fn on_list_resources(
        &self,
        list: ListResources,
        next: Next<'_, ListResources>,
    ) -> Result<Vec<ResourceInfo>, ErrorData> {
        self.around("on_list_resources", "resources/list", next.run(list))
            .await
    }

    async fn on_list_resource_templates(
        &self,
        list: ListResourceTemplates,
        next: Next<'_, ListResourceTemplates>,
    ) -> Result<Vec<TemplateInfo>, ErrorData> {
        let method = "resources/templates/list";
        self.around("on_list_resource_templates", method, next.run(list))
            .await
    }

    async fn on_read_resource(
        &self,
        read: ReadResource,
        next: Next<'_, ReadResource>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.around("on_read_resource", "resources/read", next.run(read))
            .await
    }

    async fn on_list_prompts(
        &self,
        list: ListPrompts,
        next: Next<'_, ListPrompts>,
    ) -> Result<Vec<PromptInfo>, ErrorData> {
        self.around("on_list_prompts", "prompts/list", next.run(list))
            .await
    }

    async fn on_get_prompt(
        &self,
        get: GetPrompt,
        next: Next<'_, GetPrompt>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.around("on_get_prompt", "prompts/get", next.run(get))
            .await
    }

    async fn on_initialize(
        &self,
        init: Initialize,
        next: Next<'_, Initialize>,
    ) -> Result<InitializeResult, ErrorData> {
        self.around("on_initialize", "initialize", next.run(init))
            .await
    }

    async fn on_discover(
        &self,
        discover: Discover,
        next: Next<'_, Discover>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.around("on_discover", "server/discover", next.run(discover))
            .await
    }
}
