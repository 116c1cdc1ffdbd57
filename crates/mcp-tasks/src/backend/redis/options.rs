//! [`RedisOptions`]: the queue name and lease of a Redis backend, from code or from the
//! backend URL's query (`redis://host:6379/0?queue=orders&lease_ms=30000`).

use std::time::Duration;

use super::RedisBackendError;

/// The lease a claim holds without a heartbeat, unless configured.
///
/// ```
/// assert_eq!(mcp_tasks::backend::redis::DEFAULT_LEASE.as_secs(), 30);
/// ```
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How a [`RedisBackend`](super::RedisBackend) names its keys and leases its work.
///
/// ```
/// use mcp_tasks::backend::redis::RedisOptions;
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
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOptions")
            .field("queue", &self.queue)
            .field("lease", &self.lease)
            .field("sealed", &self.sealer.is_some())
            .field("limits", &self.limits)
            .field("ca_file", &self.ca_file)
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
        }
    }
}

impl RedisOptions {
    /// Sets the queue name.
    ///
    /// ```
    /// let options = mcp_tasks::backend::redis::RedisOptions::default().with_queue("q1");
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
    /// let options = mcp_tasks::backend::redis::RedisOptions::default().with_lease(Duration::from_secs(5));
    /// assert_eq!(options.lease, Duration::from_secs(5));
    /// ```
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(10));
        self
    }

    /// Encrypts stored request contexts with `sealer`.
    ///
    /// ```
    /// use mcp_tasks::{backend::redis::RedisOptions, sealing::Sealer};
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
    /// use mcp_tasks::backend::{TaskLimits, redis::RedisOptions};
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
    /// let options = mcp_tasks::backend::redis::RedisOptions::default().with_ca_file("/etc/redis/ca.pem");
    /// assert!(options.ca_file.is_some());
    /// ```
    pub fn with_ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// The prefix of every key of the queue: `{mcpt:<queue>}`.
    ///
    /// ```
    /// assert_eq!(mcp_tasks::backend::redis::RedisOptions::default().key_prefix(), "{mcpt:default}");
    /// ```
    pub fn key_prefix(&self) -> String {
        format!("{{mcpt:{}}}", self.queue)
    }

    /// Splits a backend URL into the part the Redis client reads and these options: the
    /// query parameters `queue` and `lease_ms` are ours, any other is the client's.
    ///
    /// ```
    /// use mcp_tasks::backend::redis::RedisOptions;
    /// let (url, options) = RedisOptions::default()
    ///     .from_url("redis://127.0.0.1:6379/2?queue=orders&lease_ms=5000")
    ///     .unwrap();
    /// assert_eq!(url, "redis://127.0.0.1:6379/2");
    /// assert_eq!(options.queue, "orders");
    /// assert_eq!(options.lease.as_millis(), 5000);
    /// assert!(RedisOptions::default().from_url("redis://h/?lease_ms=soon").is_err());
    /// ```
    pub fn from_url(mut self, url: &str) -> Result<(String, Self), RedisBackendError> {
        let bad = |why: String| RedisBackendError::BadUrl {
            url: redact(url),
            why,
        };
        if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
            return Err(bad(
                "a Redis task backend URL starts with redis://".to_owned()
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

/// The URL without its password, for messages.
pub(super) fn redact(url: &str) -> String {
    mcp_core::secrets::redacted_url(url)
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
    fn other_query_parameters_stay_with_the_client() {
        let (url, options) = RedisOptions::default()
            .from_url("redis://h/0?protocol=resp3&queue=x")
            .expect("valid");
        assert_eq!(url, "redis://h/0?protocol=resp3");
        assert_eq!(options.queue, "x");
    }
}
