//! Upstreams that misbehave (issue 12, scope 3): an HTTP upstream answering with a redirect
//! is not followed, and a stdio upstream writing garbage or an over-long line gets its
//! session closed and reconnected, the caller a clear error.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    extract::Request,
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use ferrymcp_core::{Args, HttpConfig, Server, ToolDef, ToolError};
use ferrymcp_proxy::{
    CommandTarget, HttpTarget, ProxyError, RequestOptions, Upstream, UpstreamOptions,
};
use ferrymcp_types::{CallToolResponse, JsonObject};
use serde::Deserialize;
use tokio::net::TcpListener;

async fn serve(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

/// A listener that records whether anything ever reached it (and answers 404).
async fn elsewhere() -> (SocketAddr, Arc<AtomicBool>) {
    let contacted = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&contacted);
    let router = Router::new().fallback(move || {
        // Set before the answer is written, so a client that got here saw it set.
        flag.store(true, Ordering::SeqCst);
        async { StatusCode::NOT_FOUND }
    });
    (serve(router).await, contacted)
}

fn redirect_to(target: SocketAddr) -> Response {
    (
        StatusCode::TEMPORARY_REDIRECT,
        [(header::LOCATION, format!("http://{target}/mcp"))],
    )
        .into_response()
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

fn adder() -> Server {
    let server = Server::new("upstream");
    server
        .add_tool(ToolDef::new(
            "add",
            |Args(Pair { a, b }): Args<Pair>| async move { Ok::<_, ToolError>(a + b) },
        ))
        .expect("add");
    server
}

fn args(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_redirect_at_connect_is_not_followed_and_names_its_status() {
    // issue 12, scope 3: "No redirects followed".
    let (other, contacted) = elsewhere().await;
    let redirecting =
        serve(Router::new().fallback(move || async move { redirect_to(other) })).await;
    let upstream = Upstream::http(
        "moved",
        HttpTarget::new(format!("http://{redirecting}/mcp")),
    )
    .with_options(UpstreamOptions::default().connect_timeout(Duration::from_secs(20)));
    let error = upstream
        .list_tools()
        .await
        .expect_err("a redirect is an error");
    let message = error.to_string();
    assert!(
        !contacted.load(Ordering::SeqCst),
        "the proxy followed the redirect: {message}"
    );
    assert!(message.contains("307"), "{message}");
}

#[tokio::test]
async fn a_redirected_call_is_not_followed_and_the_body_stays_home() {
    // The session opens normally; only `tools/call` POSTs (the direct-post path of a
    // 2026-07-28 session) are answered with a redirect.
    let (other, contacted) = elsewhere().await;
    let redirect_calls = move |request: Request, next: Next| async move {
        let is_call = request
            .headers()
            .get("mcp-method")
            .is_some_and(|m| m == "tools/call");
        if is_call {
            redirect_to(other)
        } else {
            next.run(request).await
        }
    };
    let router = adder()
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid")
        .layer(axum::middleware::from_fn(redirect_calls));
    let addr = serve(router).await;
    let upstream = Upstream::http("moved", HttpTarget::new(format!("http://{addr}/mcp")));
    assert_eq!(upstream.list_tools().await.expect("listed").len(), 1);
    let error = upstream
        .call_tool(
            "add",
            args(serde_json::json!({"a": 1, "b": 2})),
            RequestOptions::default(),
        )
        .await
        .expect_err("a redirect is an error");
    let message = error.to_string();
    assert!(
        !contacted.load(Ordering::SeqCst),
        "the proxy followed the redirect: {message}"
    );
    assert!(message.contains("307"), "{message}");
    assert!(message.contains("upstream 'moved'"), "{message}");
}

#[tokio::test]
async fn a_redirected_call_on_a_2025_11_25_session_is_not_followed() {
    // The same through rmcp's session worker: every POST carrying a `tools/call` (read from
    // the body, as 2025-11-25 requests have no `Mcp-Method` header) is redirected.
    let (other, contacted) = elsewhere().await;
    let redirect_calls = move |request: Request, next: Next| async move {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        if bytes.windows(10).any(|w| w == b"tools/call") {
            return redirect_to(other);
        }
        next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
            .await
    };
    let router = adder()
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid")
        .layer(axum::middleware::from_fn(redirect_calls));
    let addr = serve(router).await;
    let upstream = Upstream::http("moved", HttpTarget::new(format!("http://{addr}/mcp")))
        .with_options(UpstreamOptions::default().legacy_handshake());
    assert_eq!(upstream.list_tools().await.expect("listed").len(), 1);
    let error = upstream
        .call_tool(
            "add",
            args(serde_json::json!({"a": 1, "b": 2})),
            RequestOptions::default(),
        )
        .await
        .expect_err("a redirect is an error");
    let message = error.to_string();
    assert!(
        !contacted.load(Ordering::SeqCst),
        "the proxy followed the redirect: {message}"
    );
    assert!(message.contains("307"), "{message}");
}

/// The fake stdio upstream (python3, standard library only).
fn fake_upstream() -> CommandTarget {
    CommandTarget::new("python3").arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/fake_upstream.py"
    ))
}

