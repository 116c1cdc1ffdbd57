//! [`Upstream`]: one reused session with a remote MCP server, reconnected with backoff.
//!
//! An upstream is a child process over stdio ([`CommandTarget`]), a Streamable HTTP URL
//! ([`HttpTarget`]) or an rmcp client the caller already has ([`Upstream::from_peer`]). The
//! session is opened on first use and shared by every call (rmcp multiplexes concurrent
//! requests over it); it is never opened per call. When it dies (the child exits, the
//! connection drops), the request in flight fails with [`ProxyError::Disconnected`] and the
//! next request reconnects; failed reconnects back off exponentially, and requests made
//! meanwhile fail at once with [`ProxyError::Down`] instead of waiting. A stdio upstream
//! that writes a line that is not JSON, or one over
//! [`UpstreamOptions::max_message_bytes`], is treated the same way: its session is closed and
//! the request in flight fails with [`ProxyError::Protocol`] saying what it wrote.
//!
//! The session speaks 2026-07-28 when the upstream offers it (`server/discover`), else
//! 2025-11-25 (`initialize`). On a 2026-07-28 session over HTTP, calls (`tools/call`,
//! `resources/read`, `prompts/get`, `tasks/*`) do not go through rmcp's session worker: each
//! is posted on its own from the caller's task (see `stateless.rs`).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, OnceLock, PoisonError},
    time::Instant,
};

use arc_swap::ArcSwapOption;
use ferrymcp_core::{CancellationToken, Context, ListKind, ResultRelay, auth::BearerToken};
use ferrymcp_types::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, ProtocolVersion, ServerResult, TASKS_EXTENSION_ID, ToolDescriptor, meta,
};
use futures::{FutureExt as _, future::Either};
use rmcp::{
    RoleClient,
    model::{
        CallToolRequest, ClientRequest, GetExtensions as _, ListToolsRequest,
        PaginatedRequestParams, PingRequest, RequestMetaObject,
    },
    service::{
        ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, Peer,
        PeerRequestOptions, RunningService, ServiceError,
    },
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError},
    },
};

#[cfg(doc)]
use crate::upstream_auth::UpstreamAuth;
use crate::{
    CommandTarget, HttpTarget, ProxyError, UpstreamOptions,
    announcements::{self, UpstreamHandler},
    forwarding::{ForwardedHeaders, ForwardingClient},
    post_client::PostClient,
    stateless::{PostError, Poster},
    stdout::{self, Fault},
    tls,
    upstream_auth::Credentials,
};

/// Per-request options of [`Upstream::request`] and [`Upstream::call_tool`].
///
/// ```
/// let cancel = ferrymcp_core::CancellationToken::new();
/// let options = ferrymcp_proxy::RequestOptions::default().cancel_on(&cancel).with_tasks();
/// assert!(options.tasks_opt_in);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestOptions<'a> {
    /// Declare the tasks extension on this request (2026-07-28 sessions only).
    pub tasks_opt_in: bool,
    /// Cancelling it cancels the upstream request.
    pub cancel: Option<&'a CancellationToken>,
    /// The proxy client's HTTP headers; the target's [`HeaderPolicy`](crate::HeaderPolicy)
    /// picks what is forwarded (never `Authorization`).
    pub client_headers: Option<&'a http::HeaderMap>,
    /// The request is made for a client of the proxy (not for the proxy itself, as its
    /// listings are): an upstream with [`UpstreamAuth::TokenExchange`] then needs
    /// [`caller_token`](Self::caller_token), and the call fails without one.
    pub on_behalf: bool,
    /// The client's verified token, exchanged for the upstream's own token by
    /// [`UpstreamAuth::TokenExchange`]; never sent upstream as is.
    pub caller_token: Option<&'a BearerToken>,
    /// Where a `tools/call` result may go to the client as the upstream wrote it (see
    /// [`ResultRelay`](ferrymcp_core::ResultRelay)): a plain result read from a 2026-07-28
    /// upstream over HTTP is then relayed, and the call answers with the stand-in. Set it
    /// only to return that answer unchanged; [`from_context`](Self::from_context) leaves it
    /// `None`.
    pub relay: Option<&'a ResultRelay>,
}

impl<'a> RequestOptions<'a> {
    /// The cancellation, HTTP headers and verified token of the request `cx` serves, made
    /// on behalf of its client.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), ferrymcp_core::RequestScope::new());
    /// let options = ferrymcp_proxy::RequestOptions::from_context(&cx);
    /// assert!(options.client_headers.is_none());
    /// assert!(options.on_behalf && options.caller_token.is_none());
    /// ```
    pub fn from_context(cx: &'a Context) -> Self {
        let extensions = cx.scope().extensions();
        let parts = extensions.get::<http::request::Parts>();
        Self {
            tasks_opt_in: false,
            cancel: Some(cx.cancellation()),
            client_headers: parts.map(|parts| &parts.headers),
            on_behalf: true,
            caller_token: extensions
                .get::<BearerToken>()
                .or_else(|| parts.and_then(|parts| parts.extensions.get::<BearerToken>())),
            relay: None,
        }
    }

    /// Makes the request on behalf of the client whose verified token is `token` (see
    /// [`caller_token`](Self::caller_token)).
    ///
    /// ```
    /// let token = ferrymcp_core::auth::BearerToken::new("eyJ...");
    /// let options = ferrymcp_proxy::RequestOptions::default().for_caller(Some(&token));
    /// assert!(options.on_behalf && options.caller_token.is_some());
    /// ```
    pub fn for_caller(mut self, token: Option<&'a BearerToken>) -> Self {
        self.on_behalf = true;
        self.caller_token = token;
        self
    }

