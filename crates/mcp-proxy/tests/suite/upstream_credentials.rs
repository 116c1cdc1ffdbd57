//! An HTTP upstream's own credentials against a real authorization server (oidc-provider,
//! ferrymcp-test-helpers' `AuthServer`): client credentials fetched once and reused, refreshed after a
//! 401 with exactly one retry, and RFC 8693 token exchange giving the upstream a token of its
//! own for each caller (AU22), never the caller's token (AU5).
//!
//! Every hop is real HTTP on 127.0.0.1: a client → the gateway (whose front puts the client's
//! bearer token into the request, standing in for its resource server) → the upstream, an
//! ferrymcp-core server behind a layer that records every `Authorization` it gets and can refuse
//! tokens with a 401.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse as _, Response},
};
use ferrymcp_core::{
    CancellationToken, Context, HttpConfig, HttpServer, Server, ToolDef, ToolError,
    auth::BearerToken,
};
use ferrymcp_proxy::{
    HttpTarget, ProxyServer, Upstream, UpstreamOptions,
    upstream_auth::{OAuthClient, UpstreamAuth},
};
use ferrymcp_test_helpers::{
    auth_server::{AuthServer, CLIENT_A, CLIENT_B, SECRET_A, SECRET_B, jwt_parts},
    client::{Lifecycle, connect},
};
use ferrymcp_types::{CallToolRequestParams, CallToolResponse};
use rmcp::transport::{
    StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
};
use serde_json::Value;

/// What the upstream's guard saw and refuses.
#[derive(Default)]
struct Guard {
    /// Every `Authorization` value, in order (`""` for none).
    seen: Mutex<Vec<String>>,
    /// Tokens answered with 401.
    refused: Mutex<HashSet<String>>,
    /// Answer every request with 401.
    refuse_all: Mutex<bool>,
}

impl Guard {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("seen").clone()
    }
}

async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let value = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    guard.seen.lock().expect("seen").push(value.clone());
    let token = value.strip_prefix("Bearer ").unwrap_or_default();
    let refused = *guard.refuse_all.lock().expect("all")
        || guard.refused.lock().expect("refused").contains(token);
    if refused {
        return (
            http::StatusCode::UNAUTHORIZED,
            [(
                http::header::WWW_AUTHENTICATE,
                "Bearer error=\"invalid_token\"",
            )],
        )
            .into_response();
    }
    next.run(request).await
}

/// The front's stand-in for a resource server: the client's bearer token, as the verified
/// `BearerToken` of the request.
async fn caller_token(mut request: Request) -> Request {
    let token = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(BearerToken::new);
    if let Some(token) = token {
        request.extensions_mut().insert(token);
    }
    request
}

/// The `Authorization` header the `whoami` call arrived with.
async fn whoami(cx: Context) -> Result<String, ToolError> {
    cx.scope()
        .extensions()
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(http::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| ToolError::new("no Authorization"))
}

