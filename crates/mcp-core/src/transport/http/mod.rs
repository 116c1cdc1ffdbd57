//! Serving over Streamable HTTP, with axum and hyper.
//!
//! [`HttpServer`] binds an address and serves a [`Server`] at [`HttpConfig`]'s path (default
//! `/mcp`). It checks `Host` (loopback by default: a public deployment lists its host names)
//! and browser `Origin`s (loopback origins by default on a loopback address), and bounds what
//! a client can hold: connections, requests in progress, 2025-11-25 sessions, body size, and
//! the time to send headers and bodies or to sit idle. [`HttpConfig`] lists every limit with
//! its default. Refusals are answered with JSON-RPC error bodies and logged at most once per
//! kind every 10 s. Plain request/response calls are answered as JSON, and accepted sockets
//! get `TCP_NODELAY`: with SSE framing and Nagle on, each call costs about 44 ms on this stack.
//!
//! Tower layers and extra routes go on the served router with [`HttpServer::layer`],
//! [`HttpServer::route`] and [`HttpServer::merge`]; the limits stay outermost.

#[cfg(feature = "auth")]
mod bearer;
mod config;
mod connection;
mod endpoint;
mod modern;
mod operator_gate;
mod origin;
mod probe;
mod reject_log;
mod reply;
pub(crate) mod streams;

use std::{convert::Infallible, future::Future, net::SocketAddr, sync::Arc};

use axum::{
    Router,
    extract::Request,
    response::IntoResponse,
    routing::{MethodRouter, Route},
};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
    session::local::{LocalSessionManager, SessionConfig},
};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;
use tower::{Layer, Service};

pub use config::{DEFAULT_OPERATOR_SCOPE, HttpConfig, HttpConfigError};

use crate::{McpService, Server, ServerError};

impl Server {
    /// An axum router serving this server at `config`'s path, to nest into an application.
    /// It checks `Host` and `Origin`, the body size and time, and the session limit; the
    /// connection and in-flight limits and the header and idle timeouts belong to the
    /// application serving it. It does not start the server; [`HttpServer`] does.
    ///
    /// ```
    /// let router: axum::Router = ferrymcp_core::Server::new("demo")
    ///     .http_router(&ferrymcp_core::HttpConfig::new())
    ///     .expect("a valid config");
    /// ```
    pub fn http_router(&self, config: &HttpConfig) -> Result<Router, ServerError> {
        let log = Arc::new(reject_log::RejectLog::default());
        self.http_router_with(config, None, CancellationToken::new(), log)
    }

