//! [`RedisOptions`]: the queue name, lease and connection settings of a Redis backend, from
//! code or from the backend URL's query (`redis://host:6379/0?queue=orders&lease_ms=30000`).
//!
//! The URL forms:
//!
//! | URL | connects to |
//! |---|---|
//! | `redis://[[user]:password@]host[:port][/db]` | one Redis |
//! | `rediss://…` | one Redis over TLS (rustls; the system's roots, or `ca_file`'s) |
//! | `redis+cluster://[[user]:password@]host:port[,host:port…]` | a Redis Cluster, from these seed nodes |
//! | `rediss+cluster://…` | a Redis Cluster over TLS |
//!
//! Our query parameters: `queue`, `lease_ms`, `response_timeout_ms` (how long any command
//! may wait for its answer, default 10 s) and `ca_file` (a PEM file of the certificate
//! authorities to trust for TLS instead of the system's). Any other parameter is the Redis
//! client's (for example `protocol=resp3`).

use std::time::Duration;

use super::RedisBackendError;

/// The lease a claim holds without a heartbeat, unless configured.
///
/// ```
/// assert_eq!(ferrymcp_tasks::backend::redis::DEFAULT_LEASE.as_secs(), 30);
/// ```
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How long a command waits for Redis' answer before the backend calls Redis unavailable,
/// unless configured (`response_timeout_ms`). Blocking waits for new work get their own
/// block time plus a margin instead.
///
/// ```
/// assert_eq!(ferrymcp_tasks::backend::redis::DEFAULT_RESPONSE_TIMEOUT.as_secs(), 10);
/// ```
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a [`RedisBackend`](super::RedisBackend) names its keys and leases its work.
///
/// ```
/// use ferrymcp_tasks::backend::redis::RedisOptions;
/// let options = RedisOptions::default().with_queue("orders");
/// assert_eq!(options.key_prefix(), "{mcpt:orders}");
/// ```
#[derive(Clone)]
pub struct RedisOptions {
    /// The queue name: servers and workers sharing it share tasks. Every key of the queue is
    /// prefixed `{mcpt:<queue>}` (one hash tag, so one cluster slot).
    pub queue: String,
    /// How long a claim lasts without a heartbeat (workers renew it every third).
    pub lease: Duration,
    /// Encrypts the stored request context (the caller's identity) when set.
    pub sealer: Option<crate::sealing::Sealer>,
    /// Quotas and size limits of the queue's tasks.
    pub limits: crate::backend::TaskLimits,
    /// For `rediss://`: a PEM file of the certificate authorities to trust instead of the
    /// system's (the URL's `ca_file` query parameter).
    pub ca_file: Option<std::path::PathBuf>,
    /// How long a command waits for its answer (the URL's `response_timeout_ms`).
    pub response_timeout: Duration,
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOptions")
            .field("queue", &self.queue)
            .field("lease", &self.lease)
            .field("sealed", &self.sealer.is_some())
            .field("limits", &self.limits)
            .field("ca_file", &self.ca_file)
            .field("response_timeout", &self.response_timeout)
            .finish()
    }
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            queue: "default".to_owned(),
            lease: DEFAULT_LEASE,
            sealer: None,
            limits: crate::backend::TaskLimits::default(),
            ca_file: None,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
        }
    }
}

