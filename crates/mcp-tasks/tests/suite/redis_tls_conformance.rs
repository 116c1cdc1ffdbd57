//! The backend conformance suite against [`RedisBackend`] over TLS: a `redis-server` that
//! speaks only TLS (`rediss://`), whose certificate is signed by a CA this test process
//! generates and the backend is told to trust (`ca_file`).
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_tls_conformance::`.

use crate::redis_harness;

use std::sync::LazyLock;

use ferrymcp_tasks::backend::redis::{RedisBackend, RedisOptions};
use ferrymcp_test_helpers::{backend_conformance::Harness, redis::RedisServer};

/// The TLS Redis every case of this binary shares, each on a queue of its own.
static TLS_REDIS: LazyLock<RedisServer> = LazyLock::new(RedisServer::start_tls);

/// A harness on a fresh queue of the TLS Redis, trusting its CA by the URL's `ca_file`.
fn harness() -> Harness<RedisBackend> {
    let ca = TLS_REDIS
        .ca_file()
        .expect("a TLS server has a CA file")
        .display()
        .to_string();
    let url = move || format!("{}&ca_file={ca}", TLS_REDIS.queue_url("tls"));
    assert!(url().starts_with("rediss://"), "{}", url());
    redis_harness::harness_on(url, RedisOptions::default())
}

ferrymcp_test_helpers::backend_conformance_tests!(real_clock, harness);
