//! Header forwarding over HTTP, client → gateway → upstream: deny by default, allowed names
//! only, the client's `Authorization` never (AU5), configured headers and bearer winning.

use std::collections::HashMap;

use ferrymcp_core::{Context, HttpConfig, HttpServer, Server, ToolDef};
use ferrymcp_proxy::{HeaderPolicy, HttpTarget, ProxyServer, Upstream};
use ferrymcp_test_helpers::client::{Lifecycle, connect};
use ferrymcp_types::{CallToolRequestParams, CallToolResponse};
use rmcp::transport::{
    StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
};

/// The headers the upstream saw, as `name=value` lines (only the ones the test sends).
async fn seen(cx: Context) -> String {
    let Some(parts) = cx.scope().extensions().get::<http::request::Parts>() else {
        return "no HTTP request".to_owned();
    };
    let mut lines: Vec<String> = ["x-tenant", "cookie", "authorization", "x-configured"]
        .iter()
        .filter_map(|name| {
            parts
                .headers
                .get(*name)
                .and_then(|v| v.to_str().ok())
                .map(|v| format!("{name}={v}"))
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

async fn serve(server: Server) -> (String, ferrymcp_core::CancellationToken) {
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let stop = ferrymcp_core::CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move { http.run_until(stopped.cancelled_owned()).await });
    (url, stop)
}

async fn headers_through(target: HttpTarget) -> String {
    let upstream = Server::new("upstream");
    upstream.add_tool(ToolDef::new("seen", seen)).expect("tool");
    let (upstream_url, stop_upstream) = serve(upstream).await;

    let proxy = ProxyServer::new(Upstream::http(
        "up",
        HttpTarget {
            url: upstream_url,
            ..target
        },
    ))
    .build()
    .await
    .expect("proxy");
    let gateway = Server::new("gateway");
    gateway.mount(&proxy, "up").expect("mount");
    let (gateway_url, stop_gateway) = serve(gateway).await;

    let mut headers = HashMap::new();
    headers.insert(
        http::HeaderName::from_static("x-tenant"),
        http::HeaderValue::from_static("acme"),
    );
    headers.insert(
        http::HeaderName::from_static("cookie"),
        http::HeaderValue::from_static("session=secret"),
    );
    let config = StreamableHttpClientTransportConfig::with_uri(gateway_url)
        .auth_header("client-token")
        .custom_headers(headers);
    let client = connect(
        StreamableHttpClientTransport::from_config(config),
        Lifecycle::Modern,
        false,
    )
    .await
    .expect("connect");
    let reply = client
        .call_tool_once(CallToolRequestParams::new("up_seen"))
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(result) = reply else {
        panic!("{reply:?}")
    };
    client.cancel().await.ok();
    stop_gateway.cancel();
    stop_upstream.cancel();
    result.structured_content.expect("structured")["result"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_forwarded_by_default() {
    let seen = headers_through(HttpTarget::default().header("X-Configured", "yes")).await;
    assert_eq!(seen, "x-configured=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allowed_names_are_forwarded_and_never_authorization() {
    let policy = HeaderPolicy::deny_all().allow("X-Tenant").expect("allow");
    let seen = headers_through(HttpTarget::default().forward_headers(policy)).await;
    assert_eq!(seen, "x-tenant=acme");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au5_the_callers_authorization_header_is_never_forwarded() {
    // No policy can name it.
    for name in [
        "authorization",
        "Authorization",
        "AUTHORIZATION",
        "proxy-authorization",
    ] {
        let error = HeaderPolicy::deny_all()
            .allow(name)
            .expect_err("Authorization cannot be allowed");
        assert!(error.to_string().contains("token exchange"), "{error}");
    }
    // Whatever the policy forwards, the client's token stays at the proxy: the upstream sees
    // nothing, or the proxy's own credentials.
    let wide = HeaderPolicy::deny_all()
        .allow("X-Tenant")
        .and_then(|p| p.allow("Cookie"))
        .expect("allow");
    for target in [
        HttpTarget::default(),
        HttpTarget::default().forward_headers(wide.clone()),
        HttpTarget::default()
            .forward_headers(wide.clone())
            .bearer("proxy-token"),
    ] {
        let bearer = target.auth.is_some();
        let seen = headers_through(target).await;
        assert!(!seen.contains("client-token"), "{seen}");
        assert_eq!(
            seen.contains("authorization=Bearer proxy-token"),
            bearer,
            "{seen}"
        );
    }
}