impl RedisOptions {
    /// Sets the queue name.
    ///
    /// ```
    /// let options = ferrymcp_tasks::backend::redis::RedisOptions::default().with_queue("q1");
    /// assert_eq!(options.queue, "q1");
    /// ```
    pub fn with_queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }

    /// Sets the lease (at least 10 ms).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = ferrymcp_tasks::backend::redis::RedisOptions::default().with_lease(Duration::from_secs(5));
    /// assert_eq!(options.lease, Duration::from_secs(5));
    /// ```
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(10));
        self
    }

    /// Encrypts stored request contexts with `sealer`.
    ///
    /// ```
    /// use ferrymcp_tasks::{backend::redis::RedisOptions, sealing::Sealer};
    /// let options = RedisOptions::default().with_sealer(Sealer::new(&[7; 32]));
    /// assert!(options.sealer.is_some());
    /// ```
    pub fn with_sealer(mut self, sealer: crate::sealing::Sealer) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Sets the queue's quotas and size limits.
    ///
    /// ```
    /// use ferrymcp_tasks::backend::{TaskLimits, redis::RedisOptions};
    /// let options = RedisOptions::default().with_limits(TaskLimits::default().with_max_tasks(500));
    /// assert_eq!(options.limits.max_tasks, 500);
    /// ```
    pub fn with_limits(mut self, limits: crate::backend::TaskLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Trusts the certificate authorities in the PEM file at `path` for `rediss://`.
    ///
    /// ```
    /// let options = ferrymcp_tasks::backend::redis::RedisOptions::default().with_ca_file("/etc/redis/ca.pem");
    /// assert!(options.ca_file.is_some());
    /// ```
    pub fn with_ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Sets how long a command waits for Redis' answer (at least 10 ms).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = ferrymcp_tasks::backend::redis::RedisOptions::default()
    ///     .with_response_timeout(Duration::from_secs(3));
    /// assert_eq!(options.response_timeout, Duration::from_secs(3));
    /// ```
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// The prefix of every key of the queue: `{mcpt:<queue>}`.
    ///
    /// ```
    /// assert_eq!(ferrymcp_tasks::backend::redis::RedisOptions::default().key_prefix(), "{mcpt:default}");
    /// ```
    pub fn key_prefix(&self) -> String {
        format!("{{mcpt:{}}}", self.queue)
    }

    /// Splits a backend URL into the part the Redis client reads and these options: the
    /// query parameters `queue`, `lease_ms`, `response_timeout_ms` and `ca_file` are ours,
    /// any other is the client's. The schemes are `redis://`, `rediss://`,
    /// `redis+cluster://` and `rediss+cluster://`.
    ///
    /// ```
    /// use ferrymcp_tasks::backend::redis::RedisOptions;
    /// let (url, options) = RedisOptions::default()
    ///     .from_url("redis://127.0.0.1:6379/2?queue=orders&lease_ms=5000")
    ///     .unwrap();
    /// assert_eq!(url, "redis://127.0.0.1:6379/2");
    /// assert_eq!(options.queue, "orders");
    /// assert_eq!(options.lease.as_millis(), 5000);
    /// assert!(RedisOptions::default().from_url("redis://h/?lease_ms=soon").is_err());
    ///
    /// let (url, options) = RedisOptions::default()
    ///     .from_url("rediss+cluster://a:7000,b:7001/?ca_file=/etc/ca.pem&response_timeout_ms=2500")
    ///     .unwrap();
    /// assert_eq!(url, "rediss+cluster://a:7000,b:7001/");
    /// assert_eq!(options.ca_file.as_deref(), Some(std::path::Path::new("/etc/ca.pem")));
    /// assert_eq!(options.response_timeout.as_millis(), 2500);
    /// ```
    pub fn from_url(mut self, url: &str) -> Result<(String, Self), RedisBackendError> {
        let bad = |why: String| RedisBackendError::BadUrl {
            url: redact(url),
            why,
        };
        if !SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
            return Err(bad(
                "a Redis task backend URL starts with redis://, rediss://, redis+cluster:// or \
                 rediss+cluster://"
                    .to_owned(),
            ));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "queue" => {
                    if value.is_empty()
                        || !value
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                    {
                        return Err(bad(format!(
                            "queue must be letters, digits, '-', '_' or '.', not {value:?}"
                        )));
                    }
                    self.queue = value.to_owned();
                }
                "lease_ms" => {
                    let ms: u64 = value.parse().map_err(|_| {
                        bad(format!("lease_ms must be a whole number, not {value:?}"))
                    })?;
                    self = self.with_lease(Duration::from_millis(ms));
                }
                "response_timeout_ms" => {
                    let ms: u64 = value.parse().map_err(|_| {
                        bad(format!(
                            "response_timeout_ms must be a whole number, not {value:?}"
                        ))
                    })?;
                    self = self.with_response_timeout(Duration::from_millis(ms));
                }
                "ca_file" => {
                    if value.is_empty() {
                        return Err(bad("ca_file names a PEM file".to_owned()));
                    }
                    self = self.with_ca_file(value);
                }
                _ => kept.push(pair),
            }
        }
        let client_url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        Ok((client_url, self))
    }
}

