//! [`connect`]: the backend a [`TasksConfig`] names, for servers and worker processes alike.

use std::{sync::Arc, time::Duration};

use crate::{
    TasksConfig,
    backend::{TaskBackend, memory::MemoryBackend},
};

/// The lease of the embedded memory backend.
const MEMORY_LEASE: Duration = Duration::from_secs(30);

/// A connected backend and the lease it grants (workers heartbeat every third of it).
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let connected = ferrymcp_tasks::connect(&ferrymcp_tasks::TasksConfig::default()).await.unwrap();
/// assert_eq!(connected.lease.as_secs(), 30);
/// # });
/// ```
#[derive(Clone)]
pub struct Connected {
    /// The task store.
    pub backend: Arc<dyn TaskBackend>,
    /// How long its claims last without a heartbeat.
    pub lease: Duration,
}

impl Connected {
    /// How often a worker should renew its leases: a third of the lease.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let connected = ferrymcp_tasks::connect(&ferrymcp_tasks::TasksConfig::default()).await.unwrap();
    /// assert_eq!(connected.heartbeat().as_secs(), 10);
    /// # });
    /// ```
    pub fn heartbeat(&self) -> Duration {
        (self.lease / 3).max(Duration::from_millis(1))
    }
}

impl std::fmt::Debug for Connected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connected")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// Why the configured backend could not be had.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_tasks::{ConnectError, TasksConfig, connect};
/// let error = connect(&TasksConfig::default().with_url("nats://q")).await.unwrap_err();
/// assert!(matches!(error, ConnectError::Unsupported { .. }));
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL names no backend this crate has.
    #[error(
        "unsupported task backend URL {url:?}: use memory:// (this process) or redis://host:port/db (shared)"
    )]
    Unsupported {
        /// The URL as configured, without its password ([`redacted_url`](crate::redacted_url)).
        url: String,
    },
    /// A `redis://` URL, but this build has no Redis support.
    #[error(
        "task backend URL {url:?} needs Redis support: build with the `redis` feature (ferrymcp/redis or ferrymcp-tasks/redis)"
    )]
    NotCompiled {
        /// The URL as configured, without its password ([`redacted_url`](crate::redacted_url)).
        url: String,
    },
    /// The credentials key is unusable.
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Key(#[from] crate::sealing::SealError),
    /// Redis could not be reached or set up.
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Redis(#[from] crate::backend::redis::RedisBackendError),
}

/// Connects the backend `config.url` names: `memory://` (a fresh embedded store) or
/// `redis://…`, `rediss://…` (TLS), `redis+cluster://…`, `rediss+cluster://…` (with the
/// `redis` feature; sealing stored credentials when `config.credentials_key` is set). Either
/// enforces `config.limits`.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_tasks::{TasksConfig, connect};
/// assert!(connect(&TasksConfig::default().with_url("memory://")).await.is_ok());
/// let error = connect(&TasksConfig::default().with_url("postgres://db")).await.unwrap_err();
/// assert!(error.to_string().contains("unsupported task backend URL"));
/// # });
/// ```
pub async fn connect(config: &TasksConfig) -> Result<Connected, ConnectError> {
    let url = config.url.trim();
    if url.starts_with("memory://") {
        return Ok(Connected {
            backend: Arc::new(MemoryBackend::with_lease(MEMORY_LEASE).with_limits(config.limits)),
            lease: MEMORY_LEASE,
        });
    }
    // redis://, rediss:// and their +cluster forms.
    if url.starts_with("redis") {
        return connect_redis(config, url).await;
    }
    Err(ConnectError::Unsupported {
        url: ferrymcp_core::secrets::redacted_url(url),
    })
}

#[cfg(feature = "redis")]
async fn connect_redis(config: &TasksConfig, url: &str) -> Result<Connected, ConnectError> {
    use crate::backend::redis::{RedisBackend, RedisOptions};
    let mut options = RedisOptions::default().with_limits(config.limits);
    if let Some(key) = &config.credentials_key {
        options = options.with_sealer(crate::sealing::Sealer::from_base64(key.expose())?);
    }
    let backend = RedisBackend::connect_with(url, options).await?;
    let lease = backend.lease();
    Ok(Connected {
        backend: Arc::new(backend),
        lease,
    })
}

#[cfg(not(feature = "redis"))]
async fn connect_redis(_config: &TasksConfig, url: &str) -> Result<Connected, ConnectError> {
    Err(ConnectError::NotCompiled {
        url: ferrymcp_core::secrets::redacted_url(url),
    })
}
