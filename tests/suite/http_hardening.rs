//! Issue 12, scope 2 ("HTTP, hostile clients"): the Streamable HTTP edge against foreign
//! origins and hosts, slow and idle clients, floods over each limit, and the hook for user
//! layers and routes. Real sockets on 127.0.0.1; in-process servers with tiny limits, and the
//! demo as a child process for the logging flood. Slow clients are bounded loops.

use crate::common;

use std::{sync::Arc, time::Duration};

use ferrymcp::{HttpConfig, HttpServer, Server, ServerError, ToolDef};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
    sync::{Semaphore, mpsc},
};

/// A generous bound on "the server ends this by itself".
const ENDS_WITHIN: Duration = Duration::from_secs(30);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hardening","version":"0"}}}"#;

/// A server on a loopback port, stopped when dropped.
struct Running {
    addr: std::net::SocketAddr,
    url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn serve(server: Server, config: HttpConfig) -> Running {
    serve_with(server, config, |http| http).await
}

async fn serve_with(
    server: Server,
    config: HttpConfig,
    customize: impl FnOnce(HttpServer) -> HttpServer,
) -> Running {
    let http = customize(
        HttpServer::bind(server, "127.0.0.1:0", config)
            .await
            .expect("bind a loopback port"),
    );
    let addr = http.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        url: format!("http://{addr}/mcp"),
        _stop: stop,
    }
}

fn post(url: &str, body: impl Into<String>) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.into())
}

/// A 2026-07-28 `tools/call` of `name`, as a conforming client sends it.
fn call(url: &str, name: &str) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "hardening", "version": "0"}
        }
    }});
    post(url, body.to_string())
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
}

/// Asserts a JSON-RPC error body with `code`, and returns its message.
async fn json_rpc_error(response: reqwest::Response, code: i64) -> String {
    let body: Value = response.json().await.expect("a JSON body");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    body["error"]["message"]
        .as_str()
        .expect("an error message")
        .to_owned()
}

/// Reads until the server closes the connection (EOF or reset); what it sent before.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return received,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

