//! Middleware: typed hooks around every request a server handles.
//!
//! A [`Middleware`] overrides the hooks it cares about; each hook receives the message and a
//! [`Next`] to continue with, like axum's `from_fn` + `Next`. The defaults pass through.
//! For one hook, [`from_fn`] makes a middleware of a closure.
//!
//! A task's work is not a request: the worker that runs it (maybe in another process,
//! long after the submission was answered) calls [`Middleware::on_run_tool`] at every
//! server from the root down to the tool's owner, and no other hook. `on_call_tool` sees
//! the submission, `on_run_tool` the run.
//!
//! ## Order
//!
//! For one server with middlewares `[m1, m2]` (in the order added) and a `tools/call`:
//!
//! ```text
//! m1.on_message → m1.on_request → m1.on_call_tool
//!   → m2.on_message → m2.on_request → m2.on_call_tool
//!     → extension interceptors (first registered outermost) → the tool
//! ```
//!
//! Inside one middleware `on_message` is outermost; across middlewares the first added
//! is outermost. Notifications take `on_notification` instead of `on_request`.
//!
//! A call into a mounted child runs the parent's whole chain, then the child's whole chain
//!; each sees names in its own namespace. A call to the parent's own tool never
//! reaches the child's middleware. A list on the parent calls the child's list through
//! the child's middleware.
//!
//! ```
//! use ferrymcp_core::{CallTool, Middleware, Next, Server, types::{CallToolResponse, ErrorData}};
//!
//! struct Log;
//!
//! #[async_trait::async_trait]
//! impl Middleware for Log {
//!     async fn on_call_tool(
//!         &self,
//!         call: CallTool,
//!         next: Next<'_, CallTool>,
//!     ) -> Result<CallToolResponse, ErrorData> {
//!         tracing::info!(tool = %call.name, "calling");
//!         next.run(call).await
//!     }
//! }
//!
//! Server::new("s").add_middleware(Log);
//! ```

mod from_fn;

use std::{marker::PhantomData, sync::Arc};

use async_trait::async_trait;
use ferrymcp_types::{
    CallToolResponse, DiscoverResult, ErrorData, GetPromptResponse, InitializeRequestParams,
    InitializeResult, JsonObject, ReadResourceResponse,
};
use serde_json::Value;

use crate::{
    BoxFuture, Context, PromptInfo, ResourceInfo, Server, TemplateInfo, ToolInfo,
    version::VersionSpec,
};

pub use from_fn::{FromFn, HookFn, Hooked, from_fn};

/// A `tools/call` as one server sees it. Middleware may change `name`, `arguments` and
/// `version` before calling `next`.
#[derive(Debug, Clone)]
pub struct CallTool {
    /// The tool name, in this server's namespace.
    pub name: String,
    /// The arguments object.
    pub arguments: JsonObject,
    /// The requested version (from `_meta.fastmcp.version` on the wire).
    pub version: Option<VersionSpec>,
    pub(crate) cx: Context,
    pub(crate) run_middleware: bool,
    /// Whether mirroring servers already looked again for this call's tool (once a call).
    pub(crate) looked_again: bool,
}

impl CallTool {
    /// The request as seen from this server.
    ///
    /// ```
    /// # use ferrymcp_core::CallTool;
    /// fn server_name(call: &CallTool) -> &str { call.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

/// A tool's background run as one server sees it: the work a task engine does after the
/// submitting `tools/call` was answered with a task, in whichever process runs it (a
/// worker on another machine included). It carries who submitted the work and which tool
/// (exact version) runs; both are fixed by the submission, so they are read-only here.
///
/// ```
/// use ferrymcp_core::RunTool;
/// fn describe(run: &RunTool) -> String {
///     let who = run.principal().map_or("anonymous", |p| p.client_id.as_str());
///     format!("{} runs {} for {who}", run.id(), run.tool().name())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct RunTool {
    pub(crate) tool: ToolInfo,
    pub(crate) arguments: JsonObject,
    pub(crate) cx: Context,
}

