//! [`HeaderPolicy`]: which of a client's HTTP headers may reach an upstream.
//!
//! Deny by default: nothing the client sent is forwarded unless allowed by name.
//! `Authorization` (and `Proxy-Authorization`) is never forwarded: a client's token is meant
//! for the proxy, and an upstream gets a token of its own
//! ([`UpstreamAuth`](crate::upstream_auth::UpstreamAuth), token exchange for a per-caller
//! one). Hop-by-hop and
//! MCP transport headers (`Mcp-Session-Id`, `Mcp-Protocol-Version`, `Host`, ...) are never
//! forwarded: they belong to the client's connection with the proxy, not to the upstream's.

use std::collections::HashSet;

use http::{HeaderMap, HeaderName, header};

use crate::ProxyError;

/// Headers that describe one hop and must never be copied to another.
const NEVER: [&str; 12] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "content-length",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// A deny-by-default allow list of header names.
///
/// ```
/// use http::{HeaderMap, HeaderValue};
/// let policy = ferrymcp_proxy::HeaderPolicy::deny_all().allow("X-Request-Id").unwrap();
/// let mut incoming = HeaderMap::new();
/// incoming.insert("x-request-id", HeaderValue::from_static("abc"));
/// incoming.insert("authorization", HeaderValue::from_static("Bearer client-token"));
/// incoming.insert("cookie", HeaderValue::from_static("session=1"));
/// let forwarded = policy.filter(&incoming);
/// assert_eq!(forwarded.len(), 1);
/// assert_eq!(forwarded["x-request-id"], "abc");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderPolicy {
    allowed: HashSet<HeaderName>,
}

impl HeaderPolicy {
    /// Forwards nothing (the default).
    ///
    /// ```
    /// assert!(ferrymcp_proxy::HeaderPolicy::deny_all().filter(&http::HeaderMap::new()).is_empty());
    /// ```
    pub fn deny_all() -> Self {
        Self::default()
    }

    /// Allows the header `name` (case-insensitive). `Authorization` and
    /// `Proxy-Authorization` are refused (a client's token never reaches an upstream; use
    /// [`UpstreamAuth::TokenExchange`](crate::upstream_auth::UpstreamAuth::TokenExchange)
    /// for a per-caller upstream token), as are per-hop headers.
    ///
    /// ```
    /// assert!(ferrymcp_proxy::HeaderPolicy::deny_all().allow("authorization").is_err());
    /// assert!(ferrymcp_proxy::HeaderPolicy::deny_all().allow("x-tenant").is_ok());
    /// ```
    pub fn allow(mut self, name: &str) -> Result<Self, ProxyError> {
        let name = HeaderName::try_from(name)
            .map_err(|e| ProxyError::Config(format!("header name {name:?}: {e}")))?;
        if name == header::AUTHORIZATION || name == header::PROXY_AUTHORIZATION {
            return Err(ProxyError::Config(format!(
                "{name} is never forwarded to an upstream (a client's token is not passed through); give the upstream its own credentials, or exchange the caller's token (token exchange)"
            )));
        }
        if NEVER.contains(&name.as_str()) {
            return Err(ProxyError::Config(format!(
                "{name} belongs to one connection and cannot be forwarded"
            )));
        }
        self.allowed.insert(name);
        Ok(self)
    }

    /// Whether `name` may be forwarded.
    ///
    /// ```
    /// let policy = ferrymcp_proxy::HeaderPolicy::deny_all();
    /// assert!(!policy.allows(&http::header::AUTHORIZATION));
    /// ```
    pub fn allows(&self, name: &HeaderName) -> bool {
        self.allowed.contains(name)
    }

    /// The subset of `incoming` this policy forwards.
    ///
    /// ```
    /// let forwarded = ferrymcp_proxy::HeaderPolicy::deny_all().filter(&http::HeaderMap::new());
    /// assert!(forwarded.is_empty());
    /// ```
    pub fn filter(&self, incoming: &HeaderMap) -> HeaderMap {
        let mut out = HeaderMap::new();
        for (name, value) in incoming {
            if self.allows(name) {
                out.append(name.clone(), value.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn per_hop_headers_cannot_be_allowed() {
        for name in NEVER {
            assert!(HeaderPolicy::deny_all().allow(name).is_err(), "{name}");
        }
        assert!(
            HeaderPolicy::deny_all()
                .allow("Proxy-Authorization")
                .is_err()
        );
    }

    #[test]
    fn names_are_case_insensitive_and_repeated_values_kept() {
        let policy = HeaderPolicy::deny_all().allow("X-Trace").unwrap();
        let mut incoming = HeaderMap::new();
        incoming.append("x-trace", HeaderValue::from_static("a"));
        incoming.append("x-trace", HeaderValue::from_static("b"));
        incoming.insert("authorization", HeaderValue::from_static("Bearer t"));
        let out = policy.filter(&incoming);
        assert_eq!(out.get_all("x-trace").iter().count(), 2);
        assert!(out.get("authorization").is_none());
    }
}
