//! Recording what a server really puts on the wire, to validate it against the official
//! schemas: a stdio tee ([`spawn_stdio`]) and a recording HTTP proxy ([`record_http`]).
//!
//! rmcp's client parses into typed structs that drop unknown fields, so validating what the
//! client hands back would miss wire defects. These helpers keep the raw JSON instead.

use futures::StreamExt as _;
use std::{
    process::Stdio,
    sync::{Arc, Mutex, PoisonError},
};

use axum::{body::Body, extract::Request, response::Response};
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream},
    net::TcpListener,
    process::{Child, ChildStdin, Command},
    task::JoinHandle,
};

use crate::schema::{Spec, assert_valid, assert_valid_call_tool_result};

/// Every JSON-RPC message a server sent, in arrival order. Cheap to clone (shared).
///
/// ```
/// let log = ferrymcp_test_helpers::wire::WireLog::default();
/// assert!(log.messages().is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct WireLog(Arc<Mutex<Vec<Value>>>);

impl WireLog {
    fn push(&self, message: Value) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message);
    }

    /// A snapshot of the messages so far.
    ///
    /// ```
    /// assert_eq!(ferrymcp_test_helpers::wire::WireLog::default().messages().len(), 0);
    /// ```
    pub fn messages(&self) -> Vec<Value> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Validates every recorded message against the official 2026-07-28 schema (and the
    /// Tasks extension schema for task messages) and returns what it checked. `legacy` is for
    /// 2025-11-25 connections, whose results carry no `resultType`.
    ///
    /// Panics, with a readable report, on the first invalid message.
    ///
    /// ```
    /// let counts = ferrymcp_test_helpers::wire::WireLog::default().assert_valid(false);
    /// assert_eq!(counts.tools, 0);
    /// ```
    pub fn assert_valid(&self, legacy: bool) -> WireCounts {
        let mut counts = WireCounts::default();
        for message in self.messages() {
            if message.get("error").is_some() {
                assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &message);
                counts.errors += 1;
            } else if let Some(result) = message.get("result") {
                validate_result(result, legacy, &mut counts);
            } else if let Some(method) = message.get("method").and_then(Value::as_str) {
                validate_notification(method, &message, &mut counts);
            } else {
                counts.other += 1;
            }
        }
        counts
    }
}

/// Each list entry against `entry`, and the whole result against `whole` (2026 only:
/// legacy results carry no `resultType`).
fn validate_list(result: &Value, items: &[Value], entry: &str, whole: &str, legacy: bool) -> usize {
    for item in items {
        assert_valid(Spec::Mcp, entry, item);
    }
    if !legacy {
        assert_valid(Spec::Mcp, whole, result);
    }
    items.len()
}

fn validate_result(result: &Value, legacy: bool, counts: &mut WireCounts) {
    let list = |key: &str| result.get(key).and_then(Value::as_array).map(Vec::as_slice);
    let result_type = result.get("resultType").and_then(Value::as_str);
    if let Some(tools) = list("tools") {
        counts.tools += validate_list(result, tools, "Tool", "ListToolsResult", legacy);
    } else if let Some(resources) = list("resources") {
        counts.resources +=
            validate_list(result, resources, "Resource", "ListResourcesResult", legacy);
    } else if let Some(templates) = list("resourceTemplates") {
        counts.templates += validate_list(
            result,
            templates,
            "ResourceTemplate",
            "ListResourceTemplatesResult",
            legacy,
        );
    } else if let Some(prompts) = list("prompts") {
        counts.prompts += validate_list(result, prompts, "Prompt", "ListPromptsResult", legacy);
    } else if result_type == Some("task") {
        assert_valid(Spec::Tasks, "CreateTaskResult", result);
        counts.tasks += 1;
    } else if result_type == Some("input_required") {
        assert_valid(Spec::Mcp, "InputRequiredResult", result);
        counts.input_rounds += 1;
    } else if result.get("content").is_some() {
        assert_valid_call_tool_result(result, legacy);
        counts.call_results += 1;
    } else if let Some(contents) = list("contents") {
        for item in contents {
            assert_valid(Spec::Mcp, "ResourceContents", item);
        }
        if !legacy {
            assert_valid(Spec::Mcp, "ReadResourceResult", result);
        }
        counts.reads += 1;
    } else if let Some(messages) = list("messages") {
        for item in messages {
            assert_valid(Spec::Mcp, "PromptMessage", item);
        }
        if !legacy {
            assert_valid(Spec::Mcp, "GetPromptResult", result);
        }
        counts.prompt_results += 1;
    } else {
        counts.other += 1;
    }
}