impl RunTool {
    /// The tool that runs, as this server names it (namespace included), with its exact
    /// version, tags and annotations.
    ///
    /// ```
    /// # use ferrymcp_core::RunTool;
    /// fn tool_name(run: &RunTool) -> &str { run.tool().name() }
    /// ```
    pub fn tool(&self) -> &ToolInfo {
        &self.tool
    }

    /// The arguments the tool was submitted with.
    ///
    /// ```
    /// # use ferrymcp_core::RunTool;
    /// fn argument_count(run: &RunTool) -> usize { run.arguments().len() }
    /// ```
    pub fn arguments(&self) -> &JsonObject {
        &self.arguments
    }

    /// Who submitted the work, when the submission was authenticated.
    ///
    /// ```
    /// # use ferrymcp_core::RunTool;
    /// fn is_anonymous(run: &RunTool) -> bool { run.principal().is_none() }
    /// ```
    pub fn principal(&self) -> Option<&crate::auth::Principal> {
        self.cx.scope().principal()
    }

    /// The engine's id for this run (a task's id).
    ///
    /// ```
    /// # use ferrymcp_core::RunTool;
    /// fn log(run: &RunTool) { tracing::info!(run = run.id(), "running"); }
    /// ```
    pub fn id(&self) -> &str {
        self.cx.background_run().unwrap_or_default()
    }

    /// The run as seen from this server: its cancellation token, server state, progress.
    ///
    /// ```
    /// # use ferrymcp_core::RunTool;
    /// fn server_name(run: &RunTool) -> &str { run.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

/// A `tools/list` as one server sees it.
#[derive(Debug, Clone)]
pub struct ListTools {
    pub(crate) cx: Context,
    pub(crate) run_middleware: bool,
}

impl ListTools {
    /// The request as seen from this server.
    ///
    /// ```
    /// # use ferrymcp_core::ListTools;
    /// fn server_name(list: &ListTools) -> &str { list.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

macro_rules! list_message {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pub(crate) cx: Context,
            pub(crate) run_middleware: bool,
        }

        impl $name {
            /// The request as seen from this server.
            pub fn context(&self) -> &Context {
                &self.cx
            }
        }
    };
}

list_message!(
    /// A `resources/list` as one server sees it.
    ListResources
);
list_message!(
    /// A `resources/templates/list` as one server sees it.
    ListResourceTemplates
);
list_message!(
    /// A `prompts/list` as one server sees it.
    ListPrompts
);

/// A `resources/read` (of a resource or a template) as one server sees it: the URI is in
/// this server's namespace.
#[derive(Debug, Clone)]
pub struct ReadResource {
    /// The URI.
    pub uri: String,
    /// The requested version (from `_meta.fastmcp.version` on the wire).
    pub version: Option<VersionSpec>,
    pub(crate) cx: Context,
    pub(crate) run_middleware: bool,
    /// Whether mirroring servers already looked again for this resource (once a request).
    pub(crate) looked_again: bool,
}

