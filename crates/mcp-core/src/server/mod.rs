//! [`Server`]: a cheap-to-clone handle on one MCP server and everything registered on it.

use std::{
    any::{Any, TypeId},
    collections::{BTreeSet, HashMap, HashSet},
    panic::AssertUnwindSafe,
    sync::{
        Arc, Mutex, PoisonError, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

mod access;
mod changes;
mod completions;
mod listing;
mod mirrors;
mod prompts;
mod resources;
mod tools;
mod updates;

pub use changes::ListKind;
pub use prompts::PromptGet;
pub use resources::ResourceRead;
pub use tools::ToolCall;
pub use updates::MAX_RESOURCE_SUBSCRIPTIONS;

use arc_swap::ArcSwap;
use ferrymcp_types::{
    ErrorCode, ErrorData, Implementation, JsonObject, ServerCapabilities, ServerConfig,
    TASKS_EXTENSION_ID,
};
use futures::FutureExt as _;
use serde_json::Value;

use crate::{
    BoxFuture, Context, CustomRequest, Extension, Message, Middleware, PromptInfo, Reply,
    RequestScope, ResourceInfo, ServerError, TemplateInfo, ToolError, ToolInfo,
    extension::BoxError,
    middleware::run_chain,
    mount::{Mount, MountOptions},
    prompt::RegisteredPrompt,
    registry::{Registered, Registry},
    resource::{RegisteredResource, RegisteredTemplate},
    tool::RegisteredTool,
    version::Version,
};

type StartHook = Arc<dyn Fn(Server) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync>;
type StopHook = Arc<dyn Fn(Server) -> BoxFuture<'static, ()> + Send + Sync>;
type PingHook = Arc<dyn Fn(Server) -> BoxFuture<'static, Result<(), ErrorData>> + Send + Sync>;
type ListHook =
    Arc<dyn Fn(Server, ListKind) -> BoxFuture<'static, Result<(), ErrorData>> + Send + Sync>;

/// One MCP server: its tools, mounted children, middleware and extensions.
///
/// `Server` is a handle (an `Arc` inside): clones share one server, so a child mounted into a
/// parent stays live: what is added to it later shows up in the parent. Registration
/// takes `&self` for the same reason.
///
/// ```
/// use ferrymcp_core::{Args, Server, ToolDef};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Pair { a: i64, b: i64 }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let child = Server::new("child");
/// child.add_tool(ToolDef::new("multiply", |Args(p): Args<Pair>| async move { p.a * p.b })).unwrap();
///
/// let parent = Server::new("parent");
/// parent.mount(&child, "child").unwrap();
///
/// let result = parent
///     .call_tool("child_multiply", serde_json::json!({"a": 8, "b": 9}))
///     .await
///     .unwrap();
/// let ferrymcp_core::types::CallToolResponse::Complete(result) = result else { unreachable!() };
/// assert_eq!(result.structured_content.unwrap()["result"], 72);
/// # });
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

/// A [`Server`] handle that does not keep it alive ([`Server::downgrade`]).
///
/// ```
/// let weak = ferrymcp_core::Server::new("x").downgrade();
/// assert!(weak.upgrade().is_none());
/// ```
#[derive(Clone)]
pub struct WeakServer(std::sync::Weak<ServerInner>);

impl WeakServer {
    /// The server, if it still exists.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("x");
    /// assert!(s.downgrade().upgrade().is_some());
    /// ```
    pub fn upgrade(&self) -> Option<Server> {
        self.0.upgrade().map(|inner| Server { inner })
    }
}

struct ServerInner {
    name: String,
    info: RwLock<Info>,
    mask_error_details: AtomicBool,
    /// The default call timeout in nanoseconds; 0 means none.
    call_timeout: AtomicU64,
    strict_input_validation: Arc<AtomicBool>,
    tools: ArcSwap<Registry<RegisteredTool>>,
    resources: ArcSwap<Registry<RegisteredResource>>,
    templates: ArcSwap<Registry<RegisteredTemplate>>,
    prompts: ArcSwap<Registry<RegisteredPrompt>>,
    mounts: ArcSwap<Vec<Arc<Mount>>>,
    middleware: ArcSwap<Vec<Arc<dyn Middleware>>>,
    extensions: ArcSwap<Vec<Arc<dyn Extension>>>,
    /// The same extensions, for typed access ([`Server::extension_as`]).
    extensions_any: ArcSwap<Vec<Arc<dyn Any + Send + Sync>>>,
    methods: ArcSwap<HashMap<String, Arc<dyn Extension>>>,
    visibility: ArcSwap<Visibility>,
    state: RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    start_hooks: Mutex<Vec<StartHook>>,
    stop_hooks: Mutex<Vec<StopHook>>,
    /// Run when a client pings this server as the one it is connected to.
    ping_hooks: Mutex<Vec<PingHook>>,
    /// Runs before this server lists its own components ([`Server::before_list`]).
    list_hook: arc_swap::ArcSwapOption<ListHook>,
    running: AtomicBool,
    /// Serializes copy-on-write updates of the registries.
    write: Mutex<()>,
    /// Seals the `requestState` of input rounds (see [`crate::input_rounds`]).
    seal: ArcSwap<crate::request_state::StateSeal>,
    /// List-changed announcements of this server and everything below it.
    changes: tokio::sync::broadcast::Sender<ListKind>,
    /// The URIs of resources that changed, here and below, as this server exposes them.
    updates: tokio::sync::broadcast::Sender<Arc<str>>,
    /// The servers this one is mounted in (weak: parents own their children).
    parents: Mutex<Vec<std::sync::Weak<ServerInner>>>,
    /// Decides whether a granted scope covers a required one; `None` is the parent's, or
    /// exact matching.
    scope_matcher: arc_swap::ArcSwapOption<Box<dyn crate::auth::ScopeMatcher>>,
    /// Whether listings leave out what the caller may not use.
    hide_unauthorized: AtomicBool,
    /// Whether anything in this tree has a requirement (see `access`).
    guarded: AtomicBool,
    /// Whether anything in this tree has a list hook (see `mirrors`).
    mirrors: AtomicBool,
}

#[derive(Default, Clone)]
struct Info {
    version: Option<String>,
    title: Option<String>,
    instructions: Option<String>,
}

/// Which components a server shows.
#[derive(Default, Clone)]
struct Visibility {
    only_tags: Option<BTreeSet<String>>,
    hidden_tags: BTreeSet<String>,
    hidden_names: BTreeSet<String>,
}

impl Visibility {
    fn allows(&self, name: &str, tags: &BTreeSet<String>) -> bool {
        if let Some(only) = &self.only_tags
            && only.is_disjoint(tags)
        {
            return false;
        }
        self.hidden_tags.is_disjoint(tags) && !self.hidden_names.contains(name)
    }
}

/// Where a resolved name leads.
pub(crate) enum Route {
    Local,
    Mount { child: Server, child_name: String },
}

pub(crate) struct Resolved {
    pub(crate) tool: Arc<RegisteredTool>,
    pub(crate) route: Route,
    /// The mounts with a requirement on the way to it.
    pub(crate) gates: access::Gates,
}

/// What [`Server::start`] returns: the running server, to [`stop`](RunningServer::stop).
#[must_use = "a running server should be stopped with `stop().await`"]
pub struct RunningServer {
    server: Server,
    entered: Vec<Server>,
    extensions: Vec<Arc<dyn Extension>>,
    stopped: bool,
}

impl RunningServer {
    /// The server.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let running = ferrymcp_core::Server::new("s").start().await.unwrap();
    /// assert_eq!(running.server().name(), "s");
    /// running.stop().await;
    /// # });
    /// ```
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Runs every stop hook (children before parents), then the extensions' `on_stop` (last
    /// registered first).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let running = ferrymcp_core::Server::new("s").start().await.unwrap();
    /// running.stop().await;
    /// # });
    /// ```
    pub async fn stop(mut self) {
        self.stopped = true;
        for server in self.entered.iter().rev() {
            let hooks = lock(&server.inner.stop_hooks).clone();
            for hook in hooks.iter().rev() {
                hook(server.clone()).await;
            }
        }
        for extension in self.extensions.iter().rev() {
            extension.on_stop(&self.server).await;
        }
        self.server.inner.running.store(false, Ordering::Release);
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if !self.stopped {
            tracing::warn!(
                server = %self.server.name(),
                "a running server was dropped without `stop().await`; its stop hooks did not run"
            );
            self.server.inner.running.store(false, Ordering::Release);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_PARAMS,
        format!("Unknown tool: '{name}'"),
        None,
    )
}

/// Starts and awaits a handler's future, turning a panic (while starting or running) into
/// an internal error, so bad input can never take the server down.
pub(crate) async fn guarded<T>(
    start: impl FnOnce() -> BoxFuture<'static, Result<T, ToolError>>,
) -> Result<T, ToolError> {
    let outcome = match std::panic::catch_unwind(AssertUnwindSafe(start)) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
        Err(panic) => Err(panic),
    };
    outcome.unwrap_or_else(|panic| {
        let message = panic_message(panic.as_ref());
        tracing::error!(panic = message, "handler panicked");
        Err(ToolError::internal(format!(
            "the handler panicked: {message}"
        )))
    })
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic with a non-string payload")
}

/// MCP method names a client may send; extensions cannot take them over.
pub(crate) const SPEC_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
];

impl Server {
    /// A server named `name` with nothing registered.
    ///
    /// Error details of failing tools are masked by default; see
    /// [`set_mask_error_details`](Self::set_mask_error_details).
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::Server::new("demo").name(), "demo");
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(ServerInner {
                name: name.into(),
                info: RwLock::new(Info::default()),
                mask_error_details: AtomicBool::new(true),
                call_timeout: AtomicU64::new(0),
                strict_input_validation: Arc::new(AtomicBool::new(false)),
                tools: ArcSwap::default(),
                resources: ArcSwap::default(),
                templates: ArcSwap::default(),
                prompts: ArcSwap::default(),
                mounts: ArcSwap::default(),
                middleware: ArcSwap::default(),
                extensions: ArcSwap::default(),
                extensions_any: ArcSwap::default(),
                methods: ArcSwap::default(),
                visibility: ArcSwap::default(),
                state: RwLock::default(),
                start_hooks: Mutex::default(),
                stop_hooks: Mutex::default(),
                ping_hooks: Mutex::default(),
                list_hook: arc_swap::ArcSwapOption::empty(),
                running: AtomicBool::new(false),
                write: Mutex::new(()),
                changes: tokio::sync::broadcast::channel(changes::CHANNEL_CAPACITY).0,
                updates: tokio::sync::broadcast::channel(updates::UPDATES_CAPACITY).0,
                seal: ArcSwap::from_pointee(crate::request_state::StateSeal::random()),
                parents: Mutex::default(),
                scope_matcher: arc_swap::ArcSwapOption::empty(),
                hide_unauthorized: AtomicBool::new(true),
                guarded: AtomicBool::new(false),
                mirrors: AtomicBool::new(false),
            }),
        }
    }

    /// The server's name (`serverInfo.name`).
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::Server::new("x").name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Sets the server's version (`serverInfo.version`). Like every setter of a server,
    /// it changes the server every clone of this handle shares.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("x");
    /// s.set_version("1.2.3");
    /// assert_eq!(s.version().as_deref(), Some("1.2.3"));
    /// ```
    pub fn set_version(&self, version: impl std::fmt::Display) {
        self.info_mut().version = Some(version.to_string());
    }

    /// Sets the human-readable title (`serverInfo.title`).
    ///
    /// ```
    /// ferrymcp_core::Server::new("x").set_title("The X server");
    /// ```
    pub fn set_title(&self, title: impl Into<String>) {
        self.info_mut().title = Some(title.into());
    }

    /// Sets the instructions clients may show a model; sessions that start from then on get
    /// them.
    ///
    /// ```
    /// ferrymcp_core::Server::new("x").set_instructions("Use add for sums.");
    /// ```
    pub fn set_instructions(&self, instructions: impl Into<String>) {
        self.info_mut().instructions = Some(instructions.into());
    }

    /// Sets the key that seals `requestState` in input rounds: exactly 32 bytes. Without
    /// it each process uses a random key, so set the same key on every replica that may
    /// receive a client's retry. The same as
    /// [`set_request_state_keys`](Self::set_request_state_keys) with one key.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.set_request_state_key([7u8; 32]).unwrap();
    /// assert!(s.set_request_state_key(b"short".to_vec()).is_err());
    /// ```
    pub fn set_request_state_key(&self, key: impl Into<Vec<u8>>) -> Result<(), ServerError> {
        self.set_request_state_keys([key.into()])
    }

    /// Sets the keyring that seals `requestState`: the first key (the current one) seals,
    /// and every key opens. Each key is exactly 32 bytes.
    ///
    /// A sealed `requestState` is encrypted and authenticated (XChaCha20-Poly1305), so the
    /// client can neither read the handler's state nor change it, and it opens only for the
    /// request it was issued for: the same caller ([`Principal`](crate::auth::Principal) or
    /// anonymous), method, target (tool name, resource URI or prompt name) and arguments
    /// (compared as JSON values, whatever their member order), before it expires. To rotate, put the new key first
    /// and keep the old ones after it for as long as their values may still come back
    /// (the TTL, [`set_request_state_ttl`](Self::set_request_state_ttl)); a value sealed
    /// with a key no longer in the ring is rejected with `-32602`.
    ///
    /// ```
    /// let (new, old) = ([2u8; 32], [1u8; 32]);
    /// let s = ferrymcp_core::Server::new("s");
    /// s.set_request_state_keys([new, old]).unwrap();
    /// assert!(s.set_request_state_keys(Vec::<[u8; 32]>::new()).is_err());
    /// ```
    pub fn set_request_state_keys<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<(), ServerError> {
        let ttl = self.inner.seal.load().ttl();
        let seal = crate::request_state::StateSeal::with_keys(keys, ttl)
            .map_err(|e| ServerError::RequestStateKey(e.to_string()))?;
        self.inner.seal.store(Arc::new(seal));
        Ok(())
    }

    /// Sets how long a sealed `requestState` stays valid (default 15 minutes): a client
    /// that retries later is rejected with `-32602` and starts the request again.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = ferrymcp_core::Server::new("s");
    /// s.set_request_state_ttl(Duration::from_secs(60));
    /// assert_eq!(s.request_state_ttl(), Duration::from_secs(60));
    /// ```
    pub fn set_request_state_ttl(&self, ttl: std::time::Duration) {
        let seal = self.inner.seal.load().with_ttl(ttl);
        self.inner.seal.store(Arc::new(seal));
    }

    /// How long a sealed `requestState` stays valid.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// assert_eq!(s.request_state_ttl(), std::time::Duration::from_secs(15 * 60));
    /// ```
    pub fn request_state_ttl(&self) -> std::time::Duration {
        self.inner.seal.load().ttl()
    }

    /// The seal for input-round state.
    pub(crate) fn state_seal(&self) -> Arc<crate::request_state::StateSeal> {
        self.inner.seal.load_full()
    }

    /// The server's version, if set.
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("x").version().is_none());
    /// ```
    pub fn version(&self) -> Option<String> {
        self.info().version.clone()
    }

    /// The instructions clients are given, if set. A served server gives each new session
    /// the instructions it has when the session starts.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("x");
    /// assert!(s.instructions().is_none());
    /// s.set_instructions("Use add for sums.");
    /// assert_eq!(s.instructions().as_deref(), Some("Use add for sums."));
    /// ```
    pub fn instructions(&self) -> Option<String> {
        self.info().instructions.clone()
    }

    fn info(&self) -> std::sync::RwLockReadGuard<'_, Info> {
        self.inner
            .info
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn info_mut(&self) -> std::sync::RwLockWriteGuard<'_, Info> {
        self.inner
            .info
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a failing tool's error text is hidden from clients (default `true`): masked,
    /// the client reads `Error calling tool '<name>'`; unmasked, `...: <error>`.
    /// The owning server's setting applies.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("x");
    /// s.set_mask_error_details(false);
    /// assert!(!s.masks_error_details());
    /// ```
    pub fn set_mask_error_details(&self, mask: bool) {
        self.inner.mask_error_details.store(mask, Ordering::Relaxed);
    }

    /// See [`set_mask_error_details`](Self::set_mask_error_details).
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("x").masks_error_details());
    /// ```
    pub fn masks_error_details(&self) -> bool {
        self.inner.mask_error_details.load(Ordering::Relaxed)
    }

    /// Bounds how long a synchronous call of a tool without its own
    /// [`ToolDef::timeout`](crate::ToolDef::timeout) may run: this server's tools, and those mounted below it that
    /// neither set one nor sit on a server with its own default. Past it the client gets a
    /// `-32000` error, `Tool '<name>' execution timed out after <t>s` (the name the client
    /// called), the handler's future is dropped and its
    /// [`Context::cancellation`] token fires. No default is set (calls are unbounded); a
    /// zero duration removes it. Runs as background tasks are not bounded by it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = ferrymcp_core::Server::new("s");
    /// s.set_call_timeout(Duration::from_secs(30));
    /// assert_eq!(s.call_timeout(), Some(Duration::from_secs(30)));
    /// ```
    pub fn set_call_timeout(&self, timeout: Duration) {
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        self.inner.call_timeout.store(nanos, Ordering::Relaxed);
    }

    /// The default set with [`set_call_timeout`](Self::set_call_timeout), if any.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::Server::new("s").call_timeout(), None);
    /// ```
    pub fn call_timeout(&self) -> Option<Duration> {
        match self.inner.call_timeout.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }

    /// Strict input validation: no lenient coercion (`"1"` stays a string and fails an
    /// integer parameter). Off by default.
    ///
    /// ```
    /// let _ = ferrymcp_core::Server::new("x").strict_input_validation(true);
    /// ```
    pub fn strict_input_validation(self, strict: bool) -> Self {
        self.inner
            .strict_input_validation
            .store(strict, Ordering::Relaxed);
        self
    }

    /// A handle that does not keep this server alive (for background tasks that should
    /// end with it).
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("x");
    /// let weak = s.downgrade();
    /// assert!(weak.upgrade().is_some_and(|again| again.ptr_eq(&s)));
    /// drop(s);
    /// assert!(weak.upgrade().is_none());
    /// ```
    pub fn downgrade(&self) -> WeakServer {
        WeakServer(Arc::downgrade(&self.inner))
    }

    /// Whether `other` is this very server (not a copy).
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("x");
    /// assert!(s.ptr_eq(&s.clone()));
    /// assert!(!s.ptr_eq(&ferrymcp_core::Server::new("x")));
    /// ```
    pub fn ptr_eq(&self, other: &Server) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    // ---------------------------------------------------------------- registration

    /// Mounts `child` into this server: under a namespace (`"ns"`), with none (`None`), or
    /// with [`MountOptions`] (renames). See [`mount`](crate::mount).
    ///
    /// ```
    /// use ferrymcp_core::Server;
    /// let (parent, child) = (Server::new("parent"), Server::new("child"));
    /// parent.mount(&child, "child").unwrap();
    /// parent.mount(&Server::new("flat"), None).unwrap();
    /// assert_eq!(parent.mounted().len(), 2);
    /// ```
    pub fn mount(
        &self,
        child: &Server,
        options: impl Into<MountOptions>,
    ) -> Result<(), ServerError> {
        if self.ptr_eq(child) {
            return Err(ServerError::MountSelf);
        }
        if child.tree().iter().any(|s| s.ptr_eq(self)) {
            return Err(ServerError::MountCycle {
                parent: self.name().to_owned(),
                child: child.name().to_owned(),
            });
        }
        let mount = Arc::new(Mount::new(child.clone(), options.into())?);
        let guarded = !mount.requirement.is_none();
        let _write = lock(&self.inner.write);
        let mut mounts = Vec::clone(&self.inner.mounts.load());
        mounts.push(mount);
        self.inner.mounts.store(Arc::new(mounts));
        drop(_write);
        child.add_parent(self);
        if guarded || child.is_guarded() {
            self.mark_guarded();
        }
        if child.mirrors() {
            self.mark_mirroring();
        }
        for kind in ListKind::ALL {
            self.announce(kind);
        }
        Ok(())
    }

    /// The directly mounted children, in mount order.
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("s").mounted().is_empty());
    /// ```
    pub fn mounted(&self) -> Vec<Server> {
        self.inner
            .mounts
            .load()
            .iter()
            .map(|m| m.child.clone())
            .collect()
    }

    /// This server and every server mounted below it, each once, parents first.
    fn tree(&self) -> Vec<Server> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut stack = vec![self.clone()];
        while let Some(server) = stack.pop() {
            if !seen.insert(Arc::as_ptr(&server.inner)) {
                continue;
            }
            let mounts = server.inner.mounts.load();
            for mount in mounts.iter().rev() {
                stack.push(mount.child.clone());
            }
            out.push(server);
        }
        out
    }

    /// Adds a middleware; the first added is outermost.
    ///
    /// ```
    /// struct Nop;
    /// impl ferrymcp_core::Middleware for Nop {}
    /// ferrymcp_core::Server::new("s").add_middleware(Nop);
    /// ```
    pub fn add_middleware(&self, middleware: impl Middleware) -> &Self {
        let _write = lock(&self.inner.write);
        let mut chain = Vec::clone(&self.inner.middleware.load());
        chain.push(Arc::new(middleware));
        self.inner.middleware.store(Arc::new(chain));
        self
    }

    /// Registers an extension (see [`extension`](crate::extension)). Fails on a duplicate
    /// identifier, a method that belongs to the MCP specification, or a running server.
    ///
    /// ```
    /// struct Ext;
    /// #[async_trait::async_trait]
    /// impl ferrymcp_core::Extension for Ext { fn id(&self) -> &str { "com.example/ext" } }
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_extension(Ext).unwrap();
    /// assert!(s.add_extension(Ext).is_err());
    /// ```
    pub fn add_extension<E: Extension>(&self, extension: E) -> Result<(), ServerError> {
        let typed = Arc::new(extension);
        let extension: Arc<dyn Extension> = typed.clone();
        let id = extension.id().to_owned();
        if self.inner.running.load(Ordering::Acquire) {
            return Err(ServerError::AlreadyStarted(self.name().to_owned()));
        }
        let methods = extension.methods();
        if let Some(method) = methods.iter().find(|m| SPEC_METHODS.contains(&m.as_str())) {
            return Err(ServerError::ReservedMethod {
                extension: id,
                method: method.clone(),
            });
        }
        let _write = lock(&self.inner.write);
        let mut extensions = Vec::clone(&self.inner.extensions.load());
        if extensions.iter().any(|e| e.id() == id) {
            return Err(ServerError::DuplicateExtension(id));
        }
        let mut table = HashMap::clone(&self.inner.methods.load());
        for method in methods {
            table.insert(method, Arc::clone(&extension));
        }
        extensions.push(extension);
        let mut typed_list = Vec::clone(&self.inner.extensions_any.load());
        typed_list.push(typed);
        self.inner.extensions.store(Arc::new(extensions));
        self.inner.extensions_any.store(Arc::new(typed_list));
        self.inner.methods.store(Arc::new(table));
        Ok(())
    }

    /// The extension of type `E` registered here, if any.
    ///
    /// ```
    /// struct Ext;
    /// #[async_trait::async_trait]
    /// impl ferrymcp_core::Extension for Ext { fn id(&self) -> &str { "com.example/ext" } }
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_extension(Ext).unwrap();
    /// assert!(s.extension_as::<Ext>().is_some());
    /// ```
    pub fn extension_as<E: Extension>(&self) -> Option<Arc<E>> {
        self.inner
            .extensions_any
            .load()
            .iter()
            .find_map(|e| Arc::clone(e).downcast::<E>().ok())
    }

    /// The extension registered here under `id`.
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("s").extension("x").is_none());
    /// ```
    pub fn extension(&self, id: &str) -> Option<Arc<dyn Extension>> {
        self.inner
            .extensions
            .load()
            .iter()
            .find(|e| e.id() == id)
            .cloned()
    }

    /// The extensions registered here, in order.
    pub(crate) fn extension_list(&self) -> Arc<Vec<Arc<dyn Extension>>> {
        self.inner.extensions.load_full()
    }

    /// The settings every registered extension advertises, by identifier.
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("s").extension_settings().is_empty());
    /// ```
    pub fn extension_settings(&self) -> std::collections::BTreeMap<String, JsonObject> {
        self.inner
            .extensions
            .load()
            .iter()
            .map(|e| (e.id().to_owned(), e.settings()))
            .collect()
    }

    /// Attaches typed state, read by tools through [`State`](crate::State).
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.insert_state(42u32);
    /// assert_eq!(s.state::<u32>(), Some(42));
    /// ```
    pub fn insert_state<T: Clone + Send + Sync + 'static>(&self, value: T) {
        self.inner
            .state
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// This server's state of type `T`, if any.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::Server::new("s").state::<u32>(), None);
    /// ```
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
            .cloned()
    }

    /// Runs `hook` when the server (or a root it is mounted into) starts, once per start
    /// however deep the server sits. Parents' hooks run before their children's.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.on_start(|server| async move {
    ///     server.insert_state(String::from("ready"));
    ///     Ok(())
    /// });
    /// ```
    pub fn on_start<F, Fut>(&self, hook: F) -> &Self
    where
        F: Fn(Server) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        lock(&self.inner.start_hooks).push(Arc::new(move |s| Box::pin(hook(s))));
        self
    }

    /// Runs `hook` when the server stops; children's hooks run before their parents'.
    ///
    /// ```
    /// ferrymcp_core::Server::new("s").on_stop(|_server| async {});
    /// ```
    pub fn on_stop<F, Fut>(&self, hook: F) -> &Self
    where
        F: Fn(Server) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        lock(&self.inner.stop_hooks).push(Arc::new(move |s| Box::pin(hook(s))));
        self
    }

    /// Runs `hook` when a client pings this server (a 2025-11-25 `ping`; 2026-07-28 has
    /// none), before the answer: an error is the ping's answer. Only the hooks of the server
    /// the client is connected to run, not those of servers mounted into it. A proxy uses it
    /// to pass the ping on to its upstream. Without hooks a ping is answered at once.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.on_ping(|server| async move {
    ///     tracing::debug!(server = server.name(), "pinged");
    ///     Ok(())
    /// });
    /// ```
    pub fn on_ping<F, Fut>(&self, hook: F) -> &Self
    where
        F: Fn(Server) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ErrorData>> + Send + 'static,
    {
        lock(&self.inner.ping_hooks).push(Arc::new(move |s| Box::pin(hook(s))));
        self
    }

    /// Runs the ping hooks in the order they were added; the first error ends the ping.
    pub(crate) async fn pinged(&self) -> Result<(), ErrorData> {
        let hooks = lock(&self.inner.ping_hooks).clone();
        for hook in hooks {
            hook(self.clone()).await?;
        }
        Ok(())
    }

    /// Runs `hook` each time this server is about to list its own components of a kind (a
    /// `tools/list`, `resources/list`, `resources/templates/list` or `prompts/list` reaching
    /// it, directly or through a mount above it), and waits for it. A server whose
    /// components mirror another source refreshes them here; what the hook adds or removes
    /// is in the listing it precedes. An error fails this server's listing: the client gets
    /// it, or a parent lists without this server, with a warning. A later call replaces the
    /// hook.
    ///
    /// The hook also runs when a request (`tools/call`, `prompts/get`, `resources/read`, or
    /// a background run of a task) names a component of its kind that would be this
    /// server's but that nothing has; the name is looked up again once the hook is done. A
    /// tool the source added since the last list can so be called without listing first.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use ferrymcp_core::{ListKind, Server};
    /// let s = Server::new("mirror");
    /// s.before_list(|server, kind| async move {
    ///     if kind == ListKind::Tools {
    ///         let _ = server.tool("late", || async {}); // a duplicate the second time
    ///     }
    ///     Ok(())
    /// });
    /// assert_eq!(s.list_tools().await.unwrap().len(), 1);
    ///
    /// let fresh = Server::new("fresh");
    /// fresh.before_list(|server, _kind| async move {
    ///     let _ = server.tool("late", || async { "here" });
    ///     Ok(())
    /// });
    /// assert!(fresh.call_tool("late", serde_json::json!({})).await.is_ok());
    /// # });
    /// ```
    pub fn before_list<F, Fut>(&self, hook: F) -> &Self
    where
        F: Fn(Server, ListKind) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ErrorData>> + Send + 'static,
    {
        let hook: ListHook = Arc::new(move |server, kind| Box::pin(hook(server, kind)));
        self.inner.list_hook.store(Some(Arc::new(hook)));
        self.mark_mirroring();
        self
    }

    /// Runs the [`before_list`](Self::before_list) hook, if there is one.
    pub(crate) async fn run_list_hook(&self, kind: ListKind) -> Result<(), ErrorData> {
        let hook = self.inner.list_hook.load_full();
        match hook {
            Some(hook) => hook(self.clone(), kind).await,
            None => Ok(()),
        }
    }

    fn update_visibility(&self, change: impl FnOnce(&mut Visibility)) {
        let _write = lock(&self.inner.write);
        let mut visibility = Visibility::clone(&self.inner.visibility.load());
        change(&mut visibility);
        self.inner.visibility.store(Arc::new(visibility));
        drop(_write);
        for kind in ListKind::ALL {
            self.announce(kind);
        }
    }

    /// Applies a copy-on-write change to one of the registries.
    fn update<C, T, E>(
        &self,
        slot: &ArcSwap<Registry<C>>,
        change: impl FnOnce(&mut Registry<C>) -> Result<T, E>,
    ) -> Result<T, E> {
        let _write = lock(&self.inner.write);
        let mut registry = Registry::clone(&slot.load());
        let out = change(&mut registry)?;
        slot.store(Arc::new(registry));
        Ok(out)
    }

    /// Removes every version of `key` from a registry, announcing the change.
    fn remove_from<C: Registered>(
        &self,
        slot: &ArcSwap<Registry<C>>,
        key: &str,
        kind: ListKind,
    ) -> bool {
        let removed = self
            .update(slot, |r| Ok::<_, std::convert::Infallible>(r.remove(key)))
            .unwrap_or_else(|never| match never {});
        if removed {
            self.announce(kind);
        }
        removed
    }

    /// Parses a component's declared version.
    fn parse_version(
        &self,
        component: &'static str,
        name: &str,
        raw: Option<&str>,
    ) -> Result<Option<Version>, ServerError> {
        raw.map(|raw| {
            Version::new(raw.to_owned()).map_err(|source| ServerError::InvalidVersion {
                component,
                name: name.to_owned(),
                source,
            })
        })
        .transpose()
    }

    /// Runs `message` through this server's middleware chain and unwraps the typed reply.
    pub(crate) async fn dispatch_typed<T>(
        &self,
        message: Message,
        run_middleware: bool,
        extract: fn(Reply) -> Option<T>,
    ) -> Result<T, ErrorData> {
        let method = message.method().to_owned();
        let reply = if run_middleware {
            self.dispatch(message).await?
        } else {
            self.endpoint(message).await?
        };
        extract(reply).ok_or_else(|| {
            ErrorData::internal_error(
                format!("a middleware answered {method} with a reply of another kind"),
                None,
            )
        })
    }

    /// Hides every component, local or mounted, carrying one of `tags`.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).tag("blocked")).unwrap();
    /// s.disable_tags(["blocked"]);
    /// assert!(s.get_tool("t", None).is_none());
    /// ```
    pub fn disable_tags<I: IntoIterator<Item = S>, S: Into<String>>(&self, tags: I) -> &Self {
        self.update_visibility(|v| v.hidden_tags.extend(tags.into_iter().map(Into::into)));
        self
    }

    /// Shows only components carrying at least one of `tags`.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// s.enable_only_tags(["allowed"]);
    /// assert!(s.get_tool("t", None).is_none());
    /// ```
    pub fn enable_only_tags<I: IntoIterator<Item = S>, S: Into<String>>(&self, tags: I) -> &Self {
        self.update_visibility(|v| {
            v.only_tags
                .get_or_insert_with(BTreeSet::new)
                .extend(tags.into_iter().map(Into::into));
        });
        self
    }

    /// Hides the tool called `name` at this server (namespaced names for mounted ones).
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.tool("t", || async {}).unwrap();
    /// s.disable_tool("t");
    /// assert!(s.get_tool("t", None).is_none());
    /// s.enable_tool("t");
    /// assert!(s.get_tool("t", None).is_some());
    /// ```
    pub fn disable_tool(&self, name: impl Into<String>) -> &Self {
        let name = name.into();
        self.update_visibility(|v| {
            v.hidden_names.insert(name);
        });
        self
    }

    /// Shows a tool hidden by [`disable_tool`](Self::disable_tool) again.
    ///
    /// ```
    /// ferrymcp_core::Server::new("s").enable_tool("t");
    /// ```
    pub fn enable_tool(&self, name: &str) -> &Self {
        self.update_visibility(|v| {
            v.hidden_names.remove(name);
        });
        self
    }

    // ---------------------------------------------------------------- other messages

    /// Sends any request through this server's middleware to the extension that answers it
    /// (e.g. `tasks/get`); `-32601` when none does.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// let err = s.request("nope/nothing", None, ferrymcp_core::RequestScope::new()).await.unwrap_err();
    /// assert_eq!(err.code.0, -32601);
    /// # });
    /// ```
    pub async fn request(
        &self,
        method: impl Into<String>,
        params: Option<Value>,
        scope: RequestScope,
    ) -> Result<Value, ErrorData> {
        let message = Message::Custom(CustomRequest {
            method: method.into(),
            params,
            cx: Context::new(self.clone(), scope),
        });
        match self.dispatch(message).await? {
            Reply::Custom(value) => Ok(value),
            _ => Err(ErrorData::internal_error(
                "a middleware answered a request with a reply of another kind",
                None,
            )),
        }
    }

    /// Runs any message through this server's middleware chain.
    pub(crate) async fn dispatch(&self, message: Message) -> Result<Reply, ErrorData> {
        let chain = self.inner.middleware.load_full();
        run_chain(self, &chain, message).await
    }

    /// The end of the middleware chain.
    pub(crate) fn endpoint(&self, message: Message) -> BoxFuture<'_, Result<Reply, ErrorData>> {
        match message {
            Message::CallTool(call) => {
                Box::pin(async move { self.call_endpoint(call).await.map(Reply::CallTool) })
            }
            Message::ListTools(list) => self.list_reply::<ToolInfo>(list.cx, list.run_middleware),
            Message::ListResources(list) => {
                self.list_reply::<ResourceInfo>(list.cx, list.run_middleware)
            }
            Message::ListResourceTemplates(list) => {
                self.list_reply::<TemplateInfo>(list.cx, list.run_middleware)
            }
            Message::ListPrompts(list) => {
                self.list_reply::<PromptInfo>(list.cx, list.run_middleware)
            }
            Message::ReadResource(read) => {
                Box::pin(async move { self.read_resolved(read).await.map(Reply::ReadResource) })
            }
            Message::GetPrompt(get) => {
                Box::pin(async move { self.get_prompt_resolved(get).await.map(Reply::GetPrompt) })
            }
            Message::Initialize(init) => Box::pin(std::future::ready(Ok(Reply::Initialize(
                Box::new(init.result),
            )))),
            Message::Discover(discover) => Box::pin(std::future::ready(Ok(Reply::Discover(
                Box::new(discover.result),
            )))),
            Message::Custom(request) if request.method == completions::METHOD => {
                Box::pin(async move {
                    self.complete_endpoint(request.cx, request.params)
                        .await
                        .map(Reply::Custom)
                })
            }
            Message::Custom(request) => Box::pin(async move {
                let extension = self.inner.methods.load().get(&request.method).cloned();
                match extension {
                    Some(extension) => extension
                        .handle_request(request.cx, &request.method, request.params)
                        .await
                        .map(Reply::Custom),
                    None => Err(ErrorData::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!("Method not found: {}", request.method),
                        None,
                    )),
                }
            }),
            Message::Notification(_) => Box::pin(std::future::ready(Ok(Reply::Notified))),
        }
    }

    /// The `initialize`/`server/discover` answer: identity, tools, extension settings.
    ///
    /// ```
    /// let server = ferrymcp_core::Server::new("demo");
    /// server.set_version("1.0");
    /// let config = server.server_config();
    /// assert_eq!(config.server_info.name, "demo");
    /// assert!(config.capabilities.tools.is_some());
    /// ```
    pub fn server_config(&self) -> ServerConfig {
        self.config_for(false)
    }

    /// The answer for a 2025-11-25 connection: without the extensions that apply only to
    /// 2026-07-28 ([`Extension::legacy_era`]).
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("demo").legacy_server_config().capabilities.extensions.is_none());
    /// ```
    pub fn legacy_server_config(&self) -> ServerConfig {
        self.config_for(true)
    }

    fn config_for(&self, legacy: bool) -> ServerConfig {
        let info = self.info().clone();
        // Every kind is advertised, with list_changed: components can be added at run time,
        // on this server or on anything mounted below it.
        #[allow(deprecated)] // logging: rmcp marks it deprecated (SEP-2577); the schema keeps it.
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_prompts_list_changed()
            .enable_resources_list_changed()
            .enable_tool_list_changed()
            .build();
        if self.has_completers() {
            capabilities.completions = Some(JsonObject::new());
        }
        let extensions: std::collections::BTreeMap<String, JsonObject> = self
            .inner
            .extensions
            .load()
            .iter()
            .filter(|e| !legacy || e.legacy_era())
            .map(|e| (e.id().to_owned(), e.settings()))
            .collect();
        if !extensions.is_empty() {
            capabilities.extensions = Some(extensions);
        }
        let mut implementation = Implementation::new(
            self.name(),
            info.version
                .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
        );
        if let Some(title) = info.title {
            implementation = implementation.with_title(title);
        }
        let mut config = ServerConfig::new(capabilities).with_server_info(implementation);
        if let Some(instructions) = info.instructions {
            config = config.with_instructions(instructions);
        }
        config
    }

    // ---------------------------------------------------------------- lifecycle

    /// Starts the server: checks the tree, runs extensions' `on_start` and every server's
    /// start hooks (each once, parents first). Serving over a transport does this for you.
    ///
    /// Fails when a tool anywhere in the tree declares a task mode and no tasks extension is
    /// registered here, or when a hook fails (everything started so far is stopped).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use ferrymcp_core::{Server, ServerError, ToolDef};
    /// let s = Server::new("s");
    /// s.add_tool(ToolDef::new("slow", || async {}).task(true)).unwrap();
    /// assert!(matches!(s.start().await, Err(ServerError::TasksExtensionMissing { .. })));
    /// # });
    /// ```
    pub async fn start(&self) -> Result<RunningServer, ServerError> {
        if self.inner.running.swap(true, Ordering::AcqRel) {
            return Err(ServerError::AlreadyStarted(self.name().to_owned()));
        }
        match self.start_inner().await {
            Ok(running) => Ok(running),
            Err(error) => {
                self.inner.running.store(false, Ordering::Release);
                Err(error)
            }
        }
    }

    async fn start_inner(&self) -> Result<RunningServer, ServerError> {
        let task_tools = self.task_tools();
        let runner = self
            .extension_list()
            .iter()
            .any(|extension| extension.runs_task_tools());
        if !task_tools.is_empty() && !runner {
            return Err(ServerError::TasksExtensionMissing {
                tools: task_tools.join(", "),
                id: TASKS_EXTENSION_ID,
            });
        }
        let mut running = RunningServer {
            server: self.clone(),
            entered: Vec::new(),
            extensions: Vec::new(),
            stopped: false,
        };
        let extensions = self.inner.extensions.load_full();
        for extension in extensions.iter() {
            if let Err(source) = extension.on_start(self).await {
                running.stopped = true;
                let what = format!("extension '{}'", extension.id());
                unwind(running).await;
                return Err(ServerError::Startup { what, source });
            }
            running.extensions.push(Arc::clone(extension));
        }
        for server in self.tree() {
            let hooks = lock(&server.inner.start_hooks).clone();
            for hook in hooks {
                if let Err(source) = hook(server.clone()).await {
                    let what = format!("a start hook of server '{}'", server.name());
                    running.entered.push(server);
                    running.stopped = true;
                    unwind(running).await;
                    return Err(ServerError::Startup { what, source });
                }
            }
            running.entered.push(server);
        }
        // After the start hooks, which may insert state.
        if let Some(error) = self.missing_state() {
            running.stopped = true;
            unwind(running).await;
            return Err(error);
        }
        Ok(running)
    }

    /// The first tool, resource, template or prompt of this tree that takes a `State<T>` its
    /// server does not have.
    fn missing_state(&self) -> Option<ServerError> {
        for server in self.tree() {
            let state = server
                .inner
                .state
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            let mut users: Vec<(String, Vec<crate::StateNeed>)> = Vec::new();
            for tool in server.inner.tools.load().iter() {
                users.push((tool.name.to_string(), tool.invoke.needs()));
            }
            for resource in server.inner.resources.load().iter() {
                let core = &resource.core;
                users.push((core.key.to_string(), core.needs.clone()));
            }
            for template in server.inner.templates.load().iter() {
                let core = &template.core;
                users.push((core.key.to_string(), core.needs.clone()));
            }
            for prompt in server.inner.prompts.load().iter() {
                users.push((prompt.name.to_string(), prompt.needs.clone()));
            }
            for (user, needs) in users {
                if let Some(need) = needs
                    .into_iter()
                    .find(|need| !state.contains_key(&need.type_id))
                {
                    return Some(ServerError::MissingState {
                        server: server.name().to_owned(),
                        tool: user,
                        type_name: need.type_name,
                    });
                }
            }
        }
        None
    }
}

/// Stops what a failed start had started, without touching `running` (the caller resets it).
async fn unwind(running: RunningServer) {
    for server in running.entered.iter().rev() {
        let hooks = lock(&server.inner.stop_hooks).clone();
        for hook in hooks.iter().rev() {
            hook(server.clone()).await;
        }
    }
    for extension in running.extensions.iter().rev() {
        extension.on_stop(&running.server).await;
    }
}

impl PartialEq for Server {
    /// Identity: the same server, not an equal one.
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other)
    }
}

impl Eq for Server {}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}
