//! Micro-benchmark of verifying a bearer token (the `auth` feature), against the local
//! authorization server of `.ci/auth-server` (run `.ci/setup` first):
//!
//! * `verify/jwt_rs256`: a `JwtVerifier` checking an RS256 access token each time (header,
//!   key lookup in the cached JWKS, signature, claims): the cost of a token seen for the
//!   first time.
//! * `verify/cached`: the same token through a `CachedVerifier`: the cost of a repeated
//!   token (a SHA-256 of the token and a cache lookup).
//!
//! Run it with `cargo bench -p ferrymcp-core --features auth --bench verify`; results are in
//! `BENCHMARKS.md`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier, TokenVerifier};
use ferrymcp_test_helpers::auth_server::{AuthServer, CLIENT_A};
use tokio::runtime::Runtime;

const AUDIENCE: &str = "http://127.0.0.1:1/mcp";

fn verify(c: &mut Criterion) {
    let runtime = Runtime::new().expect("a tokio runtime");
    let auth = runtime.block_on(AuthServer::start());
    let token = runtime.block_on(auth.token(CLIENT_A, AUDIENCE, "read child"));
    let jwt = JwtVerifier::builder(auth.issuer())
        .audience(AUDIENCE)
        .build()
        .expect("a verifier");
    let cached = CachedVerifier::new(
        JwtVerifier::builder(auth.issuer())
            .audience(AUDIENCE)
            .build()
            .expect("a verifier"),
    );
    // Keys fetched and the cache filled before timing.
    runtime
        .block_on(jwt.verify(&token))
        .expect("the token verifies");
    runtime
        .block_on(cached.verify(&token))
        .expect("the token verifies");

    let mut group = c.benchmark_group("verify");
    group.bench_function("jwt_rs256", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(jwt.verify(black_box(&token)).await) });
    });
    group.bench_function("cached", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(cached.verify(black_box(&token)).await) });
    });
    group.finish();
    drop(auth);
}

criterion_group!(benches, verify);
criterion_main!(benches);