async fn call(
    upstream: &Upstream,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<String, ProxyError> {
    match upstream
        .call_tool(tool, args(arguments), RequestOptions::default())
        .await?
    {
        CallToolResponse::Complete(result) => {
            Ok(serde_json::to_string(&result.content).unwrap_or_default())
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_stdio_upstream_writing_garbage_is_reconnected_and_the_caller_told_why() {
    // issue 12, scope 3: "Bounded upstream lines; an upstream that sends garbage gets its
    // session reconnected and the caller a clear error".
    let limit = 64 * 1024;
    let upstream = Upstream::command("flaky", fake_upstream()).with_options(
        UpstreamOptions::default()
            .legacy_handshake()
            .max_message_bytes(limit)
            // Generous: an answer that never comes would fail the test by this timeout.
            .call_timeout(Duration::from_secs(30)),
    );
    assert!(
        call(&upstream, "ok", serde_json::json!({}))
            .await
            .expect("ok")
            .contains("true")
    );
    let first = upstream.process_id().expect("a child");

    let error = call(&upstream, "garbage", serde_json::json!({}))
        .await
        .expect_err("garbage is an error");
    let message = error.to_string();
    assert!(matches!(error, ProxyError::Protocol { .. }), "{error:?}");
    assert!(message.contains("upstream 'flaky'"), "{message}");
    assert!(message.contains("not JSON"), "{message}");
    assert!(message.contains("reconnects"), "{message}");

    // The next call gets a fresh child and works.
    assert!(
        call(&upstream, "ok", serde_json::json!({}))
            .await
            .expect("ok again")
            .contains("true")
    );
    let second = upstream.process_id().expect("a child");
    assert_ne!(first, second);

    // A line one byte over the limit (the newline excluded), then one at it.
    let error = call(&upstream, "huge", serde_json::json!({"bytes": limit + 1}))
        .await
        .expect_err("an over-long line is an error");
    let message = error.to_string();
    assert!(
        message.contains(&format!("{limit}-byte limit")),
        "{message}"
    );
    assert!(
        call(&upstream, "ok", serde_json::json!({}))
            .await
            .expect("ok again")
            .contains("true")
    );
    assert_ne!(upstream.process_id(), Some(second));
}

#[tokio::test]
async fn an_http_answer_over_the_message_limit_fails_the_call_only() {
    // HTTP upstreams are bounded too (rmcp's client enforces the limits the proxy passes).
    let server = Server::new("upstream");
    server
        .add_tool(ToolDef::new("big", || async {
            Ok::<_, ToolError>("x".repeat(8 * 1024))
        }))
        .expect("big");
    server
        .add_tool(ToolDef::new("small", || async { Ok::<_, ToolError>("x") }))
        .expect("small");
    let router = server
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid");
    let addr = serve(router).await;
    let upstream = Upstream::http("big", HttpTarget::new(format!("http://{addr}/mcp")))
        .with_options(UpstreamOptions::default().max_message_bytes(4 * 1024));
    let error = call(&upstream, "big", serde_json::json!({}))
        .await
        .expect_err("over the limit");
    assert!(
        error.to_string().contains("maximum size of 4096 bytes"),
        "{error}"
    );
    assert!(
        call(&upstream, "small", serde_json::json!({}))
            .await
            .is_ok()
    );
}

/// The answer a misbehaving upstream gives a direct `tools/call` of `tool`, if it misbehaves
/// for that tool.
fn misbehaving_answer(tool: &str) -> Option<Response> {
    if tool == "cut" {
        // The connection breaks in the middle of the JSON body: the first half goes out
        // (the body is pending once, so the server flushes it), then the body fails.
        let body = futures::stream::unfold(0, |step| async move {
            match step {
                0 => Some((
                    Ok(axum::body::Bytes::from_static(br#"{"jsonrpc":"2.0","id":"#)),
                    1,
                )),
                1 => {
                    tokio::task::yield_now().await;
                    Some((Err(std::io::Error::other("cut")), 2))
                }
                _ => None,
            }
        });
        return Some(
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                axum::body::Body::from_stream(body),
            )
                .into_response(),
        );
    }
    let answer = match tool {
        "busy" => (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (header::CONTENT_TYPE, "text/plain"),
                (header::RETRY_AFTER, "7"),
            ],
            "come back later".to_owned(),
        ),
        "html" => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/html"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            "<p>hello</p>".to_owned(),
        ),
        // A 2026-07-28 refusal: the JSON-RPC error in a 4xx answer (with no id, as for a
        // request the server could not read).
        "refused" => (
            StatusCode::BAD_REQUEST,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"header mismatch"}}"#
                .to_owned(),
        ),
        "accepted" => (
            StatusCode::ACCEPTED,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            String::new(),
        ),
        // An SSE event that never ends, past the message limit.
        "endless" => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            format!("data: {}", "x".repeat(8 * 1024)),
        ),
        _ => return None,
    };
    Some(answer.into_response())
}

