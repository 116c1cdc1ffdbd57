//! [`McpService`]: the one `rmcp::ServerHandler` adapter between rmcp and a [`Server`].
//!
//! rmcp's dispatcher stays in charge of protocol versions, required `_meta`, the `tasks/*`
//! capability gates and per-era result shaping; the adapter turns each request into a
//! [`RequestScope`] and hands it to the root server's middleware chain.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
};

use ferrymcp_types::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    DiscoverResult, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, InitializeRequestParams, InitializeResult, InputResponses, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
    SubscriptionFilter, Tool, UpdateTaskParams, meta,
};
use futures::future::Either;
use rmcp::{
    RoleServer, ServerHandler,
    service::{NotificationContext, Peer, RequestContext, SubscriptionContext},
};
use serde_json::Value;
use tokio::sync::broadcast;
use tracing::Instrument as _;

use crate::{
    CallTool, Context, Discover, Era, GetPrompt, Initialize, ListKind, LogLevel, Message,
    Notification, PromptInfo, ReadResource, Reply, RequestScope, ResourceInfo, Server,
    TemplateInfo, ToolInfo,
    input_rounds::{self, InputRound},
    subscription,
    version::{Version, VersionSpec},
};

/// Serves a root [`Server`] through rmcp. Cheap to clone; the Streamable HTTP service makes
/// one per session or stateless request.
///
/// ```
/// let service = ferrymcp_core::McpService::new(ferrymcp_core::Server::new("demo"));
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
    /// This connection's `logging/setLevel` (2025-11-25 sessions; `None` sends every level).
    log_level: Arc<Mutex<Option<LogLevel>>>,
    /// Cancelled when the last handle on this connection's service is dropped: stops the
    /// connection's list-change forwarder.
    connection: Arc<ConnectionGuard>,
    /// The resources this connection subscribed to (`resources/subscribe`, 2025-11-25).
    watched: Arc<Watched>,
    /// Change receivers opened when a `subscriptions/listen` is accepted, before rmcp sends
    /// its acknowledgment, for the listen that follows: a change the client makes as soon
    /// as it is acknowledged is then seen.
    listening: Arc<Mutex<std::collections::VecDeque<Listening>>>,
}

/// The receivers one `subscriptions/listen` reads.
type Listening = subscription::Receivers;

/// How many accepted listens may wait for their receivers at once (more only happen when
/// a client floods one connection; the oldest are then dropped, and their listens open
/// receivers of their own).
const PENDING_LISTENS: usize = 16;

/// A 2025-11-25 session's resource subscriptions, and whether their forwarder runs.
#[derive(Default)]
struct Watched {
    uris: Mutex<HashSet<String>>,
    forwarding: AtomicBool,
}

