//! The authorization server of the auth suites (`ferrymcp_test_helpers::auth_server`), exercised as
//! they use it: a real `node .ci/auth-server/server.mjs` on a loopback port.

use ferrymcp_test_helpers::auth_server::{
    ACCESS_TOKEN_TYPE, AuthServer, CLIENT_A, CLIENT_B, OPAQUE_A, OPAQUE_SECRET_A, SECRET_A,
    SECRET_B, jwt_parts,
};
use serde_json::{Value, json};

const RESOURCE: &str = "http://127.0.0.1:1/mcp";
const UPSTREAM: &str = "http://localhost:2/upstream";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs()
}

async fn get_json(url: &str) -> Value {
    let response = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert!(
        response.status().is_success(),
        "GET {url}: {}",
        response.status()
    );
    let text = response.text().await.expect("a body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url} is not JSON ({e}): {text}"))
}

/// The kids the server publishes.
async fn published_kids(auth: &AuthServer) -> Vec<String> {
    let jwks = get_json(&auth.jwks_uri()).await;
    jwks["keys"]
        .as_array()
        .expect("a JWKS has keys")
        .iter()
        .map(|key| {
            assert_eq!(key["kty"], "RSA", "{key}");
            assert!(
                key.get("d").is_none(),
                "the JWKS leaks a private key: {key}"
            );
            key["kid"].as_str().expect("a kid").to_owned()
        })
        .collect()
}

#[tokio::test]
async fn au1_discovery_documents_name_the_issuer_keys_and_endpoints() {
    let auth = AuthServer::start().await;
    assert!(auth.issuer().starts_with("http://127.0.0.1:"));
    assert!(!auth.issuer().ends_with('/'));
    let openid = get_json(&auth.discovery_url()).await;
    let rfc8414 = get_json(&format!(
        "{}/.well-known/oauth-authorization-server",
        auth.issuer()
    ))
    .await;
    for document in [&openid, &rfc8414] {
        assert_eq!(document["issuer"], auth.issuer(), "{document}");
        assert_eq!(document["jwks_uri"], auth.jwks_uri(), "{document}");
        assert_eq!(
            document["token_endpoint"],
            auth.token_endpoint(),
            "{document}"
        );
        assert_eq!(
            document["introspection_endpoint"],
            auth.introspection_endpoint(),
            "{document}"
        );
        let grants = document["grant_types_supported"].to_string();
        assert!(grants.contains("\"client_credentials\""), "{grants}");
        assert!(
            grants.contains("urn:ietf:params:oauth:grant-type:token-exchange"),
            "{grants}"
        );
    }
}

#[tokio::test]
async fn au10_client_credentials_jwt_has_at_jwt_header_a_published_kid_and_rfc9068_claims() {
    let auth = AuthServer::start().await;
    let before = now();
    let token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let (header, claims) = jwt_parts(&token).expect("a JWT");
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert_eq!(header["alg"], "RS256", "{header}");
    let kid = header["kid"].as_str().expect("a kid");
    assert!(
        published_kids(&auth).await.iter().any(|k| k == kid),
        "{kid}"
    );

    assert_eq!(claims["iss"], auth.issuer(), "{claims}");
    assert_eq!(claims["aud"], RESOURCE, "{claims}");
    assert_eq!(claims["scope"], "read", "{claims}");
    assert_eq!(claims["client_id"], CLIENT_A, "{claims}");
    assert_eq!(claims["sub"], CLIENT_A, "{claims}");
    let exp = claims["exp"].as_u64().expect("an exp");
    assert!(
        exp >= before + 290 && exp <= now() + 310,
        "exp {exp}, now {}",
        now()
    );

    // The other client is another principal; unknown scopes are dropped, known ones kept.
    let answer = auth
        .client_credentials(CLIENT_B, SECRET_B, Some(RESOURCE), "write child nonsense")
        .await
        .expect("a token for client-b");
    assert_eq!(answer.token_type, "Bearer");
    assert_eq!(answer.expires_in, Some(300));
    assert_eq!(answer.scope.as_deref(), Some("write child"));
    let (_, claims) = jwt_parts(&answer.access_token).expect("a JWT");
    assert_eq!(claims["sub"], CLIENT_B, "{claims}");
    assert_eq!(claims["scope"], "write child", "{claims}");
    assert!(!format!("{answer:?}").contains(&answer.access_token));

    // A wrong secret is refused.
    let refused = auth
        .client_credentials(CLIENT_A, SECRET_B, Some(RESOURCE), "read")
        .await
        .expect_err("a wrong secret");
    assert!(refused.contains("invalid_client"), "{refused}");
}

