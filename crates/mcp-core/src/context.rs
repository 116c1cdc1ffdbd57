//! [`Context`]: what a tool, middleware or extension knows about the request it serves.

use std::sync::{
    Arc, Mutex, PoisonError,
    atomic::{AtomicUsize, Ordering},
};

use ferrymcp_types::{InputResponses, JsonObject, ProtocolVersion, RequestId, meta};
use rmcp::{RoleServer, model::Extensions, service::Peer};
use tokio_util::sync::CancellationToken;

use crate::{Server, auth::Principal, relay::ResultRelay};

/// The protocol era of a request.
///
/// ```
/// use ferrymcp_core::Era;
/// use ferrymcp_core::types::ProtocolVersion;
/// assert_eq!(Era::of(Some(&ProtocolVersion::V_2026_07_28)), Era::Modern);
/// assert_eq!(Era::of(Some(&ProtocolVersion::V_2025_11_25)), Era::Legacy);
/// assert_eq!(Era::of(None), Era::Unknown);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 or later: `server/discover`, per-request `_meta`, extensions such as tasks.
    Modern,
    /// Before 2026-07-28: the `initialize` handshake.
    Legacy,
    /// No protocol version is known (an in-process call without one).
    Unknown,
}

impl Era {
    /// The era of a protocol version.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::Era::of(None), ferrymcp_core::Era::Unknown);
    /// ```
    pub fn of(version: Option<&ProtocolVersion>) -> Era {
        match version {
            Some(v) if v.as_str() >= ProtocolVersion::V_2026_07_28.as_str() => Era::Modern,
            Some(_) => Era::Legacy,
            None => Era::Unknown,
        }
    }
}

/// Everything one request carries, shared unchanged by every server it passes through.
///
/// The rmcp adapter builds it from rmcp's `RequestContext`; in-process callers build it with
/// [`RequestScope::new`] and the `with_*` setters.
///
/// ```
/// use ferrymcp_core::RequestScope;
/// use ferrymcp_core::types::ProtocolVersion;
/// let scope = RequestScope::new().with_protocol_version(ProtocolVersion::V_2026_07_28);
/// assert_eq!(scope.era(), ferrymcp_core::Era::Modern);
/// ```
#[derive(Debug, Default, Clone)]
pub struct RequestScope {
    protocol_version: Option<ProtocolVersion>,
    /// Shared by the scope's clones (one per server level and round) until one changes it.
    meta: Arc<JsonObject>,
    cancellation: CancellationToken,
    request_id: Option<RequestId>,
    /// Behind `Arc`s, like the other fields most requests leave empty: the scope is copied
    /// into every level of a call's future, and small, it is cheap to move.
    peer: Option<Arc<Peer<RoleServer>>>,
    /// Shared like `meta`: over HTTP it holds the request's parts, headers and all.
    extensions: Arc<Extensions>,
    root: Option<Server>,
    principal: Option<Arc<Principal>>,
    background_run: Option<Arc<str>>,
    input_responses: Option<Arc<InputResponses>>,
    request_state: Option<Arc<str>>,
    log_level: Option<crate::LogLevel>,
    progress_sink: ProgressSlot,
    after_response: AfterResponse,
    elicitations: ElicitationCounter,
    /// Set where the transport can send a relayed result (see [`crate::relay`]).
    relay: Option<ResultRelay>,
}

/// How many automatic elicitations this run of the handler has made (their keys). Each
/// run gets its own ([`Context::new`]); a scope no handler runs in has none.
#[derive(Debug, Clone, Default)]
struct ElicitationCounter(Option<Arc<AtomicUsize>>);

#[derive(Clone, Default)]
struct ProgressSlot(Option<crate::logging::ProgressSink>);

impl std::fmt::Debug for ProgressSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ProgressSink"
        } else {
            "None"
        })
    }
}

/// Callbacks run once the answer to the request has left the root server's chain.
#[derive(Clone, Default)]
struct AfterResponse(Arc<Mutex<Vec<AfterResponseCallback>>>);

type AfterResponseCallback = Box<dyn FnOnce(bool) + Send>;

impl std::fmt::Debug for AfterResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterResponse")
    }
}

impl RequestScope {
    /// An empty scope: no protocol version, no `_meta`, a fresh cancellation token.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().meta().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the scope of a request arriving through rmcp.
    pub(crate) fn from_rmcp(cx: rmcp::service::RequestContext<RoleServer>) -> Self {
        let protocol_version = cx.protocol_version();
        let log_level = cx
            .meta
            .log_level()
            .as_ref()
            .and_then(crate::LogLevel::from_wire);
        let rmcp::service::RequestContext {
            ct,
            id,
            meta,
            extensions,
            peer,
            ..
        } = cx;
        Self {
            peer: Some(Arc::new(peer)),
            log_level,
            ..Self::arrived(protocol_version, meta.0.0, ct, id, extensions)
        }
    }