    fn http_router_with(
        &self,
        config: &HttpConfig,
        bound: Option<std::net::IpAddr>,
        shutdown: CancellationToken,
        log: Arc<reject_log::RejectLog>,
    ) -> Result<Router, ServerError> {
        let access = config.validate(bound).map_err(config_error)?;
        let mut session_config = SessionConfig::default();
        session_config.keep_alive = Some(config.session_idle_timeout);
        let mut sessions = LocalSessionManager::default();
        sessions.session_config = session_config;
        let sessions = Arc::new(sessions);
        let service = McpService::new(self.clone());
        let modern = Arc::new(modern::Modern::new(
            service.for_connection(),
            config.json_response,
        ));
        let resumable = Arc::new(streams::Sessions::new(
            Arc::clone(&sessions),
            config.sse_retry,
        ));
        let http = StreamableHttpService::new(
            move || Ok(service.for_connection()),
            resumable,
            StreamableHttpServerConfig::default()
                .with_json_response(config.json_response)
                .with_sse_retry(Some(config.sse_retry))
                .with_sse_keep_alive(config.sse_keep_alive)
                .with_cancellation_token(shutdown)
                .with_max_request_body_bytes(config.max_body_bytes)
                // Host and Origin are checked in front of rmcp, whose warnings are per request.
                .disable_allowed_hosts()
                .disable_allowed_origins(),
        );
        let sessions_gauge = {
            let sessions = Arc::downgrade(&sessions);
            crate::metrics::on_scrape(move || {
                let sessions = sessions.clone();
                Box::pin(async move {
                    let open = match sessions.upgrade() {
                        Some(sessions) => sessions.sessions.read().await.len(),
                        None => 0,
                    };
                    vec![crate::metrics::Reading::new(
                        "mcp_http_sessions",
                        open as f64,
                    )]
                })
            })
        };
        let endpoint = Arc::new(endpoint::Endpoint {
            _sessions_gauge: sessions_gauge,
            access,
            max_body_bytes: config.max_body_bytes,
            body_timeout: config.body_timeout,
            max_sessions: config.max_sessions,
            sessions,
            log,
            extensions: self.extension_list(),
            modern,
            #[cfg(feature = "auth")]
            gate: bearer::Gate::of(config, self),
        });
        #[cfg(feature = "auth")]
        let metadata = config.auth.as_ref().map(|resource| {
            (
                resource.metadata_paths(&config.path),
                Arc::new(resource.metadata().clone()),
            )
        });
        let router = Router::new()
            .route_service(&config.path, Shared(Arc::new(http)))
            .route_layer(axum::middleware::from_fn_with_state(
                endpoint,
                endpoint::guard,
            ));
        #[cfg(feature = "auth")]
        let router = match metadata {
            Some((paths, document)) => paths.into_iter().fold(router, |router, path| {
                let document = Arc::clone(&document);
                router.route(
                    &path,
                    axum::routing::get(move || {
                        let document = Arc::clone(&document);
                        async move {
                            (
                                // Browser clients read it from another origin.
                                [(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")],
                                axum::Json(document.as_ref().clone()),
                            )
                        }
                    }),
                )
            }),
            None => router,
        };
        Ok(router)
    }

    /// Starts the server and serves it over Streamable HTTP on `addr` until Ctrl-C or
    /// SIGTERM ([`shutdown_signal`](crate::shutdown_signal)), then lets open requests finish,
    /// with the default [`HttpConfig`]. [`serve_http_with`](Self::serve_http_with) takes a config and
    /// layers.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), ferrymcp_core::ServerError> {
    /// ferrymcp_core::Server::new("demo").serve_http("127.0.0.1:8000").await
    /// # }
    /// ```
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<(), ServerError> {
        self.serve_http_with(addr, HttpConfig::new(), |http| http)
            .await
    }

    /// Serves over Streamable HTTP on `addr` with `config` until Ctrl-C or SIGTERM, after `customize`
    /// adds layers or routes to the [`HttpServer`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), ferrymcp_core::ServerError> {
    /// ferrymcp_core::Server::new("demo")
    ///     .serve_http_with("127.0.0.1:8000", ferrymcp_core::HttpConfig::new(), |http| {
    ///         http.route("/healthz", axum::routing::get(|| async { "ok" }))
    ///     })
    ///     .await
    /// # }
    /// ```
    pub async fn serve_http_with(
        self,
        addr: impl ToSocketAddrs,
        config: HttpConfig,
        customize: impl FnOnce(HttpServer) -> HttpServer,
    ) -> Result<(), ServerError> {
        customize(HttpServer::bind(self, addr, config).await?)
            .run_until(crate::shutdown_signal())
            .await
    }
}

/// A service behind an `Arc`: the endpoint's middleware clones its inner service for every
/// request, and rmcp's carries its whole config; this one is cloned only when it is called.
#[derive(Clone)]
struct Shared<S>(Arc<S>);

impl<S, B> Service<http::Request<B>> for Shared<S>
where
    S: Service<http::Request<B>> + Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // rmcp's service is always ready; readiness is checked on the clone that is called.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        (*self.0).clone().call(request)
    }
}

/// Serves `router` alone on `listener` until `shutdown`, with [`HttpConfig`]'s default
/// connection, in-flight and time limits: for side listeners such as a worker's metrics.
#[cfg(feature = "metrics")]
pub(crate) async fn serve_router(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let defaults = HttpConfig::new();
    let token = CancellationToken::new();
    let stop = token.clone();
    let watcher = tokio::spawn(async move {
        shutdown.await;
        stop.cancel();
    });
    let limits = connection::Limits {
        max_connections: defaults.max_connections,
        max_in_flight: defaults.max_in_flight,
        header_timeout: defaults.header_timeout,
        idle_timeout: defaults.idle_timeout,
    };
    let log = Arc::new(reject_log::RejectLog::default());
    connection::serve(listener, router, limits, token, log).await;
    watcher.abort();
}

fn config_error(error: HttpConfigError) -> ServerError {
    ServerError::Startup {
        what: "the HTTP configuration".to_owned(),
        source: Box::new(error),
    }
}