#[tokio::test]
async fn au10_client_secret_post_is_accepted_too() {
    let auth = AuthServer::start().await;
    let response = reqwest::Client::new()
        .post(auth.token_endpoint())
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", CLIENT_B),
            ("client_secret", SECRET_B),
            ("resource", RESOURCE),
            ("scope", "tools"),
        ])
        .send()
        .await
        .expect("POST /token");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON");
    let (_, claims) = jwt_parts(body["access_token"].as_str().expect("a token")).expect("a JWT");
    assert_eq!(claims["client_id"], CLIENT_B, "{claims}");
    assert_eq!(claims["scope"], "tools", "{claims}");
}

#[tokio::test]
async fn au12_opaque_token_introspected_by_the_resource_server_is_active_with_its_audience() {
    let auth = AuthServer::start().await;
    let token = auth
        .opaque_token(OPAQUE_A, RESOURCE, "read files:read")
        .await;
    assert!(jwt_parts(&token).is_err(), "not opaque: {token}");
    let answer = auth.introspect(&token).await;
    assert_eq!(answer["active"], true, "{answer}");
    assert_eq!(answer["aud"], RESOURCE, "{answer}");
    assert_eq!(answer["scope"], "read files:read", "{answer}");
    assert_eq!(answer["client_id"], OPAQUE_A, "{answer}");
    assert_eq!(answer["sub"], OPAQUE_A, "{answer}");
    assert_eq!(answer["iss"], auth.issuer(), "{answer}");
    assert_eq!(answer["token_type"], "Bearer", "{answer}");
    assert!(answer["exp"].as_u64().expect("an exp") > now(), "{answer}");

    let unknown = auth.introspect("not-a-token-of-this-server").await;
    assert_eq!(unknown, json!({"active": false}));
}

#[tokio::test]
async fn au5_a_resource_outside_loopback_is_invalid_target() {
    let auth = AuthServer::start().await;
    for resource in [
        "https://example.com/",
        "http://127.0.0.1:1/mcp#fragment",
        "not a uri",
    ] {
        let refused = auth
            .client_credentials(CLIENT_A, SECRET_A, Some(resource), "read")
            .await
            .expect_err(resource);
        assert!(refused.contains("invalid_target"), "{resource}: {refused}");
    }
    // localhost is a resource as well as 127.0.0.1.
    let token = auth.token(CLIENT_A, UPSTREAM, "").await;
    let (_, claims) = jwt_parts(&token).expect("a JWT");
    assert_eq!(claims["aud"], UPSTREAM, "{claims}");
    assert!(claims.get("scope").is_none(), "{claims}");
}

