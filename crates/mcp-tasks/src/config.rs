//! [`TasksConfig`]: how the engine runs, from code with environment defaults.

use std::time::Duration;

use crate::backend::TaskLimits;

/// The shortest task TTL: a shorter one is raised to it, so that a task outlives the answer
/// that hands it to its client.
pub const MIN_TTL: Duration = Duration::from_secs(1);

/// The engine's settings. Constructor arguments win over the environment, which wins over
/// the defaults:
///
/// | setting | environment | default |
/// |---|---|---|
/// | backend URL | `MCP_TASKS_URL` | `memory://` |
/// | worker concurrency | `MCP_TASKS_CONCURRENCY` | 10 |
/// | task TTL (at least 1 000 ms) | `MCP_TASKS_TTL_MS` | 900 000 ms |
/// | default poll interval | `MCP_TASKS_POLL_INTERVAL_MS` | 5 000 ms |
/// | run an embedded worker | `MCP_TASKS_EMBEDDED_WORKER` (`0`/`false` turns it off) | on |
/// | keys sealing stored credentials | `MCP_TASKS_CREDENTIALS_KEY` (32 bytes, base64; `new,old` while rotating) | none |
/// | unfinished tasks per caller | `MCP_TASKS_MAX_TASKS_PER_CALLER` | 100 |
/// | unfinished tasks in all | `MCP_TASKS_MAX_TASKS` | 10 000 |
/// | tasks kept in all, finished or not | `MCP_TASKS_MAX_KEPT` | 100 000 |
/// | largest task arguments (compact JSON) | `MCP_TASKS_MAX_ARGUMENT_BYTES` | 1 048 576 |
/// | largest task result or error (compact JSON) | `MCP_TASKS_MAX_RESULT_BYTES` | 1 048 576 |
///
/// A caller is the verified principal, or for an anonymous request the `clientInfo` name it
/// declared. A submission over a task count limit gets a `-32000` error naming the setting
/// and creates no task; arguments over their limit are invalid params (`-32602`); a result
/// over its limit fails the task with a `-32000` error naming the setting. See
/// [`TaskLimits`].
///
/// The URL is `memory://` (this process only) or, with the `redis` feature,
/// `redis://[:password@]host[:port][/db][?queue=<name>&lease_ms=<ms>]` (shared by every
/// server and worker process on the same queue), `rediss://` for TLS, and
/// `redis+cluster://` / `rediss+cluster://` for Redis Cluster.
///
/// ```
/// let config = ferrymcp_tasks::TasksConfig::default().with_concurrency(4);
/// assert_eq!(config.concurrency, 4);
/// assert_eq!(config.url, "memory://");
/// // Debug output never shows a password in the URL.
/// let redis = ferrymcp_tasks::TasksConfig::default().with_url("redis://:hunter2@db:6379/0");
/// assert!(!format!("{redis:?}").contains("hunter2"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct TasksConfig {
    /// Where tasks live: `memory://` (embedded, the default) or `redis://…`.
    pub url: String,
    /// Whether the server runs tasks itself (an embedded worker). Turn it off for API-only
    /// replicas whose tasks run in worker processes.
    pub embedded_worker: bool,
    /// The key that seals the caller's identity stored with each task (Redis backend).
    pub credentials_key: Option<CredentialsKey>,
    /// How many task runs the embedded worker runs at once.
    pub concurrency: usize,
    /// How long a task is kept from creation (`ttlMs`).
    pub ttl: Duration,
    /// The poll interval of tools that do not set one.
    pub poll_interval: Duration,
    /// How many tasks callers may keep, and how large their arguments and results may be.
    pub limits: TaskLimits,
}

impl std::fmt::Debug for TasksConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasksConfig")
            .field("url", &ferrymcp_core::secrets::redacted_url(&self.url))
            .field("embedded_worker", &self.embedded_worker)
            .field("credentials_key", &self.credentials_key)
            .field("concurrency", &self.concurrency)
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            url: "memory://".to_owned(),
            embedded_worker: true,
            credentials_key: None,
            concurrency: 10,
            ttl: Duration::from_millis(900_000),
            poll_interval: Duration::from_millis(5_000),
            limits: TaskLimits::default(),
        }
    }
}

fn env_number(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    match raw.trim().parse() {
        Ok(value) => Some(value),
        Err(_) => {
            tracing::warn!(name, value = %raw, "ignoring a setting that is not a whole number");
            None
        }
    }
}

/// `limits` overridden by the `MCP_TASKS_MAX_*` variables that are set.
fn limits_from_env(mut limits: TaskLimits) -> TaskLimits {
    let bytes = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    if let Some(max) = env_number("MCP_TASKS_MAX_TASKS_PER_CALLER") {
        limits = limits.with_max_tasks_per_caller(max);
    }
    if let Some(max) = env_number("MCP_TASKS_MAX_TASKS") {
        limits = limits.with_max_tasks(max);
    }
    if let Some(max) = env_number("MCP_TASKS_MAX_KEPT") {
        limits = limits.with_max_kept(max);
    }
    if let Some(max) = env_number("MCP_TASKS_MAX_ARGUMENT_BYTES") {
        limits = limits.with_max_argument_bytes(bytes(max));
    }
    if let Some(max) = env_number("MCP_TASKS_MAX_RESULT_BYTES") {
        limits = limits.with_max_result_bytes(bytes(max));
    }
    limits
}

