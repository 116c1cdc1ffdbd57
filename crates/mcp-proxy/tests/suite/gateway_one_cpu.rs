//! The `ferrymcp-gateway` binary on a machine (or a CPU set) of one CPU, where it runs one
//! thread: calls, a cancellation, and connections to the upstream cut under it all behave
//! as on its multi-thread runtime. `taskset` (util-linux) pins it to CPU 0; without it the
//! test fails.

use std::{net::SocketAddr, process::Stdio, time::Duration};

use ferrymcp_core::{CancellationToken, HttpConfig, HttpServer};
use ferrymcp_proxy::{HttpTarget, RequestOptions, Upstream};
use ferrymcp_test_helpers::fault_proxy::FaultProxy;
use ferrymcp_types::{CallToolResponse, JsonObject};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    sync::mpsc,
};

use crate::http_calls::upstream;

/// How many threads process `pid` runs.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the gateway's threads")
        .count()
}

async fn add(gateway: &Upstream, a: i64, b: i64) -> serde_json::Value {
    try_add(gateway, a, b)
        .await
        .unwrap_or_else(|error| panic!("tools/call through the gateway: {error}"))
}

async fn try_add(gateway: &Upstream, a: i64, b: i64) -> Result<serde_json::Value, String> {
    let arguments: JsonObject = json!({"a": a, "b": b})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let reply = gateway
        .call_tool("up_add", arguments, RequestOptions::default())
        .await
        .map_err(|error| error.to_string())?;
    Ok(match reply {
        CallToolResponse::Complete(result) => {
            assert_ne!(result.is_error, Some(true), "{result:?}");
            result.structured_content.expect("structured content")["result"].clone()
        }
        other => panic!("{other:?}"),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_cpu_the_gateway_runs_one_thread_and_calls_cancels_and_reconnects_work() {
    // The upstream (`add`, `wait` and others), reached through a proxy that can cut its
    // connections.
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (cancelled_tx, mut cancelled) = mpsc::unbounded_channel();
    let http = HttpServer::bind(
        upstream(started_tx, cancelled_tx),
        SocketAddr::from(([127, 0, 0, 1], 0)),
        HttpConfig::new(),
    )
    .await
    .expect("bind");
    let proxy = FaultProxy::start(http.local_addr()).await.expect("proxy");
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        let _ = http.run_until(stopped.cancelled_owned()).await;
    });
    let _stop = stop.drop_guard();

    let dir = std::env::temp_dir().join(format!("ferrymcp-gateway-one-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nnamespace = \"up\"\nurl = \"http://{}/mcp\"\n",
            proxy.addr()
        ),
    )
    .expect("config");
    let mut child = tokio::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_ferrymcp-gateway"))
        .arg("--config")
        .arg(&config)
        .args(["--http", "127.0.0.1:0"])
        .env_remove("TOKIO_WORKER_THREADS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("taskset (util-linux) runs the gateway on CPU 0");
    let pid = child.id().expect("the gateway's pid");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = stderr.next_line().await.expect("stderr") {
            if let Some(url) = line.strip_prefix("listening on ") {
                return url.to_owned();
            }
        }
        panic!("the gateway exited before listening");
    })
    .await
    .expect("the gateway listens within 60 s");
    let gateway = Upstream::http("gateway", HttpTarget::new(url));

    // Calls, one after another and many at once.
    assert_eq!(add(&gateway, 40, 2).await, 42);
    let many = futures::future::join_all((0..32).map(|n| add(&gateway, n, 1))).await;
    assert_eq!(many, (0..32).map(|n| json!(n + 1)).collect::<Vec<_>>());

    // A cancelled call stops the upstream's handler.
    let cancel = CancellationToken::new();
    let call = {
        let gateway = gateway.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            gateway
                .call_tool(
                    "up_wait",
                    JsonObject::new(),
                    RequestOptions::default().cancel_on(&cancel),
                )
                .await
        })
    };
    started.recv().await.expect("the upstream tool started");
    cancel.cancel();
    let error = call.await.expect("join").expect_err("cancelled");
    assert!(error.to_string().contains("was cancelled"), "{error}");
    // The bound only turns a lost cancellation into a failure instead of a hang.
    tokio::time::timeout(Duration::from_secs(10), cancelled.recv())
        .await
        .expect("the upstream handler saw the cancellation")
        .expect("signal");

    // The upstream's connections are cut. The first call may still go out on one of them
    // before the gateway has seen it close: that call fails as a disconnection (HTTP/1
    // cannot tell whether the upstream got it, and a tools/call is not sent twice). Every
    // later call goes through on a new connection.
    let accepted = proxy.accepted();
    proxy.cut();
    if let Err(error) = try_add(&gateway, 1, 1).await {
        assert!(error.contains("disconnected"), "{error}");
    }
    for n in 0..5 {
        assert_eq!(add(&gateway, n, 2).await, json!(n + 2));
    }
    assert!(proxy.accepted() > accepted, "no new upstream connection");

    // One CPU, one thread: the runtime's (no worker thread beside it).
    assert_eq!(
        threads(pid),
        1,
        "the gateway on one CPU runs more than one thread"
    );
    let _ = child.kill().await;
}
