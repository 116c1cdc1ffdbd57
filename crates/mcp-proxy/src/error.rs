//! [`ProxyError`]: what can go wrong between the proxy and an upstream server.

use std::time::Duration;

use ferrymcp_types::{ErrorCode, ErrorData};

/// A failure to reach or use an upstream MCP server.
///
/// Upstream JSON-RPC errors are kept as they are ([`ProxyError::Upstream`]): the client of the
/// proxy sees the upstream's code and message. Everything else becomes a clear internal error
/// naming the upstream ([`ProxyError::into_error_data`]).
///
/// ```
/// use ferrymcp_proxy::ProxyError;
/// let error = ProxyError::Down { upstream: "github".into(), retry_in: std::time::Duration::from_millis(400), last: "connection refused".into() };
/// assert!(error.to_string().contains("github"));
/// assert_eq!(error.into_error_data().code.0, -32603);
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The upstream answered with a JSON-RPC error (kept verbatim).
    #[error("{}", .0.message)]
    Upstream(ErrorData),
    /// Connecting (spawning, the handshake) failed.
    #[error("upstream '{upstream}': could not connect: {reason}")]
    Connect {
        /// The upstream's name.
        upstream: String,
        /// Why.
        reason: String,
    },
    /// The upstream is down and the next reconnect attempt is not due yet.
    #[error("upstream '{upstream}' is unavailable (next reconnect attempt in {} ms): {last}", .retry_in.as_millis())]
    Down {
        /// The upstream's name.
        upstream: String,
        /// How long until the next attempt.
        retry_in: Duration,
        /// The last connection error.
        last: String,
    },
    /// The connection closed while a request was in flight (the upstream died).
    #[error("upstream '{upstream}' disconnected during {method}")]
    Disconnected {
        /// The upstream's name.
        upstream: String,
        /// The request that was in flight.
        method: String,
    },
    /// The upstream did not answer in time.
    #[error("upstream '{upstream}' did not answer {method} within {} ms", .timeout.as_millis())]
    Timeout {
        /// The upstream's name.
        upstream: String,
        /// The request.
        method: String,
        /// The limit.
        timeout: Duration,
    },
    /// The upstream answered with something this request cannot return.
    #[error("upstream '{upstream}' answered {method} unexpectedly: {detail}")]
    Protocol {
        /// The upstream's name.
        upstream: String,
        /// The request.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// No token for the upstream could be had (the token endpoint refused or is
    /// unreachable, or token exchange found no caller token): the request was not sent.
    #[error("upstream '{upstream}': no credentials for {method}: {reason}")]
    Credentials {
        /// The upstream's name.
        upstream: String,
        /// The request.
        method: String,
        /// Why (never a token or a secret).
        reason: String,
    },
    /// A configuration value is invalid (a header name, a URL, ...).
    #[error("invalid proxy configuration: {0}")]
    Config(String),
}

impl ProxyError {
    /// The JSON-RPC error a client of the proxy receives: upstream errors unchanged, the
    /// rest as `-32603` with this error's message.
    ///
    /// ```
    /// use ferrymcp_proxy::ProxyError;
    /// use ferrymcp_types::ErrorData;
    /// let upstream = ErrorData::invalid_params("bad input", None);
    /// assert_eq!(ProxyError::Upstream(upstream.clone()).into_error_data(), upstream);
    /// ```
    pub fn into_error_data(self) -> ErrorData {
        match self {
            ProxyError::Upstream(error) => error,
            other => ErrorData::new(ErrorCode::INTERNAL_ERROR, other.to_string(), None),
        }
    }

    /// Whether the session this error came from is unusable (reconnect before the next call).
    ///
    /// ```
    /// use ferrymcp_proxy::ProxyError;
    /// let gone = ProxyError::Disconnected { upstream: "u".into(), method: "tools/call".into() };
    /// assert!(gone.is_connection_lost());
    /// ```
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, ProxyError::Disconnected { .. })
    }
}

impl From<ProxyError> for ErrorData {
    fn from(error: ProxyError) -> Self {
        error.into_error_data()
    }
}