/// The schemes a backend URL may have.
const SCHEMES: [&str; 4] = [
    "redis://",
    "rediss://",
    "redis+cluster://",
    "rediss+cluster://",
];

/// For a cluster URL (`redis+cluster://` or `rediss+cluster://`, as [`RedisOptions::from_url`]
/// leaves it), one `redis://` (or `rediss://`) URL per seed node, each with the URL's user
/// information and client query; `None` for a single-node URL.
pub(super) fn cluster_seeds(client_url: &str) -> Option<Result<Vec<String>, String>> {
    let (scheme, rest) = if let Some(rest) = client_url.strip_prefix("redis+cluster://") {
        ("redis", rest)
    } else {
        ("rediss", client_url.strip_prefix("rediss+cluster://")?)
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, format!("?{query}")),
        None => (rest, String::new()),
    };
    // The user information ends at the last `@` (a password may hold a `/`).
    let (user, hosts) = match rest.rfind('@') {
        Some(at) => (&rest[..=at], &rest[at + 1..]),
        None => ("", rest),
    };
    let (hosts, path) = match hosts.split_once('/') {
        Some((hosts, path)) => (hosts, path),
        None => (hosts, ""),
    };
    if !(path.is_empty() || path == "0") {
        return Some(Err(format!(
            "a Redis Cluster has only database 0, not {path:?}"
        )));
    }
    let seeds: Vec<String> = hosts
        .split(',')
        .filter(|host| !host.is_empty())
        .map(|host| format!("{scheme}://{user}{host}/{query}"))
        .collect();
    if seeds.is_empty() {
        return Some(Err("a cluster URL names at least one host:port".to_owned()));
    }
    Some(Ok(seeds))
}

/// The URL without its password, for messages.
pub(super) fn redact(url: &str) -> String {
    ferrymcp_core::secrets::redacted_url(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("redis://:secret@host:1/0"), "redis://:***@host:1/0");
        assert_eq!(redact("redis://host:1"), "redis://host:1");
        let error = RedisOptions::default()
            .from_url("redis://:secret@host/?queue=a b")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            !error.contains("secret") && error.contains("queue"),
            "{error}"
        );
    }

    #[test]
    fn a_cluster_url_gives_one_seed_per_node_with_its_credentials() {
        let seeds = cluster_seeds("rediss+cluster://:pw@a:7000,b:7001/?protocol=resp3")
            .expect("a cluster URL")
            .expect("valid");
        assert_eq!(
            seeds,
            [
                "rediss://:pw@a:7000/?protocol=resp3",
                "rediss://:pw@b:7001/?protocol=resp3"
            ]
        );
        assert_eq!(
            cluster_seeds("redis+cluster://h:1").and_then(Result::ok),
            Some(vec!["redis://h:1/".to_owned()])
        );
        assert!(cluster_seeds("redis://h:1").is_none());
        assert!(matches!(
            cluster_seeds("redis+cluster://h:1/3"),
            Some(Err(_))
        ));
        assert!(matches!(cluster_seeds("redis+cluster:///"), Some(Err(_))));
    }

    #[test]
    fn other_query_parameters_stay_with_the_client() {
        let (url, options) = RedisOptions::default()
            .from_url("redis://h/0?protocol=resp3&queue=x")
            .expect("valid");
        assert_eq!(url, "redis://h/0?protocol=resp3");
        assert_eq!(options.queue, "x");
    }
}
