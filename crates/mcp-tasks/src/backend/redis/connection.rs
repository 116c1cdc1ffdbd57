//! How a [`RedisBackend`](super::RedisBackend) reaches Redis: one shared connection for the
//! scripts, dedicated connections for blocking waits, and the clients the cancel
//! subscription connects with; for one Redis (`redis://`, `rediss://`) or a Redis Cluster
//! (`redis+cluster://`, `rediss+cluster://`).
//!
//! Every connection:
//! - has TCP keepalive (idle [`KEEPALIVE_IDLE`], then a probe every [`KEEPALIVE_INTERVAL`],
//!   dropped after [`KEEPALIVE_PROBES`] unanswered ones) and a connect timeout
//!   ([`CONNECT_TIMEOUT`]);
//! - waits at most the configured response timeout for any answer (a blocking read: its
//!   block time plus [`BLOCK_MARGIN`]), so a frozen or half-open server yields an error,
//!   never a hang;
//! - reconnects with capped, jittered exponential backoff: the shared connection of one
//!   Redis through the client's connection manager (from [`RECONNECT_MIN_DELAY`], doubling,
//!   at most [`RECONNECT_MAX_DELAY`] apart, [`RECONNECT_TRIES`] tries per failed request;
//!   a manager whose reconnection `AUTH` refused is replaced, see [`Managed`]), a
//!   cluster through the cluster client's own retries (the same bounds), the subscription
//!   in `events.rs`.
//!
//! With TLS the server is verified against the system's roots, or only against the
//! certificate authorities of the `ca_file` option.

use std::{
    sync::{Mutex, PoisonError},
    time::Duration,
};

use redis::{
    AsyncConnectionConfig, Cmd, IntoConnectionInfo as _, Pipeline, RedisError, RedisFuture,
    RedisResult, TlsCertificates, Value,
    aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection},
    cluster::{ClusterClient, ClusterClientBuilder},
    cluster_async::ClusterConnection,
    io::tcp::{TcpSettings, socket2::TcpKeepalive},
};

use super::{RedisBackendError, RedisOptions, options};

/// How long a connection may sit idle before TCP keepalive probes it.
pub(super) const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// How far apart keepalive probes go.
pub(super) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// How many unanswered probes end the connection.
pub(super) const KEEPALIVE_PROBES: u32 = 3;
/// How long opening a connection (TCP, TLS, `HELLO`/`AUTH`) may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// What a blocking read may take beyond its block time before it counts as lost.
pub(super) const BLOCK_MARGIN: Duration = Duration::from_secs(2);
/// The first reconnection delay (each next one doubles, with jitter).
pub(super) const RECONNECT_MIN_DELAY: Duration = Duration::from_millis(100);
/// The longest reconnection delay.
pub(super) const RECONNECT_MAX_DELAY: Duration = Duration::from_secs(5);
/// How many times one failed request tries to reconnect before it reports the error.
pub(super) const RECONNECT_TRIES: usize = 4;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The TCP settings of every connection: the client's, with keepalive on.
fn tcp_settings(base: &TcpSettings) -> TcpSettings {
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL);
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
    let keepalive = keepalive.with_retries(KEEPALIVE_PROBES);
    let settings = base.clone().set_keepalive(keepalive);
    // Unacknowledged writes give up when keepalive would have.
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    let settings =
        settings.set_user_timeout(KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_PROBES);
    settings
}

/// The error of an answer that did not come in time.
fn timed_out(limit: Duration) -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("Redis did not answer within {} ms", limit.as_millis()),
    ))
}