    /// Sets [`tasks_opt_in`](Self::tasks_opt_in).
    ///
    /// ```
    /// assert!(ferrymcp_proxy::RequestOptions::default().with_tasks().tasks_opt_in);
    /// ```
    pub fn with_tasks(mut self) -> Self {
        self.tasks_opt_in = true;
        self
    }

    /// Sets [`cancel`](Self::cancel).
    ///
    /// ```
    /// let token = ferrymcp_core::CancellationToken::new();
    /// assert!(ferrymcp_proxy::RequestOptions::default().cancel_on(&token).cancel.is_some());
    /// ```
    pub fn cancel_on(mut self, token: &'a CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// Where an upstream session comes from.
#[derive(Clone)]
enum Source {
    Command(CommandTarget),
    Http(HttpTarget),
    /// A session the caller opened; it is not reopened when it dies.
    Peer(Peer<RoleClient>),
}

/// How many `resources/subscribe` a 2025-11-25 session is sent at once.
const SUBSCRIBES_AT_ONCE: usize = 8;

/// What the proxy follows of an upstream (`announcements.rs`).
pub(crate) enum Listening {
    /// A 2026-07-28 `subscriptions/listen` stream.
    Stream(Box<rmcp::service::Subscription>),
    /// A 2025-11-25 session: its list changes reach [`UpstreamHandler`]; with `updates`,
    /// the resources it is subscribed to one by one announce their updates there too.
    Session {
        session: Arc<Session>,
        updates: bool,
    },
}

/// One open session.
pub(crate) struct Session {
    pub(crate) peer: Peer<RoleClient>,
    /// Owns the serving loop (dropping it closes the session); `None` for a caller's peer.
    _service: Option<RunningService<RoleClient, UpstreamHandler>>,
    /// The child process, for stdio upstreams (killed when the session drops).
    child: Option<tokio::process::Child>,
    /// Whether the session runs on 2026-07-28 (per-request `_meta`).
    modern: bool,
    /// Whether the upstream advertised `io.modelcontextprotocol/tasks`.
    tasks: bool,
    /// The upstream's `instructions`.
    instructions: Option<String>,
    /// Whether the upstream advertised `completions`.
    completions: bool,
    /// The client capabilities requests carry (plus tasks, when a call opts in).
    capabilities: ClientCapabilities,
    /// Posts calls directly, for 2026-07-28 sessions over HTTP.
    poster: Option<Poster>,
    /// Why a stdio upstream's output was cut off (garbage, an over-long line), once it was.
    fault: Option<Fault>,
}

impl Session {
    pub(crate) fn closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    fn fault(&self) -> Option<&str> {
        self.fault
            .as_ref()
            .and_then(|f| f.get())
            .map(String::as_str)
    }
}

/// Reconnect bookkeeping.
#[derive(Default)]
struct Backoff {
    failures: u32,
    next_attempt: Option<Instant>,
    last_error: String,
}

struct Inner {
    name: String,
    source: Source,
    options: UpstreamOptions,
    current: ArcSwapOption<Session>,
    /// Serializes reconnects: one attempt at a time.
    connecting: tokio::sync::Mutex<()>,
    backoff: Mutex<Backoff>,
    /// The HTTP client of an HTTP upstream, built (CA file read) on the first connect and
    /// shared by every session and direct post after it.
    http_client: OnceLock<ForwardingClient>,
    /// The lists the upstream announced a change of (`announcements.rs`).
    changes: tokio::sync::broadcast::Sender<ListKind>,
    /// The resources a 2025-11-25 session announced an update of (`announcements.rs`).
    updates: tokio::sync::broadcast::Sender<String>,
}

/// A remote MCP server and the one session the proxy keeps with it. Cheap to clone (clones
/// share the session).
///
/// ```no_run
/// # async fn run() -> Result<(), ferrymcp_proxy::ProxyError> {
/// use ferrymcp_proxy::{CommandTarget, Upstream};
/// let upstream = Upstream::command("files", CommandTarget::new("my-mcp-server").arg("--stdio"));
/// let tools = upstream.list_tools().await?; // connects on first use, then reuses the session
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Upstream {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("ferrymcp-proxy", env!("CARGO_PKG_VERSION")),
    )
}

impl Upstream {
    fn with_source(name: impl Into<String>, source: Source, options: UpstreamOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.into(),
                source,
                options,
                current: ArcSwapOption::empty(),
                connecting: tokio::sync::Mutex::new(()),
                backoff: Mutex::new(Backoff::default()),
                http_client: OnceLock::new(),
                changes: tokio::sync::broadcast::channel(announcements::LIST_CHANGES_CAPACITY).0,
                updates: tokio::sync::broadcast::channel(announcements::UPDATES_CAPACITY).0,
            }),
        }
    }

    /// A child process over stdio, spawned on first use and respawned after it dies.
    ///
    /// ```
    /// let u = ferrymcp_proxy::Upstream::command("fs", ferrymcp_proxy::CommandTarget::new("fs-server"));
    /// assert_eq!(u.name(), "fs");
    /// ```
    pub fn command(name: impl Into<String>, target: CommandTarget) -> Self {
        Self::with_source(name, Source::Command(target), UpstreamOptions::default())
    }

    /// A Streamable HTTP server.
    ///
    /// ```
    /// let u = ferrymcp_proxy::Upstream::http("api", ferrymcp_proxy::HttpTarget::new("http://127.0.0.1:8000/mcp"));
    /// assert_eq!(u.name(), "api");
    /// ```
    pub fn http(name: impl Into<String>, target: HttpTarget) -> Self {
        Self::with_source(name, Source::Http(target), UpstreamOptions::default())
    }

    /// An rmcp client session the caller opened. It is shared as is, never reopened: once
    /// it closes, requests fail with [`ProxyError::Down`].
    ///
    /// ```no_run
    /// # async fn run(client: rmcp::service::RunningService<rmcp::RoleClient, ferrymcp_types::ClientConfig>) {
    /// let upstream = ferrymcp_proxy::Upstream::from_peer("mine", client.peer().clone());
    /// # }
    /// ```
    pub fn from_peer(name: impl Into<String>, peer: Peer<RoleClient>) -> Self {
        Self::with_source(name, Source::Peer(peer), UpstreamOptions::default())
    }

    /// The same upstream with other options. Call it before the first request: the new
    /// handle starts without a session.
    ///
    /// ```
    /// use std::time::Duration;
    /// let u = ferrymcp_proxy::Upstream::http("api", ferrymcp_proxy::HttpTarget::new("http://127.0.0.1:1/mcp"))
    ///     .with_options(ferrymcp_proxy::UpstreamOptions::default().call_timeout(Duration::from_secs(2)));
    /// assert_eq!(u.options().call_timeout, Duration::from_secs(2));
    /// ```
    pub fn with_options(self, options: UpstreamOptions) -> Self {
        Self::with_source(self.inner.name.clone(), self.inner.source.clone(), options)
    }

    /// The name given at construction (used in errors and in proxy task ids).
    ///
    /// ```
    /// assert_eq!(ferrymcp_proxy::Upstream::command("x", ferrymcp_proxy::CommandTarget::new("y")).name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The options.
    ///
    /// ```
    /// let u = ferrymcp_proxy::Upstream::command("x", ferrymcp_proxy::CommandTarget::new("y"));
    /// assert_eq!(u.options(), &ferrymcp_proxy::UpstreamOptions::default());
    /// ```
    pub fn options(&self) -> &UpstreamOptions {
        &self.inner.options
    }

    /// The process id of a stdio upstream's current child, if one is running.
    ///
    /// ```
    /// assert_eq!(ferrymcp_proxy::Upstream::command("x", ferrymcp_proxy::CommandTarget::new("y")).process_id(), None);
    /// ```
    pub fn process_id(&self) -> Option<u32> {
        self.inner
            .current
            .load()
            .as_ref()
            .and_then(|s| s.child.as_ref())
            .and_then(tokio::process::Child::id)
    }

    /// Whether the upstream advertises `io.modelcontextprotocol/tasks` on a 2026-07-28
    /// session (connects if needed).
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// if u.supports_tasks().await? { /* task passthrough applies */ }
    /// # Ok(()) }
    /// ```
    pub async fn supports_tasks(&self) -> Result<bool, ProxyError> {
        Ok(self.session().await?.tasks)
    }

    /// The upstream's `instructions` (connects if needed).
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// let instructions = u.instructions().await?;
    /// # Ok(()) }
    /// ```
    pub async fn instructions(&self) -> Result<Option<String>, ProxyError> {
        Ok(self.session().await?.instructions.clone())
    }

    /// Pings the upstream (connecting if needed), within the call timeout. A 2026-07-28
    /// session has no `ping`: it is answered by the session's being open.
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// u.ping().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self) -> Result<(), ProxyError> {
        if self.session().await?.modern {
            return Ok(());
        }
        self.request(
            ClientRequest::PingRequest(PingRequest::default()),
            RequestOptions::default(),
        )
        .await
        .map(drop)
    }

    /// The instructions of the open session, without connecting: `None` when no session
    /// is open.
    pub(crate) fn open_instructions(&self) -> Option<Option<String>> {
        let session = self.inner.current.load_full()?;
        (!session.closed()).then(|| session.instructions.clone())
    }

    /// Whether the upstream advertises `completions` (connects if needed).
    ///
    /// ```no_run
    /// # async fn f(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// let completes = u.offers_completions().await?;
    /// # let _ = completes; Ok(()) }
    /// ```
    pub async fn offers_completions(&self) -> Result<bool, ProxyError> {
        Ok(self.session().await?.completions)
    }

    /// What there is to follow on the upstream's session: on a 2026-07-28 upstream, a
    /// `subscriptions/listen` stream for the list changes it announces and the updates of
    /// `uris` (when it advertises `resources.subscribe`); on a 2025-11-25 one, the session
    /// itself, whose announcements reach [`UpstreamHandler`]. `None` when the upstream
    /// announces nothing.
    pub(crate) async fn listen(&self, uris: &[String]) -> Result<Option<Listening>, ProxyError> {
        let session = self.session().await?;
        let Some(info) = session.peer.peer_info() else {
            return Ok(None);
        };
        let capabilities = &info.capabilities;
        let announced = |list_changed: Option<bool>| list_changed.unwrap_or(false);
        let tools = announced(capabilities.tools.as_ref().and_then(|t| t.list_changed));
        let prompts = announced(capabilities.prompts.as_ref().and_then(|p| p.list_changed));
        let resources = capabilities.resources.as_ref();
        let resource_lists = announced(resources.and_then(|r| r.list_changed));
        let subscribes = announced(resources.and_then(|r| r.subscribe));
        if !session.modern {
            let follows = tools || prompts || resource_lists || subscribes;
            return Ok(follows.then(|| Listening::Session {
                session: Arc::clone(&session),
                updates: subscribes,
            }));
        }
        let updates = subscribes && !uris.is_empty();
        if !(tools || prompts || resource_lists || updates) {
            return Ok(None);
        }
        let mut filter = ferrymcp_types::SubscriptionFilter::default();
        filter.tools_list_changed = tools.then_some(true);
        filter.resources_list_changed = resource_lists.then_some(true);
        filter.prompts_list_changed = prompts.then_some(true);
        filter.resource_subscriptions = updates.then(|| uris.to_vec());
        match session.peer.listen(filter).await {
            Ok(subscription) => Ok(Some(Listening::Stream(Box::new(subscription)))),
            // It announces changes but cannot stream them: there is nothing to listen to.
            Err(ServiceError::McpError(error))
                if error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
            {
                Ok(None)
            }
            // As any request's failure: a closed transport drops the session, URLs redacted.
            Err(error) => Err(self.failed(&session, "subscriptions/listen", error)),
        }
    }

    /// Sends `resources/subscribe` (or, with `subscribe` false, `resources/unsubscribe`)
    /// for each of `uris` on a 2025-11-25 `session`, a few at a time. `Ok(false)` when the
    /// upstream does not implement it.
    #[allow(deprecated)] // resources/subscribe is how a 2025-11-25 session asks for updates.
    pub(crate) async fn subscribe_each(
        &self,
        session: &Arc<Session>,
        uris: Vec<String>,
        subscribe: bool,
    ) -> Result<bool, ProxyError> {
        use futures::{StreamExt as _, TryStreamExt as _};
        use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
        let method = if subscribe {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        let peer = &session.peer;
        let sent = futures::stream::iter(uris)
            .map(|uri| async move {
                match subscribe {
                    true => peer.subscribe(SubscribeRequestParams::new(uri)).await,
                    false => peer.unsubscribe(UnsubscribeRequestParams::new(uri)).await,
                }
            })
            .buffer_unordered(SUBSCRIBES_AT_ONCE)
            .try_collect::<Vec<()>>()
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(ServiceError::McpError(error))
                if error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
            {
                Ok(false)
            }
            Err(error) => Err(self.failed(session, method, error)),
        }
    }

    /// The resources this upstream's 2025-11-25 sessions announce an update of, from now on.
    pub(crate) fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }

    /// Tells the proxy servers following this upstream that its list of `kind` changed.
    pub(crate) fn announce(&self, kind: ListKind) {
        // No proxy server follows this upstream: nobody to tell.
        let _ = self.inner.changes.send(kind);
    }

    /// The lists this upstream announces a change of, from now on.
    pub(crate) fn list_changes(&self) -> tokio::sync::broadcast::Receiver<ListKind> {
        self.inner.changes.subscribe()
    }

    /// The client side of a new session.
    fn handler(&self) -> UpstreamHandler {
        UpstreamHandler::new(
            client_config(),
            self.inner.changes.clone(),
            self.inner.updates.clone(),
        )
    }

    /// Every tool the upstream lists (all pages), `execution` kept where the upstream's
    /// bytes pass through the proxy's own reader (stdio upstreams).
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// for tool in u.list_tools().await? {
    ///     println!("{} {:?}", tool.name(), tool.task_support());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_tools(&self) -> Result<Vec<ToolDescriptor>, ProxyError> {
        let mut tools = Vec::new();
        let mut cursor = None;
        loop {
            let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let request = ClientRequest::ListToolsRequest(ListToolsRequest {
                params,
                ..Default::default()
            });
            let page = match self.request(request, RequestOptions::default()).await? {
                ServerResult::ListToolsResult(page) => page,
                other => return Err(self.unexpected("tools/list", &other)),
            };
            if let Some(session) = self.inner.current.load_full()
                && let Some(poster) = &session.poster
            {
                poster.learn_tools(&page.tools);
            }
            tools.extend(page.tools.into_iter().map(ToolDescriptor::from));
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Calls the upstream tool `name`. With `options.tasks_opt_in` (and a 2026-07-28 session)
    /// the request declares the tasks extension, so the upstream may answer with a task.
    /// Cancelling `options.cancel` cancels the upstream request (`notifications/cancelled`).
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// let args = serde_json::json!({"a": 1, "b": 2}).as_object().cloned().unwrap_or_default();
    /// let reply = u.call_tool("add", args, ferrymcp_proxy::RequestOptions::default()).await?;
    /// # Ok(()) }
    /// ```
    // Not an `async fn`, nor is `request`: a level of `async fn` would keep a copy of the
    // request and move the next level's future into its own, kilobytes per call.
    pub fn call_tool<'a>(
        &'a self,
        name: &str,
        arguments: JsonObject,
        options: RequestOptions<'a>,
    ) -> impl Future<Output = Result<CallToolResponse, ProxyError>> + Send + 'a {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        self.call_tool_with(params, options)
    }

    /// Calls an upstream tool with the request's `params` as given: with
    /// `inputResponses` and `requestState`, this is the retry of a call the upstream
    /// answered with an input round. Otherwise as [`call_tool`](Self::call_tool).
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// use rmcp::model::CallToolRequestParams;
    /// let mut params = CallToolRequestParams::new("ask_name");
    /// params.input_responses = Some([("name".to_owned(), serde_json::json!({"action": "decline"}))].into());
    /// params.request_state = Some("the upstream's state, as it sent it".to_owned());
    /// let reply = u.call_tool_with(params, ferrymcp_proxy::RequestOptions::default()).await?;
    /// # Ok(()) }
    /// ```
    pub fn call_tool_with<'a>(
        &'a self,
        params: CallToolRequestParams,
        options: RequestOptions<'a>,
    ) -> impl Future<Output = Result<CallToolResponse, ProxyError>> + Send + 'a {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        self.request(request, options)
            .map(move |answer| match answer? {
                ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
                ServerResult::CreateTaskResult(task) => Ok(CallToolResponse::Task(task)),
                ServerResult::InputRequiredResult(input) => {
                    Ok(CallToolResponse::InputRequired(input))
                }
                other => Err(self.unexpected("tools/call", &other)),
            })
    }

    fn unexpected(&self, method: &str, result: &ServerResult) -> ProxyError {
        let detail = serde_json::to_string(result)
            .map(|s| s.chars().take(200).collect())
            .unwrap_or_else(|e| e.to_string());
        ProxyError::Protocol {
            upstream: self.inner.name.clone(),
            method: method.to_owned(),
            detail,
        }
    }

    /// Sends any request on the shared session (a 2026-07-28 HTTP call as one POST of its
    /// own), within the call timeout; marks the session dead when the transport closed so
    /// the next request reconnects.
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// use rmcp::model::{ClientRequest, PingRequest};
    /// let _ = u.request(ClientRequest::PingRequest(PingRequest::default()), ferrymcp_proxy::RequestOptions::default()).await;
    /// # Ok(()) }
    /// ```
    pub fn request<'a>(
        &'a self,
        request: ClientRequest,
        options: RequestOptions<'a>,
    ) -> impl Future<Output = Result<ServerResult, ProxyError>> + Send + 'a {
        if !ferrymcp_core::metrics::enabled() {
            return Either::Left(self.send(request, options));
        }
        let method = ferrymcp_core::metrics::method_label(request.method());
        let started = std::time::Instant::now();
        Either::Right(self.send(request, options).inspect(move |answer| {
            crate::metrics::upstream_done(&self.inner.name, method, answer, started.elapsed());
        }))
    }

    /// [`request`](Self::request) without its metrics.
    async fn send(
        &self,
        mut request: ClientRequest,
        options: RequestOptions<'_>,
    ) -> Result<ServerResult, ProxyError> {
        let session = self.session().await?;
        let mut peer_options = PeerRequestOptions::no_options();
        if options.tasks_opt_in && session.modern {
            peer_options = peer_options.with_meta(opt_in_meta(&session.capabilities));
        }
        if let Source::Http(target) = &self.inner.source {
            let mut forwarded = options
                .client_headers
                .map(|headers| target.forward.filter(headers))
                .unwrap_or_default();
            // The upstream's spans continue this request's trace.
            if let Some(trace) = ferrymcp_core::trace_context::TraceContext::current() {
                trace.insert_into(&mut forwarded);
            }
            if !forwarded.is_empty() {
                request.extensions_mut().insert(ForwardedHeaders(forwarded));
            }
        }
        if let Some(credentials) = self.credentials() {
            let token = if options.on_behalf {
                credentials.for_caller(options.caller_token).await
            } else {
                credentials.own().await
            };
            let token = token.map_err(|error| ProxyError::Credentials {
                upstream: self.inner.name.clone(),
                method: request.method().to_owned(),
                reason: error.to_string(),
            })?;
            request.extensions_mut().insert(token);
        }
        let never;
        let cancel = match options.cancel {
            Some(cancel) => cancel,
            None => {
                never = CancellationToken::new();
                &never
            }
        };
        let timeout = self.inner.options.call_timeout;
        if let Some(poster) = &session.poster
            && let Some(route) = poster.routes(&request)
        {
            let method = route.method();
            // Boxed once, here: inline, the post's kilobytes would be copied into the timeout,
            // the `select!` and every future that awaits this one.
            let posted = Box::pin(poster.post(request, route, options.tasks_opt_in, options.relay));
            let outcome = tokio::select! {
                // The answer first: once it is in, the cancellation is not looked at again
                // (each look locks the token's node).
                biased;
                outcome = tokio::time::timeout(timeout, posted) => outcome,
                // Dropping the POST closes its connection: the upstream cancels the handler.
                () = cancel.cancelled() => return Err(self.cancelled(method)),
            };
            return match outcome {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(PostError::Upstream(error))) => Err(ProxyError::Upstream(error)),
                Ok(Err(PostError::Lost(reason))) => {
                    tracing::debug!(upstream = %self.inner.name, %method, %reason, "upstream call lost");
                    self.drop_session(&session);
                    Err(ProxyError::Disconnected {
                        upstream: self.inner.name.clone(),
                        method: method.to_owned(),
                    })
                }
                Ok(Err(PostError::Protocol(detail))) => Err(ProxyError::Protocol {
                    upstream: self.inner.name.clone(),
                    method: method.to_owned(),
                    detail,
                }),
                Err(_elapsed) => Err(ProxyError::Timeout {
                    upstream: self.inner.name.clone(),
                    method: method.to_owned(),
                    timeout,
                }),
            };
        }
        // Boxed: rmcp's session path is large and, on a 2026-07-28 upstream over HTTP,
        // rarely taken.
        let method = request.method().to_owned();
        // A 2025-11-25 session an HTTP upstream no longer knows (it restarted) did not run
        // the request: sent again once, on a new session.
        let expires = !session.modern && matches!(self.inner.source, Source::Http(_));
        let again = expires.then(|| request.clone());
        match Box::pin(self.send_on_session(&session, request, peer_options, cancel, &method)).await
        {
            Err(Expired(error)) => match again {
                Some(request) => {
                    tracing::debug!(upstream = %self.inner.name, %method, "the upstream no longer knows the session; sending again on a new one");
                    let session = self.session().await?;
                    let options = PeerRequestOptions::no_options();
                    let sent = self.send_on_session(&session, request, options, cancel, &method);
                    Box::pin(sent)
                        .await
                        .unwrap_or_else(|Expired(error)| Err(error))
                }
                None => Err(error),
            },
            Ok(answered) => answered,
        }
    }

    /// A request sent through rmcp's session (every request but the direct posts), within
    /// the call timeout; a cancellation tells the upstream. [`Expired`] when the upstream
    /// answered that it no longer knows the session (the request was not run; the session
    /// is dropped).
    async fn send_on_session(
        &self,
        session: &Arc<Session>,
        request: ClientRequest,
        peer_options: PeerRequestOptions,
        cancel: &CancellationToken,
        method: &str,
    ) -> Result<Result<ServerResult, ProxyError>, Expired> {
        let timeout = self.inner.options.call_timeout;
        let handle = match session
            .peer
            .send_request_with_option(request, peer_options)
            .await
        {
            Ok(handle) => handle,
            Err(error) => return self.failure(session, method, error),
        };
        let id = handle.id.clone();
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, handle.await_response()) => outcome,
            () = cancel.cancelled() => {
                notify_cancelled(&session.peer, id, "cancelled by the proxy's client").await;
                return Ok(Err(self.cancelled(method)));
            }
        };
        match outcome {
            Ok(Ok(result)) => Ok(Ok(result)),
            Ok(Err(error)) => self.failure(session, method, error),
            Err(_elapsed) => {
                notify_cancelled(&session.peer, id, "timed out at the proxy").await;
                Ok(Err(ProxyError::Timeout {
                    upstream: self.inner.name.clone(),
                    method: method.to_owned(),
                    timeout,
                }))
            }
        }
    }

    /// [`failed`](Self::failed), told apart when the session expired.
    fn failure(
        &self,
        session: &Arc<Session>,
        method: &str,
        error: ServiceError,
    ) -> Result<Result<ServerResult, ProxyError>, Expired> {
        let expired = session_expired(&error);
        let error = self.failed(session, method, error);
        match expired {
            true => Err(Expired(error)),
            false => Ok(Err(error)),
        }
    }

    fn cancelled(&self, method: &str) -> ProxyError {
        ProxyError::Upstream(ferrymcp_types::ErrorData::internal_error(
            format!(
                "request {method} to upstream '{}' was cancelled",
                self.inner.name
            ),
            None,
        ))
    }

    /// Maps an rmcp error; a closed transport drops the session.
    fn failed(&self, session: &Arc<Session>, method: &str, error: ServiceError) -> ProxyError {
        match error {
            ServiceError::McpError(error) => ProxyError::Upstream(error),
            ServiceError::Timeout { timeout } => ProxyError::Timeout {
                upstream: self.inner.name.clone(),
                method: method.to_owned(),
                timeout,
            },
            ServiceError::TransportSend(error) => match answered_wrongly(&*error.error) {
                // The upstream answered, with a status or body no MCP answer has (a
                // redirect, an over-long body): say so, and still reconnect.
                Some(detail) => {
                    self.drop_session(session);
                    let detail = match &self.inner.source {
                        Source::Http(target) => crate::url_secrets::redact(detail, &target.url),
                        _ => detail,
                    };
                    ProxyError::Protocol {
                        upstream: self.inner.name.clone(),
                        method: method.to_owned(),
                        detail: format!(
                            "{detail}; the session was closed, the next request reconnects"
                        ),
                    }
                }
                None => self.lost(session, method),
            },
            ServiceError::TransportClosed => self.lost(session, method),
            other => {
                if session.closed() {
                    return self.lost(session, method);
                }
                ProxyError::Protocol {
                    upstream: self.inner.name.clone(),
                    method: method.to_owned(),
                    detail: other.to_string(),
                }
            }
        }
    }

    /// The error of a request whose session closed under it (the session is dropped): the
    /// reason when the proxy cut a misbehaving stdio upstream off, else a disconnect.
    fn lost(&self, session: &Arc<Session>, method: &str) -> ProxyError {
        self.drop_session(session);
        match session.fault() {
            Some(fault) => ProxyError::Protocol {
                upstream: self.inner.name.clone(),
                method: method.to_owned(),
                detail: format!("{fault}; the session was closed, the next request reconnects"),
            },
            None => ProxyError::Disconnected {
                upstream: self.inner.name.clone(),
                method: method.to_owned(),
            },
        }
    }

    /// The credentials of an HTTP upstream with [`HttpTarget::auth`], once its client is
    /// built.
    fn credentials(&self) -> Option<Arc<Credentials>> {
        self.inner
            .http_client
            .get()
            .and_then(|client| client.credentials.clone())
    }

    /// The HTTP client of `target`, built once (a bad CA file fails every connect until it
    /// is fixed, with a configuration error rather than a backoff).
    fn http_client(&self, target: &HttpTarget) -> Result<ForwardingClient, ProxyError> {
        if let Some(client) = self.inner.http_client.get() {
            return Ok(client.clone());
        }
        let named = |error| match error {
            ProxyError::Config(reason) => {
                ProxyError::Config(format!("upstream '{}': {reason}", self.inner.name))
            }
            other => other,
        };
        let tls = tls::tls_config(target).map_err(named)?;
        let client = tls::http_client(tls.clone()).map_err(named)?;
        let post = match reqwest::Url::parse(&target.url) {
            Ok(url) => PostClient::for_url(&url, tls, client.clone()),
            // The session fails to connect to it anyway.
            Err(_) => PostClient::Reqwest(client.clone()),
        };
        Ok(self
            .inner
            .http_client
            .get_or_init(|| ForwardingClient {
                credentials: target
                    .auth
                    .as_ref()
                    .map(|auth| Arc::new(Credentials::new(auth, &target.url, client.clone()))),
                http: client,
                post,
            })
            .clone())
    }

    /// Whether `session` is the one requests use (not closed, not dropped after a failure).
    pub(crate) fn is_current(&self, session: &Arc<Session>) -> bool {
        let current = self.inner.current.load();
        !session.closed() && current.as_ref().is_some_and(|c| Arc::ptr_eq(c, session))
    }

    /// Forgets `session` if it is still the current one.
    fn drop_session(&self, session: &Arc<Session>) {
        let current = self.inner.current.load();
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, session)) {
            self.inner.current.store(None);
            tracing::warn!(upstream = %self.inner.name, "upstream session lost; the next request reconnects");
        }
    }

    /// The live session, connecting (with backoff) when there is none.
    pub(crate) async fn session(&self) -> Result<Arc<Session>, ProxyError> {
        if let Some(session) = self.inner.current.load_full()
            && !session.closed()
        {
            return Ok(session);
        }
        // Connecting is rare and its future large: boxed, so that the future of every call
        // that awaits a session stays small (it is moved into a box of its own per call).
        Box::pin(self.reconnect()).await
    }

    /// [`session`](Self::session) when there is no open one: connects, one caller at a time.
    async fn reconnect(&self) -> Result<Arc<Session>, ProxyError> {
        let _connecting = self.inner.connecting.lock().await;
        // Someone else may have reconnected while we waited.
        if let Some(session) = self.inner.current.load_full() {
            if !session.closed() {
                return Ok(session);
            }
            self.inner.current.store(None);
        }
        if let Source::Http(target) = &self.inner.source {
            self.http_client(target)?;
        }
        self.check_backoff()?;
        match self.connect().await {
            Ok(session) => {
                *self.lock_backoff() = Backoff::default();
                let session = Arc::new(session);
                self.inner.current.store(Some(Arc::clone(&session)));
                Ok(session)
            }
            Err(reason) => {
                let mut backoff = self.lock_backoff();
                let wait = self
                    .inner
                    .options
                    .backoff_initial
                    .saturating_mul(1u32 << backoff.failures.min(16))
                    .min(self.inner.options.backoff_max);
                backoff.failures = backoff.failures.saturating_add(1);
                backoff.next_attempt = Some(Instant::now() + wait);
                backoff.last_error = reason.clone();
                Err(ProxyError::Connect {
                    upstream: self.inner.name.clone(),
                    reason,
                })
            }
        }
    }

    fn lock_backoff(&self) -> std::sync::MutexGuard<'_, Backoff> {
        self.inner
            .backoff
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn check_backoff(&self) -> Result<(), ProxyError> {
        let backoff = self.lock_backoff();
        if let Some(next) = backoff.next_attempt {
            let now = Instant::now();
            if next > now {
                return Err(ProxyError::Down {
                    upstream: self.inner.name.clone(),
                    retry_in: next - now,
                    last: backoff.last_error.clone(),
                });
            }
        }
        Ok(())
    }

    /// Opens a session: 2026-07-28 (`server/discover`) first unless
    /// [`UpstreamOptions::legacy`], then 2025-11-25 (`initialize`) on a fresh transport when
    /// that fails. Each attempt is bounded by the connect timeout. (rmcp's own "auto" mode
    /// gives up on discovery after a fixed 10 s, too short for slow-starting servers.)
    async fn connect(&self) -> Result<Session, String> {
        if let Source::Peer(peer) = &self.inner.source {
            if peer.is_transport_closed() {
                return Err("the client session given to the proxy is closed".to_owned());
            }
            return Ok(session_of(peer.clone(), None, None, ClientCapabilities::default()).await);
        }
        let mut modes = Vec::with_capacity(2);
        if !self.inner.options.legacy {
            modes.push(ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            });
        }
        modes.push(ClientLifecycleMode::Initialize);
        let mut failures = Vec::with_capacity(2);
        for mode in modes {
            let era = if matches!(mode, ClientLifecycleMode::Initialize) {
                "2025-11-25"
            } else {
                "2026-07-28"
            };
            let limit = self.inner.options.connect_timeout;
            match tokio::time::timeout(limit, self.open(mode)).await {
                Ok(Ok(session)) => return Ok(session),
                Ok(Err(error)) => failures.push(format!("{era}: {error}")),
                Err(_) => failures.push(format!(
                    "{era}: no handshake within {} ms",
                    limit.as_millis()
                )),
            }
        }
        Err(failures.join("; "))
    }

    /// One connection attempt in `mode`, on a fresh transport.
    async fn open(&self, mode: ClientLifecycleMode) -> Result<Session, String> {
        match &self.inner.source {
            Source::Peer(_) => Err("a caller's session cannot be reopened".to_owned()),
            Source::Command(target) => {
                let mut command = tokio::process::Command::new(&target.program);
                command
                    .args(&target.args)
                    .env_clear()
                    .envs(target.child_env(|name| std::env::var_os(name)))
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::inherit())
                    .kill_on_drop(true);
                if let Some(cwd) = &target.cwd {
                    command.current_dir(cwd);
                }
                let mut child = command
                    .spawn()
                    .map_err(|e| format!("spawning {}: {e}", target.program))?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err("the child's stdio pipes are missing".to_owned());
                };
                let (stdout, fault) =
                    stdout::read_upstream(stdout, self.inner.options.max_message_bytes);
                let service = self
                    .handler()
                    .serve_with_lifecycle((stdout, stdin), mode)
                    .await
                    .map_err(|e| match fault.get() {
                        Some(fault) => fault.clone(),
                        None => handshake_error(&e),
                    })?;
                let mut session = running_session(service, Some(child)).await;
                session.fault = Some(fault);
                Ok(session)
            }
            Source::Http(target) => {
                let max = self.inner.options.max_message_bytes;
                // A 2025-11-25 session the upstream forgot (it restarted) is replaced by a
                // new one of the proxy's (`send`), not renewed inside rmcp's transport: the
                // relay then sees the change, subscribes again and reads every list.
                let mut config = StreamableHttpClientTransportConfig::with_uri(target.url.clone())
                    .max_json_response_size(max)
                    .max_sse_event_size(max)
                    .reinit_on_expired_session(false);
                let mut headers = std::collections::HashMap::new();
                for (name, value) in &target.headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header name {name:?}: {e}"))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| format!("header {name}: {e}"))?;
                    headers.insert(name, value);
                }
                config = config.custom_headers(headers);
                let client = self.http_client(target).map_err(|e| e.to_string())?;
                let transport =
                    StreamableHttpClientTransport::with_client(client.clone(), config.clone());
                let service = self
                    .handler()
                    .serve_with_lifecycle(transport, mode)
                    .await
                    .map_err(|e| crate::url_secrets::redact(handshake_error(&e), &target.url))?;
                let mut session = running_session(service, None).await;
                if session.modern {
                    let poster = Poster::new(
                        client,
                        config.uri.clone(),
                        &config.custom_headers,
                        max,
                        client_config().client_info,
                        session.capabilities.clone(),
                        with_tasks(&session.capabilities),
                    )?;
                    // A new session knows no tool schemas, so it could not add the
                    // `Mcp-Param-*` headers annotated arguments need: list the tools once, so
                    // rmcp's session learns them and the poster leaves those calls to it.
                    match session.peer.list_all_tools().await {
                        Ok(tools) => poster.learn_tools(&tools),
                        Err(error) => {
                            tracing::debug!(upstream = %self.inner.name, %error, "no tools listed at connect");
                        }
                    }
                    session.poster = Some(poster);
                }
                Ok(session)
            }
        }
    }
}