    /// Builds the scope of a 2026-07-28 request the HTTP transport answers itself: no
    /// peer (its one JSON answer is the whole reply), its HTTP parts among the extensions
    /// as rmcp puts them.
    pub(crate) fn from_http(
        id: RequestId,
        meta: JsonObject,
        parts: http::request::Parts,
        cancellation: CancellationToken,
    ) -> Self {
        let mut extensions = Extensions::new();
        extensions.insert(parts);
        Self::arrived(
            Some(ProtocolVersion::V_2026_07_28),
            meta,
            cancellation,
            id,
            extensions,
        )
    }

    /// The scope with a way for its first tool's result to reach the client as JSON.
    pub(crate) fn with_relay(mut self, relay: ResultRelay) -> Self {
        self.relay = Some(relay);
        self
    }

    /// Something between the client and the tool may see or change its result: the
    /// request's result is written by the transport, never relayed.
    pub(crate) fn close_relay(&self) {
        if let Some(relay) = &self.relay {
            relay.close();
        }
    }

    /// The scope of a request that arrived from a client, every other field empty. Built
    /// field by field: `..Self::default()` would allocate a token, two `Arc`s and a counter
    /// only to drop them, on every request.
    fn arrived(
        protocol_version: Option<ProtocolVersion>,
        meta: JsonObject,
        cancellation: CancellationToken,
        id: RequestId,
        extensions: Extensions,
    ) -> Self {
        Self {
            protocol_version,
            meta: Arc::new(meta),
            cancellation,
            request_id: Some(id),
            peer: None,
            extensions: Arc::new(extensions),
            root: None,
            principal: None,
            background_run: None,
            input_responses: None,
            request_state: None,
            log_level: None,
            progress_sink: ProgressSlot(None),
            after_response: AfterResponse::default(),
            elicitations: ElicitationCounter::default(),
            relay: None,
        }
    }

    /// The lowest log level the client wants to receive; `None` sends nothing.
    ///
    /// ```
    /// use ferrymcp_core::{LogLevel, RequestScope};
    /// let scope = RequestScope::new().with_log_level(Some(LogLevel::Warning));
    /// assert_eq!(scope.log_level(), Some(LogLevel::Warning));
    /// ```
    pub fn with_log_level(mut self, level: Option<crate::LogLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// The lowest log level the client wants to receive.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::RequestScope::new().log_level(), None);
    /// ```
    pub fn log_level(&self) -> Option<crate::LogLevel> {
        self.log_level
    }

    /// Sends progress to `sink` instead of the client (background tasks).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sink: ferrymcp_core::ProgressSink = Arc::new(|p| Box::pin(async move { drop(p) }));
    /// assert!(ferrymcp_core::RequestScope::new().with_progress_sink(sink).progress_sink().is_some());
    /// ```
    pub fn with_progress_sink(mut self, sink: crate::logging::ProgressSink) -> Self {
        self.progress_sink = ProgressSlot(Some(sink));
        self
    }

    /// Where progress goes instead of the client, if anywhere.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().progress_sink().is_none());
    /// ```
    pub fn progress_sink(&self) -> Option<&crate::logging::ProgressSink> {
        self.progress_sink.0.as_ref()
    }

    /// The request's progress token (`_meta.progressToken`), if any.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().progress_token().is_none());
    /// ```
    pub fn progress_token(&self) -> Option<ferrymcp_types::ProgressToken> {
        self.meta
            .get("progressToken")
            .and_then(|token| serde_json::from_value(token.clone()).ok())
    }

    /// The server the request entered (the root of the tree that serves it).
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("root");
    /// let scope = ferrymcp_core::RequestScope::new().with_root(s.clone());
    /// assert!(scope.root().unwrap().ptr_eq(&s));
    /// ```
    pub fn with_root(mut self, root: Server) -> Self {
        self.root = Some(root);
        self
    }

    /// The server the request entered; set by [`Context::new`] when not given.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().root().is_none());
    /// ```
    pub fn root(&self) -> Option<&Server> {
        self.root.as_ref()
    }

    /// Sets the authenticated caller.
    ///
    /// ```
    /// use ferrymcp_core::{RequestScope, auth::Principal};
    /// let scope = RequestScope::new().with_principal(Principal::new("app"));
    /// assert_eq!(scope.principal().unwrap().client_id, "app");
    /// ```
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = Some(Arc::new(principal));
        self
    }

