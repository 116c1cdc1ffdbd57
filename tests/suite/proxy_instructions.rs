//! G21: a proxy gives its clients the upstream's `instructions` unless the proxy's own are
//! set, and none when the upstream has none; in 2025-11-25 (`initialize`) and 2026-07-28
//! (`server/discover`) sessions alike, over real HTTP on 127.0.0.1, with upstreams reached
//! in either era. A proxy built lazily takes them with its first read of the upstream, which
//! here comes up only after the proxy serves.

use crate::{common, support::proxy::serve};

use std::time::{Duration, Instant};

use ferrymcp::{HttpConfig, HttpServer, Server};
use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream, UpstreamOptions};
use ferrymcp_test_helpers::client::{Lifecycle, connect};
use rmcp::transport::StreamableHttpClientTransport;
use tokio_util::sync::{CancellationToken, DropGuard};

const UPSTREAM_SAYS: &str = "Add with add; the upstream says so.";

/// Bounds the wait for a lazily built proxy's first read of an upstream that came up late.
const BOUND: Duration = Duration::from_secs(30);

fn upstream_server(instructions: Option<&str>) -> Server {
    let server = Server::new("upstream");
    server.tool("add", || async { 5 }).expect("add");
    if let Some(instructions) = instructions {
        server.set_instructions(instructions);
    }
    server
}

fn upstream_at(url: &str, legacy: bool) -> Upstream {
    let upstream = Upstream::http("up", HttpTarget::new(url.to_owned()));
    if legacy {
        upstream.with_options(UpstreamOptions::default().legacy_handshake())
    } else {
        upstream
    }
}

/// The instructions a new client session of `url` is given, in each era.
async fn instructions_seen(url: &str) -> [Option<String>; 2] {
    let mut seen = [None, None];
    for (at, lifecycle) in [Lifecycle::Legacy, Lifecycle::Modern]
        .into_iter()
        .enumerate()
    {
        let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
        let client = connect(transport, lifecycle, false).await.expect("connect");
        seen[at] = client
            .peer_info()
            .expect("the server's answer")
            .instructions
            .clone();
        client.cancel().await.expect("close the session");
    }
    seen
}

/// How many tools a new 2026-07-28 session of `url` lists.
async fn tools_listed(url: &str) -> usize {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    let client = connect(transport, Lifecycle::Modern, false)
        .await
        .expect("connect");
    let tools = client.list_all_tools().await.expect("tools/list");
    client.cancel().await.expect("close the session");
    tools.len()
}

fn both(text: &str) -> [Option<String>; 2] {
    [Some(text.to_owned()), Some(text.to_owned())]
}

#[tokio::test]
async fn g21_the_upstreams_instructions_reach_the_proxys_clients_in_both_eras() {
    let (url, _upstream) = serve(upstream_server(Some(UPSTREAM_SAYS))).await;
    for legacy_upstream in [false, true] {
        let proxy = ProxyServer::new(upstream_at(&url, legacy_upstream))
            .build()
            .await
            .expect("build");
        let (proxy_url, _proxy) = serve(proxy).await;
        assert_eq!(
            instructions_seen(&proxy_url).await,
            both(UPSTREAM_SAYS),
            "legacy upstream: {legacy_upstream}"
        );
    }
}

#[tokio::test]
async fn g21_the_proxys_own_instructions_take_precedence() {
    let (url, _upstream) = serve(upstream_server(Some(UPSTREAM_SAYS))).await;
    let built = ProxyServer::new(upstream_at(&url, false))
        .build()
        .await
        .expect("build");
    built.set_instructions("The proxy's own.");
    let (built_url, _built) = serve(built).await;
    // Starting a session reads nothing from the upstream, so list once: a read of it after
    // the proxy's own were set must not bring the upstream's back.
    assert_eq!(tools_listed(&built_url).await, 1);
    assert_eq!(
        instructions_seen(&built_url).await,
        both("The proxy's own.")
    );

    let lazy = ProxyServer::new(upstream_at(&url, false)).build_lazy();
    lazy.set_instructions("The lazy proxy's own.");
    let (lazy_url, _lazy) = serve(lazy).await;
    assert_eq!(tools_listed(&lazy_url).await, 1);
    assert_eq!(
        instructions_seen(&lazy_url).await,
        both("The lazy proxy's own.")
    );
}

#[tokio::test]
async fn g21_an_upstream_without_instructions_gives_none() {
    let (url, _upstream) = serve(upstream_server(None)).await;
    let proxy = ProxyServer::new(upstream_at(&url, false))
        .build()
        .await
        .expect("build");
    let (proxy_url, _proxy) = serve(proxy).await;
    assert_eq!(instructions_seen(&proxy_url).await, [None, None]);
}

/// Serves `server` on `port` of 127.0.0.1 until the guard drops.
async fn serve_on(server: Server, port: u16) -> DropGuard {
    let http = HttpServer::bind(server, ("127.0.0.1", port), HttpConfig::new())
        .await
        .expect("bind");
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        let _ = http.run_until(stopped.cancelled_owned()).await;
    });
    stop.drop_guard()
}

#[tokio::test]
async fn g21_a_lazy_proxy_takes_the_instructions_of_an_upstream_that_came_up_late() {
    let port = common::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let proxy = ProxyServer::new(upstream_at(&url, false)).build_lazy();
    let (proxy_url, _proxy) = serve(proxy).await;
    // Sessions that start while the upstream is down have none.
    assert_eq!(instructions_seen(&proxy_url).await, [None, None]);

    let _upstream = serve_on(upstream_server(Some(UPSTREAM_SAYS)), port).await;
    // The proxy backs off after its failed attempts: list until it has read the upstream.
    let client = connect(
        StreamableHttpClientTransport::from_uri(proxy_url.clone()),
        Lifecycle::Modern,
        false,
    )
    .await
    .expect("connect");
    let began = Instant::now();
    while client.list_all_tools().await.map_or(true, |t| t.is_empty()) {
        assert!(began.elapsed() < BOUND, "the proxy never read the upstream");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.cancel().await.expect("close");
    assert_eq!(instructions_seen(&proxy_url).await, both(UPSTREAM_SAYS));
}
