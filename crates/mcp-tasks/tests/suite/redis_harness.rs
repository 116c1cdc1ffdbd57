//! The harness the Redis conformance suites share (`redis_conformance`,
//! `redis_tls_conformance`, `redis_cluster_conformance`): a backend on a queue URL of its
//! own, with a second connection as the peer (another server process). Redis keeps time by
//! its own clock (`TIME`, key expiry, pending-entry idle times), so the clock cases run on
//! the real clock with a 1 s lease, in real time: the suite's `real_clock` form, with a
//! quarter lease of tolerance at each deadline.

use std::{sync::LazyLock, time::Duration};

use ferrymcp_tasks::backend::redis::{RedisBackend, RedisOptions};
use ferrymcp_test_helpers::backend_conformance::Harness;

/// The lease the backend under test grants: the clock cases take a few leases each, in
/// real time, and tolerate a quarter lease of scheduling delay at each deadline (250 ms, so
/// they hold on a loaded 2-core CI machine).
pub const LEASE: Duration = Duration::from_millis(1000);

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

/// Connects to the queue `url` names with `options` (the URL's query overrides them), once
/// for the backend and once for its peer.
fn connect(url: String, options: RedisOptions) -> (RedisBackend, RedisBackend) {
    let connect = move || {
        CONNECTIONS.block_on(async {
            let options = options.with_lease(LEASE);
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

/// A harness on a fresh queue (`queue_url` names a new one each call), with `options`: the
/// backend, a peer on a second connection, and for the limit cases a fresh queue of their own
/// with the limits they set.
pub fn harness_on(
    queue_url: impl Fn() -> String + Send + Sync + 'static,
    options: RedisOptions,
) -> Harness<RedisBackend> {
    let (backend, peer) = connect(queue_url(), options.clone());
    Harness::new(backend, LEASE)
        .with_peer(peer)
        .with_limits(move |limits| connect(queue_url(), options.clone().with_limits(limits)).0)
}