/// The shared connection every script runs on: cheap to clone, all clones one connection
/// (per node, on a cluster).
#[derive(Clone)]
pub(super) enum Shared {
    /// One Redis, reconnected by the connection manager.
    Single(Managed),
    /// A Redis Cluster: commands go to the node of their key's slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Shared {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(managed) => Box::pin(async move {
                let (generation, mut conn) = managed.current();
                let answer = conn.req_packed_command(cmd).await;
                managed.check(generation, &answer);
                answer
            }),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(managed) => Box::pin(async move {
                let (generation, mut conn) = managed.current();
                let answer = conn.req_packed_commands(pipeline, offset, count).await;
                managed.check(generation, &answer);
                answer
            }),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(managed) => managed.current().1.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}

/// How long after replacing the connection manager a failed login may replace it again.
const REPLACE_AFTER: Duration = Duration::from_secs(1);

/// One Redis's connection manager, replaced by a new one when a login fails. The manager
/// reconnects after I/O errors only: a reconnection that `AUTH` refused (a password being
/// rotated, a Redis briefly started with another one) would otherwise be its answer to
/// every later request, without ever trying again.
#[derive(Clone)]
pub(super) struct Managed(std::sync::Arc<ManagedInner>);

struct ManagedInner {
    state: Mutex<ManagedState>,
    client: redis::Client,
    config: ConnectionManagerConfig,
}

struct ManagedState {
    /// Counts replacements, so that the requests of one stuck manager replace it once.
    generation: u64,
    conn: ConnectionManager,
    replaced_at: Option<std::time::Instant>,
}

impl Managed {
    fn new(
        client: redis::Client,
        config: ConnectionManagerConfig,
        conn: ConnectionManager,
    ) -> Self {
        Self(std::sync::Arc::new(ManagedInner {
            state: Mutex::new(ManagedState {
                generation: 0,
                conn,
                replaced_at: None,
            }),
            client,
            config,
        }))
    }

    /// The current manager (a handle) and its generation.
    fn current(&self) -> (u64, ConnectionManager) {
        let state = lock(&self.0.state);
        (state.generation, state.conn.clone())
    }

    /// After an answer of the manager of `generation`: a failed login replaces it (at most
    /// once per [`REPLACE_AFTER`]) with one that connects on its next request.
    fn check<T>(&self, generation: u64, answer: &RedisResult<T>) {
        let Err(error) = answer else { return };
        if error.kind() != redis::ErrorKind::AuthenticationFailed {
            return;
        }
        let mut state = lock(&self.0.state);
        let recently = state
            .replaced_at
            .is_some_and(|at| at.elapsed() < REPLACE_AFTER);
        if state.generation != generation || recently {
            return;
        }
        match ConnectionManager::new_lazy_with_config(self.0.client.clone(), self.0.config.clone())
        {
            Ok(conn) => {
                tracing::warn!(%error, "Redis refused the login; connecting again");
                state.conn = conn;
                state.generation += 1;
                state.replaced_at = Some(std::time::Instant::now());
            }
            Err(error) => tracing::warn!(%error, "cannot make a new Redis connection manager"),
        }
    }
}

/// A connection of its own (a blocked connection serves nobody else).
enum Link {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

/// A connection for one blocking wait: every answer is awaited at most the block time plus
/// [`BLOCK_MARGIN`]; one that failed is dropped rather than given back.
pub(super) struct Blocking {
    link: Link,
    limit: Duration,
    failed: bool,
}

impl ConnectionLike for Blocking {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let limit = self.limit;
            let answer = match &mut self.link {
                Link::Single(conn) => {
                    tokio::time::timeout(limit, conn.req_packed_command(cmd)).await
                }
                Link::Cluster(conn) => {
                    tokio::time::timeout(limit, conn.req_packed_command(cmd)).await
                }
            };
            let answer = answer.unwrap_or_else(|_| Err(timed_out(limit)));
            self.failed |= answer.is_err();
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let limit = self.limit;
            let answer = match &mut self.link {
                Link::Single(conn) => {
                    tokio::time::timeout(limit, conn.req_packed_commands(pipeline, offset, count))
                        .await
                }
                Link::Cluster(conn) => {
                    tokio::time::timeout(limit, conn.req_packed_commands(pipeline, offset, count))
                        .await
                }
            };
            let answer = answer.unwrap_or_else(|_| Err(timed_out(limit)));
            self.failed |= answer.is_err();
            answer
        })
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(conn) => conn.get_db(),
            Link::Cluster(conn) => conn.get_db(),
        }
    }
}