/// A request refused because the upstream no longer knows the 2025-11-25 session it was
/// sent on (HTTP 404): it was not run. Holds the error to give when it cannot be sent again.
struct Expired(ProxyError);

/// Whether `error` is an HTTP upstream's answer that it no longer knows the session.
fn session_expired(error: &ServiceError) -> bool {
    let ServiceError::TransportSend(error) = error else {
        return false;
    };
    matches!(
        error
            .error
            .downcast_ref::<StreamableHttpError<reqwest::Error>>(),
        Some(StreamableHttpError::SessionExpired)
    )
}

/// What was wrong with an HTTP answer, when the upstream answered but not as MCP does (an
/// unexpected status such as a redirect, a body over the limit, another content type).
fn answered_wrongly(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>()? {
        StreamableHttpError::UnexpectedServerResponse(_)
        | StreamableHttpError::HttpStatus(_)
        | StreamableHttpError::ResponseBodyTooLarge { .. }
        | StreamableHttpError::UnexpectedContentType(_) => Some(tls::chain(error)),
        _ => None,
    }
}

/// Why a handshake failed, with the causes rmcp keeps out of its message (an unknown
/// certificate issuer, a refused connection, a redirect status).
fn handshake_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{}, when {context}", tls::chain(&*error.error))
        }
        other => tls::chain(other),
    }
}

