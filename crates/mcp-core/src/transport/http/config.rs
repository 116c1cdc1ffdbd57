//! [`HttpConfig`]: the endpoint, who may call it, and the limits and timeouts it serves with.

use std::{net::IpAddr, time::Duration};

use super::origin::{AllowedHost, AllowedOrigin};

/// The scope operators' tokens hold unless [`HttpConfig::operator_scope`] says otherwise.
pub const DEFAULT_OPERATOR_SCOPE: &str = "mcp:admin";

/// How the Streamable HTTP endpoint is served: its path, the `Host` and `Origin` values it
/// accepts, and the limits and timeouts that protect it from clients that misbehave.
///
/// Every limit has a default chosen for a single server process on a small machine:
///
/// | setting | default | over it |
/// |---|---|---|
/// | [`max_body_bytes`](Self::max_body_bytes) | 4 MiB | `413`, JSON-RPC `-32600` |
/// | [`header_timeout`](Self::header_timeout) | 10 s from the first byte of a request | connection closed |
/// | [`body_timeout`](Self::body_timeout) | 30 s for a whole POST body | `408`, JSON-RPC `-32000` |
/// | [`idle_timeout`](Self::idle_timeout) | 60 s without a request in progress | connection closed |
/// | [`max_connections`](Self::max_connections) | 1024 open connections | `503` with `Retry-After`, connection closed |
/// | [`max_in_flight`](Self::max_in_flight) | 256 POSTs being answered | `503` with `Retry-After`, JSON-RPC `-32000` |
/// | [`max_sessions`](Self::max_sessions) | 1024 2025-11-25 sessions | `503` with `Retry-After`, JSON-RPC `-32000`, no session |
/// | [`session_idle_timeout`](Self::session_idle_timeout) | 300 s | the session ends |
///
/// ```
/// use std::time::Duration;
/// let config = ferrymcp_core::HttpConfig::new()
///     .path("/api/mcp")
///     .allowed_hosts(["mcp.example.com"])
///     .allowed_origins(["https://app.example.com"])
///     .max_in_flight(64)
///     .body_timeout(Duration::from_secs(10));
/// assert_eq!(config.path_str(), "/api/mcp");
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub(super) path: String,
    pub(super) hosts: Hosts,
    pub(super) origins: Origins,
    pub(super) json_response: bool,
    pub(super) sse_keep_alive: Option<Duration>,
    pub(super) sse_retry: Duration,
    pub(super) max_body_bytes: usize,
    pub(super) header_timeout: Duration,
    pub(super) body_timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) max_connections: usize,
    pub(super) max_in_flight: usize,
    pub(super) max_sessions: usize,
    pub(super) session_idle_timeout: Duration,
    #[cfg(feature = "auth")]
    pub(super) auth: Option<crate::auth::ResourceServer>,
    pub(super) operator_scope: String,
}

/// Which `Host` values are served.
#[derive(Debug, Clone)]
pub(super) enum Hosts {
    /// `localhost`, `127.0.0.1` and `::1`, any port.
    Loopback,
    /// Exactly these (checked non-empty by [`HttpConfig::validate`]).
    List(Vec<String>),
    /// Any: no DNS-rebinding protection.
    Any,
}

/// Which `Origin` values are served (a request without `Origin` always is).
#[derive(Debug, Clone)]
pub(super) enum Origins {
    /// Loopback origins when bound to a loopback address; none otherwise.
    Default,
    /// Exactly these.
    List(Vec<String>),
    /// Any origin.
    Any,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            hosts: Hosts::Loopback,
            origins: Origins::Default,
            json_response: true,
            sse_keep_alive: Some(Duration::from_secs(15)),
            sse_retry: Duration::from_secs(3),
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            header_timeout: Self::DEFAULT_HEADER_TIMEOUT,
            body_timeout: Self::DEFAULT_BODY_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            session_idle_timeout: Self::DEFAULT_SESSION_IDLE_TIMEOUT,
            #[cfg(feature = "auth")]
            auth: None,
            operator_scope: DEFAULT_OPERATOR_SCOPE.to_owned(),
        }
    }
}

/// A setting [`HttpServer::bind`](super::HttpServer::bind) refuses.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let config = ferrymcp_core::HttpConfig::new().allowed_hosts(Vec::<String>::new());
/// let refused = ferrymcp_core::HttpServer::bind(ferrymcp_core::Server::new("s"), "127.0.0.1:0", config).await;
/// assert!(refused.is_err());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpConfigError {
    /// `allowed_hosts` was given no host; use `allow_any_host()` to serve every `Host`.
    #[error(
        "allowed_hosts is empty, which would refuse every request; list the host names, or call allow_any_host() to accept any Host"
    )]
    EmptyHostList,
    /// An `allowed_hosts` entry that is not a host or `host:port`.
    #[error("allowed_hosts entry {0:?} is not a host name or host:port")]
    InvalidHost(String),
    /// An `allowed_origins` entry that is not `scheme://host[:port]` (or `null`).
    #[error(
        "allowed_origins entry {0:?} is not an origin: write scheme://host, scheme://host:port or scheme://host:*"
    )]
    InvalidOrigin(String),
    /// The endpoint path does not start with `/`.
    #[error("the endpoint path {0:?} must start with '/'")]
    InvalidPath(String),
    /// A limit or timeout set to zero, which would refuse everything.
    #[error("{0} must be greater than zero")]
    Zero(&'static str),
}

