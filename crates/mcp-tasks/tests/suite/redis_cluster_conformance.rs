//! The backend conformance suite against [`RedisBackend`] on a local three-master Redis
//! Cluster (`redis+cluster://` with the nodes as seeds): every script routes to the slot of
//! its queue, blocking waits hold connections of their own, and cancels published on the
//! queue's node reach the subscription on a seed node.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_cluster_conformance::`.

use crate::redis_harness;

use std::sync::LazyLock;

use ferrymcp_tasks::backend::redis::{RedisBackend, RedisOptions};
use ferrymcp_test_helpers::{backend_conformance::Harness, redis::RedisCluster};

/// The cluster every case of this binary shares, each on a queue of its own (so, over the
/// cases, on all three masters' slots).
static CLUSTER: LazyLock<RedisCluster> = LazyLock::new(RedisCluster::start);

/// A harness on a fresh queue of the cluster.
fn harness() -> Harness<RedisBackend> {
    redis_harness::harness_on(|| CLUSTER.queue_url("cluster"), RedisOptions::default())
}

ferrymcp_test_helpers::backend_conformance_tests!(real_clock, harness);
