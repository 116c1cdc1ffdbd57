//! G22: a 2025-11-25 `ping` of a proxy is passed on to its upstream, over real HTTP on
//! 127.0.0.1: the upstream's own ping hook sees it, and a proxy whose upstream is gone
//! answers the ping with an error naming it instead of a bare success. A server without
//! ping hooks answers at once, as before.

use crate::support::proxy::serve;

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use ferrymcp::Server;
use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream, UpstreamOptions};
use ferrymcp_test_helpers::client::{Lifecycle, TestClient, connect};
use rmcp::{
    ServiceError,
    model::{ClientRequest, PingRequest},
    transport::StreamableHttpClientTransport,
};

/// An upstream whose ping hook counts the pings it answers.
fn counting_upstream() -> (Server, Arc<AtomicUsize>) {
    let server = Server::new("upstream");
    server.tool("add", || async { 5 }).expect("add");
    let pings = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&pings);
    server.on_ping(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok(()) }
    });
    (server, pings)
}

async fn legacy_client(url: &str) -> TestClient {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    connect(transport, Lifecycle::Legacy, false)
        .await
        .expect("connect")
}

async fn ping(client: &TestClient) -> Result<(), ServiceError> {
    client
        .send_request(ClientRequest::PingRequest(PingRequest::default()))
        .await
        .map(drop)
}

#[tokio::test]
async fn g22_a_ping_of_the_proxy_reaches_its_upstream() {
    let (upstream, pings) = counting_upstream();
    let (url, upstream_guard) = serve(upstream).await;
    let proxied = Upstream::http("up", HttpTarget::new(url))
        .with_options(UpstreamOptions::default().legacy_handshake());
    let proxy = ProxyServer::new(proxied).build().await.expect("build");
    let (proxy_url, _proxy) = serve(proxy).await;

    let client = legacy_client(&proxy_url).await;
    let before = pings.load(Ordering::SeqCst);
    ping(&client).await.expect("the ping is answered");
    ping(&client).await.expect("the ping is answered");
    // The proxy's own session checks may ping the upstream too: at least ours arrived.
    assert!(
        pings.load(Ordering::SeqCst) >= before + 2,
        "the upstream saw {} pings after {before}",
        pings.load(Ordering::SeqCst)
    );

    drop(upstream_guard);
    let error = ping(&client)
        .await
        .expect_err("a ping of a proxy whose upstream is gone fails");
    let ServiceError::McpError(error) = error else {
        panic!("not a JSON-RPC error: {error:?}")
    };
    assert!(error.message.contains("'up'"), "{error:?}");
    // The session to the proxy goes on.
    assert_eq!(client.list_all_tools().await.expect("tools/list").len(), 1);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn g22_a_server_without_ping_hooks_answers_at_once() {
    let server = Server::new("plain");
    server.tool("add", || async { 5 }).expect("add");
    let (url, _server) = serve(server).await;
    let client = legacy_client(&url).await;
    ping(&client).await.expect("pong");
    client.cancel().await.expect("close");
}