impl Watched {
    fn uris(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Cancels its token when dropped.
#[derive(Default)]
struct ConnectionGuard(tokio_util::sync::CancellationToken);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl McpService {
    /// An adapter for `root`. The server's identity and extension settings are read now,
    /// except its instructions, read as each session starts.
    ///
    /// ```
    /// let _ = ferrymcp_core::McpService::new(ferrymcp_core::Server::new("demo"));
    /// ```
    pub fn new(root: Server) -> Self {
        // Without instructions: `get_info` reads the root's as each session starts.
        let snapshot = |mut config: ServerConfig| {
            config.instructions = None;
            Arc::new(config)
        };
        let config = snapshot(root.server_config());
        let legacy_config = snapshot(root.legacy_server_config());
        Self {
            root,
            config,
            legacy_config,
            legacy: Arc::new(AtomicBool::new(false)),
            log_level: Arc::new(Mutex::new(None)),
            connection: Arc::default(),
            watched: Arc::default(),
            listening: Arc::default(),
        }
    }

    /// The same service for a new connection (its own era).
    ///
    /// ```
    /// let service = ferrymcp_core::McpService::new(ferrymcp_core::Server::new("demo"));
    /// let _per_session = service.for_connection();
    /// ```
    pub fn for_connection(&self) -> Self {
        Self {
            legacy: Arc::new(AtomicBool::new(false)),
            log_level: Arc::new(Mutex::new(None)),
            connection: Arc::default(),
            watched: Arc::default(),
            listening: Arc::default(),
            ..self.clone()
        }
    }

    /// The root server.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("demo");
    /// assert!(ferrymcp_core::McpService::new(s.clone()).server().ptr_eq(&s));
    /// ```
    pub fn server(&self) -> &Server {
        &self.root
    }

    fn context(&self, cx: RequestContext<RoleServer>) -> Context {
        Context::new(self.root.clone(), self.scope(cx))
    }

    /// The request's scope, with this connection's log level on legacy sessions.
    fn scope(&self, cx: RequestContext<RoleServer>) -> RequestScope {
        let scope = RequestScope::from_rmcp(cx);
        if scope.era() == Era::Legacy && scope.log_level().is_none() {
            let level = *self
                .log_level
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            return scope.with_log_level(Some(level.unwrap_or(LogLevel::Debug)));
        }
        scope
    }

    /// Answers a `tools/call` in `scope` (the request's id, `_meta`, HTTP parts and
    /// cancellation): the server's middleware chain, input rounds, then the tool.
    ///
    /// Not an `async fn`, nor is the walk below it: each level of `async fn` keeps its own
    /// copy of the request and its scope, and moves the next level's future into its own,
    /// a copy of kilobytes per call.
    pub(crate) fn call_tool_in(
        &self,
        request: CallToolRequestParams,
        scope: RequestScope,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        if !crate::metrics::enabled() {
            return Either::Left(self.answer_call(request, scope));
        }
        // Only tools the server has are labels: a client cannot make series of any name.
        let series = crate::metrics::tool_series(&request.name, |name| {
            self.root.resolve(name, None).is_some()
        });
        let started = std::time::Instant::now();
        let answer = self.answer_call(request, scope);
        Either::Right(async move {
            let answer = answer.await;
            let elapsed = started.elapsed();
            crate::metrics::request_done(
                const { crate::metrics::Method::known("tools/call") },
                crate::metrics::outcome(&answer),
                elapsed,
            );
            if let Some(series) = series {
                series.done(tool_outcome(&answer), elapsed);
            }
            answer
        })
    }

    fn answer_call(
        &self,
        request: CallToolRequestParams,
        scope: RequestScope,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        self.answer_in_scope(scope, request.into(), |call, version, cx| {
            self.root.dispatch_call(CallTool {
                name: call.target.clone(),
                arguments: call.arguments.clone().unwrap_or_default(),
                version,
                cx,
                run_middleware: true,
                looked_again: false,
            })
        })
    }

    /// The walk `tools/call`, `resources/read` and `prompts/get` share: the request's span,
    /// the version its `_meta` asks for, then `run` with that version, through input rounds
    /// (SEP-2322): opens the client's sealed `requestState`, seals the one going out, and on
    /// 2025-11-25 connections drives the rounds itself with server-to-client requests (see
    /// [`crate::input_rounds`]).
    async fn answer_with_rounds<R, F, Fut>(
        &self,
        cx: RequestContext<RoleServer>,
        request: RoundRequest,
        run: F,
    ) -> Result<R, ErrorData>
    where
        R: InputRound,
        F: Fn(&RoundRequest, Option<VersionSpec>, Context) -> Fut,
        Fut: Future<Output = Result<R, ErrorData>>,
    {
        self.answer_in_scope(self.scope(cx), request, run).await
    }

    /// [`answer_with_rounds`](Self::answer_with_rounds) for a scope already built.
    fn answer_in_scope<'a, R, F, Fut>(
        &'a self,
        base: RequestScope,
        request: RoundRequest,
        run: F,
    ) -> impl Future<Output = Result<R, ErrorData>> + 'a
    where
        R: InputRound + 'a,
        F: Fn(&RoundRequest, Option<VersionSpec>, Context) -> Fut + 'a,
        Fut: Future<Output = Result<R, ErrorData>> + 'a,
    {
        let span = scope_span(request.method, &base, &request.target);
        let answer = match requested_version(base.meta()) {
            Ok(version) => {
                Either::Left(self.with_input_rounds(base, request, move |request, cx| {
                    run(request, version.clone(), cx)
                }))
            }
            Err(error) => Either::Right(std::future::ready(Err(error))),
        };
        answer.instrument(span)
    }

    async fn with_input_rounds<R, F, Fut>(
        &self,
        base: RequestScope,
        mut request: RoundRequest,
        run: F,
    ) -> Result<R, ErrorData>
    where
        R: InputRound,
        F: Fn(&RoundRequest, Context) -> Fut,
        Fut: Future<Output = Result<R, ErrorData>>,
    {
        let seal = self.root.state_seal();
        let input_responses = request.input_responses.take();
        let request_state = request.request_state.take();
        let (method, target, arguments) =
            (request.method, &request.target, request.arguments.as_ref());
        // What a sealed state is bound to, worked out (a digest of the arguments) only when
        // one is opened or sealed: most calls never have an input round.
        let mut binding = None;
        let mut bind = || {
            binding
                .get_or_insert_with(|| {
                    crate::request_state::binding(base.principal(), method, target, arguments)
                })
                .clone()
        };
        let mut scope = base.clone();
        if input_responses.is_some() || request_state.is_some() {
            let state = match request_state {
                Some(sealed) => seal.open(&bind(), &sealed)?,
                None => None,
            };
            scope = scope.with_input(input_responses.unwrap_or_default(), state);
        }
        for _ in 0..input_rounds::MAX_LEGACY_ROUNDS {
            let cx = Context::new(self.root.clone(), scope);
            let finish = cx.scope_arc();
            let reply = run(&request, cx).await;
            finish.finish(reply.is_ok());
            let mut response = reply?;
            let Some(round) = response.input_round() else {
                response.fill_result_type();
                return Ok(response);
            };
            if base.era() != Era::Legacy {
                round.request_state = Some(seal.seal(&bind(), round.request_state.as_deref()));
                return Ok(response);
            }
            let Some(peer) = base.peer() else {
                return Err(ErrorData::invalid_request(
                    "this request needs input from the client, and the connection cannot carry it",
                    None,
                ));
            };
            let requests = round.input_requests.take().unwrap_or_default();
            // Boxed: a 2025-11-25 round trip is a large future, and inline it would size
            // every call's.
            let responses = Box::pin(input_rounds::ask_client(peer, requests)).await?;
            scope = base
                .clone()
                .with_input(responses, round.request_state.take());
        }
        Err(ErrorData::internal_error(
            format!(
                "'{target}' asked for input more than {} times in one request",
                input_rounds::MAX_LEGACY_ROUNDS
            ),
            None,
        ))
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

    /// The base protocol's members of a listen filter that this server serves: the list
    /// changes asked for, and the resources that exist (at most
    /// [`MAX_RESOURCE_SUBSCRIPTIONS`](crate::MAX_RESOURCE_SUBSCRIPTIONS)); whether the caller
    /// may read each is checked when listening starts, with its context.
    fn accept_base_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.prompts_list_changed = requested.prompts_list_changed;
        accepted.resources_list_changed = requested.resources_list_changed;
        let watched: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| self.root.has_resource(uri))
            .take(crate::MAX_RESOURCE_SUBSCRIPTIONS)
            .cloned()
            .collect();
        if !watched.is_empty() {
            accepted.resource_subscriptions = Some(watched);
        }
        accepted
    }