#[tokio::test]
async fn au22_token_exchange_gives_the_new_audience_and_keeps_the_subject() {
    let auth = AuthServer::start().await;
    // A JWT subject token: the requested scopes it had, `act` naming the exchanging client.
    let caller = auth.token(CLIENT_A, RESOURCE, "read write").await;
    let answer = auth
        .exchange(CLIENT_B, SECRET_B, &caller, UPSTREAM, "write admin")
        .await
        .expect("an exchanged token");
    assert_eq!(answer.token_type, "Bearer");
    assert_eq!(answer.issued_token_type.as_deref(), Some(ACCESS_TOKEN_TYPE));
    assert_eq!(answer.expires_in, Some(300));
    assert_eq!(answer.scope.as_deref(), Some("write"));
    let (header, claims) = jwt_parts(&answer.access_token).expect("a JWT");
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert!(
        published_kids(&auth)
            .await
            .iter()
            .any(|k| header["kid"] == k.as_str()),
        "{header}"
    );
    assert_eq!(claims["aud"], UPSTREAM, "{claims}");
    assert_eq!(claims["sub"], CLIENT_A, "{claims}");
    assert_eq!(claims["client_id"], CLIENT_B, "{claims}");
    assert_eq!(claims["act"], json!({"sub": CLIENT_B}), "{claims}");
    assert_eq!(claims["iss"], auth.issuer(), "{claims}");
    assert_eq!(claims["scope"], "write", "{claims}");

    // An opaque subject token, no scope asked: all of the subject's.
    let opaque = auth.opaque_token(OPAQUE_A, RESOURCE, "read tools").await;
    let answer = auth
        .exchange(CLIENT_A, SECRET_A, &opaque, RESOURCE, "")
        .await
        .expect("an exchanged token");
    let (_, claims) = jwt_parts(&answer.access_token).expect("a JWT");
    assert_eq!(claims["sub"], OPAQUE_A, "{claims}");
    assert_eq!(claims["aud"], RESOURCE, "{claims}");
    assert_eq!(claims["scope"], "read tools", "{claims}");

    // Not a token of this server: invalid_grant.
    let tampered = format!("{caller}x");
    for subject in [
        "garbage",
        tampered.as_str(),
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    ] {
        let refused = auth
            .exchange(CLIENT_B, SECRET_B, subject, UPSTREAM, "read")
            .await
            .expect_err(subject);
        assert!(refused.starts_with("400"), "{refused}");
        assert!(refused.contains("invalid_grant"), "{refused}");
    }
    // Nor is another target than loopback.
    let refused = auth
        .exchange(CLIENT_B, SECRET_B, &caller, "https://example.com/", "read")
        .await
        .expect_err("a foreign resource");
    assert!(refused.contains("invalid_target"), "{refused}");
}

#[tokio::test]
async fn au4_mint_signs_the_given_claims_with_the_servers_key() {
    let auth = AuthServer::start().await;
    let claims = json!({
        "iss": "http://wrong-issuer.invalid", "aud": ["http://127.0.0.1:9/other"], "sub": "minted",
        "scope": "read admin", "exp": now() + 60, "nbf": now() + 30, "custom": {"x": 1},
    });
    let token = auth.mint(json!({}), claims.clone()).await;
    let (header, decoded) = jwt_parts(&token).expect("a JWT");
    assert_eq!(decoded, claims);
    assert_eq!(header["alg"], "RS256", "{header}");
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert!(
        published_kids(&auth)
            .await
            .iter()
            .any(|k| header["kid"] == k.as_str())
    );

    // Its signature is the server's: the server itself accepts a minted token of its own
    // issuer as a subject token, and refuses it expired.
    let valid = auth
        .mint(
            json!({}),
            json!({"iss": auth.issuer(), "sub": "minted", "scope": "read", "exp": now() + 60}),
        )
        .await;
    let answer = auth
        .exchange(CLIENT_A, SECRET_A, &valid, UPSTREAM, "read")
        .await
        .expect("a minted token is signed with the server's key");
    assert_eq!(
        jwt_parts(&answer.access_token).expect("a JWT").1["sub"],
        "minted"
    );
    let expired = auth
        .mint(
            json!({}),
            json!({"iss": auth.issuer(), "sub": "minted", "scope": "read", "exp": now() - 60}),
        )
        .await;
    let refused = auth
        .exchange(CLIENT_A, SECRET_A, &expired, UPSTREAM, "read")
        .await
        .expect_err("an expired subject token");
    assert!(refused.contains("invalid_grant"), "{refused}");

    // The header is overridable; `alg: none` gets no signature.
    let custom = auth
        .mint(
            json!({"typ": "JWT", "kid": "unknown-kid"}),
            json!({"sub": "x"}),
        )
        .await;
    let (header, _) = jwt_parts(&custom).expect("a JWT");
    assert_eq!(header["typ"], "JWT");
    assert_eq!(header["kid"], "unknown-kid");
    let unsigned = auth.mint(json!({"alg": "none"}), json!({"sub": "x"})).await;
    assert!(unsigned.ends_with('.'), "{unsigned}");
    assert_eq!(jwt_parts(&unsigned).expect("a JWT").0["alg"], "none");
}

