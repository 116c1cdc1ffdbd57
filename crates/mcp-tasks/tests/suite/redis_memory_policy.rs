//! The durability guard of [`RedisBackend`]: a Redis whose `maxmemory-policy` can evict keys
//! (every policy but `noeviction`, since every task key carries a TTL) is refused at connect,
//! with a message naming the setting to change.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_memory_policy::`.

use ferrymcp_tasks::backend::redis::{RedisBackend, RedisBackendError};
use ferrymcp_test_helpers::redis::RedisServer;

#[tokio::test]
async fn scope3_a_redis_that_can_evict_keys_is_refused_naming_the_setting() {
    for policy in ["allkeys-lru", "volatile-ttl"] {
        let redis = RedisServer::start_with(&["--maxmemory-policy", policy]);
        let refused = RedisBackend::connect(&format!("{}?queue=guard", redis.url())).await;
        match refused {
            Err(error @ RedisBackendError::EvictionPolicy { .. }) => {
                let message = error.to_string();
                assert!(message.contains("maxmemory-policy noeviction"), "{message}");
                assert!(message.contains(policy), "{message}");
            }
            Err(other) => panic!("{policy}: refused for another reason: {other}"),
            Ok(_) => panic!("{policy}: a Redis that can evict task keys was accepted"),
        }
    }
}

#[tokio::test]
async fn scope3_a_redis_that_never_evicts_is_accepted() {
    let redis = RedisServer::start_with(&["--maxmemory-policy", "noeviction"]);
    RedisBackend::connect(&format!("{}?queue=guard", redis.url()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}