    /// A `subscriptions/listen` whose filter has members an extension may serve (the
    /// transports rename it, see [`subscription`]): served here whole, since rmcp's own
    /// listen would drop them. Every extension refuses or accepts its members before the
    /// acknowledgment, which lists what was accepted.
    async fn listen_extended(
        &self,
        params: Option<Value>,
        context: RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let cx = self.context(context.clone());
        if cx.scope().era() == Era::Legacy {
            return Err(subscription::not_on_legacy());
        }
        let requested = subscription::requested_filter(params.as_ref())?;
        let base: SubscriptionFilter = serde_json::from_value(Value::Object(requested.clone()))
            .map_err(|e| {
                ErrorData::invalid_params(
                    format!("Invalid params for subscriptions/listen: {e}"),
                    None,
                )
            })?;
        let info = self.get_info();
        let accepted = self
            .accept_base_filter(&base)
            .intersection(&base.supported_by(&info.capabilities));
        let mut acknowledged = match serde_json::to_value(&accepted) {
            Ok(Value::Object(members)) => members,
            _ => ferrymcp_types::JsonObject::new(),
        };
        let mut pushed = Vec::new();
        for extension in self.root.extension_list().iter() {
            if let Some(accepted) = extension.subscribe(cx.clone(), &requested).await? {
                let (members, notifications) = accepted.into_parts();
                acknowledged.extend(members);
                pushed.push(notifications);
            }
        }
        let receivers = subscription::Receivers::open(&self.root);
        let outlet = subscription::Outlet::new(context.peer.clone(), context.id.clone());
        let mut ack = ferrymcp_types::JsonObject::new();
        ack.insert("notifications".into(), Value::Object(acknowledged));
        if outlet
            .push("notifications/subscriptions/acknowledged", ack)
            .await
            .is_ok()
        {
            subscription::run(
                &cx,
                &accepted,
                receivers,
                outlet,
                pushed,
                context.ct.clone(),
            )
            .await;
        }
        let mut result = ferrymcp_types::SubscriptionsListenResult::complete(context.id.clone());
        result.meta.set_server_info(info.server_info);
        serde_json::to_value(result).map_err(crate::masked_internal_error)
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

/// What a request that may take input rounds asks for: its sealed `requestState` is bound
/// to all of it.
struct RoundRequest {
    method: &'static str,
    /// The tool name, resource URI or prompt name.
    target: String,
    /// The request's arguments (none for `resources/read`).
    arguments: Option<ferrymcp_types::JsonObject>,
    /// The client's answers to the previous round, if any.
    input_responses: Option<InputResponses>,
    /// The sealed state the previous round carried, if any.
    request_state: Option<String>,
}

impl From<CallToolRequestParams> for RoundRequest {
    fn from(request: CallToolRequestParams) -> Self {
        let (name, arguments) = (request.name.into_owned(), request.arguments);
        RoundRequest {
            method: "tools/call",
            target: name,
            arguments,
            input_responses: request.input_responses,
            request_state: request.request_state,
        }
    }
}

impl From<ReadResourceRequestParams> for RoundRequest {
    fn from(request: ReadResourceRequestParams) -> Self {
        RoundRequest {
            method: "resources/read",
            target: request.uri,
            arguments: None,
            input_responses: request.input_responses,
            request_state: request.request_state,
        }
    }
}

impl From<GetPromptRequestParams> for RoundRequest {
    fn from(request: GetPromptRequestParams) -> Self {
        let (name, arguments) = (request.name, request.arguments);
        RoundRequest {
            method: "prompts/get",
            target: name,
            arguments,
            input_responses: request.input_responses,
            request_state: request.request_state,
        }
    }
}

/// The span a request is answered in: its JSON-RPC method and id, continuing the trace of
/// the `traceparent` header it came with (see [`crate::trace_context`]). The method is given
/// by the handler (rmcp hands each one its own request type).
fn request_span(method: &str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let caller = incoming_trace(context.extensions.get::<http::request::Parts>());
    let span = crate::trace_root_span!(caller.as_ref(), "mcp.request", method, id = %context.id);
    continue_trace(&span, caller);
    span
}

/// [`request_span`] for a request whose scope is built, with the tool a `tools/call` names
/// and the caller's principal key (never a token).
fn scope_span(method: &str, scope: &RequestScope, target: &str) -> tracing::Span {
    let caller = incoming_trace(scope.extensions().get::<http::request::Parts>());
    let span = match scope.request_id() {
        Some(id) => crate::trace_root_span!(
            caller.as_ref(),
            "mcp.request",
            method,
            id = %id,
            tool = tracing::field::Empty,
            principal = tracing::field::Empty
        ),
        None => crate::trace_root_span!(
            caller.as_ref(),
            "mcp.request",
            method,
            tool = tracing::field::Empty,
            principal = tracing::field::Empty
        ),
    };
    if !span.is_disabled() {
        if method == "tools/call" {
            span.record("tool", target);
        }
        if let Some(principal) = scope.principal() {
            span.record("principal", principal.scope_key().as_str());
        }
    }
    continue_trace(&span, caller);
    span
}

/// The trace context of the request's `traceparent` header, if any.
fn incoming_trace(
    parts: Option<&http::request::Parts>,
) -> Option<crate::trace_context::TraceContext> {
    parts.and_then(|parts| crate::trace_context::TraceContext::from_headers(&parts.headers))
}

/// Makes `span` continue the caller's W3C trace, if it came with one.
fn continue_trace(span: &tracing::Span, caller: Option<crate::trace_context::TraceContext>) {
    if let Some(trace) = caller
        && !span.is_disabled()
    {
        trace.adopt(span);
    }
}

/// How a `tools/call` ended, as an index into its counter's outcomes.
fn tool_outcome(answer: &Result<CallToolResponse, ErrorData>) -> usize {
    let outcome = match answer {
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => "tool_error",
        Ok(CallToolResponse::Complete(_)) => "ok",
        Ok(CallToolResponse::Task(_)) => "task",
        Ok(CallToolResponse::InputRequired(_)) => "input_required",
        Ok(_) => "ok",
        Err(_) => "error",
    };
    crate::metrics::TOOL_OUTCOMES
        .iter()
        .position(|known| *known == outcome)
        .unwrap_or(0)
}

fn wrong_reply(method: &str) -> ErrorData {
    crate::masked_internal_error(format_args!(
        "a middleware answered {method} with a reply of another kind"
    ))
}

/// The version a request selects with `_meta.fastmcp.version`.
fn requested_version(meta: &ferrymcp_types::JsonObject) -> Result<Option<VersionSpec>, ErrorData> {
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
/// `_meta.fastmcp.versions`, highest first. `execution` is never put on the wire
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

/// One entry per key, the highest version, first provider first on ties.
/// Every list is answered in one page, so a cursor is never one this server gave out: a
/// `-32602` says so (an empty one is taken as none).
fn no_cursor(request: Option<&PaginatedRequestParams>) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()) {
        None | Some("") => Ok(()),
        Some(cursor) => {
            let shown: String = cursor.chars().take(64).collect();
            let cut = if shown.len() < cursor.len() {
                "…"
            } else {
                ""
            };
            Err(ErrorData::invalid_params(
                format!(
                    "Invalid cursor \"{shown}{cut}\": this server lists everything in one page and gave out no cursor; ask again without one"
                ),
                None,
            ))
        }
    }
}

fn highest_versions<T: Clone>(
    listed: Vec<T>,
    key: impl Fn(&T) -> String,
    version: impl Fn(&T) -> Option<&Version>,
) -> Vec<T> {
    let mut order: Vec<String> = Vec::new();
    let mut best: std::collections::HashMap<String, T> = std::collections::HashMap::new();
    for item in listed {
        let k = key(&item);
        match best.get(&k) {
            None => {
                order.push(k.clone());
                best.insert(k, item);
            }
            Some(current) if version(&item) > version(current) => {
                best.insert(k, item);
            }
            Some(_) => {}
        }
    }
    order.into_iter().filter_map(|k| best.remove(&k)).collect()
}

/// What a list-change receiver reported: the kinds to announce, or nothing when the server
/// is gone. A lagging receiver announces everything.
fn changed_kinds(change: Result<ListKind, broadcast::error::RecvError>) -> Vec<ListKind> {
    match change {
        Ok(kind) => vec![kind],
        Err(broadcast::error::RecvError::Lagged(_)) => ListKind::ALL.to_vec(),
        Err(broadcast::error::RecvError::Closed) => Vec::new(),
    }
}

/// Sends `notifications/*/list_changed` to a legacy session until it closes.
async fn forward_list_changes(
    mut changes: broadcast::Receiver<ListKind>,
    peer: Peer<RoleServer>,
    closed: tokio_util::sync::CancellationToken,
) {
    loop {
        let change = tokio::select! {
            () = closed.cancelled() => return,
            change = changes.recv() => change,
        };
        let kinds = changed_kinds(change);
        if kinds.is_empty() {
            return;
        }
        for kind in kinds {
            let sent = match kind {
                ListKind::Tools => peer.notify_tool_list_changed().await,
                ListKind::Resources => peer.notify_resource_list_changed().await,
                ListKind::Prompts => peer.notify_prompt_list_changed().await,
            };
            if sent.is_err() {
                // The connection is gone.
                return;
            }
        }
    }
}

/// Sends `notifications/resources/updated` for the resources a legacy session watches,
/// until it closes.
async fn forward_resource_updates(
    mut updates: broadcast::Receiver<Arc<str>>,
    peer: Peer<RoleServer>,
    watched: Arc<Watched>,
    closed: tokio_util::sync::CancellationToken,
) {
    loop {
        let update = tokio::select! {
            () = closed.cancelled() => return,
            update = updates.recv() => update,
        };
        let uris: Vec<String> = match update {
            Ok(uri) if watched.uris().contains(&*uri) => vec![uri.to_string()],
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Lagged(_)) => watched.uris().iter().cloned().collect(),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for uri in uris {
            let params = ferrymcp_types::ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(params).await.is_err() {
                // The connection is gone.
                return;
            }
        }
    }
}

/// Methods of the 2025-11-25 lifecycle that 2026-07-28 removed (SEP-2575). rmcp answers the
/// well-formed ones itself, apart from `logging/setLevel` (refused in `set_level`); malformed
/// ones reach [`McpService::on_custom_request`].
const REMOVED_IN_2026: &[&str] = &[
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Methods 2026-07-28 added: unknown to a 2025-11-25 session.
const ADDED_IN_2026: &[&str] = &["server/discover", "subscriptions/listen"];

/// The `-32601` for a method 2026-07-28 removed, asked for on a 2026-07-28 request.
fn removed_in_2026(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} is not a 2026-07-28 method"),
        None,
    )
}

