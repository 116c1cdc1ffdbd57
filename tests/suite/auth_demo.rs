//! The demo as an OAuth resource server, end to end (issue 13): the demo process with
//! `--auth-issuer`/`--auth-audience`, a real authorization server (oidc-provider, started by
//! `ferrymcp_test_helpers::auth_server`), real HTTP. Bad tokens of every kind are refused with 401,
//! a missing scope gets 403 and the same call with it succeeds.

use crate::common;

use std::time::{SystemTime, UNIX_EPOCH};

use ferrymcp_test_helpers::{
    auth_server::{AuthServer, CLIENT_A, CLIENT_B},
    http::post_2026_to,
};
use serde_json::{Value, json};

/// The demo with OAuth on; its audience is its own URL.
async fn authed_demo(auth: &AuthServer) -> common::DemoHttp {
    let port = common::free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let demo = common::spawn_demo_http_on(
        port,
        &["--auth-issuer", auth.issuer(), "--auth-audience", &audience],
        &[],
    )
    .await;
    assert_eq!(demo.url, audience);
    demo
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A 2026-07-28 POST with `token` (if any); the status, the challenge and the JSON body.
async fn post(url: &str, token: Option<&str>, method: &str, params: Value) -> (u16, String, Value) {
    let answer = post_2026_to(url, token, method, params, json!({})).await;
    (answer.status, answer.challenge, answer.body)
}

fn multiply() -> Value {
    json!({"name": "child_multiply", "arguments": {"a": 6, "b": 7}})
}

#[tokio::test]
async fn au4_au5_au10_bad_tokens_of_every_kind_get_401_invalid_token() {
    let auth = AuthServer::shared();
    let demo = authed_demo(auth).await;
    let claims = |extra: Value| {
        let mut claims = json!({
            "iss": auth.issuer(), "aud": demo.url, "sub": CLIENT_A, "client_id": CLIENT_A,
            "scope": "child", "iat": now(), "exp": now() + 300,
        });
        if let (Some(claims), Some(extra)) = (claims.as_object_mut(), extra.as_object()) {
            claims.extend(extra.clone());
        }
        claims
    };
    let good = auth.mint(json!({}), claims(json!({}))).await;
    let mut tampered = good.clone();
    tampered.pop();
    tampered.push(if good.ends_with('A') { 'B' } else { 'A' });
    let bad = [
        (
            "expired",
            auth.mint(json!({}), claims(json!({"exp": now() - 3600})))
                .await,
        ),
        (
            "not yet valid",
            auth.mint(json!({}), claims(json!({"nbf": now() + 3600})))
                .await,
        ),
        (
            "another audience",
            auth.token(CLIENT_A, "http://127.0.0.1:1/other", "child")
                .await,
        ),
        (
            "another issuer",
            auth.mint(json!({}), claims(json!({"iss": "http://127.0.0.1:1"})))
                .await,
        ),
        ("a bad signature", tampered),
        (
            "alg none",
            auth.mint(json!({"alg": "none"}), claims(json!({}))).await,
        ),
        ("no exp", {
            let mut c = claims(json!({}));
            c.as_object_mut().map(|c| c.remove("exp"));
            auth.mint(json!({}), c).await
        }),
        ("garbage", "garbage".to_owned()),
    ];
    for (what, token) in &bad {
        let (status, challenge, _) = post(&demo.url, Some(token), "tools/call", multiply()).await;
        assert_eq!(status, 401, "{what}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains("resource_metadata=\""),
            "{what}: {challenge}"
        );
    }
    // The minted good token itself is accepted: the refusals above are about their flaw.
    let (status, _, body) = post(&demo.url, Some(&good), "tools/call", multiply()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["structuredContent"]["result"], 42, "{body}");
}

#[tokio::test]
async fn au3_au6_no_token_or_a_token_in_the_query_gets_401_without_error() {
    let auth = AuthServer::shared();
    let demo = authed_demo(auth).await;
    let token = auth.token(CLIENT_A, &demo.url, "child").await;
    let (status, challenge, _) = post(&demo.url, None, "tools/list", json!({})).await;
    assert_eq!(status, 401);
    assert!(!challenge.contains("error="), "{challenge}");
    let in_query = format!("{}?access_token={token}", demo.url);
    let (status, challenge, _) = post(&in_query, None, "tools/list", json!({})).await;
    assert_eq!(status, 401, "a token in the URL is not a credential");
    assert!(!challenge.contains("error="), "{challenge}");
}

#[tokio::test]
async fn au7_au18_a_missing_scope_gets_403_and_the_same_call_with_it_succeeds() {
    let auth = AuthServer::shared();
    let demo = authed_demo(auth).await;
    let narrow = auth.token(CLIENT_A, &demo.url, "").await;
    // The root's tools need only a valid token.
    let (status, _, body) = post(
        &demo.url,
        Some(&narrow),
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The child's are hidden from the listing and refused with the scope they need.
    let (_, _, listing) = post(&demo.url, Some(&narrow), "tools/list", json!({})).await;
    let names: Vec<&str> = listing["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        names.contains(&"add") && !names.contains(&"child_multiply"),
        "{names:?}"
    );
    let (status, challenge, _) = post(&demo.url, Some(&narrow), "tools/call", multiply()).await;
    assert_eq!(status, 403);
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"child\""), "{challenge}");
    let (status, _, _) = post(
        &demo.url,
        Some(&narrow),
        "resources/read",
        json!({"uri": "users://child/7/profile"}),
    )
    .await;
    assert_eq!(status, 403, "the child's template needs the scope too");
    // The same call with the scope.
    let wide = auth.token(CLIENT_B, &demo.url, "child").await;
    let (status, _, body) = post(&demo.url, Some(&wide), "tools/call", multiply()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["structuredContent"]["result"], 42, "{body}");
}

#[tokio::test]
async fn au1_the_demo_advertises_its_authorization_server() {
    let auth = AuthServer::shared();
    let demo = authed_demo(auth).await;
    let base = demo.url.trim_end_matches("/mcp");
    let document: Value = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .await
        .expect("GET metadata")
        .json()
        .await
        .expect("JSON");
    assert_eq!(document["resource"], demo.url);
    assert_eq!(document["authorization_servers"], json!([auth.issuer()]));
    assert_eq!(document["scopes_supported"], json!(["child"]));
}
