//! The proxy's metrics (issue 18): calls to an upstream over real HTTP are counted and timed
//! by upstream, method and outcome, and `mcp_upstream_up` says whether it answered last. The
//! upstream is then stopped: the next call is counted `unavailable` and the gauge drops to
//! 0. Its own binary: the metrics recorder is process-wide.

use ferrymcp::{
    Args, HttpConfig, HttpServer, Server, ToolDef,
    metrics::MetricsExporter,
    proxy::{HttpTarget, ProxyServer, Upstream},
};
use ferrymcp_test_helpers::metrics::Scrape;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_calls_health_and_latency_are_measured() {
    let exporter = MetricsExporter::install().expect("the only recorder of this process");
    let upstream = Server::new("inventory");
    upstream
        .add_tool(ToolDef::new("add", |Args(p): Args<Pair>| async move {
            p.a + p.b
        }))
        .unwrap();
    let http = HttpServer::bind(upstream, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));

    let front = Server::new("front");
    let proxied = ProxyServer::new(Upstream::http("inventory", HttpTarget::new(&url)))
        .build()
        .await
        .expect("the proxy lists the upstream");
    front.mount(&proxied, "inv").unwrap();
    for i in 0..3 {
        front
            .call_tool("inv_add", json!({"a": i, "b": 1}))
            .await
            .expect("a proxied call");
    }
    let up = Scrape::parse(&exporter.render().await);
    let calls = |scrape: &Scrape, outcome: &str| {
        scrape.value(
            "mcp_upstream_requests_total",
            &[
                ("upstream", "inventory"),
                ("method", "tools/call"),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(calls(&up, "ok"), Some(3.0), "{}", up.text());
    assert_eq!(
        up.value("mcp_upstream_up", &[("upstream", "inventory")]),
        Some(1.0),
        "{}",
        up.text()
    );
    assert!(
        up.value(
            "mcp_upstream_request_duration_seconds",
            &[("upstream", "inventory")]
        ) >= Some(3.0),
        "a duration per request: {}",
        up.text()
    );

    // The upstream goes away.
    let _ = stop.send(());
    serving.await.expect("the upstream task").expect("it stops");
    let failed = front.call_tool("inv_add", json!({"a": 1, "b": 1})).await;
    assert!(
        failed.is_err(),
        "a call to a stopped upstream fails: {failed:?}"
    );
    let down = Scrape::parse(&exporter.render().await);
    assert_eq!(calls(&down, "ok"), Some(3.0), "{}", down.text());
    assert_eq!(calls(&down, "unavailable"), Some(1.0), "{}", down.text());
    assert_eq!(
        down.value("mcp_upstream_up", &[("upstream", "inventory")]),
        Some(0.0),
        "{}",
        down.text()
    );
}