fn validate_notification(method: &str, message: &Value, counts: &mut WireCounts) {
    let definition = match method {
        "notifications/message" => "LoggingMessageNotification",
        "notifications/progress" => "ProgressNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        _ => {
            counts.other += 1;
            return;
        }
    };
    assert_valid(Spec::Mcp, definition, message);
    counts.notifications += 1;
}

/// What [`WireLog::assert_valid`] checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireCounts {
    /// `Tool` entries of `tools/list` results.
    pub tools: usize,
    /// `CallToolResult`s.
    pub call_results: usize,
    /// `CreateTaskResult`s.
    pub tasks: usize,
    /// JSON-RPC error responses.
    pub errors: usize,
    /// `Resource` entries of `resources/list` results.
    pub resources: usize,
    /// `ResourceTemplate` entries of `resources/templates/list` results.
    pub templates: usize,
    /// `ReadResourceResult`s.
    pub reads: usize,
    /// `Prompt` entries of `prompts/list` results.
    pub prompts: usize,
    /// `GetPromptResult`s.
    pub prompt_results: usize,
    /// `InputRequiredResult`s.
    pub input_rounds: usize,
    /// Log, progress and list-changed notifications.
    pub notifications: usize,
    /// Anything else (discover, initialize, notifications...).
    pub other: usize,
}

/// A child process speaking MCP over stdio, with its stdout teed into a [`WireLog`].
pub struct StdioChild {
    /// The process (killed when dropped).
    pub child: Child,
    /// What it wrote to stdout.
    pub log: WireLog,
    /// The client's end: read the server's messages here, write to `stdin`.
    pub transport: (DuplexStream, ChildStdin),
}

/// Spawns `command` with piped stdin and stdout (stderr inherited) and tees its stdout.
/// Give `transport` to an rmcp client: `client.serve(child.transport)`.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// let mut command = tokio::process::Command::new("target/debug/examples/demo");
/// let child = ferrymcp_test_helpers::wire::spawn_stdio(&mut command)?;
/// # Ok(()) }
/// ```
pub fn spawn_stdio(command: &mut Command) -> std::io::Result<StdioChild> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the child has no stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("the child has no stdout"))?;
    let log = WireLog::default();
    let (client_end, mut tee) = tokio::io::duplex(1 << 20);
    let recorder = log.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match lines.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let message = serde_json::from_str(line.trim_end())
                .unwrap_or_else(|_| Value::String(format!("<not JSON> {line}")));
            recorder.push(message);
            if tee.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    Ok(StdioChild {
        child,
        log,
        transport: (client_end, stdin),
    })
}

/// One POST a client sent: its headers (names lowercase) and its JSON body.
#[derive(Debug, Clone)]
pub struct RecordedPost {
    /// Every header, in order; a repeated header appears once per value.
    pub headers: Vec<(String, String)>,
    /// The body, or `Value::Null` when it is not JSON.
    pub body: Value,
}

impl RecordedPost {
    /// The first value of header `name` (lowercase).
    ///
    /// ```
    /// let post = ferrymcp_test_helpers::wire::RecordedPost {
    ///     headers: vec![("mcp-method".into(), "tools/call".into())],
    ///     body: serde_json::Value::Null,
    /// };
    /// assert_eq!(post.header("mcp-method"), Some("tools/call"));
    /// ```
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every POST a client sent through an [`HttpRecorder`], in arrival order. Cheap to clone.
///
/// ```
/// let posts = ferrymcp_test_helpers::wire::PostLog::default();
/// assert!(posts.posts().is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct PostLog(Arc<Mutex<Vec<RecordedPost>>>);

impl PostLog {
    fn push(&self, post: RecordedPost) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(post);
    }