/// One request on a kept-alive raw connection; reads the response head and its
/// `content-length` body. `None` if the server closed the connection instead.
async fn exchange(stream: &mut TcpStream, request: &str) -> Option<String> {
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if received.len() >= end + 4 + length {
                return Some(String::from_utf8_lossy(&received).into_owned());
            }
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

fn raw_post(addr: std::net::SocketAddr, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

// --- Origin and Host ------------------------------------------------------------------------

#[tokio::test]
async fn issue12_origin_foreign_is_403_with_a_json_rpc_body_loopback_and_absent_are_served() {
    let up = serve(Server::new("s"), HttpConfig::new()).await;
    let foreign = post(&up.url, INITIALIZE)
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(foreign.status(), 403);
    let message = json_rpc_error(foreign, -32000).await;
    assert!(message.contains("evil.example"), "{message}");

    for origin in [
        Some("http://localhost:5173"),
        Some("http://127.0.0.1:8080"),
        Some("https://[::1]"),
        None,
    ] {
        let mut request = post(&up.url, INITIALIZE);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let response = request.send().await.expect("POST");
        assert_eq!(response.status(), 200, "origin {origin:?}");
    }
}

#[tokio::test]
async fn issue12_origin_an_explicit_list_is_honoured_and_allow_any_origin_opts_out() {
    let config = HttpConfig::new().allowed_origins(["https://app.example.com"]);
    let up = serve(Server::new("s"), config).await;
    for (origin, status) in [
        ("https://app.example.com", 200),
        ("https://app.example.com:443", 200),
        ("http://app.example.com", 403),
        ("http://localhost:5173", 403),
    ] {
        let response = post(&up.url, INITIALIZE)
            .header("origin", origin)
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), status, "{origin}");
    }

    let any = serve(Server::new("s"), HttpConfig::new().allow_any_origin()).await;
    let response = post(&any.url, INITIALIZE)
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn issue12_host_an_empty_list_is_an_error_and_allow_any_host_serves_any_host() {
    let refused = HttpServer::bind(
        Server::new("s"),
        "127.0.0.1:0",
        HttpConfig::new().allowed_hosts(Vec::<String>::new()),
    )
    .await;
    match refused {
        Err(error @ ServerError::Startup { .. }) => {
            assert!(error.to_string().contains("HTTP"), "{error}");
            let source = std::error::Error::source(&error).map(ToString::to_string);
            assert!(
                source.is_some_and(|s| s.contains("allowed_hosts is empty")),
                "{error:?}"
            );
        }
        Err(other) => panic!("an unexpected error: {other}"),
        Ok(_) => panic!("an empty allowed_hosts list was accepted"),
    }

    let default = serve(Server::new("s"), HttpConfig::new()).await;
    let foreign = post(&default.url, INITIALIZE)
        .header("host", "rebound.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(foreign.status(), 403);
    json_rpc_error(foreign, -32000).await;

    let any = serve(Server::new("s"), HttpConfig::new().allow_any_host()).await;
    let response = post(&any.url, INITIALIZE)
        .header("host", "rebound.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
}

// --- Timeouts -------------------------------------------------------------------------------

/// Trickles one byte of a header that never ends every 100 ms, for at most 20 s; returns
/// whether the server closed the connection first.
async fn trickle_headers(addr: std::net::SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return false;
    };
    if stream
        .write_all(b"POST /mcp HTTP/1.1\r\nx-slow: ")
        .await
        .is_err()
    {
        return true;
    }
    let (mut read, mut write) = stream.split();
    let closed = async {
        let mut byte = [0u8; 1];
        // Any answer or EOF ends it: the server gave up on the request.
        let _ = read.read(&mut byte).await;
    };
    let trickle = async {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        for _ in 0..200 {
            tick.tick().await;
            if write.write_all(b"a").await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = closed => true,
        () = trickle => false,
        () = tokio::time::sleep(Duration::from_secs(20)) => false,
    }
}

#[tokio::test]
async fn issue12_slowloris_connections_are_closed_after_the_header_timeout_while_others_are_served()
{
    // A long idle timeout, so only the header timeout can close them in time.
    let config = HttpConfig::new()
        .header_timeout(Duration::from_secs(1))
        .idle_timeout(Duration::from_secs(120));
    let up = serve(Server::new("s"), config).await;
    let slow: Vec<_> = (0..50)
        .map(|_| tokio::spawn(trickle_headers(up.addr)))
        .collect();
    // Served meanwhile.
    let response = post(&up.url, INITIALIZE).send().await.expect("POST");
    assert_eq!(response.status(), 200);
    for handle in slow {
        assert!(
            handle.await.expect("the slow client"),
            "a slow client was still open after 20 s"
        );
    }
}

#[tokio::test]
async fn issue12_slow_body_gets_408_and_the_connection_closed_after_the_body_timeout() {
    let config = HttpConfig::new().body_timeout(Duration::from_secs(1));
    let up = serve(Server::new("s"), config).await;
    let mut stream = TcpStream::connect(up.addr).await.expect("connect");
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n{{",
                up.addr
            )
            .as_bytes(),
        )
        .await
        .expect("write the head");
    let (mut read, mut write) = stream.split();
    let trickle = async {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        for _ in 0..200 {
            tick.tick().await;
            if write.write_all(b" ").await.is_err() {
                break;
            }
        }
        std::future::pending::<()>().await;
    };
    let answered = async {
        let mut received = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match read.read(&mut buffer).await {
                Ok(0) | Err(_) => return received,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    };
    let received = tokio::select! {
        received = answered => received,
        () = trickle => unreachable!(),
        () = tokio::time::sleep(ENDS_WITHIN) => panic!("the slow body was not cut off"),
    };
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains(r#""code":-32000"#), "{text}");
}

#[tokio::test]
async fn issue12_idle_keep_alive_connections_are_closed_after_the_idle_timeout() {
    // A long header timeout, so only the idle timeout can close it in time.
    let config = HttpConfig::new()
        .idle_timeout(Duration::from_secs(1))
        .header_timeout(Duration::from_secs(60));
    let up = serve(Server::new("s"), config).await;
    let mut stream = TcpStream::connect(up.addr).await.expect("connect");
    let answer = exchange(&mut stream, &raw_post(up.addr, INITIALIZE))
        .await
        .expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let rest = tokio::time::timeout(ENDS_WITHIN, read_until_closed(&mut stream))
        .await
        .expect("the idle connection was not closed");
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}

// --- Limits ---------------------------------------------------------------------------------

#[tokio::test]
async fn issue12_over_max_connections_gets_503_and_new_ones_are_served_once_others_close() {
    let up = serve(Server::new("s"), HttpConfig::new().max_connections(3)).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(up.addr).await.expect("connect");
        let answer = exchange(&mut stream, &raw_post(up.addr, INITIALIZE))
            .await
            .expect("an answer");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        held.push(stream);
    }
    let mut extra = TcpStream::connect(up.addr).await.expect("connect");
    let refused = tokio::time::timeout(ENDS_WITHIN, read_until_closed(&mut extra))
        .await
        .expect("the extra connection was neither refused nor closed");
    let refused = String::from_utf8_lossy(&refused).to_ascii_lowercase();
    assert!(refused.starts_with("http/1.1 503"), "{refused}");
    assert!(refused.contains("retry-after: 1"), "{refused}");
    assert!(refused.contains(r#""code":-32000"#), "{refused}");

    // The held connections are unaffected.
    let answer = exchange(&mut held[0], &raw_post(up.addr, INITIALIZE))
        .await
        .expect("an answer on a held connection");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    drop(held);
    // The server notices the closes on its own schedule: poll, bounded.
    let served = async {
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            tick.tick().await;
            let mut stream = TcpStream::connect(up.addr).await.expect("connect");
            if exchange(&mut stream, &raw_post(up.addr, INITIALIZE))
                .await
                .is_some_and(|answer| answer.starts_with("HTTP/1.1 200"))
            {
                return;
            }
        }
    };
    tokio::time::timeout(ENDS_WITHIN, served)
        .await
        .expect("no connection was served after the held ones closed");
}

/// A server whose tool `hold` signals each entry on the receiver, then waits for a permit
/// of the semaphore and answers `"released"`.
fn holding_server() -> (Server, Arc<Semaphore>, mpsc::UnboundedReceiver<()>) {
    let gate = Arc::new(Semaphore::new(0));
    let (entered, entries) = mpsc::unbounded_channel::<()>();
    let server = Server::new("s");
    let held = gate.clone();
    server
        .add_tool(ToolDef::new("hold", move || {
            let gate = held.clone();
            let entered = entered.clone();
            async move {
                let _ = entered.send(());
                let _ = gate.acquire().await.map(|permit| permit.forget());
                "released"
            }
        }))
        .expect("tool");
    (server, gate, entries)
}

#[tokio::test]
async fn issue12_over_max_in_flight_gets_503_retry_after_and_calls_succeed_after_release() {
    let (server, gate, mut entries) = holding_server();
    let up = serve(server, HttpConfig::new().max_in_flight(2)).await;
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(call(&up.url, "hold").send()))
        .collect();
    for _ in 0..2 {
        entries.recv().await.expect("a held call entered the tool");
    }
    let over = tokio::time::timeout(ENDS_WITHIN, call(&up.url, "hold").send())
        .await
        .expect("the call over the limit was not refused")
        .expect("POST");
    assert_eq!(over.status(), 503);
    assert_eq!(
        over.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let message = json_rpc_error(over, -32000).await;
    assert!(message.contains("2 requests"), "{message}");

    gate.add_permits(3);
    for handle in held {
        let response = handle.await.expect("task").expect("POST");
        assert_eq!(response.status(), 200);
    }
    let after = call(&up.url, "hold").send().await.expect("POST");
    assert_eq!(after.status(), 200);
    let body: Value = after.json().await.expect("JSON");
    assert_eq!(body["result"]["content"][0]["text"], "released", "{body}");
}

#[tokio::test]
async fn issue17_a_call_left_running_after_its_client_hung_up_still_counts_against_max_in_flight() {
    // The tool sees its cancellation, then goes on until released, as a tool that ignores
    // cancellation would.
    let gate = Arc::new(Semaphore::new(0));
    let (signal, mut signals) = mpsc::unbounded_channel::<&'static str>();
    let server = Server::new("s");
    let held = gate.clone();
    server
        .add_tool(ToolDef::new("stubborn", move |cx: ferrymcp::Context| {
            let gate = held.clone();
            let signal = signal.clone();
            async move {
                let _ = signal.send("entered");
                cx.cancellation().cancelled().await;
                let _ = signal.send("cancelled");
                let _ = gate.acquire().await.map(|permit| permit.forget());
                let _ = signal.send("ended");
                "done"
            }
        }))
        .expect("tool");
    server
        .add_tool(ToolDef::new("quick", || async { "quick" }))
        .expect("tool");
    let up = serve(server, HttpConfig::new().max_in_flight(1)).await;

    let hung_up = tokio::spawn(call(&up.url, "stubborn").send());
    assert_eq!(signals.recv().await, Some("entered"));
    hung_up.abort();
    assert_eq!(signals.recv().await, Some("cancelled"));

    let over = tokio::time::timeout(ENDS_WITHIN, call(&up.url, "stubborn").send())
        .await
        .expect("the call over the limit was not refused")
        .expect("POST");
    assert_eq!(over.status(), 503, "the abandoned call no longer counted");
    json_rpc_error(over, -32000).await;

    gate.add_permits(2);
    assert_eq!(signals.recv().await, Some("ended"));
    // The slot is free once the abandoned call has ended (it lets go of it just after).
    let after = tokio::time::timeout(ENDS_WITHIN, async {
        loop {
            let response = call(&up.url, "quick").send().await.expect("POST");
            if response.status() != 503 {
                return response;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the slot of the abandoned call was never freed");
    assert_eq!(after.status(), 200);
    let body: Value = after.json().await.expect("JSON");
    assert_eq!(body["result"]["content"][0]["text"], "quick", "{body}");
}

#[tokio::test]
async fn issue12_over_max_sessions_initialize_gets_a_clear_error_and_expired_sessions_make_room() {
    let config = HttpConfig::new()
        .max_sessions(2)
        .session_idle_timeout(Duration::from_secs(1));
    let up = serve(Server::new("s"), config).await;
    for _ in 0..2 {
        let response = post(&up.url, INITIALIZE).send().await.expect("POST");
        assert_eq!(response.status(), 200);
        assert!(response.headers().contains_key("mcp-session-id"));
    }
    let over = post(&up.url, INITIALIZE).send().await.expect("POST");
    assert_eq!(over.status(), 503);
    assert!(!over.headers().contains_key("mcp-session-id"));
    assert!(over.headers().contains_key("retry-after"));
    let message = json_rpc_error(over, -32000).await;
    assert!(message.contains("limit of 2 sessions"), "{message}");

    // The two sessions end after a second without requests: poll, bounded.
    let room = async {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            let response = post(&up.url, INITIALIZE).send().await.expect("POST");
            if response.status() == 200 {
                return;
            }
            assert_eq!(response.status(), 503);
        }
    };
    tokio::time::timeout(ENDS_WITHIN, room)
        .await
        .expect("no session could be made after the others expired");
}

#[tokio::test]
async fn issue12_body_over_the_limit_gets_413_and_the_server_keeps_serving() {
    let up = serve(Server::new("s"), HttpConfig::new().max_body_bytes(1024)).await;
    let padding = "x".repeat(2048);
    let big =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{padding}"}}}}"#);
    let response = post(&up.url, big.clone()).send().await.expect("POST");
    assert_eq!(response.status(), 413);
    json_rpc_error(response, -32600).await;

    // Without Content-Length (chunked), the limit holds while reading.
    let chunks = futures::stream::iter(
        big.into_bytes()
            .chunks(256)
            .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec()))
            .collect::<Vec<_>>(),
    );
    let response = post(&up.url, "")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 413);
    json_rpc_error(response, -32600).await;

    let response = post(&up.url, INITIALIZE).send().await.expect("POST");
    assert_eq!(response.status(), 200);
}

// --- Logging --------------------------------------------------------------------------------

#[tokio::test]
async fn issue12_a_flood_of_foreign_origins_logs_a_couple_of_warnings_not_one_per_request() {
    let mut child = tokio::process::Command::new(common::demo_binary())
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the demo");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .expect("read stderr")
            .expect("the demo exited before it was ready");
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.trim().to_owned();
        }
    };
    let client = reqwest::Client::new();
    for _ in 0..200 {
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("origin", "https://evil.example")
            .body(INITIALIZE)
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), 403);
    }
    // Every warning was written before its answer; stop the demo and read the rest.
    child.start_kill().expect("stop the demo");
    let mut warnings = 0;
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("WARN") {
            warnings += 1;
        }
    }
    assert!(
        (1..=2).contains(&warnings),
        "{warnings} warnings for 200 refused requests"
    );
}