/// A server bound to a TCP address, ready to serve Streamable HTTP.
///
/// Layers added with [`layer`](Self::layer) wrap the MCP endpoint and the routes added before
/// them, as [`axum::Router::layer`] does; the connection limit, the in-flight limit and the
/// timeouts of [`HttpConfig`] apply before any of them. This one lets a browser application
/// on `https://app.example.com` call the server (it must also be an allowed origin), reading
/// the session id and sending the MCP headers:
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use http::{HeaderName, HeaderValue, Method};
/// use ferrymcp_core::{HttpConfig, HttpServer, Server};
/// use tower_http::cors::CorsLayer;
///
/// let cors = CorsLayer::new()
///     .allow_origin(HeaderValue::from_static("https://app.example.com"))
///     .allow_methods([Method::GET, Method::POST, Method::DELETE])
///     .allow_headers([
///         http::header::CONTENT_TYPE,
///         http::header::ACCEPT,
///         http::header::AUTHORIZATION, // with an access token (the preflight carries none)
///         HeaderName::from_static("mcp-session-id"),
///         HeaderName::from_static("mcp-protocol-version"),
///         HeaderName::from_static("mcp-method"),
///         HeaderName::from_static("mcp-name"),
///         HeaderName::from_static("last-event-id"),
///     ])
///     .expose_headers([HeaderName::from_static("mcp-session-id")]);
/// let config = HttpConfig::new().allowed_origins(["https://app.example.com"]);
/// let http = HttpServer::bind(Server::new("demo"), "127.0.0.1:0", config)
///     .await
///     .unwrap()
///     .layer(cors)
///     .route("/healthz", axum::routing::get(|| async { "ok" }));
/// let url = format!("http://{}/mcp", http.local_addr());
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let serving = tokio::spawn(http.run_until(async { stopped.await.ok(); }));
/// # let _ = url;
/// stop.send(()).unwrap();
/// serving.await.unwrap().unwrap();
/// # });
/// ```
pub struct HttpServer {
    server: Server,
    listener: TcpListener,
    local_addr: SocketAddr,
    router: Router,
    limits: connection::Limits,
    shutdown: CancellationToken,
    log: Arc<reject_log::RejectLog>,
    operators: Arc<operator_gate::OperatorGate>,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port) after checking `config`: an empty
    /// `allowed_hosts` list, an origin that does not parse, or a limit of zero is an error.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default()).await.unwrap();
    /// assert_ne!(http.local_addr().port(), 0);
    /// # });
    /// ```
    pub async fn bind(
        server: Server,
        addr: impl ToSocketAddrs,
        config: HttpConfig,
    ) -> Result<Self, ServerError> {
        // Checked before binding, so a bad config does not take the port.
        config.validate(None).map_err(config_error)?;
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let log = Arc::new(reject_log::RejectLog::default());
        let router = server.http_router_with(
            &config,
            Some(local_addr.ip()),
            shutdown.clone(),
            log.clone(),
        )?;
        let operators = Arc::new(operator_gate::OperatorGate {
            access: config
                .validate(Some(local_addr.ip()))
                .map_err(config_error)?,
            log: log.clone(),
            #[cfg(feature = "auth")]
            gate: bearer::Gate::of(&config, &server),
            scope: config.operator_scope.clone(),
        });
        Ok(Self {
            operators,
            server,
            listener,
            local_addr,
            router,
            limits: connection::Limits {
                max_connections: config.max_connections,
                max_in_flight: config.max_in_flight,
                header_timeout: config.header_timeout,
                idle_timeout: config.idle_timeout,
            },
            shutdown,
            log,
        })
    }

    /// The bound address.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default()).await.unwrap();
    /// assert!(http.local_addr().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Wraps the MCP endpoint and the routes added so far in a tower layer (authentication,
    /// CORS, tracing, ...), as [`axum::Router::layer`]. The server's limits stay outside it.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default())
    ///     .await
    ///     .unwrap()
    ///     .layer(axum::middleware::map_response(|mut response: axum::response::Response| async {
    ///         response.headers_mut().insert("x-served-by", http::HeaderValue::from_static("ferrymcp"));
    ///         response
    ///     }));
    /// # let _ = http;
    /// # });
    /// ```
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.router = self.router.layer(layer);
        self
    }

    /// Adds a route beside the MCP endpoint, as [`axum::Router::route`]: a health check, a
    /// metadata document.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default())
    ///     .await
    ///     .unwrap()
    ///     .route("/healthz", axum::routing::get(|| async { "ok" }));
    /// # let _ = http;
    /// # });
    /// ```
    pub fn route(mut self, path: &str, method_router: MethodRouter) -> Self {
        self.router = self.router.route(path, method_router);
        self
    }

    /// Merges the routes of `router` beside the MCP endpoint, as [`axum::Router::merge`].
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let extra = axum::Router::new().route("/version", axum::routing::get(|| async { "1.0" }));
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default())
    ///     .await
    ///     .unwrap()
    ///     .merge(extra);
    /// # let _ = http;
    /// # });
    /// ```
    pub fn merge(mut self, router: Router) -> Self {
        self.router = self.router.merge(router);
        self
    }

    /// Merges `router`, routes for operators (an admin page, its API), behind the MCP
    /// endpoint's own checks: `Host` and `Origin`, and when the server takes bearer tokens
    /// ([`HttpConfig::auth`]), a valid token whose principal holds the operators' scope
    /// ([`HttpConfig::operator_scope`], `mcp:admin` unless set). The connection limits apply
    /// as to every route.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let admin = axum::Router::new().route("/admin/ping", axum::routing::get(|| async { "pong" }));
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default())
    ///     .await
    ///     .unwrap()
    ///     .merge_operator_routes(admin);
    /// # let _ = http;
    /// # });
    /// ```
    pub fn merge_operator_routes(mut self, router: Router) -> Self {
        let guarded = router.route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&self.operators),
            operator_gate::guard,
        ));
        self.router = self.router.merge(guarded);
        self
    }

    /// Starts the server, serves until `shutdown` completes, then stops accepting, lets open
    /// requests finish, and stops the server. [`start`](Self::start) splits the two steps,
    /// for a program that says it is ready only once the server has started.
    ///
    /// ```no_run
    /// # async fn run(http: ferrymcp_core::HttpServer) -> Result<(), ferrymcp_core::ServerError> {
    /// http.run_until(ferrymcp_core::shutdown_signal()).await
    /// # }
    /// ```
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        self.start().await?.run_until(shutdown).await
    }

    /// Starts the server (its extensions' start-up, such as reaching a task store) without
    /// accepting yet: an error here means nothing was served. Connections made meanwhile
    /// wait in the listener's backlog.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use ferrymcp_core::{HttpServer, Server};
    /// let http = HttpServer::bind(Server::new("demo"), "127.0.0.1:0", Default::default())
    ///     .await
    ///     .unwrap();
    /// let started = http.start().await.unwrap();
    /// println!("listening on http://{}/mcp", started.local_addr());
    /// started.run_until(async {}).await.unwrap();
    /// # });
    /// ```
    pub async fn start(self) -> Result<StartedHttpServer, ServerError> {
        let running = self.server.start().await?;
        Ok(StartedHttpServer {
            http: self,
            running,
        })
    }
}