/// Where blocking connections come from.
enum Target {
    Single(Box<redis::Client>),
    /// A client whose connections have no response timeout of their own ([`Blocking`]
    /// bounds each wait).
    Cluster(Box<ClusterClient>),
}

/// The clients the cancel subscription connects with: the one Redis, or each seed node of
/// a cluster in turn (`PUBLISH` reaches subscribers on every node of a cluster).
#[derive(Clone)]
pub(super) struct Subscriber {
    clients: Vec<redis::Client>,
    /// How long connecting, subscribing and each `PING` may take.
    pub(super) response_timeout: Duration,
}

impl Subscriber {
    /// A subscription connection to the `attempt`-th client (round robin).
    pub(super) async fn connect(&self, attempt: usize) -> RedisResult<redis::aio::PubSub> {
        let Some(client) = self.clients.get(attempt % self.clients.len().max(1)) else {
            return Err(RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no node to subscribe on",
            )));
        };
        let limit = CONNECT_TIMEOUT + self.response_timeout;
        tokio::time::timeout(limit, client.get_async_pubsub())
            .await
            .unwrap_or_else(|_| Err(timed_out(limit)))
    }
}

/// Every connection a backend uses, and how to open more.
pub(super) struct Connections {
    shared: Shared,
    target: Target,
    /// Idle blocking connections.
    pool: Mutex<Vec<Link>>,
    subscriber: Subscriber,
}