// --- User layers and routes -----------------------------------------------------------------

#[tokio::test]
async fn issue12_user_layers_and_routes_are_served_by_http_server() {
    let up = serve_with(Server::new("s"), HttpConfig::new(), |http| {
        http.layer(axum::middleware::map_response(
            |mut response: axum::response::Response| async move {
                response
                    .headers_mut()
                    .insert("x-layered", http::HeaderValue::from_static("yes"));
                response
            },
        ))
        .route("/healthz", axum::routing::get(|| async { "ok" }))
    })
    .await;
    let response = post(&up.url, INITIALIZE).send().await.expect("POST");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("x-layered")
            .and_then(|v| v.to_str().ok()),
        Some("yes")
    );
    let refused = post(&up.url, INITIALIZE)
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(refused.status(), 403);
    assert!(refused.headers().contains_key("x-layered"));

    let health = reqwest::get(format!("http://{}/healthz", up.addr))
        .await
        .expect("GET");
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.expect("text"), "ok");
}

/// The JSON-RPC messages in an SSE body (or the body itself when it is JSON).
async fn messages_of(response: reqwest::Response) -> Vec<Value> {
    let body = tokio::time::timeout(ENDS_WITHIN, response.text())
        .await
        .expect("the body ended")
        .expect("a body");
    if let Ok(message) = serde_json::from_str::<Value>(&body) {
        return vec![message];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// rmcp routes a session's answers by request id, so a second request under an id still
/// being answered would take the first one's place, and the first POST would wait forever.
/// The second is refused on its own stream; the first is answered; the id is free again.
#[tokio::test]
async fn issue12_a_session_request_reusing_an_id_in_flight_is_refused_and_the_first_answered() {
    let (server, gate, mut entries) = holding_server();
    let up = serve(server, HttpConfig::new()).await;
    let opened = post(&up.url, INITIALIZE).send().await.expect("POST");
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let in_session = |body: String| {
        post(&up.url, body)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let initialized =
        in_session(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .send()
            .await
            .expect("POST");
    assert_eq!(initialized.status(), 202);
    let hold = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "hold", "arguments": {}}})
    .to_string();

    let first = tokio::spawn(in_session(hold.clone()).send());
    entries
        .recv()
        .await
        .expect("the first call entered the tool");
    let second = tokio::time::timeout(ENDS_WITHIN, in_session(hold.clone()).send())
        .await
        .expect("the second call was not answered")
        .expect("POST");
    let refused = messages_of(second).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["id"], 2, "{refused:?}");
    assert_eq!(refused[0]["error"]["code"], -32600, "{refused:?}");
    let message = refused[0]["error"]["message"].as_str().expect("a message");
    assert!(message.contains("already in use"), "{message}");

    gate.add_permits(2);
    let first = tokio::time::timeout(ENDS_WITHIN, first)
        .await
        .expect("the first call was not answered")
        .expect("task")
        .expect("POST");
    let answered = messages_of(first).await;
    assert!(
        answered
            .iter()
            .any(|m| m["id"] == 2 && m["result"]["content"][0]["text"] == "released"),
        "{answered:?}"
    );

    let again = tokio::time::timeout(ENDS_WITHIN, in_session(hold).send())
        .await
        .expect("the id was not free again")
        .expect("POST");
    let answered = messages_of(again).await;
    assert!(
        answered
            .iter()
            .any(|m| m["id"] == 2 && m["result"]["content"][0]["text"] == "released"),
        "{answered:?}"
    );
}