    /// The authenticated caller: set with [`with_principal`](Self::with_principal), or a
    /// [`Principal`] (or an `Arc<Principal>`, as the resource server puts it) an auth layer
    /// put into the request's (or its HTTP parts') extensions. `None` is an anonymous caller.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().principal().is_none());
    /// ```
    pub fn principal(&self) -> Option<&Principal> {
        use std::sync::Arc;
        self.principal
            .as_deref()
            .or_else(|| self.extensions.get::<Principal>())
            .or_else(|| self.extensions.get::<Arc<Principal>>().map(|p| &**p))
            .or_else(|| {
                let parts = self.extensions.get::<http::request::Parts>()?;
                parts
                    .extensions
                    .get::<Principal>()
                    .or_else(|| parts.extensions.get::<Arc<Principal>>().map(|p| &**p))
            })
    }

    /// Marks the request as background run `id` (a task engine's id for the work, such as
    /// a task id). [`Server::run_in_background`](crate::Server::run_in_background) sets it.
    ///
    /// ```
    /// let scope = ferrymcp_core::RequestScope::new().with_background_run("t1");
    /// assert_eq!(scope.background_run(), Some("t1"));
    /// ```
    pub fn with_background_run(mut self, id: impl Into<Arc<str>>) -> Self {
        self.background_run = Some(id.into());
        self
    }

    /// The id of the background run this request is, if it is one.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().background_run().is_none());
    /// ```
    pub fn background_run(&self) -> Option<&str> {
        self.background_run.as_deref()
    }

    /// The client's answers to the previous round's input requests, by the tool's own keys,
    /// with the state the tool returned with them.
    ///
    /// ```
    /// let scope = ferrymcp_core::RequestScope::new().with_input(Default::default(), Some("s".into()));
    /// assert_eq!(scope.request_state(), Some("s"));
    /// ```
    pub fn with_input(mut self, responses: InputResponses, request_state: Option<String>) -> Self {
        self.input_responses = Some(Arc::new(responses));
        self.request_state = request_state.map(Arc::from);
        self
    }

    /// The answers to the previous round's input requests; `None` on a first run.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().input_responses().is_none());
    /// ```
    pub fn input_responses(&self) -> Option<&InputResponses> {
        self.input_responses.as_deref()
    }