impl ReadResource {
    /// The request as seen from this server.
    ///
    /// ```
    /// # use ferrymcp_core::ReadResource;
    /// fn uri(read: &ReadResource) -> &str { &read.uri }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

/// A `prompts/get` as one server sees it: the name is in this server's namespace.
#[derive(Debug, Clone)]
pub struct GetPrompt {
    /// The prompt name.
    pub name: String,
    /// The arguments.
    pub arguments: JsonObject,
    /// The requested version.
    pub version: Option<VersionSpec>,
    pub(crate) cx: Context,
    pub(crate) run_middleware: bool,
    /// Whether mirroring servers already looked again for this prompt (once a request).
    pub(crate) looked_again: bool,
}

impl GetPrompt {
    /// The request as seen from this server.
    ///
    /// ```
    /// # use ferrymcp_core::GetPrompt;
    /// fn name(get: &GetPrompt) -> &str { &get.name }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

/// Any other request: an extension method (e.g. `tasks/get`) or an unknown method.
#[derive(Debug, Clone)]
pub struct CustomRequest {
    /// The JSON-RPC method.
    pub method: String,
    /// The raw params.
    pub params: Option<Value>,
    pub(crate) cx: Context,
}

impl CustomRequest {
    /// The request as seen from this server.
    ///
    /// ```
    /// # use ferrymcp_core::CustomRequest;
    /// fn server_name(r: &CustomRequest) -> &str { r.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

/// A notification from the client.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The JSON-RPC method, e.g. `notifications/cancelled`.
    pub method: String,
    /// The raw params.
    pub params: Option<Value>,
    pub(crate) cx: Context,
}

impl Notification {
    /// The notification as seen from this server.
    ///
    /// ```
    /// # use ferrymcp_core::Notification;
    /// fn server_name(n: &Notification) -> &str { n.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }
}

/// A legacy `initialize` handshake; `result` is what the server answers unless middleware
/// changes it.
#[derive(Debug, Clone)]
pub struct Initialize {
    /// The client's parameters.
    pub params: InitializeRequestParams,
    /// The negotiated answer.
    pub result: InitializeResult,
    pub(crate) cx: Context,
}

/// A 2026-07-28 `server/discover`; `result` is what the server answers unless middleware
/// changes it.
#[derive(Debug, Clone)]
pub struct Discover {
    /// The answer.
    pub result: DiscoverResult,
    pub(crate) cx: Context,
}

/// Every message a server handles, as [`Middleware::on_message`] sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Message {
    /// `tools/call`.
    CallTool(CallTool),
    /// `tools/list`.
    ListTools(ListTools),
    /// `resources/list`.
    ListResources(ListResources),
    /// `resources/templates/list`.
    ListResourceTemplates(ListResourceTemplates),
    /// `resources/read`.
    ReadResource(ReadResource),
    /// `prompts/list`.
    ListPrompts(ListPrompts),
    /// `prompts/get`.
    GetPrompt(GetPrompt),
    /// `initialize` (legacy era).
    Initialize(Box<Initialize>),
    /// `server/discover` (2026-07-28).
    Discover(Box<Discover>),
    /// Any other request, e.g. an extension's method.
    Custom(CustomRequest),
    /// A notification.
    Notification(Notification),
}

impl Message {
    /// The JSON-RPC method name.
    ///
    /// ```
    /// # use ferrymcp_core::Message;
    /// fn is_call(m: &Message) -> bool { m.method() == "tools/call" }
    /// ```
    pub fn method(&self) -> &str {
        match self {
            Message::CallTool(_) => "tools/call",
            Message::ListTools(_) => "tools/list",
            Message::ListResources(_) => "resources/list",
            Message::ListResourceTemplates(_) => "resources/templates/list",
            Message::ReadResource(_) => "resources/read",
            Message::ListPrompts(_) => "prompts/list",
            Message::GetPrompt(_) => "prompts/get",
            Message::Initialize(_) => "initialize",
            Message::Discover(_) => "server/discover",
            Message::Custom(c) => &c.method,
            Message::Notification(n) => &n.method,
        }
    }

    /// The message as seen from the server handling it.
    ///
    /// ```
    /// # use ferrymcp_core::Message;
    /// fn server_name(m: &Message) -> &str { m.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        match self {
            Message::CallTool(m) => &m.cx,
            Message::ListTools(m) => &m.cx,
            Message::ListResources(m) => &m.cx,
            Message::ListResourceTemplates(m) => &m.cx,
            Message::ReadResource(m) => &m.cx,
            Message::ListPrompts(m) => &m.cx,
            Message::GetPrompt(m) => &m.cx,
            Message::Initialize(m) => &m.cx,
            Message::Discover(m) => &m.cx,
            Message::Custom(m) => &m.cx,
            Message::Notification(m) => &m.cx,
        }
    }

    /// Whether this is a notification (no reply is sent to the client).
    ///
    /// ```
    /// # use ferrymcp_core::Message;
    /// fn needs_reply(m: &Message) -> bool { !m.is_notification() }
    /// ```
    pub fn is_notification(&self) -> bool {
        matches!(self, Message::Notification(_))
    }
}