/// An [`HttpServer`] whose server has started: [`run_until`](Self::run_until) accepts
/// connections. Dropped without running, it accepts nothing and its server's extensions
/// are left to their own drop.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{HttpServer, Server};
/// let http = HttpServer::bind(Server::new("demo"), "127.0.0.1:0", Default::default())
///     .await
///     .unwrap();
/// let started = http.start().await.unwrap();
/// assert!(started.local_addr().ip().is_loopback());
/// # });
/// ```
pub struct StartedHttpServer {
    http: HttpServer,
    running: crate::RunningServer,
}

impl StartedHttpServer {
    /// The bound address.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", Default::default()).await.unwrap();
    /// let port = http.local_addr().port();
    /// assert_eq!(http.start().await.unwrap().local_addr().port(), port);
    /// # });
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr
    }

    /// Serves until `shutdown` completes, then stops accepting, lets open requests finish,
    /// and stops the server.
    ///
    /// ```no_run
    /// # async fn run(http: ferrymcp_core::HttpServer) -> Result<(), ferrymcp_core::ServerError> {
    /// let started = http.start().await?;
    /// started.run_until(ferrymcp_core::shutdown_signal()).await
    /// # }
    /// ```
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let Self { http, running } = self;
        let token = http.shutdown;
        let stop = token.clone();
        let watcher = tokio::spawn(async move {
            shutdown.await;
            stop.cancel();
        });
        connection::serve(
            http.listener,
            http.router,
            http.limits,
            token.clone(),
            http.log,
        )
        .await;
        watcher.abort();
        token.cancel();
        running.stop().await;
        Ok(())
    }
}
