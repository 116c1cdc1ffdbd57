//! A server on a loopback port for tests, and a raw 2026-07-28 JSON-RPC client for it.

use ferrymcp_core::{HttpConfig, HttpServer, Server, ServerError};
use serde_json::{Value, json};

/// A [`Server`] served over Streamable HTTP on `127.0.0.1` (a free port) until
/// [`shutdown`](Self::shutdown), with a client that posts raw 2026-07-28 requests.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ferrymcp_test_helpers::http::LoopbackHttp;
/// let http = LoopbackHttp::serve(ferrymcp_core::Server::new("s")).await;
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
    /// let http = ferrymcp_test_helpers::http::LoopbackHttp::serve(ferrymcp_core::Server::new("s")).await;
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
    /// let config = ferrymcp_core::HttpConfig::new().max_in_flight(4);
    /// let http = ferrymcp_test_helpers::http::LoopbackHttp::serve_with(ferrymcp_core::Server::new("s"), config).await;
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
    /// # async fn run(http: ferrymcp_test_helpers::http::LoopbackHttp) {
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
    /// # async fn run(http: ferrymcp_test_helpers::http::LoopbackHttp) {
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
        params: Value,
        capabilities: Value,
        name: Option<&str>,
    ) -> (u16, Value) {
        let answer = post(
            &self.client,
            &self.url,
            None,
            method,
            params,
            capabilities,
            name,
        )
        .await;
        assert!(!answer.body.is_null(), "not JSON: {answer:?}");
        (answer.status, answer.body)
    }

    /// Stops the server and waits until it has stopped cleanly.
    ///
    /// ```no_run
    /// # async fn run(http: ferrymcp_test_helpers::http::LoopbackHttp) {
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

/// What a server answered to one raw request: the HTTP status, its `WWW-Authenticate`
/// challenge (empty when there is none) and the JSON body (`Null` when it is not JSON; the
/// `data:` line of an SSE answer is read as JSON).
///
/// ```
/// let answer = ferrymcp_test_helpers::http::RawAnswer { status: 401, challenge: "Bearer".into(), body: serde_json::Value::Null };
/// assert_eq!(answer.status, 401);
/// ```
#[derive(Debug, Clone)]
pub struct RawAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The `WWW-Authenticate` header, or empty.
    pub challenge: String,
    /// The JSON body, or `Null`.
    pub body: Value,
}

/// Posts one 2026-07-28 request to `url` as a conforming client does (`params._meta` with
/// the protocol version, `capabilities` and a client name; `Mcp-Method`, and `Mcp-Name` from
/// `params.name`, `params.uri` or `params.taskId`), with `token` as its bearer token.
///
/// ```no_run
/// # async fn run() {
/// use serde_json::json;
/// let answer = ferrymcp_test_helpers::http::post_2026_to(
///     "http://127.0.0.1:8000/mcp", Some("eyJ..."), "tools/list", json!({}), json!({}),
/// )
/// .await;
/// assert_eq!(answer.status, 200, "{answer:?}");
/// # }
/// ```
pub async fn post_2026_to(
    url: &str,
    token: Option<&str>,
    method: &str,
    params: Value,
    capabilities: Value,
) -> RawAnswer {
    let name = ["name", "uri", "taskId"]
        .iter()
        .find_map(|key| params.get(*key).and_then(Value::as_str))
        .map(str::to_owned);
    post(
        &reqwest::Client::new(),
        url,
        token,
        method,
        params,
        capabilities,
        name.as_deref(),
    )
    .await
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    method: &str,
    mut params: Value,
    capabilities: Value,
    name: Option<&str>,
) -> RawAnswer {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "ferrymcp-test-helpers", "version": "0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .body(body.to_string())
        .timeout(std::time::Duration::from_secs(60))
        .send()
        .await
        .expect("POST to the server");
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("the answer's body");
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    let body = serde_json::from_str(json.trim()).unwrap_or(Value::Null);
    RawAnswer {
        status,
        challenge,
        body,
    }
}

/// An open `subscriptions/listen` over Streamable HTTP (2026-07-28): the messages of its
/// answer, read as they arrive (the acknowledgment, then the notifications; or one error).
///
/// ```no_run
/// # async fn run() {
/// use serde_json::json;
/// let mut listen = ferrymcp_test_helpers::http::Listen::open(
///     "http://127.0.0.1:8000/mcp",
///     json!({"taskIds": ["t1"]}),
///     json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
/// )
/// .await;
/// let ack = listen.next(std::time::Duration::from_secs(5)).await.expect("acknowledged");
/// assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
/// # }
/// ```
pub struct Listen {
    /// The HTTP status of the answer.
    pub status: u16,
    body: futures::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>,
    buffer: Vec<u8>,
    json: bool,
}

impl Listen {
    /// Posts `subscriptions/listen` with `filter` as its `notifications`, as a conforming
    /// client does (see [`post_2026_to`]).
    ///
    /// ```no_run
    /// # async fn run() {
    /// let _ = ferrymcp_test_helpers::http::Listen::open("http://127.0.0.1:8000/mcp", serde_json::json!({}), serde_json::json!({})).await;
    /// # }
    /// ```
    pub async fn open(url: &str, filter: Value, capabilities: Value) -> Listen {
        Self::open_as(url, None, filter, capabilities).await
    }

    /// [`open`](Self::open) with `token` as its bearer token.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let _ = ferrymcp_test_helpers::http::Listen::open_as(
    ///     "http://127.0.0.1:8000/mcp", Some("eyJ..."), serde_json::json!({}), serde_json::json!({}),
    /// ).await;
    /// # }
    /// ```
    pub async fn open_as(
        url: &str,
        token: Option<&str>,
        filter: Value,
        capabilities: Value,
    ) -> Listen {
        use futures::StreamExt as _;
        let params = json!({
            "notifications": filter,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "ferrymcp-test-helpers", "version": "0"},
            },
        });
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params});
        let mut request = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .expect("POST subscriptions/listen");
        let json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/json"));
        Listen {
            status: response.status().as_u16(),
            body: response.bytes_stream().boxed(),
            buffer: Vec::new(),
            json,
        }
    }

    /// The next message, waiting at most `within`; `None` when none came in time or the
    /// answer ended.
    ///
    /// ```no_run
    /// # async fn run(mut listen: ferrymcp_test_helpers::http::Listen) {
    /// while let Some(message) = listen.next(std::time::Duration::from_secs(1)).await {
    ///     println!("{message}");
    /// }
    /// # }
    /// ```
    pub async fn next(&mut self, within: std::time::Duration) -> Option<Value> {
        use futures::StreamExt as _;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(message) = self.take_message() {
                return Some(message);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.extend_from_slice(&chunk),
                Ok(None) if self.json && !self.buffer.is_empty() => {
                    let message = serde_json::from_slice(&self.buffer).ok();
                    self.buffer.clear();
                    return message;
                }
                _ => return None,
            }
        }
    }

    /// The first complete SSE event with JSON data in the buffer (comments, keep-alives and
    /// priming events without data are skipped).
    fn take_message(&mut self) -> Option<Value> {
        if self.json {
            return None;
        }
        loop {
            let end = self.buffer.windows(2).position(|w| w == b"\n\n")?;
            let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&event);
            let data: String = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if let Ok(message) = serde_json::from_str::<Value>(&data) {
                return Some(message);
            }
        }
    }
}