    /// The state the tool returned with its last input request.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().request_state().is_none());
    /// ```
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// Runs `callback` once the answer has come back out of the root server's middleware,
    /// with `true` when it was a success. The tasks extension uses it to let a task's work
    /// start only after its submission has been answered.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// use ferrymcp_core::{Context, Server, ToolDef};
    /// let ran = Arc::new(AtomicBool::new(false));
    /// let flag = ran.clone();
    /// let s = Server::new("s");
    /// s.add_tool(ToolDef::new("t", move |cx: Context| {
    ///     let flag = flag.clone();
    ///     async move { cx.scope().after_response(move |ok| flag.store(ok, Ordering::SeqCst)); }
    /// })).unwrap();
    /// s.call_tool("t", serde_json::Value::Null).await.unwrap();
    /// assert!(ran.load(Ordering::SeqCst));
    /// # });
    /// ```
    pub fn after_response(&self, callback: impl FnOnce(bool) + Send + 'static) {
        self.after_response
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(callback));
    }

    /// The number of the next automatic elicitation of this run: 1, 2, ...
    pub(crate) fn next_elicitation(&self) -> usize {
        self.elicitations
            .0
            .as_ref()
            .map_or(1, |count| count.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Runs the [`after_response`](Self::after_response) callbacks (each once).
    pub(crate) fn finish(&self, delivered: bool) {
        let callbacks = std::mem::take(
            &mut *self
                .after_response
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for callback in callbacks {
            callback(delivered);
        }
    }

    /// Sets the protocol version.
    ///
    /// ```
    /// use ferrymcp_core::{Era, RequestScope, types::ProtocolVersion};
    /// assert_eq!(RequestScope::new().with_protocol_version(ProtocolVersion::V_2025_11_25).era(), Era::Legacy);
    /// ```
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = Some(version);
        self
    }

    /// Sets the request's `_meta`.
    ///
    /// ```
    /// let mut meta = ferrymcp_core::types::JsonObject::new();
    /// meta.insert("k".into(), 1.into());
    /// assert_eq!(ferrymcp_core::RequestScope::new().with_meta(meta).meta()["k"], 1);
    /// ```
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Arc::new(meta);
        self
    }

    /// Declares, in `_meta`, that the client opts in to extension `id` with `settings` on
    /// this request (`io.modelcontextprotocol/clientCapabilities.extensions[id]`).
    ///
    /// ```
    /// use ferrymcp_core::RequestScope;
    /// let scope = RequestScope::new().with_client_extension("io.modelcontextprotocol/tasks", Default::default());
    /// assert!(scope.client_extension("io.modelcontextprotocol/tasks").is_some());
    /// ```
    pub fn with_client_extension(mut self, id: &str, settings: JsonObject) -> Self {
        let caps = Arc::make_mut(&mut self.meta)
            .entry(meta::CLIENT_CAPABILITIES)
            .or_insert_with(|| serde_json::Value::Object(JsonObject::new()));
        if !caps.is_object() {
            *caps = serde_json::Value::Object(JsonObject::new());
        }
        if let Some(caps) = caps.as_object_mut() {
            let extensions = caps
                .entry("extensions")
                .or_insert_with(|| serde_json::Value::Object(JsonObject::new()));
            if !extensions.is_object() {
                *extensions = serde_json::Value::Object(JsonObject::new());
            }
            if let Some(extensions) = extensions.as_object_mut() {
                extensions.insert(id.to_owned(), serde_json::Value::Object(settings));
            }
        }
        self
    }

    /// Uses `token` as the request's cancellation token.
    ///
    /// ```
    /// let token = tokio_util::sync::CancellationToken::new();
    /// let scope = ferrymcp_core::RequestScope::new().with_cancellation(token.clone());
    /// token.cancel();
    /// assert!(scope.cancellation().is_cancelled());
    /// ```
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }

    /// Inserts a typed value that tools and middleware can read (auth identity, HTTP parts...).
    ///
    /// ```
    /// #[derive(Clone)] struct Tenant(&'static str);
    /// let scope = ferrymcp_core::RequestScope::new().with_extension(Tenant("acme"));
    /// assert_eq!(scope.extensions().get::<Tenant>().unwrap().0, "acme");
    /// ```
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.extensions).insert(value);
        self
    }

    /// The negotiated or per-request protocol version.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().protocol_version().is_none());
    /// ```
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        self.protocol_version.as_ref()
    }

    /// The request's protocol era.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::RequestScope::new().era(), ferrymcp_core::Era::Unknown);
    /// ```
    pub fn era(&self) -> Era {
        Era::of(self.protocol_version.as_ref())
    }

    /// The request's `_meta`.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().meta().is_empty());
    /// ```
    pub fn meta(&self) -> &JsonObject {
        &self.meta
    }

    /// The settings object the client declared for extension `id` on this request, read from
    /// `_meta["io.modelcontextprotocol/clientCapabilities"].extensions[id]`. Only an object
    /// counts as a declaration (SEP-2663 §2.2).
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().client_extension("x").is_none());
    /// ```
    pub fn client_extension(&self, id: &str) -> Option<&JsonObject> {
        self.meta
            .get(meta::CLIENT_CAPABILITIES)?
            .get("extensions")?
            .get(id)?
            .as_object()
    }

    /// Cancelled when the client cancels the request or the connection closes.
    ///
    /// ```
    /// assert!(!ferrymcp_core::RequestScope::new().cancellation().is_cancelled());
    /// ```
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// The JSON-RPC id, for requests that came over a transport.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().request_id().is_none());
    /// ```
    pub fn request_id(&self) -> Option<&RequestId> {
        self.request_id.as_ref()
    }

    /// The connected client, for notifications; `None` in process.
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().peer().is_none());
    /// ```
    pub fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.as_deref()
    }

    /// Typed values attached to the request: over HTTP, `http::request::Parts` (headers...).
    ///
    /// ```
    /// assert!(ferrymcp_core::RequestScope::new().extensions().get::<u8>().is_none());
    /// ```
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }
}

/// The request as seen from one server: the [`RequestScope`] plus the server whose call is
/// running. Each server level of a mounted call gets its own `Context` bound to that server,
/// sharing one scope, so a mounted tool's `Context` names its own (child) server.
///
/// `Context` is an extractor: put it among a tool's parameters.
///
/// ```
/// use ferrymcp_core::{Context, Server, ToolDef};
///
/// async fn whoami(cx: Context) -> String {
///     format!("context server: {}", cx.server().name())
/// }
/// let server = Server::new("child");
/// server.add_tool(ToolDef::new("whoami", whoami)).unwrap();
/// ```
#[derive(Clone)]
pub struct Context {
    server: Server,
    scope: Arc<RequestScope>,
    /// The way to the client, for the request's first tool only (see [`crate::relay`]).
    relay: Option<ResultRelay>,
}