impl TasksConfig {
    /// The defaults, overridden by any `MCP_TASKS_*` environment variable that is set.
    ///
    /// ```
    /// let config = ferrymcp_tasks::TasksConfig::from_env();
    /// assert!(config.concurrency >= 1);
    /// ```
    pub fn from_env() -> Self {
        let mut config = Self::default();
        if let Ok(url) = std::env::var("MCP_TASKS_URL")
            && !url.trim().is_empty()
        {
            config.url = url.trim().to_owned();
        }
        if let Ok(flag) = std::env::var("MCP_TASKS_EMBEDDED_WORKER") {
            config.embedded_worker = !matches!(flag.trim(), "0" | "false" | "no" | "off");
        }
        if let Ok(key) = std::env::var("MCP_TASKS_CREDENTIALS_KEY")
            && !key.trim().is_empty()
        {
            config.credentials_key = Some(CredentialsKey(key.trim().to_owned()));
        }
        if let Some(concurrency) = env_number("MCP_TASKS_CONCURRENCY") {
            config.concurrency = usize::try_from(concurrency).unwrap_or(usize::MAX).max(1);
        }
        if let Some(ttl) = env_number("MCP_TASKS_TTL_MS") {
            config = config.with_ttl(Duration::from_millis(ttl));
        }
        if let Some(poll) = env_number("MCP_TASKS_POLL_INTERVAL_MS") {
            config.poll_interval = Duration::from_millis(poll.max(1));
        }
        config.limits = limits_from_env(config.limits);
        config
    }

    /// Sets the task limits.
    ///
    /// ```
    /// use ferrymcp_tasks::{TasksConfig, backend::TaskLimits};
    /// let config = TasksConfig::default()
    ///     .with_limits(TaskLimits::default().with_max_tasks_per_caller(3));
    /// assert_eq!(config.limits.max_tasks_per_caller, 3);
    /// ```
    pub fn with_limits(mut self, limits: TaskLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the backend URL.
    ///
    /// ```
    /// let _ = ferrymcp_tasks::TasksConfig::default().with_url("memory://");
    /// ```
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// Turns the embedded worker on or off.
    ///
    /// ```
    /// assert!(!ferrymcp_tasks::TasksConfig::default().with_embedded_worker(false).embedded_worker);
    /// ```
    pub fn with_embedded_worker(mut self, on: bool) -> Self {
        self.embedded_worker = on;
        self
    }

    /// Sets the key sealing stored credentials: 32 bytes, base64. While rotating, a
    /// comma-separated list: the first key seals, every key still opens.
    ///
    /// ```
    /// let config = ferrymcp_tasks::TasksConfig::default()
    ///     .with_credentials_key("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    /// assert!(config.credentials_key.is_some());
    /// assert!(!format!("{config:?}").contains("AAAA"), "never printed");
    /// ```
    pub fn with_credentials_key(mut self, key: impl Into<String>) -> Self {
        self.credentials_key = Some(CredentialsKey(key.into()));
        self
    }

    /// Sets the worker concurrency (at least 1).
    ///
    /// ```
    /// assert_eq!(ferrymcp_tasks::TasksConfig::default().with_concurrency(0).concurrency, 1);
    /// ```
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Sets the task TTL; a TTL under [`MIN_TTL`] (one second) is raised to it, so that a
    /// client can always read the task it was just handed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = ferrymcp_tasks::TasksConfig::default().with_ttl(Duration::from_secs(60));
    /// assert_eq!(config.ttl, Duration::from_secs(60));
    /// let config = ferrymcp_tasks::TasksConfig::default().with_ttl(Duration::ZERO);
    /// assert_eq!(config.ttl, ferrymcp_tasks::config::MIN_TTL);
    /// ```
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(MIN_TTL);
        self
    }

    /// Sets the poll interval of tools that do not set one.
    ///
    /// ```
    /// let _ = ferrymcp_tasks::TasksConfig::default().with_poll_interval(std::time::Duration::from_secs(1));
    /// ```
    pub fn with_poll_interval(mut self, poll_interval: Duration) -> Self {
        // `pollIntervalMs` is a positive integer (R19).
        self.poll_interval = poll_interval.max(Duration::from_millis(1));
        self
    }
}

/// A key for sealing stored credentials, as configured (base64). Never printed.
///
/// ```
/// let config = ferrymcp_tasks::TasksConfig::default().with_credentials_key("c2VjcmV0");
/// assert_eq!(config.credentials_key.unwrap().expose(), "c2VjcmV0");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CredentialsKey(String);

impl CredentialsKey {
    /// The configured text (base64 of 32 bytes, once validated by the backend).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for CredentialsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialsKey(***)")
    }
}
