//! [`ProxyServer`]: an `ferrymcp_core::Server` whose tools, resources, resource templates and
//! prompts are an upstream's.
//!
//! The server is built from the upstream's listings; each tool becomes a [`ProxyTool`] that
//! keeps every field, and each resource, template and prompt a definition that keeps every
//! field and forwards on use (`components.rs`). Each list reaching it reads the upstream's
//! list again and brings the components in line (`mirror.rs`), and so does each change the
//! upstream announces (`announcements.rs`), so clients get `list_changed` when the upstream
//! changes. It is an ordinary
//! [`Server`]: mount it under a namespace, wrap it in middleware, serve it.

use std::{collections::HashMap, sync::Arc, time::Duration};

use ferrymcp_core::{Server, TaskConfig};

use crate::{ProxyError, Upstream, mirror::Mirror};

/// What a proxy server keeps about its upstream, as server state (see [`upstream_of`]).
#[derive(Clone)]
pub(crate) struct ProxyState {
    pub(crate) upstream: Upstream,
}

/// The upstream behind a server built by [`ProxyServer`], if `server` is one.
///
/// ```
/// assert!(ferrymcp_proxy::upstream_of(&ferrymcp_core::Server::new("plain")).is_none());
/// ```
pub fn upstream_of(server: &Server) -> Option<Upstream> {
    server.state::<ProxyState>().map(|s| s.upstream)
}

/// Builds a [`Server`] that proxies an [`Upstream`].
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use ferrymcp_proxy::{CommandTarget, ProxyServer, Upstream};
/// let upstream = Upstream::command("github", CommandTarget::new("github-mcp").arg("stdio"));
/// let proxy = ProxyServer::new(upstream).build().await?;
/// let gateway = ferrymcp_core::Server::new("gateway");
/// gateway.mount(&proxy, "gh")?; // gh_<tool> for each upstream tool
/// # Ok(()) }
/// ```
pub struct ProxyServer {
    upstream: Upstream,
    name: Option<String>,
    task_modes: HashMap<String, TaskConfig>,
    relist_after: Duration,
}

impl ProxyServer {
    /// A builder for a proxy of `upstream`.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::ProxyServer::new(ferrymcp_proxy::Upstream::command("u", ferrymcp_proxy::CommandTarget::new("srv")));
    /// ```
    pub fn new(upstream: Upstream) -> Self {
        Self {
            upstream,
            name: None,
            task_modes: HashMap::new(),
            relist_after: Duration::ZERO,
        }
    }

    /// The local server's name (the upstream's name by default).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::ProxyServer::new(ferrymcp_proxy::Upstream::command("u", ferrymcp_proxy::CommandTarget::new("srv"))).name("front");
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Declares the task mode of the upstream tool `tool` on the local server, overriding the
    /// upstream's. With a local tasks extension on the root, opted-in calls of a tool whose
    /// upstream has no task support then run as local tasks.
    ///
    /// ```
    /// use ferrymcp_types::TaskSupport;
    /// let _ = ferrymcp_proxy::ProxyServer::new(ferrymcp_proxy::Upstream::command("u", ferrymcp_proxy::CommandTarget::new("srv")))
    ///     .task_mode("slow_report", TaskSupport::Optional);
    /// ```
    pub fn task_mode(mut self, tool: impl Into<String>, mode: impl Into<TaskConfig>) -> Self {
        self.task_modes.insert(tool.into(), mode.into());
        self
    }

    /// How old the proxy's copy of an upstream list may be before a list reaching the proxy
    /// reads it again. By default (zero) every `tools/list`, `resources/list`,
    /// `resources/templates/list` and `prompts/list` reads the upstream's, so clients see
    /// tools the upstream added or dropped since the proxy was built; a longer age spares an
    /// upstream that clients list often. Calls of known tools never list; a call of a
    /// tool the copy does not have (or a get or read of an unknown prompt or resource) reads
    /// that kind again first, under the same age, so a tool the upstream added since the last
    /// list can be called at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let _ = ferrymcp_proxy::ProxyServer::new(ferrymcp_proxy::Upstream::command("u", ferrymcp_proxy::CommandTarget::new("srv")))
    ///     .relist_after(Duration::from_secs(30));
    /// ```
    pub fn relist_after(mut self, age: Duration) -> Self {
        self.relist_after = age;
        self
    }