impl Connections {
    /// Connects to the Redis (or cluster) of `client_url` (the URL as
    /// [`RedisOptions::from_url`] leaves it), naming it `shown` in errors.
    pub(super) async fn open(
        client_url: &str,
        options: &RedisOptions,
        shown: &str,
    ) -> Result<Self, RedisBackendError> {
        let bad = |why: String| RedisBackendError::BadUrl {
            url: shown.to_owned(),
            why,
        };
        let connect_error = |source| RedisBackendError::Connect {
            url: shown.to_owned(),
            source,
        };
        let seeds = match options::cluster_seeds(client_url) {
            Some(seeds) => seeds.map_err(bad)?,
            None => vec![client_url.to_owned()],
        };
        let tls = seeds.iter().all(|seed| seed.starts_with("rediss://"));
        let root_cert = match &options.ca_file {
            Some(_) if !tls => {
                return Err(bad(
                    "ca_file applies to TLS URLs (rediss:// or rediss+cluster://)".to_owned(),
                ));
            }
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| bad(format!("cannot read the CA file {}: {e}", path.display())))?,
            ),
            None => None,
        };
        if tls {
            // The provider this crate compiles in; a provider installed earlier stays.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let mut clients = Vec::with_capacity(seeds.len());
        for seed in &seeds {
            let info = seed
                .as_str()
                .into_connection_info()
                .map_err(|e| bad(e.to_string()))?;
            let info = info
                .clone()
                .set_tcp_settings(tcp_settings(info.tcp_settings()));
            let client = match &root_cert {
                Some(pem) => redis::Client::build_with_tls(
                    info,
                    TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem.clone()),
                    },
                ),
                None => redis::Client::open(info),
            }
            .map_err(|e| bad(e.to_string()))?;
            clients.push(client);
        }
        let subscriber = Subscriber {
            clients: clients.clone(),
            response_timeout: options.response_timeout,
        };
        let (shared, target) = if options::cluster_seeds(client_url).is_some() {
            let infos: Vec<_> = clients
                .iter()
                .map(|client| client.get_connection_info().clone())
                .collect();
            let builder = || {
                let mut builder = ClusterClientBuilder::new(infos.clone())
                    .connection_timeout(CONNECT_TIMEOUT)
                    .min_retry_wait(whole_ms(RECONNECT_MIN_DELAY))
                    .max_retry_wait(whole_ms(RECONNECT_MAX_DELAY))
                    .tcp_settings(tcp_settings(infos[0].tcp_settings()));
                if let Some(pem) = &root_cert {
                    builder = builder.certs(TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem.clone()),
                    });
                }
                builder
            };
            let shared_client = builder()
                .response_timeout(options.response_timeout)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            let blocking_client = builder().build().map_err(|e| bad(e.to_string()))?;
            let limit = CONNECT_TIMEOUT * 2 + options.response_timeout;
            let conn = tokio::time::timeout(limit, shared_client.get_async_connection())
                .await
                .unwrap_or_else(|_| Err(timed_out(limit)))
                .map_err(connect_error)?;
            (
                Shared::Cluster(conn),
                Target::Cluster(Box::new(blocking_client)),
            )
        } else {
            let client = clients[0].clone();
            // Redis answers a script in well under a millisecond, but a busy client runtime
            // (a worker at full concurrency) can take longer than the client's 500 ms default
            // to read the answer: the configured timeout (10 s by default) applies instead.
            let config = ConnectionManagerConfig::new()
                .set_response_timeout(Some(options.response_timeout))
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_min_delay(RECONNECT_MIN_DELAY)
                .set_max_delay(RECONNECT_MAX_DELAY)
                .set_exponent_base(2.0)
                .set_number_of_retries(RECONNECT_TRIES);
            let conn = ConnectionManager::new_with_config(client.clone(), config.clone())
                .await
                .map_err(connect_error)?;
            let managed = Managed::new(client.clone(), config, conn);
            (Shared::Single(managed), Target::Single(Box::new(client)))
        };
        Ok(Self {
            shared,
            target,
            pool: Mutex::new(Vec::new()),
            subscriber,
        })
    }

    /// The shared connection (a handle to it).
    pub(super) fn shared(&self) -> Shared {
        self.shared.clone()
    }

    /// How the cancel subscription connects.
    pub(super) fn subscriber(&self) -> Subscriber {
        self.subscriber.clone()
    }

    /// A connection of its own for a command that blocks up to `block`: an idle one, or a
    /// new one. Give it back with [`give_back`](Self::give_back) once its wait is over.
    pub(super) async fn blocking(&self, block: Duration) -> RedisResult<Blocking> {
        let limit = block + BLOCK_MARGIN;
        let pooled = lock(&self.pool).pop();
        let link = match pooled {
            Some(link) => link,
            None => match &self.target {
                Target::Single(client) => {
                    let config = AsyncConnectionConfig::new()
                        .set_connection_timeout(Some(CONNECT_TIMEOUT))
                        .set_response_timeout(Some(limit));
                    Link::Single(
                        client
                            .get_multiplexed_async_connection_with_config(&config)
                            .await?,
                    )
                }
                Target::Cluster(client) => {
                    let open = CONNECT_TIMEOUT * 2;
                    Link::Cluster(
                        tokio::time::timeout(open, client.get_async_connection())
                            .await
                            .unwrap_or_else(|_| Err(timed_out(open)))?,
                    )
                }
            },
        };
        let mut link = link;
        if let Link::Single(conn) = &mut link {
            conn.set_response_timeout(limit);
        }
        Ok(Blocking {
            link,
            limit,
            failed: false,
        })
    }

    /// Keeps `conn` for the next blocking wait, unless one of its commands failed.
    pub(super) fn give_back(&self, conn: Blocking) {
        if !conn.failed {
            lock(&self.pool).push(conn.link);
        }
    }
}

fn whole_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_has_keepalive() {
        let settings = tcp_settings(&TcpSettings::default());
        assert!(settings.keepalive().is_some());
    }
}