struct Stack {
    guard: Arc<Guard>,
    upstream_url: String,
    front_url: String,
    stop: CancellationToken,
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The upstream, then the gateway over it with `auth(upstream_url)`.
async fn stack(auth: impl FnOnce(&str) -> UpstreamAuth) -> Stack {
    stack_with(auth, UpstreamOptions::default()).await
}

/// [`stack`], the gateway's upstream with `options`.
async fn stack_with(auth: impl FnOnce(&str) -> UpstreamAuth, options: UpstreamOptions) -> Stack {
    let stop = CancellationToken::new();
    let guard = Arc::new(Guard::default());
    let upstream = Server::new("upstream");
    upstream
        .add_tool(ToolDef::new("whoami", whoami))
        .expect("tool");
    let upstream = HttpServer::bind(upstream, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind")
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&guard),
            self::guard,
        ));
    let upstream_url = format!("http://{}/mcp", upstream.local_addr());
    tokio::spawn(upstream.run_until(stop.clone().cancelled_owned()));

    let target = HttpTarget::new(upstream_url.clone()).auth(auth(&upstream_url));
    let proxy = ProxyServer::new(Upstream::http("up", target).with_options(options))
        .build()
        .await
        .expect("proxy");
    let gateway = Server::new("gateway");
    gateway.mount(&proxy, "up").expect("mount");
    let front = HttpServer::bind(gateway, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind")
        .layer(axum::middleware::map_request(caller_token));
    let front_url = format!("http://{}/mcp", front.local_addr());
    tokio::spawn(front.run_until(stop.clone().cancelled_owned()));
    Stack {
        guard,
        upstream_url,
        front_url,
        stop,
    }
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ferrymcp_types::ClientConfig>;

async fn client(front_url: &str, token: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(front_url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    connect(
        StreamableHttpClientTransport::from_config(config),
        Lifecycle::Modern,
        false,
    )
    .await
    .expect("connect to the gateway")
}

/// `up_whoami` through the gateway: the upstream's bearer token, or the error's text.
async fn upstream_token(client: &Client) -> Result<String, String> {
    match client
        .call_tool_once(CallToolRequestParams::new("up_whoami"))
        .await
    {
        Ok(CallToolResponse::Complete(result)) if result.is_error != Some(true) => {
            let text = result
                .structured_content
                .as_ref()
                .and_then(|v| v["result"].as_str())
                .unwrap_or_default();
            Ok(text.strip_prefix("Bearer ").unwrap_or(text).to_owned())
        }
        other => Err(format!("{other:?}")),
    }
}

fn claims(token: &str) -> Value {
    jwt_parts(token).expect("a JWT").1
}

fn audience_has(claims: &Value, url: &str) -> bool {
    match &claims["aud"] {
        Value::String(aud) => aud == url,
        Value::Array(list) => list.iter().any(|a| a == url),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au22_client_credentials_token_reaches_the_upstream() {
    // Calls posted one by one (2026-07-28), and sent through rmcp's session (2025-11-25).
    for options in [
        UpstreamOptions::default(),
        UpstreamOptions::default().legacy_handshake(),
    ] {
        client_credentials_reach_the_upstream(options).await;
    }
}

async fn client_credentials_reach_the_upstream(options: UpstreamOptions) {
    let auth = AuthServer::shared();
    let stack = stack_with(
        |_| {
            UpstreamAuth::ClientCredentials(
                OAuthClient::new(auth.token_endpoint(), CLIENT_A, SECRET_A).scope("read"),
            )
        },
        options,
    )
    .await;
    let client = client(&stack.front_url, None).await;
    let mut tokens = HashSet::new();
    for _ in 0..5 {
        tokens.insert(upstream_token(&client).await.expect("a call"));
    }
    let concurrent = futures::future::join_all((0..10).map(|_| upstream_token(&client))).await;
    for token in concurrent {
        tokens.insert(token.expect("a concurrent call"));
    }
    assert_eq!(tokens.len(), 1, "one token for every call ({options:?})");
    let token = tokens.into_iter().next().unwrap_or_default();
    let claims = claims(&token);
    assert!(audience_has(&claims, &stack.upstream_url), "{claims}");
    assert_eq!(claims["client_id"], CLIENT_A, "{claims}");
    // The handshake, the listing and every call: that one token, fetched once.
    let seen: HashSet<String> = stack.guard.seen().into_iter().collect();
    assert_eq!(
        seen,
        HashSet::from([format!("Bearer {token}")]),
        "{options:?}"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au22_token_is_refreshed() {
    let auth = AuthServer::shared();
    let stack = stack(|_| {
        UpstreamAuth::ClientCredentials(OAuthClient::new(auth.token_endpoint(), CLIENT_B, SECRET_B))
    })
    .await;
    let client = client(&stack.front_url, None).await;
    let first = upstream_token(&client).await.expect("a call");

    // The upstream stops taking the first token: one 401, a new token, the call succeeds.
    stack
        .guard
        .refused
        .lock()
        .expect("refused")
        .insert(first.clone());
    let before = stack.guard.seen().len();
    let second = upstream_token(&client)
        .await
        .expect("the call succeeds after one refresh");
    assert_ne!(second, first);
    assert_eq!(
        stack.guard.seen()[before..],
        [format!("Bearer {first}"), format!("Bearer {second}")],
        "the refused token, then the new one"
    );
    assert!(audience_has(&claims(&second), &stack.upstream_url));

    // A second 401 is the call's error: one retry, not a loop.
    *stack.guard.refuse_all.lock().expect("all") = true;
    let before = stack.guard.seen().len();
    let error = upstream_token(&client)
        .await
        .expect_err("refused twice, the call fails");
    assert_eq!(stack.guard.seen().len() - before, 2, "{error}");
    assert!(error.contains("upstream 'up'"), "{error}");
    assert!(error.contains("401"), "{error}");
    assert!(!error.contains(SECRET_B), "{error}");

    // And the proxy is not stuck: once the upstream takes tokens again, calls succeed.
    *stack.guard.refuse_all.lock().expect("all") = false;
    upstream_token(&client).await.expect("calls work again");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au22_token_exchange_gives_the_upstream_its_own_token() {
    let auth = AuthServer::shared();
    let stack = stack(|_| {
        UpstreamAuth::TokenExchange(OAuthClient::new(auth.token_endpoint(), CLIENT_B, SECRET_B))
    })
    .await;
    // The caller's token is meant for the gateway.
    let caller = auth.token(CLIENT_A, &stack.front_url, "read write").await;
    let caller_claims = claims(&caller);
    let client = client(&stack.front_url, Some(&caller)).await;
    let upstream = upstream_token(&client).await.expect("an exchanged call");
    assert_ne!(upstream, caller);
    let upstream_claims = claims(&upstream);
    assert!(
        audience_has(&upstream_claims, &stack.upstream_url),
        "{upstream_claims}"
    );
    assert!(
        !audience_has(&upstream_claims, &stack.front_url),
        "{upstream_claims}"
    );
    assert_eq!(
        upstream_claims["sub"], caller_claims["sub"],
        "{upstream_claims}"
    );
    // Cached for the same caller.
    assert_eq!(upstream_token(&client).await.expect("again"), upstream);

    // A caller without a token: the call fails, and nothing reaches the upstream.
    let anonymous = self::client(&stack.front_url, None).await;
    let before = stack.guard.seen().len();
    let error = upstream_token(&anonymous)
        .await
        .expect_err("no caller token, no call");
    assert!(error.contains("no verified caller token"), "{error}");
    assert_eq!(stack.guard.seen().len(), before, "{error}");

    // The caller's token never reached the upstream, on any request.
    let seen = stack.guard.seen();
    assert!(
        seen.iter().all(|value| !value.contains(&caller)),
        "{seen:?}"
    );
    assert!(
        seen.iter().all(|value| value.starts_with("Bearer ")),
        "{seen:?}"
    );
    client.cancel().await.ok();
    anonymous.cancel().await.ok();
}

#[cfg(feature = "gateway")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au22_secrets_never_show_in_debug_output_or_errors() {
    let auth = AuthServer::shared();
    let secret = "s3cret-that-is-wrong";
    let client = OAuthClient::new(auth.token_endpoint(), CLIENT_A, secret).scope("read");
    let target = HttpTarget::new("http://127.0.0.1:9/mcp")
        .auth(UpstreamAuth::ClientCredentials(client.clone()));
    let static_target = HttpTarget::new("http://127.0.0.1:9/mcp").bearer(secret);
    let exchange = UpstreamAuth::TokenExchange(client);
    let config: ferrymcp_proxy::gateway::AuthConfig = toml::from_str(&format!(
        "type = \"client_credentials\"\ntoken_url = \"http://127.0.0.1:9/token\"\nclient_id = \"gw\"\nclient_secret = \"{secret}\"\n"
    ))
    .expect("parses, to be refused when used");
    let refusal = config
        .upstream_auth(|_| None)
        .expect_err("an inline secret is refused");
    for text in [
        format!("{target:?}"),
        format!("{static_target:?}"),
        format!("{exchange:?}"),
        format!("{config:?}"),
        refusal,
    ] {
        assert!(!text.contains(secret), "{text}");
    }

    // The authorization server refuses the wrong secret: the error says so, without it.
    let guard = Arc::new(Guard::default());
    let upstream = Server::new("upstream");
    upstream
        .add_tool(ToolDef::new("whoami", whoami))
        .expect("tool");
    let upstream = HttpServer::bind(upstream, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind")
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&guard),
            self::guard,
        ));
    let url = format!("http://{}/mcp", upstream.local_addr());
    let stop = CancellationToken::new();
    tokio::spawn(upstream.run_until(stop.clone().cancelled_owned()));
    let client = OAuthClient::new(auth.token_endpoint(), CLIENT_A, secret);
    let proxy = Upstream::http(
        "up",
        HttpTarget::new(url).auth(UpstreamAuth::ClientCredentials(client)),
    );
    let error = proxy.list_tools().await.expect_err("no token, no session");
    for text in [format!("{error:?}"), error.to_string()] {
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains("invalid_client"), "{text}");
    }
    assert!(
        guard.seen().is_empty(),
        "nothing unauthenticated reached the upstream: {:?}",
        guard.seen()
    );
    stop.cancel();
}