    /// Connects (or reuses the session), lists the upstream's tools, resources, templates and
    /// prompts, and returns the server. From then on the server follows what the upstream
    /// announces: a list the upstream says changed is read again at once (the proxy's
    /// clients get `list_changed`), and from a 2026-07-28 upstream that offers resource
    /// subscriptions, updates of every resource listed are relayed to the clients watching
    /// them. A 2026-07-28 upstream is asked for these on a `subscriptions/listen` stream,
    /// opened before the first list (the upstream has 10 s to acknowledge it).
    ///
    /// ```no_run
    /// # async fn run(u: ferrymcp_proxy::Upstream) -> Result<(), ferrymcp_proxy::ProxyError> {
    /// let server = ferrymcp_proxy::ProxyServer::new(u).build().await?;
    /// # Ok(()) }
    /// ```
    pub async fn build(self) -> Result<Server, ProxyError> {
        // Connecting first: an upstream that cannot be reached fails the build here.
        self.upstream.instructions().await?;
        let (server, mirror) = self.parts();
        // Listening before the first read: no change made after it goes unannounced.
        if let Some(listening) = mirror.follow(&server) {
            let _ = listening.await;
        }
        mirror.fill(&server).await?;
        Self::keep_up(&server, mirror);
        Ok(server)
    }

    /// Returns the server at once, without reaching the upstream. Each kind of component is
    /// read on the first list that reaches the server; until the upstream has answered, its
    /// lists fail with the reason (a parent lists without it, with a warning) and calls of
    /// its tools are unknown. It follows what the upstream announces from when it starts,
    /// or from its first list. It takes the upstream's instructions with its first read of
    /// the upstream: sessions that start before have none. For a server that should start
    /// whether or not its upstream is up.
    ///
    /// ```
    /// let upstream = ferrymcp_proxy::Upstream::http("api", ferrymcp_proxy::HttpTarget::new("http://127.0.0.1:1/mcp"));
    /// let proxy = ferrymcp_proxy::ProxyServer::new(upstream).build_lazy();
    /// assert_eq!(proxy.name(), "api");
    /// ```
    pub fn build_lazy(self) -> Server {
        let (server, mirror) = self.parts();
        Self::keep_up(&server, mirror);
        server
    }

    /// The empty server and the mirror that fills it.
    fn parts(self) -> (Server, Arc<Mirror>) {
        let name = self.name.unwrap_or_else(|| self.upstream.name().to_owned());
        let server = Server::new(name);
        server.insert_state(ProxyState {
            upstream: self.upstream.clone(),
        });
        // A ping of the proxy is a ping of its upstream: the client learns whether it is up.
        let pinged = self.upstream.clone();
        server.on_ping(move |_| {
            let upstream = pinged.clone();
            async move { upstream.ping().await.map_err(ProxyError::into_error_data) }
        });
        let mirror = Mirror::new(self.upstream, self.task_modes, self.relist_after);
        (server, Arc::new(mirror))
    }

    /// Has every list reaching `server` bring it in line with the upstream first.
    /// (Following the upstream's announcements starts here at the latest, for a server
    /// built lazily, perhaps outside a runtime: when it starts, or on its first list.)
    fn keep_up(server: &Server, mirror: Arc<Mirror>) {
        let starting = Arc::clone(&mirror);
        server.on_start(move |server| {
            drop(starting.follow(&server));
            async { Ok(()) }
        });
        server.before_list(move |server, kind| {
            let mirror = Arc::clone(&mirror);
            async move {
                drop(mirror.follow(&server));
                mirror.refresh(&server, kind).await
            }
        });
    }
}