#[tokio::test]
async fn au11_counters_count_jwks_fetches_and_introspections() {
    let auth = AuthServer::start().await;
    let start = auth.counters().await;
    assert_eq!((start.jwks, start.introspection), (0, 0), "{start:?}");
    published_kids(&auth).await;
    published_kids(&auth).await;
    let token = auth.opaque_token(OPAQUE_A, RESOURCE, "read").await;
    auth.introspect(&token).await;
    // Getting tokens and the discovery document count as neither.
    auth.token(CLIENT_A, RESOURCE, "read").await;
    get_json(&auth.discovery_url()).await;
    let after = auth.counters().await;
    assert_eq!((after.jwks, after.introspection), (2, 1), "{after:?}");
    // The helper's own client-credentials call works with client_credentials() too.
    let token = auth
        .client_credentials(OPAQUE_A, OPAQUE_SECRET_A, Some(RESOURCE), "read")
        .await
        .expect("an opaque token")
        .access_token;
    auth.introspect(&token).await;
    assert_eq!(auth.counters().await.introspection, 2);
}

#[tokio::test]
async fn au11_a_rotated_key_is_published_beside_the_old_one_and_signs_from_then_on() {
    let auth = AuthServer::start().await;
    let old_token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let old_kid = jwt_parts(&old_token).expect("a JWT").0["kid"]
        .as_str()
        .expect("a kid")
        .to_owned();
    assert_eq!(published_kids(&auth).await, vec![old_kid.clone()]);

    let new_kid = auth.rotate_key().await;
    assert_ne!(new_kid, old_kid);
    let kids = published_kids(&auth).await;
    assert_eq!(kids, vec![old_kid.clone(), new_kid.clone()]);
    for token in [
        auth.token(CLIENT_B, RESOURCE, "read").await,
        auth.mint(json!({}), json!({"sub": "x"})).await,
        auth.exchange(CLIENT_B, SECRET_B, &old_token, UPSTREAM, "")
            .await
            .expect("a token signed before the rotation is still good")
            .access_token,
    ] {
        assert_eq!(jwt_parts(&token).expect("a JWT").0["kid"], new_kid.as_str());
    }
    // One rotation per server.
    let again = tokio::spawn(async move { auth.rotate_key().await }).await;
    assert!(again.is_err_and(|e| e.is_panic()));
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server() {
    let auth = AuthServer::start().await;
    let address = auth
        .issuer()
        .strip_prefix("http://")
        .expect("an http issuer")
        .to_owned();
    assert!(tokio::net::TcpStream::connect(&address).await.is_ok());
    drop(auth);
    // The process was killed and reaped in drop: nothing listens there any more.
    assert!(
        tokio::net::TcpStream::connect(&address).await.is_err(),
        "{address} still accepts connections"
    );
}

#[tokio::test]
async fn a_missing_install_fails_naming_ci_setup() {
    let empty = std::env::temp_dir().join(format!("no-auth-server-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("a temporary folder");
    let outcome = tokio::spawn(AuthServer::start_from(empty.clone())).await;
    std::fs::remove_dir_all(&empty).expect("removing the temporary folder");
    let panic = outcome.expect_err("no packages, no server").into_panic();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default();
    assert!(message.contains("bash .ci/setup"), "{message}");
    assert!(message.contains(&empty.display().to_string()), "{message}");
}

#[test]
fn the_shared_server_is_started_once() {
    let first = AuthServer::shared();
    let second = AuthServer::shared();
    assert!(std::ptr::eq(first, second));
    assert!(first.issuer().starts_with("http://127.0.0.1:"));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let token = first.token(CLIENT_B, RESOURCE, "read").await;
            assert_eq!(jwt_parts(&token).expect("a JWT").1["sub"], CLIENT_B);
        });
}