impl HttpConfig {
    /// The default [`max_body_bytes`](Self::max_body_bytes): 4 MiB.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_MAX_BODY_BYTES;
    /// ```
    pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
    /// The default [`header_timeout`](Self::header_timeout): 10 s.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_HEADER_TIMEOUT;
    /// ```
    pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default [`body_timeout`](Self::body_timeout): 30 s.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_BODY_TIMEOUT;
    /// ```
    pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default [`idle_timeout`](Self::idle_timeout): 60 s.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_IDLE_TIMEOUT;
    /// ```
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default [`max_connections`](Self::max_connections): 1024.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_MAX_CONNECTIONS;
    /// ```
    pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
    /// The default [`max_in_flight`](Self::max_in_flight): 256.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_MAX_IN_FLIGHT;
    /// ```
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
    /// The default [`max_sessions`](Self::max_sessions): 1024.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_MAX_SESSIONS;
    /// ```
    pub const DEFAULT_MAX_SESSIONS: usize = 1024;
    /// The default [`session_idle_timeout`](Self::session_idle_timeout): 300 s.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::DEFAULT_SESSION_IDLE_TIMEOUT;
    /// ```
    pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

    /// `/mcp`, loopback hosts only, loopback origins, JSON responses and the default limits.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::HttpConfig::new().path_str(), "/mcp");
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The endpoint path.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().path("/");
    /// ```
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The endpoint path.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::HttpConfig::new().path_str(), "/mcp");
    /// ```
    pub fn path_str(&self) -> &str {
        &self.path
    }

    /// Accepts requests whose `Host` is one of `hosts` (DNS-rebinding protection), instead of
    /// loopback only. An entry without a port matches any port. An empty list is refused by
    /// [`HttpServer::bind`](super::HttpServer::bind); call
    /// [`allow_any_host`](Self::allow_any_host) to accept every `Host`.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().allowed_hosts(["example.com", "example.com:8080"]);
    /// ```
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.hosts = Hosts::List(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts any `Host`: no protection against DNS rebinding. For a server behind a proxy
    /// that checks the host itself.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().allow_any_host();
    /// ```
    pub fn allow_any_host(mut self) -> Self {
        self.hosts = Hosts::Any;
        self
    }

    /// Accepts browser requests whose `Origin` is one of `origins` (`https://app.example.com`,
    /// `http://localhost:3000`, `http://localhost:*` for any port, or `null`); others get
    /// `403`. A request without `Origin` (as non-browser clients send) is always served.
    /// The default accepts loopback origins (`http(s)://localhost`, `127.0.0.1`, `[::1]`, any
    /// port) when the server is bound to a loopback address, and no origin otherwise.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().allowed_origins(["https://app.example.com", "http://localhost:*"]);
    /// ```
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        origins: I,
    ) -> Self {
        self.origins = Origins::List(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts any `Origin`: any web page a user visits may call the server.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().allow_any_origin();
    /// ```
    pub fn allow_any_origin(mut self) -> Self {
        self.origins = Origins::Any;
        self
    }

    /// How long a 2025-11-25 client whose SSE stream ended should wait before it reconnects
    /// with `Last-Event-ID` (the `retry` field of the streams' priming events; default 3 s).
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().sse_retry(std::time::Duration::from_millis(500));
    /// ```
    pub fn sse_retry(mut self, retry: Duration) -> Self {
        self.sse_retry = retry;
        self
    }

    /// Answers with SSE streams instead of plain JSON bodies.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().sse_responses();
    /// ```
    pub fn sse_responses(mut self) -> Self {
        self.json_response = false;
        self
    }

    /// The largest POST body read (default 4 MiB); a larger one is answered `413` with a
    /// JSON-RPC `-32600` error.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().max_body_bytes(256 * 1024);
    /// ```
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long a client may take to send a request's headers, from its first byte (default
    /// 10 s). A connection over it is closed.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().header_timeout(std::time::Duration::from_secs(5));
    /// ```
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// How long a client may take to send a whole POST body once its headers arrived (default
    /// 30 s). Over it the request is answered `408` with a JSON-RPC `-32000` error and the
    /// connection closed.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().body_timeout(std::time::Duration::from_secs(10));
    /// ```
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long a connection may stay open with no request in progress (a keep-alive
    /// connection between requests, or a new one that sent nothing; default 60 s). It is then
    /// closed; clients open a new one.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().idle_timeout(std::time::Duration::from_secs(30));
    /// ```
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The most connections open at once (default 1024). A connection over it is answered
    /// `503` with `Retry-After` and closed; the open ones are unaffected.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().max_connections(256);
    /// ```
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// The most POST requests being answered at once, over all connections (default 256).
    /// One over it is answered `503` with `Retry-After` and a JSON-RPC `-32000` error. A
    /// request counts until its response is complete; `GET` streams do not count.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().max_in_flight(64);
    /// ```
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// The most 2025-11-25 sessions (`initialize` handshakes) alive at once (default 1024).
    /// An `initialize` over it is answered `503` with `Retry-After` and a JSON-RPC `-32000`
    /// error, and no session is made. 2026-07-28 requests have no session and do not count.
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().max_sessions(100);
    /// ```
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long a 2025-11-25 session lives without any request (default 300 s). It then ends
    /// and stops counting towards [`max_sessions`](Self::max_sessions).
    ///
    /// ```
    /// let _ = ferrymcp_core::HttpConfig::new().session_idle_timeout(std::time::Duration::from_secs(60));
    /// ```
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// The scope an operator's token must hold for the operators' routes
    /// ([`HttpServer::merge_operator_routes`](crate::HttpServer::merge_operator_routes): an
    /// admin page, its API), when the server takes bearer tokens ([`auth`](Self::auth)).
    /// `mcp:admin` unless set.
    ///
    /// ```
    /// let config = ferrymcp_core::HttpConfig::new().operator_scope("ops");
    /// # let _ = config;
    /// ```
    pub fn operator_scope(mut self, scope: impl Into<String>) -> Self {
        self.operator_scope = scope.into();
        self
    }

    /// Protects the endpoint as an OAuth 2.1 resource server: every request needs a bearer
    /// token `resource` accepts (401 with a `WWW-Authenticate` challenge otherwise), each
    /// operation is authorized before it runs (403 naming the scopes it needs), a
    /// 2025-11-25 session belongs to the caller that opened it, and the RFC 9728 metadata is
    /// served, unauthenticated, at `/.well-known/oauth-protected-resource` followed by the
    /// endpoint's path (and at the root form).
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://mcp.example.com/mcp", Verifier)
    ///     .unwrap()
    ///     .authorization_server("https://auth.example.com")
    ///     .unwrap();
    /// let config = ferrymcp_core::HttpConfig::new().allowed_hosts(["mcp.example.com"]).auth(rs);
    /// # let _ = config;
    /// ```
    #[cfg(feature = "auth")]
    pub fn auth(mut self, resource: crate::auth::ResourceServer) -> Self {
        self.auth = Some(resource);
        self
    }

    /// Checks the settings, and resolves which hosts and origins are served by a server bound
    /// to `bound` (`None` when the router is nested into another application).
    pub(super) fn validate(&self, bound: Option<IpAddr>) -> Result<Access, HttpConfigError> {
        if !self.path.starts_with('/') {
            return Err(HttpConfigError::InvalidPath(self.path.clone()));
        }
        for (value, name) in [
            (self.max_body_bytes, "max_body_bytes"),
            (self.max_connections, "max_connections"),
            (self.max_in_flight, "max_in_flight"),
            (self.max_sessions, "max_sessions"),
        ] {
            if value == 0 {
                return Err(HttpConfigError::Zero(name));
            }
        }
        for (value, name) in [
            (self.header_timeout, "header_timeout"),
            (self.body_timeout, "body_timeout"),
            (self.idle_timeout, "idle_timeout"),
            (self.session_idle_timeout, "session_idle_timeout"),
        ] {
            if value.is_zero() {
                return Err(HttpConfigError::Zero(name));
            }
        }
        let hosts = match &self.hosts {
            Hosts::Loopback => Some(AllowedHost::loopback()),
            Hosts::List(list) if list.is_empty() => return Err(HttpConfigError::EmptyHostList),
            Hosts::List(list) => Some(
                list.iter()
                    .map(|host| {
                        AllowedHost::parse(host)
                            .ok_or_else(|| HttpConfigError::InvalidHost(host.clone()))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Hosts::Any => None,
        };
        let origins = match &self.origins {
            Origins::Default if bound.is_none_or(|ip| ip.is_loopback()) => {
                Some(AllowedOrigin::loopback())
            }
            Origins::Default => Some(Vec::new()),
            Origins::List(list) => Some(
                list.iter()
                    .map(|origin| {
                        AllowedOrigin::parse(origin)
                            .ok_or_else(|| HttpConfigError::InvalidOrigin(origin.clone()))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Origins::Any => None,
        };
        Ok(Access { hosts, origins })
    }
}

/// The hosts and origins served, resolved from an [`HttpConfig`]; `None` means any.
#[derive(Debug, Clone)]
pub(super) struct Access {
    pub(super) hosts: Option<Vec<AllowedHost>>,
    pub(super) origins: Option<Vec<AllowedOrigin>>,
}
