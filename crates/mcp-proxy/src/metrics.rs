//! What the proxy records through `ferrymcp_core::metrics` (the crate docs list it), once
//! metrics are switched on in the process.

use std::time::Duration;

use crate::ProxyError;

/// A request to upstream `upstream` ended after `elapsed`.
pub(crate) fn upstream_done<T>(
    upstream: &str,
    method: &'static str,
    answer: &Result<T, ProxyError>,
    elapsed: Duration,
) {
    let (outcome, up) = match answer {
        Ok(_) => ("ok", true),
        // The upstream answered: it is up, whatever it said.
        Err(ProxyError::Upstream(_)) => ("error", true),
        Err(ProxyError::Protocol { .. }) => ("protocol", true),
        Err(ProxyError::Timeout { .. }) => ("timeout", false),
        Err(
            ProxyError::Connect { .. } | ProxyError::Down { .. } | ProxyError::Disconnected { .. },
        ) => ("unavailable", false),
        Err(ProxyError::Credentials { .. }) => ("credentials", true),
        Err(ProxyError::Config(_)) => ("config", true),
    };
    let upstream = upstream.to_owned();
    ::metrics::counter!(
        "mcp_upstream_requests_total",
        "upstream" => upstream.clone(),
        "method" => method,
        "outcome" => outcome,
    )
    .increment(1);
    ::metrics::histogram!("mcp_upstream_request_duration_seconds", "upstream" => upstream.clone())
        .record(elapsed);
    ::metrics::gauge!("mcp_upstream_up", "upstream" => upstream).set(if up { 1.0 } else { 0.0 });
}
