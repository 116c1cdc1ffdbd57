//! Token verification (the `auth` feature) against a real authorization server: npm's
//! oidc-provider, started by `ferrymcp_test_helpers::auth_server` on a loopback port.

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ferrymcp_core::auth::verify::{
    CachedVerifier, IntrospectionVerifier, Issuers, JwtVerifier, TokenVerifier, Verified,
    VerifyError,
};
use ferrymcp_test_helpers::auth_server::{
    AuthServer, CLIENT_A, CLIENT_B, OPAQUE_A, OPAQUE_B, OPAQUE_SECRET_A, RS_CLIENT, RS_SECRET,
    jwt_parts,
};
use serde_json::{Value, json};

const RESOURCE: &str = "http://127.0.0.1:7/mcp";
const OTHER_RESOURCE: &str = "http://127.0.0.1:8/mcp";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs()
}

/// A verifier of `auth`'s JWTs for `audience`, keys through discovery.
fn jwt_verifier(auth: &AuthServer, audience: &str) -> JwtVerifier {
    JwtVerifier::builder(auth.issuer())
        .audience(audience)
        .build()
        .expect("a valid configuration")
}

fn introspection(auth: &AuthServer, audience: &str) -> IntrospectionVerifier {
    IntrospectionVerifier::builder(auth.introspection_endpoint())
        .client_credentials(RS_CLIENT, RS_SECRET)
        .audience(audience)
        .issuer(auth.issuer())
        .build()
        .expect("a valid configuration")
}

/// Claims that `jwt_verifier(auth, RESOURCE)` accepts.
fn good_claims(auth: &AuthServer) -> Value {
    json!({"iss": auth.issuer(), "aud": RESOURCE, "sub": "minted", "client_id": "minted-app",
           "scope": "read", "iat": now(), "exp": now() + 300})
}