impl Context {
    /// A context for `server` within `scope`.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), ferrymcp_core::RequestScope::new());
    /// assert_eq!(cx.server().name(), "s");
    /// ```
    pub fn new(server: Server, mut scope: RequestScope) -> Self {
        if scope.root.is_none() {
            scope.root = Some(server.clone());
        }
        // Each run of a handler counts its elicitations from 1, so a retry asks for the same
        // keys in the same order.
        scope.elicitations = ElicitationCounter(Some(Arc::default()));
        Self {
            server,
            scope: Arc::new(scope),
            relay: None,
        }
    }

    /// The server the request entered (the root); [`server`](Self::server) is the one
    /// running now.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("root"), Default::default());
    /// assert_eq!(cx.root().name(), "root");
    /// ```
    pub fn root(&self) -> &Server {
        self.scope.root.as_ref().unwrap_or(&self.server)
    }

    /// The id of the background run this is (for a task, the task's id), if it is one.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(cx.background_run().is_none());
    /// ```
    pub fn background_run(&self) -> Option<&str> {
        self.scope.background_run()
    }

    /// Whether this is a background run (a task's run in a worker) rather than a client's
    /// request: no client waits on it, no call timeout bounds it.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(!cx.is_background_run());
    /// ```
    pub fn is_background_run(&self) -> bool {
        self.scope.background_run.is_some()
    }

    /// The answers to the previous input round, by the tool's own keys.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(cx.input_responses().is_none());
    /// ```
    pub fn input_responses(&self) -> Option<&InputResponses> {
        self.scope.input_responses()
    }

    /// The state returned with the previous input round.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(cx.request_state().is_none());
    /// ```
    pub fn request_state(&self) -> Option<&str> {
        self.scope.request_state()
    }

    /// Ends the SSE stream this request's answer travels on while the request goes on
    /// working, for long calls behind proxies that cut idle connections (SEP-1699). The
    /// client is told when to reconnect (`HttpConfig::sse_retry`); reconnecting with
    /// `Last-Event-ID`, it gets everything sent since, the answer included. Only requests
    /// of 2025-11-25 sessions over HTTP have such a stream: elsewhere this does nothing and
    /// answers `false`.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(!cx.close_sse_stream().await); // in process: no stream
    /// # });
    /// ```
    pub async fn close_sse_stream(&self) -> bool {
        match self
            .scope
            .extensions()
            .get::<crate::transport::http::streams::StreamCloser>()
        {
            Some(stream) => stream.close().await,
            None => false,
        }
    }

    pub(crate) fn scope_arc(&self) -> Arc<RequestScope> {
        Arc::clone(&self.scope)
    }

    /// The way for this tool's result to reach the client as JSON, unread and unwritten by
    /// anything on the way (see [`ResultRelay`]); `None` for most calls: those a middleware
    /// or an extension could see the result of, those the transport answers through rmcp,
    /// in-process calls, and every tool a tool calls.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(cx.result_relay().is_none());
    /// ```
    pub fn result_relay(&self) -> Option<&ResultRelay> {
        self.relay.as_ref()
    }

    /// This context for the tool about to run, with the request's way to the client if it
    /// is open and this is the request's first tool.
    pub(crate) fn for_tool(mut self) -> Self {
        // A background run answers no request: its result is the task's.
        if let Some(relay) = &self.scope.relay
            && self.scope.background_run.is_none()
            && relay.take()
        {
            self.relay = Some(relay.clone());
        }
        self
    }

    /// The same request, seen from `server` (a mounted child).
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("parent"), Default::default());
    /// assert_eq!(cx.for_server(&ferrymcp_core::Server::new("child")).server().name(), "child");
    /// ```
    pub fn for_server(&self, server: &Server) -> Context {
        Context {
            server: server.clone(),
            scope: Arc::clone(&self.scope),
            relay: None,
        }
    }

    /// The server whose call is running: for a mounted tool, the child that owns it.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert_eq!(cx.server().name(), "s");
    /// ```
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The request scope shared by every server level.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(cx.scope().meta().is_empty());
    /// ```
    pub fn scope(&self) -> &RequestScope {
        &self.scope
    }

    /// The request's protocol era.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert_eq!(cx.era(), ferrymcp_core::Era::Unknown);
    /// ```
    pub fn era(&self) -> Era {
        self.scope.era()
    }

    /// Cancelled when the client cancels the request.
    ///
    /// ```
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// assert!(!cx.cancellation().is_cancelled());
    /// ```
    pub fn cancellation(&self) -> &CancellationToken {
        self.scope.cancellation()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("server", &self.server.name())
            .field("scope", &self.scope)
            .finish()
    }
}
