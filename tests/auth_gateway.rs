//! The gateway in front of the demo, both OAuth resource servers (issue 13, AU5, AU21,
//! AU22): the gateway's `[auth]` front verifies the caller's token (its audience is the
//! gateway), and its upstream gets a token of its own through RFC 8693 token exchange; the
//! caller's token would not do there (another audience), and is never passed on.

mod common;

use ferrymcp::HttpServer;
use ferrymcp_proxy::gateway::GatewayConfig;
use ferrymcp_test_helpers::{
    auth_server::{AuthServer, CLIENT_A, CLIENT_B, SECRET_B},
    http::post_2026_to,
};
use serde_json::{Value, json};

/// The environment variable the gateway reads its exchange client's secret from.
const SECRET_ENV: &str = "FERRYMCP_AUTH_GATEWAY_TEST_SECRET";

async fn post(url: &str, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let answer = post_2026_to(url, token, method, params, json!({})).await;
    (answer.status, answer.body)
}

// One thread: the secret is put into the environment before anything else runs.
#[tokio::test(flavor = "current_thread")]
async fn au21_au22_the_gateway_verifies_callers_and_exchanges_their_tokens_for_the_demo() {
    // SAFETY: set once, before this test starts any other thread.
    unsafe { std::env::set_var(SECRET_ENV, SECRET_B) };
    let auth = AuthServer::shared();
    let demo_port = common::free_port();
    let demo_url = format!("http://127.0.0.1:{demo_port}/mcp");
    let demo = common::spawn_demo_http_on(
        demo_port,
        &["--auth-issuer", auth.issuer(), "--auth-audience", &demo_url],
        &[],
    )
    .await;
    let gateway_port = common::free_port();
    let gateway_url = format!("http://127.0.0.1:{gateway_port}/mcp");
    let config = GatewayConfig::from_toml(&format!(
        r#"
        name = "front"
        [auth]
        resource = {gateway_url:?}
        issuers = [{issuer:?}]
        resource_name = "test gateway"

        [[upstream]]
        namespace = "demo"
        url = {demo_url:?}

        [upstream.auth]
        type = "token_exchange"
        token_url = "{issuer}/token"
        client_id = {CLIENT_B:?}
        client_secret_env = {SECRET_ENV:?}
        scope = "child"
        "#,
        issuer = auth.issuer(),
        demo_url = demo.url,
    ))
    .expect("a valid config");
    let http_config = config.http_config().expect("the [auth] section");
    let server = config
        .build()
        .await
        .expect("the gateway connects to the demo");
    let http = HttpServer::bind(server, format!("127.0.0.1:{gateway_port}"), http_config)
        .await
        .expect("bind");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));

    // No token at the gateway: 401 pointing at the gateway's metadata.
    let (status, _) = post(&gateway_url, None, "tools/list", json!({})).await;
    assert_eq!(status, 401);

    // A caller's token for the gateway works through it, on the root's and the child's tools.
    let caller = auth.token(CLIENT_A, &gateway_url, "child").await;
    let (status, listing) = post(&gateway_url, Some(&caller), "tools/list", json!({})).await;
    assert_eq!(status, 200, "{listing}");
    let (status, answer) = post(
        &gateway_url,
        Some(&caller),
        "tools/call",
        json!({"name": "demo_child_multiply", "arguments": {"a": 6, "b": 7}}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 42,
        "{answer}"
    );
    let (status, answer) = post(
        &gateway_url,
        Some(&caller),
        "tools/call",
        json!({"name": "demo_add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 5,
        "{answer}"
    );

    // The same caller's token is no credential at the demo: passing it on would fail.
    let (status, _) = post(&demo.url, Some(&caller), "tools/list", json!({})).await;
    assert_eq!(
        status, 401,
        "a token for the gateway is refused by the demo (AU5)"
    );

    let _ = stop.send(());
    serving.await.expect("task").expect("clean stop");
}