/// The message of an `Invalid` outcome; panics on anything else.
fn invalid(outcome: Result<Verified, VerifyError>) -> String {
    match outcome {
        Err(VerifyError::Invalid(message)) => message,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

/// The kid of `auth`'s signing key.
async fn kid_of(auth: &AuthServer) -> String {
    let token = auth.mint(json!({}), json!({})).await;
    let (header, _) = jwt_parts(&token).expect("a JWT");
    header["kid"].as_str().expect("a kid").to_owned()
}

#[tokio::test]
async fn au10_au13_au16_a_valid_jwt_gives_the_right_principal() {
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, RESOURCE, "read files:read").await;
    let verified = jwt_verifier(auth, RESOURCE)
        .verify(&token)
        .await
        .expect("a valid token");
    let principal = &verified.principal;
    assert_eq!(principal.issuer.as_deref(), Some(auth.issuer()));
    assert_eq!(principal.client_id, CLIENT_A);
    assert_eq!(principal.subject.as_deref(), Some(CLIENT_A));
    assert_eq!(principal.scopes, ["read", "files:read"]);
    assert_eq!(principal.claim("aud"), Some(&json!(RESOURCE)));
    let expires_at = verified.expires_at.expect("exp");
    let left = expires_at
        .duration_since(SystemTime::now())
        .expect("in the future");
    assert!(left <= Duration::from_secs(300), "{left:?}");

    // An audience list: the token needs one of them.
    let either = JwtVerifier::builder(auth.issuer())
        .audiences([OTHER_RESOURCE, RESOURCE])
        .build()
        .unwrap();
    assert!(either.verify(&token).await.is_ok());
}

#[tokio::test]
async fn au13_scopes_from_scp_as_a_string_or_an_array() {
    let auth = AuthServer::shared();
    let verifier = jwt_verifier(auth, RESOURCE);
    for scp in [json!("read write"), json!(["read", "write"])] {
        let mut claims = good_claims(auth);
        claims.as_object_mut().unwrap().remove("scope");
        claims["scp"] = scp.clone();
        let token = auth.mint(json!({}), claims).await;
        let verified = verifier.verify(&token).await.expect("a valid token");
        assert_eq!(verified.principal.scopes, ["read", "write"], "scp {scp}");
    }
}

#[tokio::test]
async fn au4_au10_an_expired_token_is_invalid() {
    let auth = AuthServer::shared();
    let mut claims = good_claims(auth);
    claims["exp"] = json!(now() - 120);
    let token = auth.mint(json!({}), claims).await;
    let message = invalid(jwt_verifier(auth, RESOURCE).verify(&token).await);
    assert_eq!(message, "the token has expired");

    let mut claims = good_claims(auth);
    claims.as_object_mut().unwrap().remove("exp");
    let token = auth.mint(json!({}), claims).await;
    let message = invalid(jwt_verifier(auth, RESOURCE).verify(&token).await);
    assert_eq!(message, "the token has no expiry (exp)");
}

#[tokio::test]
async fn au4_au10_a_token_not_yet_valid_beyond_the_leeway_is_invalid() {
    let auth = AuthServer::shared();
    let verifier = jwt_verifier(auth, RESOURCE);
    let mut claims = good_claims(auth);
    claims["nbf"] = json!(now() + 600);
    let token = auth.mint(json!({}), claims).await;
    assert_eq!(
        invalid(verifier.verify(&token).await),
        "the token is not valid yet (nbf)"
    );

    // Within the default leeway of 60 s: accepted (a little clock skew).
    let mut claims = good_claims(auth);
    claims["nbf"] = json!(now() + 20);
    let token = auth.mint(json!({}), claims).await;
    assert!(verifier.verify(&token).await.is_ok());
    // ... unless the leeway is zero.
    let strict = JwtVerifier::builder(auth.issuer())
        .audience(RESOURCE)
        .leeway(Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!(
        invalid(strict.verify(&token).await),
        "the token is not valid yet (nbf)"
    );
}

#[tokio::test]
async fn au5_a_token_for_another_audience_is_invalid() {
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, OTHER_RESOURCE, "read").await;
    let message = invalid(jwt_verifier(auth, RESOURCE).verify(&token).await);
    assert_eq!(message, "the token is for another audience");
    assert!(!message.contains(&token));

    let mut claims = good_claims(auth);
    claims.as_object_mut().unwrap().remove("aud");
    let token = auth.mint(json!({}), claims).await;
    let message = invalid(jwt_verifier(auth, RESOURCE).verify(&token).await);
    assert_eq!(message, "the token has no audience (aud)");
}

#[tokio::test]
async fn au10_a_token_of_another_issuer_is_invalid() {
    let auth = AuthServer::shared();
    let mut claims = good_claims(auth);
    claims["iss"] = json!("http://127.0.0.1:1");
    let token = auth.mint(json!({}), claims).await;
    assert_eq!(
        invalid(jwt_verifier(auth, RESOURCE).verify(&token).await),
        "unknown issuer"
    );

    // A real token of another authorization server, for this very audience.
    let other = AuthServer::start().await;
    let token = other.token(CLIENT_A, RESOURCE, "read").await;
    assert_eq!(
        invalid(jwt_verifier(auth, RESOURCE).verify(&token).await),
        "unknown issuer"
    );
}

#[tokio::test]
async fn au10_a_signature_by_another_key_with_the_same_kid_is_invalid() {
    let auth = AuthServer::shared();
    let verifier = jwt_verifier(auth, RESOURCE);
    let genuine = auth.mint(json!({}), good_claims(auth)).await;
    assert!(verifier.verify(&genuine).await.is_ok());

    // Another server's key, under this server's kid and issuer.
    let forger = AuthServer::start().await;
    let forged = forger
        .mint(json!({"kid": kid_of(auth).await}), good_claims(auth))
        .await;
    assert_eq!(
        invalid(verifier.verify(&forged).await),
        "the signature does not verify"
    );

    // The genuine signature over other claims.
    let (_, signature) = genuine.rsplit_once('.').unwrap();
    let mut claims = good_claims(auth);
    claims["scope"] = json!("read admin");
    let header = genuine.split('.').next().unwrap();
    let tampered = format!(
        "{header}.{}.{signature}",
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    assert_eq!(
        invalid(verifier.verify(&tampered).await),
        "the signature does not verify"
    );

    // A kid the issuer does not publish.
    let unknown = auth
        .mint(json!({"kid": "not-a-kid"}), good_claims(auth))
        .await;
    assert_eq!(
        invalid(verifier.verify(&unknown).await),
        "no key of the issuer has the token's key id (kid)"
    );
}

#[tokio::test]
async fn au10_alg_none_is_refused() {
    let auth = AuthServer::shared();
    let unsigned = auth.mint(json!({"alg": "none"}), good_claims(auth)).await;
    assert_eq!(
        invalid(jwt_verifier(auth, RESOURCE).verify(&unsigned).await),
        "algorithm none is not accepted"
    );
    let shouting = auth.mint(json!({"alg": "NONE"}), good_claims(auth)).await;
    assert!(
        jwt_verifier(auth, RESOURCE)
            .verify(&shouting)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn au10_hs256_signed_with_the_public_key_is_refused() {
    let auth = AuthServer::shared();
    // The classic confusion: an HMAC over the token with the issuer's public key as secret.
    let jwks = reqwest::get(auth.jwks_uri())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let jwks: Value = serde_json::from_str(&jwks).unwrap();
    let modulus = URL_SAFE_NO_PAD
        .decode(jwks["keys"][0]["n"].as_str().unwrap())
        .unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(kid_of(auth).await);
    header.typ = Some("at+jwt".into());
    for secret in [modulus.as_slice(), jwks.to_string().as_bytes()] {
        let token = jsonwebtoken::encode(
            &header,
            &good_claims(auth),
            &jsonwebtoken::EncodingKey::from_secret(secret),
        )
        .unwrap();
        assert_eq!(
            invalid(jwt_verifier(auth, RESOURCE).verify(&token).await),
            "algorithm HS256 is not accepted"
        );
    }
}

#[tokio::test]
async fn au10_an_algorithm_outside_the_allow_list_is_refused() {
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let only_es256 = JwtVerifier::builder(auth.issuer())
        .audience(RESOURCE)
        .algorithms(["ES256"])
        .build()
        .unwrap();
    assert_eq!(
        invalid(only_es256.verify(&token).await),
        "algorithm RS256 is not accepted"
    );
}

#[tokio::test]
async fn au10_garbage_is_invalid() {
    let auth = AuthServer::shared();
    let verifier = jwt_verifier(auth, RESOURCE);
    for garbage in [
        "garbage",
        "a.b.c",
        "Bearer x",
        "eyJ.eyJ.eyJ",
        "....",
        "\u{0}\u{ff}",
    ] {
        assert_eq!(
            invalid(verifier.verify(garbage).await),
            "the token is not a JWT",
            "{garbage:?}"
        );
    }
    let not_json = format!(
        "{}.{}.sig",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256"}"#),
        URL_SAFE_NO_PAD.encode("[1,2]")
    );
    assert_eq!(
        invalid(verifier.verify(&not_json).await),
        "the token is not a JWT"
    );
}

#[tokio::test]
async fn au10_the_header_typ_must_be_that_of_an_access_token() {
    let auth = AuthServer::shared();
    let verifier = jwt_verifier(auth, RESOURCE);
    for typ in ["at+jwt", "JWT", "application/at+jwt", "AT+JWT"] {
        let token = auth.mint(json!({"typ": typ}), good_claims(auth)).await;
        assert!(verifier.verify(&token).await.is_ok(), "typ {typ}");
    }
    for typ in [json!("id_token+jwt"), json!("dpop+jwt"), json!(7)] {
        let token = auth.mint(json!({"typ": typ}), good_claims(auth)).await;
        assert_eq!(
            invalid(verifier.verify(&token).await),
            "the token's type (typ) is not an access token",
            "typ {typ}"
        );
    }
}

#[tokio::test]
async fn au11_a_flood_of_unknown_kids_fetches_the_keys_at_most_once_per_interval() {
    let auth = AuthServer::start().await;
    let verifier = jwt_verifier(&auth, RESOURCE);
    let mut bad = Vec::new();
    for i in 0..40 {
        bad.push(
            auth.mint(json!({"kid": format!("unknown-{i}")}), good_claims(&auth))
                .await,
        );
    }
    let flood = |tokens: Vec<String>| {
        let verifier = verifier.clone();
        async move {
            let all = tokens.into_iter().map(|token| {
                let verifier = verifier.clone();
                tokio::spawn(async move { verifier.verify(&token).await })
            });
            for outcome in futures::future::join_all(all).await {
                let message = invalid(outcome.expect("the task ends"));
                assert_eq!(message, "no key of the issuer has the token's key id (kid)");
            }
        }
    };
    // Nothing cached yet: the whole burst waits for one fetch.
    flood(bad[..20].to_vec()).await;
    assert_eq!(auth.counters().await.jwks, 1);
    // Keys cached, kids unknown, last fetch within the interval: no fetch at all.
    flood(bad[20..].to_vec()).await;
    assert_eq!(auth.counters().await.jwks, 1);
    // Known kids use the cached keys.
    for _ in 0..5 {
        let token = auth.token(CLIENT_B, RESOURCE, "read").await;
        assert!(verifier.verify(&token).await.is_ok());
    }
    assert_eq!(auth.counters().await.jwks, 1);
}

#[tokio::test]
async fn au11_keys_from_a_configured_jwks_uri_and_bounded_fetches() {
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let direct = JwtVerifier::builder(auth.issuer())
        .audience(RESOURCE)
        .jwks_uri(auth.jwks_uri())
        .build()
        .unwrap();
    assert!(direct.verify(&token).await.is_ok());

    // An answer over the body limit: the keys cannot be had.
    let tiny = JwtVerifier::builder(auth.issuer())
        .audience(RESOURCE)
        .max_response_bytes(16)
        .build()
        .unwrap();
    match tiny.verify(&token).await {
        Err(VerifyError::Unavailable(message)) => {
            assert!(message.contains("larger than 16 bytes"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn au11_an_unreachable_authorization_server_is_unavailable_until_keys_are_cached() {
    // A loopback port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let down = JwtVerifier::builder(format!("http://127.0.0.1:{port}"))
        .audience(RESOURCE)
        .build()
        .unwrap();
    let auth = AuthServer::shared();
    let mut claims = good_claims(auth);
    claims["iss"] = json!(format!("http://127.0.0.1:{port}"));
    let token = auth.mint(json!({}), claims).await;
    let outcome = down.verify(&token).await;
    assert!(
        matches!(outcome, Err(VerifyError::Unavailable(_))),
        "{outcome:?}"
    );

    // Keys cached, then the server goes away: the cached keys stay in use, even once they
    // are older than their max age and the refetch fails.
    let own = AuthServer::start().await;
    let verifier = JwtVerifier::builder(own.issuer())
        .audience(RESOURCE)
        .key_max_age(Duration::from_millis(1))
        .refetch_interval(Duration::from_millis(1))
        .build()
        .unwrap();
    let first = own.token(CLIENT_A, RESOURCE, "read").await;
    let second = own.token(CLIENT_B, RESOURCE, "read").await;
    assert!(verifier.verify(&first).await.is_ok());
    let fetched = std::time::Instant::now();
    drop(own);
    // Past the max age (the server's shutdown alone takes longer; this only makes sure).
    while fetched.elapsed() < Duration::from_millis(5) {
        tokio::task::yield_now().await;
    }
    let verified = verifier.verify(&second).await.expect("the cached keys");
    assert_eq!(verified.principal.client_id, CLIENT_B);
}

#[tokio::test]
async fn au12_au13_an_active_opaque_token_for_this_resource_gives_the_principal() {
    let auth = AuthServer::shared();
    let token = auth
        .opaque_token(OPAQUE_A, RESOURCE, "read files:read")
        .await;
    let verified = introspection(auth, RESOURCE)
        .verify(&token)
        .await
        .expect("an active token");
    let principal = &verified.principal;
    assert_eq!(principal.client_id, OPAQUE_A);
    assert_eq!(principal.issuer.as_deref(), Some(auth.issuer()));
    assert_eq!(principal.scopes, ["read", "files:read"]);
    assert!(verified.expires_at.is_some());
}

#[tokio::test]
async fn au12_an_opaque_token_for_another_resource_is_invalid() {
    let auth = AuthServer::shared();
    let token = auth.opaque_token(OPAQUE_B, OTHER_RESOURCE, "read").await;
    assert_eq!(
        invalid(introspection(auth, RESOURCE).verify(&token).await),
        "the token is for another audience"
    );
}

#[tokio::test]
async fn au12_revoked_and_unknown_opaque_tokens_are_invalid() {
    let auth = AuthServer::shared();
    let verifier = introspection(auth, RESOURCE);
    assert_eq!(
        invalid(verifier.verify("no-such-token").await),
        "the token is not active"
    );

    let token = auth.opaque_token(OPAQUE_A, RESOURCE, "read").await;
    assert!(verifier.verify(&token).await.is_ok());
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", &token)
        .finish();
    let revoked = reqwest::Client::new()
        .post(format!("{}/token/revocation", auth.issuer()))
        .basic_auth(OPAQUE_A, Some(OPAQUE_SECRET_A))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success(), "{}", revoked.status());
    assert_eq!(
        invalid(verifier.verify(&token).await),
        "the token is not active"
    );
}

#[tokio::test]
async fn au12_wrong_client_credentials_make_introspection_unavailable_and_stay_secret() {
    let auth = AuthServer::shared();
    let token = auth.opaque_token(OPAQUE_A, RESOURCE, "read").await;
    let verifier = IntrospectionVerifier::builder(auth.introspection_endpoint())
        .client_credentials(RS_CLIENT, "not-the-secret")
        .audience(RESOURCE)
        .build()
        .unwrap();
    match verifier.verify(&token).await {
        Err(VerifyError::Unavailable(message)) => {
            assert!(
                !message.contains("not-the-secret") && !message.contains(&token),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(!format!("{verifier:?}").contains("not-the-secret"));
}

#[tokio::test]
async fn au14_two_issuers_each_with_its_own_keys_and_audience() {
    let (a, b) = tokio::join!(AuthServer::start(), AuthServer::start());
    let issuers = Issuers::builder()
        .jwt(jwt_verifier(&a, RESOURCE))
        .jwt(jwt_verifier(&b, OTHER_RESOURCE))
        .opaque(introspection(&a, RESOURCE))
        .build()
        .unwrap();

    let from_a = issuers
        .verify(&a.token(CLIENT_A, RESOURCE, "read").await)
        .await
        .unwrap();
    assert_eq!(from_a.principal.issuer.as_deref(), Some(a.issuer()));
    let from_b = issuers
        .verify(&b.token(CLIENT_B, OTHER_RESOURCE, "write").await)
        .await
        .unwrap();
    assert_eq!(from_b.principal.issuer.as_deref(), Some(b.issuer()));
    assert_eq!(from_b.principal.scopes, ["write"]);

    // Each issuer's audience is its own.
    let a_for_b = a.token(CLIENT_A, OTHER_RESOURCE, "read").await;
    assert_eq!(
        invalid(issuers.verify(&a_for_b).await),
        "the token is for another audience"
    );
    let b_for_a = b.token(CLIENT_A, RESOURCE, "read").await;
    assert_eq!(
        invalid(issuers.verify(&b_for_a).await),
        "the token is for another audience"
    );
    // Each issuer's keys are its own: b's key under a's issuer does not verify.
    let forged = b
        .mint(json!({"kid": kid_of(&a).await}), good_claims(&a))
        .await;
    assert_eq!(
        invalid(issuers.verify(&forged).await),
        "the signature does not verify"
    );

    // An issuer not configured: refused without asking anyone.
    let before = (a.counters().await, b.counters().await);
    let mut claims = good_claims(&a);
    claims["iss"] = json!("http://127.0.0.1:1");
    let stranger = a.mint(json!({"kid": "k"}), claims).await;
    assert_eq!(invalid(issuers.verify(&stranger).await), "unknown issuer");
    assert_eq!((a.counters().await, b.counters().await), before);

    // Opaque tokens go to introspection.
    let opaque = a.opaque_token(OPAQUE_A, RESOURCE, "read").await;
    assert_eq!(
        issuers.verify(&opaque).await.unwrap().principal.client_id,
        OPAQUE_A
    );
    assert!(matches!(
        issuers.verify("no-such-token").await,
        Err(VerifyError::Invalid(_))
    ));
}

#[tokio::test]
async fn au15_a_repeated_opaque_token_is_introspected_once() {
    let auth = AuthServer::start().await;
    let cached = Arc::new(CachedVerifier::new(introspection(&auth, RESOURCE)));
    let token = auth.opaque_token(OPAQUE_A, RESOURCE, "read").await;
    for _ in 0..10 {
        assert_eq!(
            cached.verify(&token).await.unwrap().principal.client_id,
            OPAQUE_A
        );
    }
    // Concurrent requests with a new token: one introspection between them.
    let fresh = auth.opaque_token(OPAQUE_B, RESOURCE, "read").await;
    let all = (0..10).map(|_| {
        let (cached, fresh) = (Arc::clone(&cached), fresh.clone());
        tokio::spawn(async move { cached.verify(&fresh).await })
    });
    for outcome in futures::future::join_all(all).await {
        assert!(outcome.unwrap().is_ok());
    }
    assert_eq!(auth.counters().await.introspection, 2);
    // A flood of one bad token: asked about once, then refused from memory for a while.
    for _ in 0..10 {
        assert!(cached.verify("no-such-token").await.is_err());
    }
    assert_eq!(auth.counters().await.introspection, 3);
}

#[tokio::test]
async fn au11_a_discovery_document_of_another_issuer_is_not_trusted() {
    let auth = AuthServer::shared();
    // The same server under another name (a trailing slash): its discovery document names
    // `auth.issuer()`, not this one, so its keys are not taken.
    let lookalike = format!("{}/", auth.issuer());
    let verifier = JwtVerifier::builder(&lookalike)
        .audience(RESOURCE)
        .build()
        .unwrap();
    let mut claims = good_claims(auth);
    claims["iss"] = json!(lookalike);
    let token = auth.mint(json!({}), claims).await;
    match verifier.verify(&token).await {
        Err(VerifyError::Unavailable(message)) => {
            assert!(message.contains("is for issuer"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

/// A loopback HTTP server answering every request with `answer` (or, for `None`, reading
/// the request and never answering). Stops when the returned task is aborted.
async fn raw_server(answer: Option<String>) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = vec![0; 8192];
            let _ = socket.read(&mut request).await;
            match &answer {
                Some(answer) => {
                    let _ = socket.write_all(answer.as_bytes()).await;
                }
                None => held.push(socket),
            }
        }
    });
    (base, task)
}

#[tokio::test]
async fn au11_a_redirecting_jwks_uri_is_not_followed_even_by_a_client_that_would() {
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let redirect = format!(
        "HTTP/1.1 302 Found\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        auth.jwks_uri()
    );
    let (base, server) = raw_server(Some(redirect)).await;
    for client in [None, Some(reqwest::Client::new())] {
        let mut builder = JwtVerifier::builder(auth.issuer())
            .audience(RESOURCE)
            .jwks_uri(format!("{base}/jwks"));
        if let Some(client) = client {
            builder = builder.http_client(client);
        }
        match builder.build().unwrap().verify(&token).await {
            Err(VerifyError::Unavailable(message)) => {
                assert!(message.contains("redirect"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
    server.abort();
}

#[tokio::test]
async fn au11_au12_an_authorization_server_that_never_answers_times_out() {
    let (base, server) = raw_server(None).await;
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let started = std::time::Instant::now();
    let jwt = JwtVerifier::builder(auth.issuer())
        .audience(RESOURCE)
        .jwks_uri(format!("{base}/jwks"))
        .fetch_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    match jwt.verify(&token).await {
        Err(VerifyError::Unavailable(message)) => {
            assert!(message.contains("did not answer within"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let introspection = IntrospectionVerifier::builder(format!("{base}/introspect"))
        .client_credentials(RS_CLIENT, RS_SECRET)
        .audience(RESOURCE)
        .fetch_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let outcome = introspection.verify("opaque").await;
    assert!(
        matches!(outcome, Err(VerifyError::Unavailable(_))),
        "{outcome:?}"
    );
    // Both ended: well under the generous bound.
    assert!(started.elapsed() < Duration::from_secs(30));
    server.abort();
}

#[tokio::test]
async fn au11_an_unknown_kid_refetches_once_the_interval_has_passed() {
    let auth = AuthServer::start().await;
    let interval = Duration::from_secs(1);
    let verifier = JwtVerifier::builder(auth.issuer())
        .audience(RESOURCE)
        .refetch_interval(interval)
        .build()
        .unwrap();
    let good = auth.token(CLIENT_A, RESOURCE, "read").await;
    let rotated = auth
        .mint(json!({"kid": "rotated"}), good_claims(&auth))
        .await;
    assert!(verifier.verify(&good).await.is_ok());
    let fetched = std::time::Instant::now();
    assert_eq!(auth.counters().await.jwks, 1);
    // Within the interval: the unknown kid is refused from the cached keys.
    invalid(verifier.verify(&rotated).await);
    if fetched.elapsed() < interval {
        assert_eq!(auth.counters().await.jwks, 1);
    }
    // Once the interval has passed (waiting for time to pass, which is what is tested, not
    // to synchronize with anything), an unknown kid fetches the keys again, once.
    tokio::time::sleep(interval.saturating_sub(fetched.elapsed()) + Duration::from_millis(10))
        .await;
    invalid(verifier.verify(&rotated).await);
    let refetched = std::time::Instant::now();
    for _ in 0..5 {
        invalid(verifier.verify(&rotated).await);
    }
    if refetched.elapsed() < interval {
        assert_eq!(auth.counters().await.jwks, 2);
    } else {
        assert!(auth.counters().await.jwks >= 2);
    }
}

/// An audience configured as `HTTP://127.0.0.1:7/mcp/` accepts tokens for the canonical URI
/// (`http://127.0.0.1:7/mcp`), the one the protected-resource metadata advertises and
/// clients ask their tokens for; JWTs and introspection alike.
#[tokio::test]
async fn au2_au5_an_audience_in_another_form_accepts_tokens_for_its_canonical_uri() {
    let auth = AuthServer::shared();
    let token = auth.token(CLIENT_A, RESOURCE, "read").await;
    let shouted = "HTTP://127.0.0.1:7/mcp/";
    let verified = jwt_verifier(auth, shouted)
        .verify(&token)
        .await
        .expect("a token for the canonical URI");
    assert_eq!(verified.principal.client_id, CLIENT_A);
    let other = auth.token(CLIENT_A, OTHER_RESOURCE, "read").await;
    assert_eq!(
        invalid(jwt_verifier(auth, shouted).verify(&other).await),
        "the token is for another audience"
    );
    let opaque = auth.opaque_token(OPAQUE_A, RESOURCE, "read").await;
    introspection(auth, shouted)
        .verify(&opaque)
        .await
        .expect("an opaque token for the canonical URI");
}

/// A token naming neither a subject nor a client would make every such token one caller.
#[tokio::test]
async fn au16_a_token_naming_no_subject_and_no_client_is_invalid() {
    let auth = AuthServer::shared();
    let mut claims = good_claims(auth);
    let object = claims.as_object_mut().expect("an object");
    object.remove("sub");
    object.remove("client_id");
    let token = auth.mint(json!({}), claims.clone()).await;
    assert_eq!(
        invalid(jwt_verifier(auth, RESOURCE).verify(&token).await),
        "the token names neither a subject (sub) nor a client (client_id)"
    );
    // Either one is enough.
    for (name, value) in [("sub", "svc"), ("client_id", "app")] {
        let mut named = claims.clone();
        named[name] = json!(value);
        let token = auth.mint(json!({}), named).await;
        jwt_verifier(auth, RESOURCE)
            .verify(&token)
            .await
            .expect("a token naming one");
    }
}
