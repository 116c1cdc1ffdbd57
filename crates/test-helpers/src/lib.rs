//! What downstream test suites need to test servers built on `ferrymcp-core` on the real stack:
//!
//! * [`auth_server`]: a real OAuth 2.1 authorization server (npm's `oidc-provider`, from
//!   `.ci/setup`) on a loopback port, issuing JWT and opaque access tokens to test clients;
//! * [`fuzz`]: a seeded generator of hostile MCP messages, for fuzzing decoders on stable Rust;
//! * [`http`]: a server on a loopback port and a raw 2026-07-28 client for it;
//! * [`metrics`]: a scrape of a `/metrics` endpoint, with samples looked up by name and labels;
//! * [`client`]: rmcp clients in either protocol era, and a client/server pair over an
//!   in-memory duplex that drives the real wire without ports;
//! * [`middleware`]: recording middleware (`CallTrace`, `HookRecorder`) and the shared `Log`;
//! * [`reply`]: unwrapping `tools/call` replies with failure messages that say what went wrong;
//! * [`backend_conformance`]: the conformance suite every `TaskBackend` must pass;
//! * [`fault_proxy`]: a TCP proxy that delays, blackholes, cuts or refuses connections on
//!   command, in front of a Redis or any server;
//! * [`redis`]: a disposable `redis-server` (or `MCP_TEST_REDIS_URL`'s) for the Redis suites;
//! * [`redis_persistent`]: a restartable `redis-server` with AOF, to kill and start again;
//! * [`tasks`]: in-process task drivers (`submit_task`, `wait_for_task`, `run_task`...) with an optional caller and opt-in settings;
//! * [`wire`]: a stdio tee and a recording HTTP proxy that keep the raw JSON a server sends;
//! * [`schema`]: validation of that JSON against the official MCP 2026-07-28 and Tasks
//!   extension schemas (from `../shared/spec`, or `MCP_SPEC_DIR`).
//!
//! This crate is for tests only; nothing else in the workspace needs it at run time.

pub mod auth_server;
pub mod backend_conformance;
pub mod client;
pub mod fault_proxy;
pub mod fuzz;
pub mod http;
pub mod metrics;
pub mod middleware;
pub mod redis;
pub mod redis_persistent;
pub mod reply;
pub mod schema;
pub mod tasks;
pub mod wire;
