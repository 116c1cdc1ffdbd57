//! The task engine's integration suites, linked into one test binary.
//!
//! Each module is one suite (`cargo test -p ferrymcp-tasks --features redis --test suite
//! redis_faults::` runs one). The Redis suites need the `redis` feature; each starts a
//! `redis-server` of its own or uses `MCP_TEST_REDIS_URL`'s, on queues of its own. One binary
//! instead of one per file: each would link the whole engine, Redis client included.

mod backend_url;
mod idempotent;
mod memory_conformance;
#[cfg(feature = "redis")]
mod redis_batching;
#[cfg(feature = "redis")]
mod redis_cluster_conformance;
#[cfg(feature = "redis")]
mod redis_conformance;
#[cfg(feature = "redis")]
mod redis_connection;
#[cfg(feature = "redis")]
mod redis_fairness;
#[cfg(feature = "redis")]
mod redis_faults;
#[cfg(feature = "redis")]
mod redis_harness;
#[cfg(feature = "redis")]
mod redis_limits;
#[cfg(feature = "redis")]
mod redis_memory_policy;
#[cfg(feature = "redis")]
mod redis_sealing;
#[cfg(feature = "redis")]
mod redis_tasks;
#[cfg(feature = "redis")]
mod redis_tls_conformance;
#[cfg(feature = "redis")]
mod redis_ttl;
mod worker_faults;
mod worker_shutdown;