#[tokio::test]
async fn direct_calls_name_what_a_misbehaving_upstream_answered() {
    // The session opens normally; the direct 2026-07-28 posts of some tools get answers no
    // MCP server gives. Each fails that call only, saying what came back.
    let misbehave = |request: Request, next: Next| async move {
        let tool = request
            .headers()
            .get("mcp-name")
            .and_then(|name| name.to_str().ok())
            .map(str::to_owned);
        match tool.as_deref().and_then(misbehaving_answer) {
            Some(answer) => answer,
            None => next.run(request).await,
        }
    };
    let router = adder()
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid")
        .layer(axum::middleware::from_fn(misbehave));
    let addr = serve(router).await;
    let upstream = Upstream::http("odd", HttpTarget::new(format!("http://{addr}/mcp")))
        .with_options(UpstreamOptions::default().max_message_bytes(4 * 1024));
    let failure = |tool: &'static str| {
        let upstream = upstream.clone();
        async move {
            call(&upstream, tool, serde_json::json!({}))
                .await
                .expect_err(tool)
        }
    };

    let busy = failure("busy").await.to_string();
    for part in ["upstream 'odd'", "503", "Retry-After: 7", "come back later"] {
        assert!(busy.contains(part), "{part}: {busy}");
    }
    let html = failure("html").await.to_string();
    assert!(html.contains("text/html"), "{html}");
    match failure("refused").await {
        ProxyError::Upstream(error) => {
            assert_eq!(error.code.0, -32020, "{error:?}");
            assert_eq!(error.message, "header mismatch");
        }
        other => panic!("the upstream's JSON-RPC error is not kept: {other:?}"),
    }
    let accepted = failure("accepted").await.to_string();
    assert!(accepted.contains("202"), "{accepted}");
    let endless = failure("endless").await.to_string();
    assert!(endless.contains("4096 bytes"), "{endless}");
    let cut = failure("cut").await;
    assert!(
        cut.is_connection_lost(),
        "a broken answer is a lost connection: {cut:?}"
    );

    // None of it stopped the upstream from answering (after the cut, on a new session).
    assert_eq!(
        call(&upstream, "add", serde_json::json!({"a": 2, "b": 3}))
            .await
            .expect("add"),
        r#"[{"type":"text","text":"5"}]"#
    );
}

#[tokio::test]
async fn user_info_in_the_url_is_basic_authentication_on_every_post() {
    // `http://user:password@host/` is the configured credential of the upstream: the session
    // and the direct posts both send it as basic authentication, decoded.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = Arc::clone(&seen);
    let record_calls = move |request: Request, next: Next| {
        let record = Arc::clone(&record);
        async move {
            let call = request
                .headers()
                .get("mcp-method")
                .is_some_and(|m| m == "tools/call");
            if call {
                let authorization = request
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none")
                    .to_owned();
                record
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(authorization);
            }
            next.run(request).await
        }
    };
    let router = adder()
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid")
        .layer(axum::middleware::from_fn(record_calls));
    let addr = serve(router).await;
    let upstream = Upstream::http(
        "basic",
        HttpTarget::new(format!("http://ops:pa%20ss@{addr}/mcp")),
    );
    assert_eq!(
        call(&upstream, "add", serde_json::json!({"a": 2, "b": 3}))
            .await
            .expect("add"),
        r#"[{"type":"text","text":"5"}]"#
    );
    let seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    // base64("ops:pa ss")
    assert_eq!(seen, vec!["Basic b3BzOnBhIHNz".to_owned()]);
}
