//! A server on a loopback port for tests, and a raw 2026-07-28 JSON-RPC client for it.

use mcp_core::{HttpConfig, HttpServer, Server, ServerError};
use serde_json::{Value, json};

/// A [`Server`] served over Streamable HTTP on `127.0.0.1` (a free port) until
/// [`shutdown`](Self::shutdown), with a client that posts raw 2026-07-28 requests.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use test_helpers::http::LoopbackHttp;
/// let http = LoopbackHttp::serve(mcp_core::Server::new("s")).await;
/// let (status, answer) = http.post_2026("tools/list", serde_json::json!({}), serde_json::json!({}), None).await;
/// assert_eq!(status, 200, "{answer}");
/// http.shutdown().await;
/// # });
/// ```
pub struct LoopbackHttp {
    url: String,
    client: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<Result<(), ServerError>>,
}

impl LoopbackHttp {
    /// Serves `server` with the default [`HttpConfig`].
    ///
    /// ```no_run
    /// # async fn run() {
    /// let http = test_helpers::http::LoopbackHttp::serve(mcp_core::Server::new("s")).await;
    /// # drop(http);
    /// # }
    /// ```
    pub async fn serve(server: Server) -> Self {
        Self::serve_with(server, HttpConfig::new()).await
    }

    /// Serves `server` with `config`.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let config = mcp_core::HttpConfig::new().max_in_flight(4);
    /// let http = test_helpers::http::LoopbackHttp::serve_with(mcp_core::Server::new("s"), config).await;
    /// # drop(http);
    /// # }
    /// ```
    pub async fn serve_with(server: Server, config: HttpConfig) -> Self {
        let http = HttpServer::bind(server, "127.0.0.1:0", config)
            .await
            .expect("bind a loopback port");
        let url = format!("http://{}{}", http.local_addr(), "/mcp");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(http.run_until(async move {
            let _ = stopped.await;
        }));
        Self {
            url,
            client: reqwest::Client::new(),
            stop,
            serving,
        }
    }

    /// The endpoint's URL (`http://127.0.0.1:<port>/mcp`).
    ///
    /// ```no_run
    /// # async fn run(http: test_helpers::http::LoopbackHttp) {
    /// assert!(http.url().starts_with("http://127.0.0.1:"));
    /// # }
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts one 2026-07-28 request as a conforming client does: `params._meta` with the
    /// protocol version, `capabilities` and a client name, the `Mcp-Method` header, and
    /// `Mcp-Name` when `name` is given. Returns the HTTP status and the JSON answer.
    ///
    /// ```no_run
    /// # async fn run(http: test_helpers::http::LoopbackHttp) {
    /// use serde_json::json;
    /// let (_, answer) = http
    ///     .post_2026("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}), json!({}), Some("add"))
    ///     .await;
    /// # drop(answer);
    /// # }
    /// ```
    pub async fn post_2026(
        &self,
        method: &str,
        mut params: Value,
        capabilities: Value,
        name: Option<&str>,
    ) -> (u16, Value) {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "test-helpers", "version": "0"},
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .expect("POST to the loopback server");
        let status = response.status().as_u16();
        let text = response.text().await.expect("the answer's body");
        let answer = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
        (status, answer)
    }

    /// Stops the server and waits until it has stopped cleanly.
    ///
    /// ```no_run
    /// # async fn run(http: test_helpers::http::LoopbackHttp) {
    /// http.shutdown().await;
    /// # }
    /// ```
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        self.serving
            .await
            .expect("the server task")
            .expect("the server stops cleanly");
    }
}
