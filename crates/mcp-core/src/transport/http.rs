//! Serving over Streamable HTTP, with axum.
//!
//! [`HttpConfig`] sets the path (default `/mcp`) and the allowed `Host` values (default:
//! loopback only, as rmcp does; a public deployment must list its host names). Plain
//! request/response calls are answered as JSON, and accepted sockets get `TCP_NODELAY`: with
//! SSE framing and Nagle on, each call costs about 44 ms on this stack.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{Router, serve::ListenerExt as _};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;

use crate::{McpService, Server, ServerError};

/// How the Streamable HTTP endpoint is served.
///
/// ```
/// let config = mcp_core::HttpConfig::new()
///     .path("/api/mcp")
///     .allowed_hosts(["mcp.example.com"]);
/// assert_eq!(config.path_str(), "/api/mcp");
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    path: String,
    allowed_hosts: Option<Vec<String>>,
    json_response: bool,
    sse_keep_alive: Option<Duration>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            allowed_hosts: None,
            json_response: true,
            sse_keep_alive: Some(Duration::from_secs(15)),
        }
    }
}

impl HttpConfig {
    /// `/mcp`, loopback hosts only, JSON responses.
    ///
    /// ```
    /// assert_eq!(mcp_core::HttpConfig::new().path_str(), "/mcp");
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The endpoint path.
    ///
    /// ```
    /// let _ = mcp_core::HttpConfig::new().path("/");
    /// ```
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The endpoint path.
    ///
    /// ```
    /// assert_eq!(mcp_core::HttpConfig::new().path_str(), "/mcp");
    /// ```
    pub fn path_str(&self) -> &str {
        &self.path
    }

    /// Accepts requests whose `Host` is one of `hosts` (DNS-rebinding protection), instead of
    /// loopback only.
    ///
    /// ```
    /// let _ = mcp_core::HttpConfig::new().allowed_hosts(["example.com", "example.com:8080"]);
    /// ```
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Answers with SSE streams instead of plain JSON bodies.
    ///
    /// ```
    /// let _ = mcp_core::HttpConfig::new().sse_responses();
    /// ```
    pub fn sse_responses(mut self) -> Self {
        self.json_response = false;
        self
    }

    fn rmcp_config(&self, shutdown: CancellationToken) -> StreamableHttpServerConfig {
        let mut config = StreamableHttpServerConfig::default()
            .with_json_response(self.json_response)
            .with_sse_keep_alive(self.sse_keep_alive)
            .with_cancellation_token(shutdown);
        if let Some(hosts) = &self.allowed_hosts {
            config = config.with_allowed_hosts(hosts.clone());
        }
        config
    }
}

impl Server {
    /// An axum router serving this server at `config`'s path, to nest into an application.
    /// It does not start the server; [`HttpServer`] does.
    ///
    /// ```
    /// let router: axum::Router = mcp_core::Server::new("demo").http_router(&mcp_core::HttpConfig::new());
    /// ```
    pub fn http_router(&self, config: &HttpConfig) -> Router {
        self.http_router_with(config, CancellationToken::new())
    }

    fn http_router_with(&self, config: &HttpConfig, shutdown: CancellationToken) -> Router {
        let service = McpService::new(self.clone());
        let http = StreamableHttpService::new(
            move || Ok(service.for_connection()),
            Arc::new(LocalSessionManager::default()),
            config.rmcp_config(shutdown),
        );
        Router::new()
            .route_service(&config.path, http)
            .layer(axum::middleware::from_fn(json_rpc_parse_errors))
    }

