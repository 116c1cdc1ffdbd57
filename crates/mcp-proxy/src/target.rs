//! What an [`Upstream`](crate::Upstream) connects to, and how patiently: [`CommandTarget`],
//! [`HttpTarget`], [`UpstreamOptions`].

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    time::Duration,
};

use crate::{HeaderPolicy, upstream_auth::UpstreamAuth};

/// The environment variables a stdio upstream inherits from the proxy, when the proxy has
/// them: the search path, the user, the locale, the terminal, temporary directories and the
/// time zone, plus the ones Windows programs need to start. Every other variable of the
/// proxy (tokens, keys, database URLs) is withheld; [`CommandTarget::env`] sets more and
/// [`CommandTarget::inherit_env`] passes one more through by name.
///
/// ```
/// assert!(ferrymcp_proxy::BASE_ENV.contains(&"PATH"));
/// assert!(!ferrymcp_proxy::BASE_ENV.contains(&"GATEWAY_TASK_KEY"));
/// ```
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    // Windows: without these many programs do not start.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
];

/// A child process speaking MCP over stdin/stdout.
///
/// The child does not inherit the proxy's environment: it gets the variables in
/// [`BASE_ENV`] the proxy has, those named by [`inherit_env`](Self::inherit_env), and those
/// set by [`env`](Self::env) (which win).
///
/// ```
/// let target = ferrymcp_proxy::CommandTarget::new("my-server").arg("--stdio").env("LOG", "warn");
/// assert_eq!(target.args, ["--stdio"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandTarget {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for the child, on top of [`BASE_ENV`] and
    /// [`inherit`](Self::inherit).
    pub env: BTreeMap<String, String>,
    /// Variables of the proxy's environment passed through to the child by name (beyond
    /// [`BASE_ENV`]); a name the proxy does not have is skipped.
    pub inherit: BTreeSet<String>,
    /// The working directory (the proxy's when `None`).
    pub cwd: Option<PathBuf>,
}

impl CommandTarget {
    /// `program` with no arguments.
    ///
    /// ```
    /// assert_eq!(ferrymcp_proxy::CommandTarget::new("srv").program, "srv");
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
    /// let _ = ferrymcp_proxy::CommandTarget::new("srv").arg("--stdio");
    /// ```
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::CommandTarget::new("srv").args(["a", "b"]);
    /// ```
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::CommandTarget::new("srv").env("TOKEN_FILE", "/run/token");
    /// ```
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Passes the proxy's variable `name` through to the child (when the proxy has it).
    ///
    /// ```
    /// let target = ferrymcp_proxy::CommandTarget::new("srv").inherit_env("RUST_LOG");
    /// assert!(target.inherit.contains("RUST_LOG"));
    /// ```
    pub fn inherit_env(mut self, name: impl Into<String>) -> Self {
        self.inherit.insert(name.into());
        self
    }

