//! The proxy's integration suites, linked into one test binary.
//!
//! Each module is one suite (`cargo test -p ferrymcp-proxy --all-features --test suite tls::`
//! runs one); the gateway's need the `gateway` feature. `system_proxy.rs` stays a binary of its
//! own: it sets the process's proxy environment variables.

mod connection;
#[cfg(feature = "gateway")]
mod gateway_auth_config;
#[cfg(feature = "gateway")]
mod gateway_one_cpu;
#[cfg(feature = "gateway")]
mod gateway_process;
#[cfg(feature = "gateway")]
mod gateway_start;
mod headers;
mod hostile_upstreams;
mod http_calls;
#[cfg(feature = "gateway")]
mod stdio_env;
mod task_binding;
#[cfg(feature = "gateway")]
mod tls;
mod upstream_credentials;