    /// A snapshot of the POSTs so far.
    ///
    /// ```
    /// assert_eq!(ferrymcp_test_helpers::wire::PostLog::default().posts().len(), 0);
    /// ```
    pub fn posts(&self) -> Vec<RecordedPost> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A recording reverse proxy in front of a Streamable HTTP endpoint.
pub struct HttpRecorder {
    /// The proxy's URL: point the client here.
    pub url: String,
    /// Every JSON-RPC message the upstream answered with.
    pub log: WireLog,
    /// Every POST the client sent, headers included.
    pub posts: PostLog,
    task: JoinHandle<()>,
}

impl Drop for HttpRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a proxy on a free loopback port that forwards everything to `upstream` (a full
/// URL such as `http://127.0.0.1:8000/mcp`) and records the JSON-RPC messages in every
/// response: plain JSON bodies and the `data:` lines of SSE bodies answering a POST.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// let recorder = ferrymcp_test_helpers::wire::record_http("http://127.0.0.1:8000/mcp").await?;
/// // connect the client to recorder.url ...
/// recorder.log.assert_valid(false);
/// # Ok(()) }
/// ```
pub async fn record_http(upstream: &str) -> std::io::Result<HttpRecorder> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let upstream: Arc<str> = upstream.into();
    let path = reqwest::Url::parse(&upstream)
        .map(|u| u.path().to_owned())
        .map_err(std::io::Error::other)?;
    let log = WireLog::default();
    let posts = PostLog::default();
    let client = reqwest::Client::new();
    let (recorder, sent) = (log.clone(), posts.clone());
    let app = axum::Router::new().fallback(move |request: Request| {
        let (client, upstream) = (client.clone(), upstream.clone());
        let (recorder, sent) = (recorder.clone(), sent.clone());
        async move { forward(client, &upstream, recorder, sent, request).await }
    });
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(HttpRecorder {
        url: format!("http://{addr}{path}"),
        log,
        posts,
        task,
    })
}

async fn forward(
    client: reqwest::Client,
    upstream: &str,
    log: WireLog,
    posts: PostLog,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let is_post = parts.method == http::Method::POST;
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return status(http::StatusCode::BAD_REQUEST);
    };
    if is_post {
        posts.push(RecordedPost {
            headers: parts
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.as_str().to_owned(), value)
                })
                .collect(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
    }
    let mut outgoing = client.request(parts.method, upstream).body(body);
    for (name, value) in &parts.headers {
        if name != http::header::HOST && name != http::header::CONTENT_LENGTH {
            outgoing = outgoing.header(name, value);
        }
    }
    let Ok(response) = outgoing.send().await else {
        return status(http::StatusCode::BAD_GATEWAY);
    };
    let mut builder = Response::builder().status(response.status());
    for (name, value) in response.headers() {
        // Hop-by-hop framing is the proxy's own business.
        if name != http::header::TRANSFER_ENCODING
            && name != http::header::CONTENT_LENGTH
            && name != http::header::CONNECTION
        {
            builder = builder.header(name, value);
        }
    }
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if is_post && content_type.starts_with("text/event-stream") {
        // Recorded line by line as it flows: the server may send requests (elicitation)
        // on this stream and wait for the answer before ending it.
        let mut pending = String::new();
        let stream = response.bytes_stream().map(move |chunk| {
            if let Ok(bytes) = &chunk {
                pending.push_str(&String::from_utf8_lossy(bytes));
                while let Some(end) = pending.find('\n') {
                    let line: String = pending.drain(..=end).collect();
                    record_sse_line(&log, &line);
                }
            }
            chunk
        });
        return builder
            .body(Body::from_stream(stream))
            .unwrap_or_else(|_| status(http::StatusCode::BAD_GATEWAY));
    }
    if !content_type.starts_with("application/json") {
        // A GET event stream stays open: pass it through as it flows.
        return builder
            .body(Body::from_stream(response.bytes_stream()))
            .unwrap_or_else(|_| status(http::StatusCode::BAD_GATEWAY));
    }
    let Ok(bytes) = response.bytes().await else {
        return status(http::StatusCode::BAD_GATEWAY);
    };
    record_body(&log, &content_type, &bytes);
    builder
        .body(Body::from(bytes))
        .unwrap_or_else(|_| status(http::StatusCode::BAD_GATEWAY))
}

fn record_body(log: &WireLog, content_type: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if content_type.starts_with("application/json") {
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(batch)) => batch.into_iter().for_each(|m| log.push(m)),
            Ok(message) => log.push(message),
            Err(_) if text.trim().is_empty() => {}
            Err(_) => log.push(Value::String(format!("<not JSON> {text}"))),
        }
        return;
    }
    for line in text.lines() {
        record_sse_line(log, line);
    }
}

/// Records the message of one SSE `data:` line.
fn record_sse_line(log: &WireLog, line: &str) {
    if let Some(data) = line.strip_prefix("data:")
        && let Ok(message) = serde_json::from_str::<Value>(data.trim())
    {
        log.push(message);
    }
}

fn status(code: http::StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = code;
    response
}