/// Known specification methods whose params rmcp could not parse arrive as custom requests;
/// they deserve `-32602`, not `-32601`.
fn malformed_known_method(method: &str, params: Option<Value>) -> Option<ErrorData> {
    use ferrymcp_types::{
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
        let mut config = if self.legacy.load(Ordering::Acquire) {
            ServerConfig::clone(&self.legacy_config)
        } else {
            ServerConfig::clone(&self.config)
        };
        // The one part of the identity that may be learned after the service is made (a
        // proxy built lazily takes its upstream's once that answers).
        config.instructions = self.root.instructions();
        config
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.root.pinged().await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let span = request_span("initialize", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("initialize") },
            async move {
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
            .instrument(span),
        )
        .await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let span = request_span("server/discover", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("server/discover") },
            async move {
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
            .instrument(span),
        )
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call_tool_in(request, self.scope(context)).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let span = request_span("tools/list", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("tools/list") },
            async move {
                no_cursor(request.as_ref())?;
                let listed = self.root.list_of(self.context(context), true).await?;
                Ok(ListToolsResult::with_all_items(wire_tools(listed)))
            }
            .instrument(span),
        )
        .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let span = request_span("resources/list", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("resources/list") },
            async move {
                no_cursor(request.as_ref())?;
                let listed: Vec<ResourceInfo> =
                    self.root.list_of(self.context(context), true).await?;
                let resources =
                    highest_versions(listed, |r| r.uri().to_owned(), ResourceInfo::version)
                        .iter()
                        .map(ResourceInfo::to_resource)
                        .collect();
                Ok(ListResourcesResult::with_all_items(resources))
            }
            .instrument(span),
        )
        .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let span = request_span("resources/templates/list", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("resources/templates/list") },
            async move {
                no_cursor(request.as_ref())?;
                let listed: Vec<TemplateInfo> =
                    self.root.list_of(self.context(context), true).await?;
                let templates = highest_versions(
                    listed,
                    |t| t.uri_template().to_owned(),
                    TemplateInfo::version,
                )
                .iter()
                .map(TemplateInfo::to_resource_template)
                .collect();
                Ok(ListResourceTemplatesResult::with_all_items(templates))
            }
            .instrument(span),
        )
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("resources/read") },
            self.answer_with_rounds(context, request.into(), |read, version, cx| {
                self.root.dispatch_read(ReadResource {
                    uri: read.target.clone(),
                    version,
                    cx,
                    run_middleware: true,
                    looked_again: false,
                })
            }),
        )
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let span = request_span("prompts/list", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("prompts/list") },
            async move {
                no_cursor(request.as_ref())?;
                let listed: Vec<PromptInfo> =
                    self.root.list_of(self.context(context), true).await?;
                let prompts =
                    highest_versions(listed, |p| p.name().to_owned(), PromptInfo::version)
                        .iter()
                        .map(PromptInfo::to_prompt)
                        .collect();
                Ok(ListPromptsResult::with_all_items(prompts))
            }
            .instrument(span),
        )
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("prompts/get") },
            self.answer_with_rounds(context, request.into(), |get, version, cx| {
                self.root.dispatch_get_prompt(GetPrompt {
                    name: get.target.clone(),
                    arguments: get.arguments.clone().unwrap_or_default(),
                    version,
                    cx,
                    run_middleware: true,
                    looked_again: false,
                })
            }),
        )
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let span = request_span("completion/complete", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("completion/complete") },
            async move {
                let params = serde_json::to_value(request).ok();
                let value = self.custom("completion/complete", params, context).await?;
                serde_json::from_value(value).map_err(|e| {
                    crate::masked_internal_error(format_args!(
                        "completion/complete produced an invalid result: {e}"
                    ))
                })
            }
            .instrument(span),
        )
        .await
    }

    #[allow(deprecated)] // logging/setLevel is legacy-only; rmcp marks it deprecated.
    async fn set_level(
        &self,
        request: ferrymcp_types::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = request_span("logging/setLevel", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("logging/setLevel") },
            async move {
                // rmcp passes a well-formed one on whatever the era; 2026-07-28 has none.
                if RequestScope::from_rmcp(context.clone()).era() == Era::Modern {
                    return Err(removed_in_2026("logging/setLevel"));
                }
                let level = LogLevel::from_wire(&request.level)
                    .ok_or_else(|| ErrorData::invalid_params("unknown logging level", None))?;
                *self
                    .log_level
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(level);
                Ok(())
            }
            .instrument(span),
        )
        .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let accepted = self.accept_base_filter(requested);
        let mut listening = self
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if listening.len() >= PENDING_LISTENS {
            listening.pop_front();
        }
        listening.push_back(subscription::Receivers::open(&self.root));
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let pending = self
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let receivers = pending.unwrap_or_else(|| subscription::Receivers::open(&self.root));
        let request = context.request_context();
        let cx = self.context(request.clone());
        let outlet = subscription::Outlet::new(request.peer.clone(), request.id.clone());
        subscription::run(
            &cx,
            context.accepted(),
            receivers,
            outlet,
            Vec::new(),
            request.ct.clone(),
        )
        .await;
        Ok(())
    }

    #[allow(deprecated)] // resources/subscribe is legacy-only; rmcp marks it deprecated.
    async fn subscribe(
        &self,
        request: ferrymcp_types::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = request_span("resources/subscribe", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("resources/subscribe") },
            async move {
                let peer = context.peer.clone();
                let cx = self.context(context);
                self.root.check_watchable(&cx, &request.uri)?;
                {
                    let mut uris = self.watched.uris();
                    if !uris.contains(&request.uri)
                        && uris.len() >= crate::MAX_RESOURCE_SUBSCRIPTIONS
                    {
                        return Err(ErrorData::invalid_params(
                            format!(
                                "this session already watches {} resources, the most it may",
                                crate::MAX_RESOURCE_SUBSCRIPTIONS
                            ),
                            None,
                        ));
                    }
                    uris.insert(request.uri);
                }
                if !self.watched.forwarding.swap(true, Ordering::AcqRel) {
                    tokio::spawn(forward_resource_updates(
                        self.root.resource_updates(),
                        peer,
                        Arc::clone(&self.watched),
                        self.connection.0.clone(),
                    ));
                }
                Ok(())
            }
            .instrument(span),
        )
        .await
    }

    #[allow(deprecated)] // resources/unsubscribe is legacy-only; rmcp marks it deprecated.
    async fn unsubscribe(
        &self,
        request: ferrymcp_types::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = request_span("resources/unsubscribe", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("resources/unsubscribe") },
            async move {
                self.watched.uris().remove(&request.uri);
                Ok(())
            }
            .instrument(span),
        )
        .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.root.get_tool(name, None).map(|t| t.descriptor().tool)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let span = request_span(&request.method, &context);
        crate::metrics::observe_request(
            crate::metrics::Method::named(&request.method),
            async move {
                let CustomRequest { method, params, .. } = request;
                if method == subscription::EXTENDED_LISTEN {
                    return self
                        .listen_extended(params, context)
                        .await
                        .map(CustomResult);
                }
                if REMOVED_IN_2026.contains(&method.as_str())
                    && RequestScope::from_rmcp(context.clone()).era() == Era::Modern
                {
                    // A method 2026-07-28 removed is unknown there, whatever its params: -32601
                    // (which rmcp's HTTP transport sends as 404), not -32602 for params it never reads.
                    return Err(removed_in_2026(&method));
                }
                if ADDED_IN_2026.contains(&method.as_str())
                    && RequestScope::from_rmcp(context.clone()).era() == Era::Legacy
                {
                    // Unknown in a 2025-11-25 session, whatever its params.
                    return Err(ErrorData::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!(
                            "Method '{method}' is not available at protocol version '2025-11-25'."
                        ),
                        None,
                    ));
                }
                if let Some(error) = malformed_known_method(&method, params.clone()) {
                    return Err(error);
                }
                self.custom(&method, params, context)
                    .await
                    .map(CustomResult)
            }
            .instrument(span),
        )
        .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let span = request_span("tasks/get", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("tasks/get") },
            async move {
                let params = serde_json::to_value(request).ok();
                let value = self.custom("tasks/get", params, context).await?;
                serde_json::from_value(value).map_err(|e| {
                    crate::masked_internal_error(format_args!(
                        "tasks/get produced an invalid result: {e}"
                    ))
                })
            }
            .instrument(span),
        )
        .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = request_span("tasks/update", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("tasks/update") },
            async move {
                let params = serde_json::to_value(request).ok();
                self.custom("tasks/update", params, context).await.map(drop)
            }
            .instrument(span),
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = request_span("tasks/cancel", &context);
        crate::metrics::observe_request(
            const { crate::metrics::Method::known("tasks/cancel") },
            async move {
                let params = serde_json::to_value(request).ok();
                self.custom("tasks/cancel", params, context).await.map(drop)
            }
            .instrument(span),
        )
        .await
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

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2025-11-25 session hears about list changes through notifications on its own
        // connection, for as long as the connection lives.
        tokio::spawn(forward_list_changes(
            self.root.list_changes(),
            context.peer,
            self.connection.0.clone(),
        ));
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
