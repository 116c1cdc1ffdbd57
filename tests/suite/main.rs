//! The in-process integration suites, linked into one test binary.
//!
//! Each module is one suite (`cargo test --test suite e2e::` runs one). One binary instead of
//! one per file: every test binary links the whole framework (about 100 MB each in a debug
//! build), so forty of them filled CI's disk and spent minutes linking. Suites that change
//! process-wide state (a global metrics recorder or tracing subscriber, environment
//! variables), and the heavy multi-process ones, stay binaries of their own in `tests/`.

#[path = "../common/mod.rs"]
mod common;
mod support;

mod auth_demo;
mod auth_http;
#[cfg(feature = "redis")]
mod auth_redis;
mod auth_tasks;
mod call_timeout;
mod completions;
mod dashboard;
mod e2e;
mod e2e_surface;
mod e2e_tasks;
mod elicitation_typed;
mod extensions;
mod http_hardening;
mod identity_state;
mod input_rounds;
mod interop_regressions;
mod lifecycle_hooks;
mod malformed;
mod middleware;
mod middleware_components;
mod modern_http_path;
mod mounting;
mod notifications;
mod operator_admin;
mod prompts;
mod proxy_demo;
mod proxy_fastmcp;
mod proxy_gateway;
mod proxy_input_rounds;
mod proxy_instructions;
mod proxy_ping;
mod proxy_relay;
mod proxy_relist;
mod redis_push;
mod resource_subscriptions;
mod resources;
mod results;
mod run_hooks;
mod secrets;
mod sep2663;
mod sep2663_wire;
mod sse_resumption;
mod stdio_hardening;
mod task_limits;
mod task_mount;
mod task_push;
mod versions;
mod wire_versions;