async fn running_session(
    service: RunningService<RoleClient, UpstreamHandler>,
    child: Option<tokio::process::Child>,
) -> Session {
    let peer = service.peer().clone();
    let capabilities = service.service().config.capabilities.clone();
    session_of(peer, Some(service), child, capabilities).await
}

async fn session_of(
    peer: Peer<RoleClient>,
    service: Option<RunningService<RoleClient, UpstreamHandler>>,
    child: Option<tokio::process::Child>,
    capabilities: ClientCapabilities,
) -> Session {
    let info = peer.peer_info();
    let modern = info
        .as_ref()
        .is_some_and(|i| !i.protocol_version.has_initialize());
    let tasks = modern
        && info.as_ref().is_some_and(|i| {
            i.capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(TASKS_EXTENSION_ID))
        });
    let instructions = info.as_ref().and_then(|i| i.instructions.clone());
    let completions = info
        .as_ref()
        .is_some_and(|i| i.capabilities.completions.is_some());
    // The proxy lists on demand and must see upstream changes: no client-side cache.
    peer.set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
    Session {
        peer,
        _service: service,
        child,
        modern,
        tasks,
        instructions,
        completions,
        capabilities,
        poster: None,
        fault: None,
    }
}

/// `capabilities` declaring the tasks extension too.
fn with_tasks(capabilities: &ClientCapabilities) -> ClientCapabilities {
    let mut capabilities = capabilities.clone();
    capabilities
        .extensions
        .get_or_insert_with(BTreeMap::new)
        .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    capabilities
}

/// `_meta` declaring the tasks extension for one request, on top of `capabilities`.
fn opt_in_meta(capabilities: &ClientCapabilities) -> RequestMetaObject {
    let mut meta = RequestMetaObject::default();
    if let Ok(value) = serde_json::to_value(with_tasks(capabilities)) {
        meta.insert(meta::CLIENT_CAPABILITIES.to_owned(), value);
    }
    meta
}

async fn notify_cancelled(peer: &Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let params = serde_json::json!({"requestId": id, "reason": reason});
    match serde_json::from_value(params) {
        Ok(params) => {
            if let Err(error) = peer.notify_cancelled(params).await {
                tracing::debug!(%error, "could not send notifications/cancelled upstream");
            }
        }
        Err(error) => tracing::debug!(%error, "could not build notifications/cancelled"),
    }
}