/// The answer to a [`Message`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Reply {
    /// To `tools/call`: a result, an input request or a task.
    CallTool(CallToolResponse),
    /// To `tools/list`: every visible tool, all versions.
    ListTools(Vec<ToolInfo>),
    /// To `resources/list`: every visible resource, all versions.
    ListResources(Vec<ResourceInfo>),
    /// To `resources/templates/list`: every visible template, all versions.
    ListResourceTemplates(Vec<TemplateInfo>),
    /// To `resources/read`: the contents, or an input request.
    ReadResource(ReadResourceResponse),
    /// To `prompts/list`: every visible prompt, all versions.
    ListPrompts(Vec<PromptInfo>),
    /// To `prompts/get`: the rendered prompt, or an input request.
    GetPrompt(GetPromptResponse),
    /// To `initialize`.
    Initialize(Box<InitializeResult>),
    /// To `server/discover`.
    Discover(Box<DiscoverResult>),
    /// To a custom request.
    Custom(Value),
    /// A notification was handled.
    Notified,
}

/// Hooks around the requests one server handles. Every hook defaults to passing through.
/// See the [module docs](self) for the order.
#[async_trait]
pub trait Middleware: Send + Sync + 'static {
    /// Every message, outermost hook.
    async fn on_message(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        next.run(message).await
    }

    /// Every request, inside [`on_message`](Self::on_message).
    async fn on_request(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        next.run(message).await
    }

    /// Every notification, inside [`on_message`](Self::on_message).
    async fn on_notification(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        next.run(message).await
    }

    /// `tools/call`. A task submission returns `CallToolResponse::Task` from `next`;
    /// pass it through.
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        next.run(call).await
    }

    /// A tool's background run (a task's run), in the process that runs it, long after the
    /// submitting `tools/call` was answered. [`on_call_tool`](Self::on_call_tool) saw the
    /// submission; this hook sees the work. It runs at every server from the root down to
    /// the tool's owner, like `on_call_tool`, and at no other hook.
    ///
    /// ```
    /// use ferrymcp_core::{Middleware, Next, RunTool, types::{CallToolResponse, ErrorData}};
    ///
    /// struct RunTimer;
    ///
    /// #[async_trait::async_trait]
    /// impl Middleware for RunTimer {
    ///     async fn on_run_tool(
    ///         &self,
    ///         run: RunTool,
    ///         next: Next<'_, RunTool>,
    ///     ) -> Result<CallToolResponse, ErrorData> {
    ///         let started = std::time::Instant::now();
    ///         let (task, tool) = (run.id().to_owned(), run.tool().name().to_owned());
    ///         let outcome = next.run(run).await;
    ///         tracing::info!(%task, %tool, elapsed = ?started.elapsed(), "task run ended");
    ///         outcome
    ///     }
    /// }
    /// ```
    async fn on_run_tool(
        &self,
        run: RunTool,
        next: Next<'_, RunTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        next.run(run).await
    }

    /// `tools/list`: may filter or change the tools `next` returns.
    async fn on_list_tools(
        &self,
        list: ListTools,
        next: Next<'_, ListTools>,
    ) -> Result<Vec<ToolInfo>, ErrorData> {
        next.run(list).await
    }

    /// `resources/list`; the list can be filtered.
    async fn on_list_resources(
        &self,
        list: ListResources,
        next: Next<'_, ListResources>,
    ) -> Result<Vec<ResourceInfo>, ErrorData> {
        next.run(list).await
    }

    /// `resources/templates/list`.
    async fn on_list_resource_templates(
        &self,
        list: ListResourceTemplates,
        next: Next<'_, ListResourceTemplates>,
    ) -> Result<Vec<TemplateInfo>, ErrorData> {
        next.run(list).await
    }

    /// `resources/read` of a resource or a template.
    async fn on_read_resource(
        &self,
        read: ReadResource,
        next: Next<'_, ReadResource>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        next.run(read).await
    }

    /// `prompts/list`.
    async fn on_list_prompts(
        &self,
        list: ListPrompts,
        next: Next<'_, ListPrompts>,
    ) -> Result<Vec<PromptInfo>, ErrorData> {
        next.run(list).await
    }

    /// `prompts/get`.
    async fn on_get_prompt(
        &self,
        get: GetPrompt,
        next: Next<'_, GetPrompt>,
    ) -> Result<GetPromptResponse, ErrorData> {
        next.run(get).await
    }

    /// `initialize` (legacy era).
    async fn on_initialize(
        &self,
        init: Initialize,
        next: Next<'_, Initialize>,
    ) -> Result<InitializeResult, ErrorData> {
        next.run(init).await
    }

    /// `server/discover` (2026-07-28).
    async fn on_discover(
        &self,
        discover: Discover,
        next: Next<'_, Discover>,
    ) -> Result<DiscoverResult, ErrorData> {
        next.run(discover).await
    }
}

