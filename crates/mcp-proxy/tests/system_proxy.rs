//! An HTTP upstream behind a system proxy (`HTTP_PROXY`): the session and the direct
//! 2026-07-28 calls both go through the proxy. Alone in its test binary, because it sets
//! the process's environment.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use axum::{extract::Request, middleware::Next};
use ferrymcp_core::{Args, HttpConfig, Server, ToolDef, ToolError};
use ferrymcp_proxy::{HttpTarget, RequestOptions, Upstream};
use ferrymcp_types::CallToolResponse;
use tokio::net::TcpListener;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[tokio::test]
async fn a_system_proxy_carries_the_session_and_the_direct_calls() {
    // The "proxy" is an MCP server that serves whatever absolute URL it is asked for (a
    // forward proxy sees `POST http://host/mcp`), counting the calls that reach it.
    let server = Server::new("behind-the-proxy");
    server
        .add_tool(ToolDef::new(
            "add",
            |Args(Pair { a, b }): Args<Pair>| async move { Ok::<_, ToolError>(a + b) },
        ))
        .expect("add");
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let count_calls = move |request: Request, next: Next| {
        let counted = Arc::clone(&counted);
        async move {
            let absolute = request.uri().scheme().is_some();
            if absolute
                && request
                    .headers()
                    .get("mcp-method")
                    .is_some_and(|m| m == "tools/call")
            {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            next.run(request).await
        }
    };
    let router = server
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid")
        .layer(axum::middleware::from_fn(count_calls));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let proxy = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });

    // Nothing listens at the upstream's own address: only the proxy can answer.
    let unreachable = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream_url = format!("http://{}/mcp", unreachable.local_addr().expect("addr"));
    drop(unreachable);
    // SAFETY: this test binary runs this one test, and nothing else reads the environment
    // while it is written.
    unsafe {
        for name in ["HTTP_PROXY", "http_proxy"] {
            std::env::set_var(name, format!("http://{proxy}"));
        }
        for name in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"] {
            std::env::remove_var(name);
        }
    }

    let upstream = Upstream::http("proxied", HttpTarget::new(upstream_url));
    assert_eq!(upstream.list_tools().await.expect("listed").len(), 1);
    let reply = upstream
        .call_tool(
            "add",
            serde_json::json!({"a": 2, "b": 3})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            RequestOptions::default(),
        )
        .await
        .expect("called through the proxy");
    let CallToolResponse::Complete(result) = reply else {
        panic!("not a plain result: {reply:?}")
    };
    assert_eq!(
        result.structured_content,
        Some(serde_json::json!({"result": 5}))
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the call did not go through the proxy"
    );
}