    /// Starts the server and serves it over Streamable HTTP on `addr` until Ctrl-C.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp_core::ServerError> {
    /// mcp_core::Server::new("demo").serve_http("127.0.0.1:8000").await
    /// # }
    /// ```
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<(), ServerError> {
        HttpServer::bind(self, addr, HttpConfig::new())
            .await?
            .run_until(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    }
}

/// The largest request body buffered, as rmcp's default: 4 MiB.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// rmcp answers a POST body it cannot deserialize with a plain-text `415`. JSON-RPC clients
/// expect an error object: `-32700` for text that is not JSON, `-32600` for JSON that is not a
/// JSON-RPC message. This layer keeps the body (a cheap reference-counted copy) and rewrites
/// exactly that answer; well-formed requests pass untouched.
async fn json_rpc_parse_errors(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return json_rpc_error(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                serde_json::Value::Null,
                mcp_types::codes::INVALID_REQUEST,
                format!("Invalid Request: the body exceeds {MAX_BODY} bytes"),
            )
            .into_response();
        }
    };
    let mut parts = parts;
    fill_missing_task_name(&mut parts.headers, &bytes);
    let response = next
        .run(axum::extract::Request::from_parts(
            parts,
            bytes.clone().into(),
        ))
        .await;
    if response.status() != http::StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    let (id, code, message) = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(error) => (
            serde_json::Value::Null,
            mcp_types::codes::PARSE_ERROR,
            format!("Parse error: {error}"),
        ),
        Ok(value) => match serde_json::from_value::<mcp_types::ClientJsonRpcMessage>(value.clone())
        {
            // A well-formed message refused for its media type: keep rmcp's answer.
            Ok(_) => return response,
            Err(error) => (
                value
                    .get("id")
                    .filter(|id| id.is_string() || id.is_number())
                    .cloned()
                    .unwrap_or(serde_json::Value::Null),
                mcp_types::codes::INVALID_REQUEST,
                format!("Invalid Request: {error}"),
            ),
        },
    };
    json_rpc_error(http::StatusCode::BAD_REQUEST, id, code, message).into_response()
}

/// FastMCP's Python client (4.1) sends `Mcp-Method` but no `Mcp-Name` on `tasks/get`,
/// `tasks/update` and `tasks/cancel`, which rmcp refuses (`-32020`), so no task of an
/// mcpkit server could be polled from it over HTTP. The header only repeats
/// `params.taskId` for routing, so a missing one is taken from the body; a header that is
/// present and disagrees with the body is still refused (SEP-2663 R48).
fn fill_missing_task_name(headers: &mut http::HeaderMap, body: &[u8]) {
    const NAME: &str = "mcp-name";
    let is_task_method = headers
        .get("mcp-method")
        .and_then(|method| method.to_str().ok())
        .is_some_and(|method| matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel"));
    if !is_task_method || headers.contains_key(NAME) {
        return;
    }
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return;
    };
    let task_id = message["params"]["taskId"].as_str();
    // A task id that is not a plain header value is left to rmcp's own refusal.
    if let Some(value) = task_id.and_then(|id| http::HeaderValue::from_str(id).ok()) {
        headers.insert(NAME, value);
    }
}

fn json_rpc_error(
    status: http::StatusCode,
    id: serde_json::Value,
    code: i32,
    message: String,
) -> (http::StatusCode, axum::Json<serde_json::Value>) {
    let mut body =
        serde_json::json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    // The MCP schema allows only a string or integer id: leave it out when unknown.
    if !id.is_null() {
        body["id"] = id;
    }
    (status, axum::Json(body))
}

/// A server bound to a TCP address, ready to serve Streamable HTTP.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use mcp_core::{HttpConfig, HttpServer, Server};
/// let http = HttpServer::bind(Server::new("demo"), "127.0.0.1:0", HttpConfig::new()).await.unwrap();
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
    config: HttpConfig,
    local_addr: SocketAddr,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = mcp_core::HttpServer::bind(mcp_core::Server::new("s"), "127.0.0.1:0", Default::default()).await.unwrap();
    /// assert_ne!(http.local_addr().port(), 0);
    /// # });
    /// ```
    pub async fn bind(
        server: Server,
        addr: impl ToSocketAddrs,
        config: HttpConfig,
    ) -> Result<Self, ServerError> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        Ok(Self {
            server,
            listener,
            config,
            local_addr,
        })
    }

    /// The bound address.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = mcp_core::HttpServer::bind(mcp_core::Server::new("s"), "127.0.0.1:0", Default::default()).await.unwrap();
    /// assert!(http.local_addr().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts the server, serves until `shutdown` completes, then stops the server.
    ///
    /// ```no_run
    /// # async fn run(http: mcp_core::HttpServer) -> Result<(), mcp_core::ServerError> {
    /// http.run_until(async { tokio::signal::ctrl_c().await.ok(); }).await
    /// # }
    /// ```
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let running = self.server.start().await?;
        let token = CancellationToken::new();
        let router = self.server.http_router_with(&self.config, token.clone());
        let listener = self.listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "could not set TCP_NODELAY");
            }
        });
        let stop = token.clone();
        let outcome = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                stop.cancel();
            })
            .await;
        token.cancel();
        running.stop().await;
        outcome.map_err(ServerError::Io)
    }
}
