//! The backend conformance suite (`ferrymcp_test_helpers::backend_conformance`) against
//! [`RedisBackend`], on a disposable `redis-server` (or `MCP_TEST_REDIS_URL`'s Redis), each
//! case on a queue of its own, with a second connection as the peer (see `redis_harness`).
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_conformance::`.

use crate::redis_harness;

use ferrymcp_tasks::backend::redis::{RedisBackend, RedisOptions};
use ferrymcp_test_helpers::{backend_conformance::Harness, redis::RedisServer};

/// A harness on a fresh queue: the backend and a peer on a second connection.
fn harness() -> Harness<RedisBackend> {
    redis_harness::harness_on(
        || RedisServer::shared().queue_url("conformance"),
        RedisOptions::default(),
    )
}

ferrymcp_test_helpers::backend_conformance_tests!(real_clock, harness);
