//! What an [`Upstream`](crate::Upstream) connects to, and how patiently: [`CommandTarget`],
//! [`HttpTarget`], [`UpstreamOptions`].

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use crate::HeaderPolicy;

/// A child process speaking MCP over stdin/stdout.
///
/// ```
/// let target = mcp_proxy::CommandTarget::new("my-server").arg("--stdio").env("LOG", "warn");
/// assert_eq!(target.args, ["--stdio"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandTarget {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the proxy's environment.
    pub env: BTreeMap<String, String>,
    /// The working directory (the proxy's when `None`).
    pub cwd: Option<PathBuf>,
}

impl CommandTarget {
    /// `program` with no arguments.
    ///
    /// ```
    /// assert_eq!(mcp_proxy::CommandTarget::new("srv").program, "srv");
    /// ```
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    /// Appends an argument.
    ///
    /// ```
    /// let _ = mcp_proxy::CommandTarget::new("srv").arg("--stdio");
    /// ```
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    ///
    /// ```
    /// let _ = mcp_proxy::CommandTarget::new("srv").args(["a", "b"]);
    /// ```
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    ///
    /// ```
    /// let _ = mcp_proxy::CommandTarget::new("srv").env("TOKEN_FILE", "/run/token");
    /// ```
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory.
    ///
    /// ```
    /// let _ = mcp_proxy::CommandTarget::new("srv").cwd("/tmp");
    /// ```
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}

/// A Streamable HTTP endpoint, with fixed headers and bearer auth sent on every request.
///
/// ```
/// let target = mcp_proxy::HttpTarget::new("http://127.0.0.1:8000/mcp")
///     .header("X-Team", "search")
///     .bearer("s3cret");
/// assert_eq!(target.headers["X-Team"], "search");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HttpTarget {
    /// The endpoint URL (`http://`; this build has no TLS client).
    pub url: String,
    /// Headers sent on every request.
    pub headers: BTreeMap<String, String>,
    /// A bearer token, sent as `Authorization: Bearer <token>`.
    pub bearer: Option<String>,
    /// Which headers of the proxy's clients reach this upstream (none by default).
    pub forward: HeaderPolicy,
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTarget")
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("forward", &self.forward)
            .finish()
    }
}

impl HttpTarget {
    /// The endpoint at `url`.
    ///
    /// ```
    /// let _ = mcp_proxy::HttpTarget::new("http://127.0.0.1:8000/mcp");
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    /// Adds a header sent on every request.
    ///
    /// ```
    /// let _ = mcp_proxy::HttpTarget::new("http://h/mcp").header("X-Api-Version", "2");
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Forwards the client headers `policy` allows on each request (deny-all by default).
    ///
    /// ```
    /// let policy = mcp_proxy::HeaderPolicy::deny_all().allow("x-tenant").unwrap();
    /// let _ = mcp_proxy::HttpTarget::new("http://h/mcp").forward_headers(policy);
    /// ```
    pub fn forward_headers(mut self, policy: HeaderPolicy) -> Self {
        self.forward = policy;
        self
    }

    /// Sets the bearer token.
    ///
    /// ```
    /// let _ = mcp_proxy::HttpTarget::new("http://h/mcp").bearer("token");
    /// ```
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }
}

/// Timeouts and reconnect backoff of an [`Upstream`].
///
/// ```
/// use std::time::Duration;
/// let options = mcp_proxy::UpstreamOptions::default().call_timeout(Duration::from_secs(5));
/// assert_eq!(options.call_timeout, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamOptions {
    /// How long one request may take before it fails with [`ProxyError::Timeout`](crate::ProxyError::Timeout) (60 s).
    pub call_timeout: Duration,
    /// How long connecting (spawn or handshake) may take (15 s).
    pub connect_timeout: Duration,
    /// The wait after the first failed reconnect (100 ms); it doubles per failure.
    pub backoff_initial: Duration,
    /// The longest wait between reconnect attempts (10 s).
    pub backoff_max: Duration,
    /// Use the 2025-11-25 `initialize` handshake even when the upstream offers 2026-07-28
    /// (off: 2026-07-28 when offered). A 2025-11-25 listing carries `execution.taskSupport`;
    /// task passthrough needs 2026-07-28.
    pub legacy: bool,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(15),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            legacy: false,
        }
    }
}

impl UpstreamOptions {
    /// Sets [`call_timeout`](Self::call_timeout).
    ///
    /// ```
    /// let _ = mcp_proxy::UpstreamOptions::default().call_timeout(std::time::Duration::from_secs(1));
    /// ```
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    ///
    /// ```
    /// let _ = mcp_proxy::UpstreamOptions::default().connect_timeout(std::time::Duration::from_secs(1));
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`legacy`](Self::legacy): the 2025-11-25 handshake only.
    ///
    /// ```
    /// assert!(mcp_proxy::UpstreamOptions::default().legacy_handshake().legacy);
    /// ```
    pub fn legacy_handshake(mut self) -> Self {
        self.legacy = true;
        self
    }

    /// Sets the reconnect backoff range.
    ///
    /// ```
    /// use std::time::Duration;
    /// let _ = mcp_proxy::UpstreamOptions::default().backoff(Duration::from_millis(10), Duration::from_secs(1));
    /// ```
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max;
        self
    }
}
