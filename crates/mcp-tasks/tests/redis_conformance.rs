//! The backend conformance suite (`test_helpers::backend_conformance`) against
//! [`RedisBackend`], on a disposable `redis-server` (or `MCP_TEST_REDIS_URL`'s Redis), each
//! case on a queue of its own, with a second connection as the peer (another server
//! process). Redis keeps time by its own clock (`TIME`, key expiry, pending-entry idle
//! times), so the clock cases run on the real clock with a 1 s lease, in real time: the
//! suite's `real_clock` form, with a quarter lease of tolerance at each deadline.
//!
//! Needs the `redis` feature: `cargo test -p mcp-tasks --features redis --test redis_conformance`.

use std::{sync::LazyLock, time::Duration};

use mcp_tasks::backend::redis::{RedisBackend, RedisOptions};
use test_helpers::{backend_conformance::Harness, redis::RedisServer};

/// The lease the backend under test grants: the clock cases take a few leases each, in
/// real time, and tolerate a quarter lease of scheduling delay at each deadline (250 ms, so
/// they hold on a loaded 2-core CI machine).
const LEASE: Duration = Duration::from_millis(1000);

/// The runtime that owns the backends' connections. The suite builds harnesses from a
/// plain closure, so connecting (async) happens on this runtime, from a thread of its own,
/// and each test's runtime then uses the connections through their handles.
static CONNECTIONS: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the Redis connections")
});

/// Connects to a fresh queue with `options`, once for the backend and once for its peer.
fn connect(options: RedisOptions) -> (RedisBackend, RedisBackend) {
    let url = RedisServer::shared().queue_url("conformance");
    let connect = move || {
        CONNECTIONS.block_on(async {
            let backend = RedisBackend::connect_with(&url, options.clone()).await;
            let peer = RedisBackend::connect_with(&url, options).await;
            (backend, peer)
        })
    };
    let (backend, peer) = std::thread::spawn(connect)
        .join()
        .expect("the connecting thread");
    let backend = backend.unwrap_or_else(|e| panic!("{e}"));
    let peer = peer.unwrap_or_else(|e| panic!("{e}"));
    (backend, peer)
}

/// A harness on a fresh queue: the backend and a peer on a second connection; the limit
/// cases get a fresh queue of their own with the limits they set.
fn harness() -> Harness<RedisBackend> {
    let (backend, peer) = connect(RedisOptions::default().with_lease(LEASE));
    Harness::new(backend, LEASE)
        .with_peer(peer)
        .with_limits(|limits| {
            connect(
                RedisOptions::default()
                    .with_lease(LEASE)
                    .with_limits(limits),
            )
            .0
        })
}

test_helpers::backend_conformance_tests!(real_clock, harness);