    /// The child's whole environment, read from the proxy's variables through `lookup`: the
    /// [`BASE_ENV`] and [`inherit`](Self::inherit) names it has, then [`env`](Self::env).
    ///
    /// ```
    /// let target = ferrymcp_proxy::CommandTarget::new("srv").env("LOG", "warn").inherit_env("TEAM");
    /// let env = target.child_env(|name| match name {
    ///     "PATH" => Some("/usr/bin".into()),
    ///     "TEAM" => Some("search".into()),
    ///     "API_TOKEN" => Some("s3cret".into()),
    ///     _ => None,
    /// });
    /// let get = |name: &str| env.get(std::ffi::OsStr::new(name)).and_then(|v| v.to_str());
    /// assert_eq!(get("PATH"), Some("/usr/bin"));
    /// assert_eq!(get("TEAM"), Some("search"));
    /// assert_eq!(get("LOG"), Some("warn"));
    /// assert_eq!(get("API_TOKEN"), None);
    /// ```
    pub fn child_env(
        &self,
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> BTreeMap<std::ffi::OsString, std::ffi::OsString> {
        let mut env = BTreeMap::new();
        let names = BASE_ENV
            .iter()
            .copied()
            .chain(self.inherit.iter().map(String::as_str));
        for name in names {
            if let Some(value) = lookup(name) {
                env.insert(name.into(), value);
            }
        }
        for (name, value) in &self.env {
            env.insert(name.into(), value.into());
        }
        env
    }

    /// Sets the working directory.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::CommandTarget::new("srv").cwd("/tmp");
    /// ```
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}

/// A Streamable HTTP endpoint, with fixed headers sent on every request and the upstream's
/// own credentials ([`UpstreamAuth`]: a static bearer, client credentials or token exchange).
/// The caller's `Authorization` header is never forwarded.
///
/// `https://` URLs are verified against the Mozilla root certificates built into the proxy
/// (webpki roots; the operating system's store is not read), or only against the
/// certificates of [`ca_file`](Self::ca_file) when one is set. Redirects are never followed:
/// a `3xx` answer is an error naming its status.
///
/// ```
/// let target = ferrymcp_proxy::HttpTarget::new("http://127.0.0.1:8000/mcp")
///     .header("X-Team", "search")
///     .bearer("s3cret");
/// assert_eq!(target.headers["X-Team"], "search");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HttpTarget {
    /// The endpoint URL (`http://` or `https://`).
    pub url: String,
    /// Headers sent on every request.
    pub headers: BTreeMap<String, String>,
    /// How requests to the upstream are authenticated (not at all when `None`).
    pub auth: Option<UpstreamAuth>,
    /// Which headers of the proxy's clients reach this upstream (none by default).
    pub forward: HeaderPolicy,
    /// A PEM file of CA certificates trusted for `https://` instead of the built-in roots.
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTarget")
            .field(
                "url",
                &crate::url_secrets::redact(self.url.clone(), &self.url),
            )
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth", &self.auth)
            .field("forward", &self.forward)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl HttpTarget {
    /// The endpoint at `url`.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::HttpTarget::new("http://127.0.0.1:8000/mcp");
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
    /// let _ = ferrymcp_proxy::HttpTarget::new("http://h/mcp").header("X-Api-Version", "2");
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Forwards the client headers `policy` allows on each request (deny-all by default).
    ///
    /// ```
    /// let policy = ferrymcp_proxy::HeaderPolicy::deny_all().allow("x-tenant").unwrap();
    /// let _ = ferrymcp_proxy::HttpTarget::new("http://h/mcp").forward_headers(policy);
    /// ```
    pub fn forward_headers(mut self, policy: HeaderPolicy) -> Self {
        self.forward = policy;
        self
    }

    /// Sends the static token `token` (`Authorization: Bearer <token>`): the same as
    /// [`auth`](Self::auth) with [`UpstreamAuth::Bearer`].
    ///
    /// ```
    /// let target = ferrymcp_proxy::HttpTarget::new("http://h/mcp").bearer("s3cret");
    /// assert!(!format!("{target:?}").contains("s3cret"));
    /// ```
    pub fn bearer(self, token: impl Into<String>) -> Self {
        self.auth(UpstreamAuth::Bearer(token.into()))
    }

    /// Sets how requests to the upstream are authenticated.
    ///
    /// ```
    /// use ferrymcp_proxy::upstream_auth::{OAuthClient, UpstreamAuth};
    /// let client = OAuthClient::new("https://as.example/token", "gateway", "s3cret");
    /// let target = ferrymcp_proxy::HttpTarget::new("https://files.internal/mcp")
    ///     .auth(UpstreamAuth::ClientCredentials(client));
    /// assert!(!format!("{target:?}").contains("s3cret"));
    /// ```
    pub fn auth(mut self, auth: UpstreamAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Trusts the CA certificates in the PEM file at `path` (one or more `CERTIFICATE`
    /// blocks) for `https://`, *instead of* the built-in webpki roots: the upstream's
    /// certificate must chain to one of them. The file is read when the upstream connects; a
    /// missing or unreadable file, or one without certificates, fails with
    /// [`ProxyError::Config`](crate::ProxyError::Config).
    ///
    /// ```
    /// let target = ferrymcp_proxy::HttpTarget::new("https://mcp.internal:8443/mcp").ca_file("/etc/mcp/ca.pem");
    /// assert!(format!("{target:?}").contains("/etc/mcp/ca.pem"));
    /// // A password in the URL never shows.
    /// let target = ferrymcp_proxy::HttpTarget::new("https://svc:hunter2@mcp.internal/mcp");
    /// assert!(!format!("{target:?}").contains("hunter2"));
    /// ```
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }
}

/// Timeouts and reconnect backoff of an [`Upstream`](crate::Upstream).
///
/// ```
/// use std::time::Duration;
/// let options = ferrymcp_proxy::UpstreamOptions::default().call_timeout(Duration::from_secs(5));
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
    /// The largest message the upstream may send, in bytes (16 MiB): a line of a stdio
    /// upstream, a JSON body or one SSE event of an HTTP upstream. A stdio upstream that
    /// writes a longer line, or a line that is not JSON, has its session closed (the request
    /// in flight fails with [`ProxyError::Protocol`](crate::ProxyError::Protocol) saying why,
    /// the next one reconnects); an HTTP answer over it fails that request.
    pub max_message_bytes: usize,
}

/// The default of [`UpstreamOptions::max_message_bytes`]: 16 MiB.
///
/// ```
/// assert_eq!(ferrymcp_proxy::DEFAULT_MAX_MESSAGE_BYTES, 16 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

impl Default for UpstreamOptions {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(15),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            legacy: false,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

impl UpstreamOptions {
    /// Sets [`call_timeout`](Self::call_timeout).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::UpstreamOptions::default().call_timeout(std::time::Duration::from_secs(1));
    /// ```
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::UpstreamOptions::default().connect_timeout(std::time::Duration::from_secs(1));
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`legacy`](Self::legacy): the 2025-11-25 handshake only.
    ///
    /// ```
    /// assert!(ferrymcp_proxy::UpstreamOptions::default().legacy_handshake().legacy);
    /// ```
    pub fn legacy_handshake(mut self) -> Self {
        self.legacy = true;
        self
    }

    /// Sets [`max_message_bytes`](Self::max_message_bytes).
    ///
    /// ```
    /// let options = ferrymcp_proxy::UpstreamOptions::default().max_message_bytes(1 << 20);
    /// assert_eq!(options.max_message_bytes, 1 << 20);
    /// ```
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Sets the reconnect backoff range.
    ///
    /// ```
    /// use std::time::Duration;
    /// let _ = ferrymcp_proxy::UpstreamOptions::default().backoff(Duration::from_millis(10), Duration::from_secs(1));
    /// ```
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max;
        self
    }
}