/// Which hook of the first middleware in the chain runs next.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Message,
    Request,
    Typed,
    Done,
}

/// The rest of the chain: the next hook, then the next middleware, then the server itself.
/// `T` is the message type the hook handles; [`Next::run`] continues with it.
pub struct Next<'a, T = Message> {
    server: &'a Server,
    chain: &'a [Arc<dyn Middleware>],
    stage: Stage,
    _message: PhantomData<fn(T)>,
}

impl<'a, T> Next<'a, T> {
    fn new(server: &'a Server, chain: &'a [Arc<dyn Middleware>], stage: Stage) -> Self {
        Self {
            server,
            chain,
            stage,
            _message: PhantomData,
        }
    }
}

impl<'a> Next<'a, Message> {
    /// Continues with `message`.
    pub fn run(self, message: Message) -> BoxFuture<'a, Result<Reply, ErrorData>> {
        dispatch(self.server, self.chain, self.stage, message)
    }
}

fn wrong_reply(expected: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("a middleware answered a {expected} with a reply of another kind"),
        None,
    )
}

macro_rules! typed_next {
    ($message:ident, $output:ty, $variant:ident, $what:literal) => {
        impl<'a> Next<'a, $message> {
            /// Continues with the message.
            pub async fn run(self, message: $message) -> Result<$output, ErrorData> {
                match dispatch(
                    self.server,
                    self.chain,
                    self.stage,
                    Message::$variant(message),
                )
                .await?
                {
                    Reply::$variant(reply) => Ok(reply),
                    _ => Err(wrong_reply($what)),
                }
            }
        }
    };
}

typed_next!(CallTool, CallToolResponse, CallTool, "tools/call");
typed_next!(ListTools, Vec<ToolInfo>, ListTools, "tools/list");
typed_next!(
    ListResources,
    Vec<ResourceInfo>,
    ListResources,
    "resources/list"
);
typed_next!(
    ListResourceTemplates,
    Vec<TemplateInfo>,
    ListResourceTemplates,
    "resources/templates/list"
);
typed_next!(
    ReadResource,
    ReadResourceResponse,
    ReadResource,
    "resources/read"
);
typed_next!(ListPrompts, Vec<PromptInfo>, ListPrompts, "prompts/list");
typed_next!(GetPrompt, GetPromptResponse, GetPrompt, "prompts/get");
impl<'a> Next<'a, RunTool> {
    /// Continues the run: the next middleware, then the next server down, then the tool.
    pub async fn run(self, run: RunTool) -> Result<CallToolResponse, ErrorData> {
        dispatch_run(self.server, self.chain, run).await
    }
}

impl<'a> Next<'a, Initialize> {
    /// Continues with the message.
    pub async fn run(self, message: Initialize) -> Result<InitializeResult, ErrorData> {
        let message = Message::Initialize(Box::new(message));
        match dispatch(self.server, self.chain, self.stage, message).await? {
            Reply::Initialize(reply) => Ok(*reply),
            _ => Err(wrong_reply("initialize")),
        }
    }
}

impl<'a> Next<'a, Discover> {
    /// Continues with the message.
    pub async fn run(self, message: Discover) -> Result<DiscoverResult, ErrorData> {
        let message = Message::Discover(Box::new(message));
        match dispatch(self.server, self.chain, self.stage, message).await? {
            Reply::Discover(reply) => Ok(*reply),
            _ => Err(wrong_reply("server/discover")),
        }
    }
}

/// Runs `message` through `chain` from `stage`, then through the server's endpoint.
fn dispatch<'a>(
    server: &'a Server,
    chain: &'a [Arc<dyn Middleware>],
    stage: Stage,
    message: Message,
) -> BoxFuture<'a, Result<Reply, ErrorData>> {
    let Some((first, rest)) = chain.split_first() else {
        return server.endpoint(message);
    };
    match stage {
        Stage::Message => first.on_message(message, Next::new(server, chain, Stage::Request)),
        Stage::Request if message.is_notification() => {
            first.on_notification(message, Next::new(server, chain, Stage::Typed))
        }
        Stage::Request => first.on_request(message, Next::new(server, chain, Stage::Typed)),
        Stage::Typed => {
            // The next stage after a typed hook: the rest of this middleware's chain.
            macro_rules! done {
                () => {
                    Next::new(server, chain, Stage::Done)
                };
            }
            match message {
                Message::CallTool(m) => typed(first.on_call_tool(m, done!()), Reply::CallTool),
                Message::ListTools(m) => typed(first.on_list_tools(m, done!()), Reply::ListTools),
                Message::ListResources(m) => {
                    typed(first.on_list_resources(m, done!()), Reply::ListResources)
                }
                Message::ListResourceTemplates(m) => typed(
                    first.on_list_resource_templates(m, done!()),
                    Reply::ListResourceTemplates,
                ),
                Message::ReadResource(m) => {
                    typed(first.on_read_resource(m, done!()), Reply::ReadResource)
                }
                Message::ListPrompts(m) => {
                    typed(first.on_list_prompts(m, done!()), Reply::ListPrompts)
                }
                Message::GetPrompt(m) => typed(first.on_get_prompt(m, done!()), Reply::GetPrompt),
                Message::Initialize(m) => typed(first.on_initialize(*m, done!()), |r| {
                    Reply::Initialize(Box::new(r))
                }),
                Message::Discover(m) => typed(first.on_discover(*m, done!()), |r| {
                    Reply::Discover(Box::new(r))
                }),
                other => dispatch(server, chain, Stage::Done, other),
            }
        }
        Stage::Done => dispatch(server, rest, Stage::Message, message),
    }
}

/// A typed hook's future, mapped back to a [`Reply`].
fn typed<'a, T: 'a>(
    hook: BoxFuture<'a, Result<T, ErrorData>>,
    reply: fn(T) -> Reply,
) -> BoxFuture<'a, Result<Reply, ErrorData>> {
    Box::pin(async move { hook.await.map(reply) })
}

/// Runs `message` through `server`'s whole chain (or straight to its endpoint).
pub(crate) fn run_chain<'a>(
    server: &'a Server,
    chain: &'a [Arc<dyn Middleware>],
    message: Message,
) -> BoxFuture<'a, Result<Reply, ErrorData>> {
    dispatch(server, chain, Stage::Message, message)
}

/// Runs a background run through `chain`'s `on_run_tool` hooks, then on to the tool.
pub(crate) fn dispatch_run<'a>(
    server: &'a Server,
    chain: &'a [Arc<dyn Middleware>],
    run: RunTool,
) -> BoxFuture<'a, Result<CallToolResponse, ErrorData>> {
    match chain.split_first() {
        None => Box::pin(server.run_endpoint(run)),
        Some((first, rest)) => first.on_run_tool(run, Next::new(server, rest, Stage::Done)),
    }
}
