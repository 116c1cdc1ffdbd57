//! [`RedisBackend`]: tasks shared by server replicas and worker processes through Redis (or
//! Valkey) 7.0+, behind the cargo feature `redis`.
//!
//! Keys of a queue (prefix `P` = `{mcpt:<queue>}`, one hash tag, so one cluster slot):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:t:<id>` | hash | the task: owner (a tag, never the principal), caller tag, tool, arguments, context, status, result or error, fence, attempts, round, the start tag of its queued run |
//! | `P:r` | sorted set | runnable runs: task id by virtual start tag |
//! | `P:l` | sorted set | held runs: task id by its lease's deadline |
//! | `P:s` | sorted set | first runs a claim met before their release (field `hold` of the task: until when): task id by the hold's deadline |
//! | `P:n` | hash | the counts (`u` unfinished, `k` kept, `c:<caller tag>` a caller's unfinished) and the fair queue's clocks (`vc` the virtual clock, `t:<caller tag>` a caller's last start tag) |
//! | `P:x:<bucket>`, `P:xb` | hash, sorted set | tasks by the 100 ms bucket they expire in (per caller: submitted, `f:`finished), and the buckets by their end: how expired tasks leave the counts |
//! | `P:w`, `P:wt` | stream, capped; string | one entry per queued run while `P:wt` says a claim may be waiting, to wake it |
//! | `P:cl:<claim id>` | list | the runs one claim handed out (for a lease) |
//! | `P:d:<id>` | string | an id taken for a while by an undone submission (below) |
//! | `P:t:<id>:ir` / `:ik` | hashes | outstanding input requests, and the tool key of each client key |
//! | `P:t:<id>:ia` | hash | answers collected for the next round, by the tool's keys |
//! | `P:ev` | pub/sub channel | `<worker>\t<task>`: cancel the run of that task |
//! | `P:ch` | pub/sub channel | `<task>`: a watched task (field `w` of its hash, set when a client listens for it) changed |
//!
//! Every transition is one Lua script (`lua/*.lua`), so owner checks, quotas, fences and
//! status changes are atomic with the read or write they guard. Calls of the busiest
//! scripts (submit, release, and a worker's writes) made while earlier ones are on their way
//! go together as one call (`batch.rs`); a `get` runs alone. Every task key expires at the task's deadline
//! (`PEXPIREAT created + ttl`): nothing outlives its task; the counts forget an expired task
//! when the sweep (or a submit at a limit) meets its expiry bucket.
//!
//! Workers take runs fairly across callers (start-time fair queueing): a run's start tag is
//! one past the later of the virtual clock and its caller's last tag, and a claim takes the
//! lowest tags and moves the clock to them. A caller with a thousand queued runs and one
//! with one take turns. A claim holds its runs by a lease in `P:l`; heartbeats push its
//! deadline, and [`expire`](TaskBackend::expire) takes lapsed leases and either starts the
//! work again (attempts left, a new fence) or fails the task for a lost worker. It also
//! releases a submitted task whose release never came within a lease (its server
//! died). A submission whose answer never came (its client was told it failed) is undone
//! by the next sweep of its server, before that server releases anything (`doubts.rs`).
//! All times come from the Redis server's clock.

mod batch;
mod connection;
mod doubts;
mod events;
mod operator;
mod options;
mod reply;
mod scripts;

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use async_trait::async_trait;
use ferrymcp_types::{InputResponses, JsonObject, TaskStatus};
use redis::Value;
use serde_json::json;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

pub use options::{DEFAULT_LEASE, DEFAULT_RESPONSE_TIMEOUT, RedisOptions};

use super::{
    BackendError, CancelAck, Claimed, InputRound, LIMIT_CODE, Lease, LeaseState, Limit,
    LimitExceeded, NewTask, Owner, StoreStats, TaskBackend, TaskFilter, TaskLimits, TaskRecord,
    TaskView, UpdateAck, WorkerEvent, WorkerId, WorkerPresence, WriteAck, memory::whole_ms,
};
use crate::{ids, sealing};
use reply::{corrupt, int, items, pairs, take_text, text, uint};

pub use crate::lost_worker::LOST_WORKER_MESSAGE;

/// How many overdue leases (and releases) one sweep step takes at most.
const RECOVER_BATCH: usize = 256;

/// How many leases after its submission a task never released is released by the sweeper
/// (its server died, or every release it tried failed while Redis was unreachable). The
/// submitting server retries its release for up to a lease, so the fallback takes over
/// when that has run out, and the task runs within a sweep of Redis being back.
const RELEASE_AFTER_LEASES: u32 = 1;

/// How many submitted, unreleased tasks a backend remembers the start tag of; past that, a
/// release reads it from Redis.
const HELD_TAGS: usize = 65_536;

/// The one `maxmemory-policy` that never evicts the engine's keys (they all carry TTLs, so
/// even the `volatile-*` policies can evict them).
const SAFE_MEMORY_POLICY: &str = "noeviction";

/// Why a Redis backend could not be set up.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_tasks::backend::redis::{RedisBackend, RedisBackendError};
/// let error = RedisBackend::connect("http://not-redis").await.err().unwrap();
/// assert!(matches!(error, RedisBackendError::BadUrl { .. }));
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
pub enum RedisBackendError {
    /// The URL is not a usable Redis task backend URL.
    #[error("bad task backend URL {url}: {why}")]
    BadUrl {
        /// The URL, without its password.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// Redis could not be reached or refused the set-up.
    #[error("cannot use Redis at {url} for tasks: {source}")]
    Connect {
        /// The URL, without its password.
        url: String,
        /// The client's error.
        source: redis::RedisError,
    },
    /// Redis may evict keys under memory pressure, which would lose tasks.
    #[error(
        "Redis at {url} has maxmemory-policy {policy}, which can evict task keys: \
         set `maxmemory-policy noeviction` (redis.conf or CONFIG SET) to use it for tasks"
    )]
    EvictionPolicy {
        /// The URL, without its password.
        url: String,
        /// The policy Redis reported.
        policy: String,
    },
}

/// The distributed task store: any number of server and worker processes on one Redis queue.
/// See the [module docs](self) for the key layout.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use ferrymcp_tasks::{TasksExtension, backend::redis::RedisBackend};
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0?queue=demo").await?;
/// let extension = TasksExtension::new().with_backend(Arc::new(backend));
/// # Ok(()) }
/// ```
pub struct RedisBackend {
    /// The shared connection, and connections for blocking waits, one per waiting claim (a
    /// blocked connection serves nobody else).
    connections: connection::Connections,
    scripts: scripts::Scripts,
    /// Where scripts run (the shared connection, the queue's key and prefix).
    target: batch::Target,
    /// The group commits of the calls many requests or runs make at once.
    batchers: Batchers,
    /// The owner and start tag of each task this backend submitted and has not released
    /// yet, so that its owner's release queues the run without reading the task (at most
    /// [`HELD_TAGS`]).
    held: std::sync::Mutex<HashMap<String, (Owner, String)>>,
    /// Submissions whose answer never came, for the sweep to undo.
    doubts: doubts::Doubts,
    /// How long an undone submission's id stays taken (ms, as sent): twice the longer of
    /// the lease and the response timeout, so a submission held up on its way meanwhile is
    /// refused when it arrives.
    taken_ms: String,
    prefix: String,
    lease: Duration,
    limits: TaskLimits,
    sealer: Option<sealing::Sealer>,
    feed: events::Feed,
    stop: CancellationToken,
    url: String,
}

/// The scripts whose calls are batched (see [`batch`]).
struct Batchers {
    submit: batch::Batcher,
    release: batch::Batcher,
    write: batch::Batcher,
}

impl Batchers {
    /// The batchers of a backend whose lease is `lease` and limits `limits`: a submit's
    /// release deadline and limits are the same for all its calls, so they go once per batch.
    fn start(
        scripts: &scripts::Scripts,
        target: &batch::Target,
        lease: Duration,
        limits: &TaskLimits,
    ) -> Self {
        let start = |script: &redis::Script, shared: Vec<String>| {
            batch::Batcher::new(script.clone(), target.clone(), shared)
        };
        let submit_shared = vec![
            whole_ms(lease * RELEASE_AFTER_LEASES).max(1).to_string(),
            limits.max_tasks_per_caller.to_string(),
            limits.max_tasks.to_string(),
            limits.max_kept.to_string(),
        ];
        Self {
            submit: start(&scripts.submit, submit_shared),
            release: start(&scripts.release, Vec::new()),
            write: start(&scripts.write, Vec::new()),
        }
    }
}

/// How a script is called: alone, or in a batch with other calls of it.
#[derive(Clone, Copy)]
enum Via<'a> {
    Alone(&'a redis::Script),
    Batched(&'a batch::Batcher),
}

/// The owned arguments of one call.
fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

impl Drop for RedisBackend {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A lock that a panic elsewhere does not poison for good (the map stays usable).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unavailable(error: redis::RedisError) -> BackendError {
    BackendError::Unavailable(error.to_string())
}

fn parse_status(raw: &str) -> Result<TaskStatus, BackendError> {
    serde_json::from_value(serde_json::Value::String(raw.to_owned()))
        .map_err(|_| BackendError::Corrupt(format!("unknown task status {raw:?}")))
}

fn parse_json(raw: &str, what: &str) -> Result<serde_json::Value, BackendError> {
    serde_json::from_str(raw).map_err(|e| BackendError::Corrupt(format!("stored {what}: {e}")))
}

fn parse_object(raw: &str, what: &str) -> Result<JsonObject, BackendError> {
    match parse_json(raw, what)? {
        serde_json::Value::Object(object) => Ok(object),
        _ => Err(BackendError::Corrupt(format!(
            "stored {what} is not an object"
        ))),
    }
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// The error a task fails with for a `refusal` (the extension's `-32000` shape).
fn limit_error(refusal: LimitExceeded) -> serde_json::Value {
    json!({
        "code": LIMIT_CODE,
        "message": refusal.to_string(),
        "data": {"limit": refusal.limit.setting(), "max": refusal.max},
    })
}

/// `INFO memory`'s `maxmemory_policy` field.
fn memory_policy(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|line| line.trim().strip_prefix("maxmemory_policy:"))
        .map(str::trim)
}

/// The owner and context of an opened stored context (`{"owner", "context"}`), or why it
/// is unusable.
fn open_envelope(stored: &str) -> Result<(Owner, JsonObject), String> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        owner: String,
        context: JsonObject,
    }
    let envelope: Envelope = serde_json::from_str(stored)
        .map_err(|_| "the task's stored credentials are unreadable".to_owned())?;
    Ok((Owner(envelope.owner), envelope.context))
}

/// The lost-worker JSON-RPC error.
fn lost_worker_error() -> serde_json::Value {
    json!({"code": ferrymcp_types::codes::INTERNAL_ERROR, "message": LOST_WORKER_MESSAGE})
}

/// A TTL in whole ms, capped at a century (Redis' clock arithmetic stays exact).
fn ttl_ms(ttl: Duration) -> u64 {
    whole_ms(ttl).min(100 * 365 * 24 * 3_600_000)
}

impl RedisBackend {
    /// Connects to the Redis at `url`, with the queue, lease and response timeout the URL's
    /// query names (`queue`, `lease_ms`, `response_timeout_ms`; defaults `default`, 30 s and
    /// 10 s):
    ///
    /// - `redis://[[user]:password@]host[:port][/db]`: one Redis;
    /// - `rediss://…`: one Redis over TLS (rustls), verified against the system's
    ///   certificate authorities, or only those of the PEM file `ca_file=/path/ca.pem`;
    /// - `redis+cluster://[[user]:password@]host:port[,host:port…][/]` (or
    ///   `rediss+cluster://…`): a Redis Cluster, found from these seed nodes. All keys of a
    ///   queue share one hash tag, so one queue lives on one shard; spread load over queues.
    ///
    /// Every connection has TCP keepalive (probes after 10 s idle, every 5 s, 3 of them) and
    /// a 5 s connect timeout; every command waits at most the response timeout for its
    /// answer (a blocking wait for work: its block time plus 2 s), so a dead or frozen Redis
    /// yields errors, never a hang. Lost connections are reopened with capped, jittered
    /// exponential backoff (100 ms doubling to at most 5 s). Cancels reach workers through a
    /// pub/sub subscription that `PING`s its server every 5 s; on a cluster it subscribes on
    /// one node, which receives every node's `PUBLISH`.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), ferrymcp_tasks::backend::redis::RedisBackendError> {
    /// let backend = ferrymcp_tasks::backend::redis::RedisBackend::connect("redis://127.0.0.1/").await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, RedisBackendError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects with `options`, which the URL's query overrides.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), ferrymcp_tasks::backend::redis::RedisBackendError> {
    /// use ferrymcp_tasks::backend::redis::{RedisBackend, RedisOptions};
    /// let options = RedisOptions::default().with_queue("orders");
    /// let backend = RedisBackend::connect_with("redis://127.0.0.1/", options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self, RedisBackendError> {
        let (client_url, options) = options.from_url(url)?;
        let shown = options::redact(url);
        let connect_error = |source| RedisBackendError::Connect {
            url: shown.clone(),
            source,
        };
        let connections = connection::Connections::open(&client_url, &options, &shown).await?;
        let mut conn = connections.shared();
        let prefix = options.key_prefix();
        let target = batch::Target {
            conn: connections.shared(),
            key: format!("{prefix}:r"),
            prefix: prefix.clone(),
        };
        let scripts = scripts::Scripts::new();
        let batchers = Batchers::start(&scripts, &target, options.lease, &options.limits);
        Self::check_memory_policy(&mut conn, &shown).await?;
        let feed = events::Feed::new(&prefix);
        let stop = CancellationToken::new();
        events::subscribe(connections.subscriber(), feed.clone(), stop.clone())
            .await
            .map_err(connect_error)?;
        Ok(Self {
            connections,
            scripts,
            target,
            batchers,
            held: std::sync::Mutex::new(HashMap::new()),
            doubts: doubts::Doubts::default(),
            taken_ms: whole_ms(options.lease.max(options.response_timeout) * 2)
                .max(1)
                .to_string(),
            prefix,
            lease: options.lease,
            limits: options.limits,
            sealer: options.sealer,
            feed,
            stop,
            url: shown,
        })
    }

    /// The queue's key prefix, `{mcpt:<queue>}` (every key of the queue starts with it).
    ///
    /// ```no_run
    /// # async fn demo(backend: ferrymcp_tasks::backend::redis::RedisBackend) {
    /// assert!(backend.key_prefix().starts_with("{mcpt:"));
    /// # }
    /// ```
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// How long a claim lasts without a heartbeat.
    ///
    /// ```no_run
    /// # async fn demo(backend: ferrymcp_tasks::backend::redis::RedisBackend) {
    /// assert!(backend.lease() > std::time::Duration::ZERO);
    /// # }
    /// ```
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// One claim of up to `max` runs for `worker` under `claim_id`, without waiting: called
    /// again with the same `claim_id` within a lease (a retry after a lost reply), it hands
    /// out the same runs again, not new ones. [`claim`](TaskBackend::claim) does this with a
    /// fresh id per claim and retries a failed attempt under its id.
    ///
    /// ```no_run
    /// # async fn demo(backend: ferrymcp_tasks::backend::redis::RedisBackend) -> Result<(), ferrymcp_tasks::backend::BackendError> {
    /// let worker = ferrymcp_tasks::backend::WorkerId::new();
    /// let first = backend.claim_with_id(&worker, 8, "claim-1").await?;
    /// let again = backend.claim_with_id(&worker, 8, "claim-1").await?;
    /// assert_eq!(first.len(), again.len());
    /// # Ok(()) }
    /// ```
    pub async fn claim_with_id(
        &self,
        worker: &WorkerId,
        max: usize,
        claim_id: &str,
    ) -> Result<Vec<Claimed>, BackendError> {
        Ok(self
            .claim_once(worker, max.max(1), claim_id, Duration::ZERO)
            .await?
            .0)
    }

    /// Refuses a Redis that may evict keys (`INFO memory` answers even where `CONFIG` is
    /// disabled, as on some managed services).
    async fn check_memory_policy(
        conn: &mut connection::Shared,
        url: &str,
    ) -> Result<(), RedisBackendError> {
        // One text from a single Redis; one per node (a map) from a cluster.
        let info: Value = redis::cmd("INFO")
            .arg("memory")
            .query_async(conn)
            .await
            .map_err(|source| RedisBackendError::Connect {
                url: url.to_owned(),
                source,
            })?;
        let texts: Vec<String> = match info {
            Value::Map(nodes) => nodes.iter().filter_map(|(_, info)| text(info)).collect(),
            single => text(&single).into_iter().collect(),
        };
        let mut reported = false;
        for info in &texts {
            if let Some(policy) = memory_policy(info) {
                reported = true;
                if policy != SAFE_MEMORY_POLICY {
                    return Err(RedisBackendError::EvictionPolicy {
                        url: url.to_owned(),
                        policy: policy.to_owned(),
                    });
                }
            }
        }
        if !reported {
            tracing::warn!(%url, "Redis does not report its maxmemory-policy; it must be noeviction");
        }
        Ok(())
    }

    /// Runs a script. Its Lua is loaded again when Redis lost it (a restart, `SCRIPT FLUSH`).
    async fn run(&self, script: &redis::Script, args: &[&str]) -> Result<Value, BackendError> {
        let mut replies = self.target.run_items(script, &[], &[owned(args)]).await?;
        replies.pop().unwrap_or_else(|| {
            Err(BackendError::Corrupt(
                "a script answered nothing".to_owned(),
            ))
        })
    }

    /// Runs a script built for one call alone (`scripts::alone_text`).
    async fn run_alone(
        &self,
        script: &redis::Script,
        args: &[&str],
    ) -> Result<Value, BackendError> {
        self.target.run_alone(script, args).await
    }

    /// Runs a script's call `via` a batch or alone.
    async fn call(&self, via: Via<'_>, args: &[&str]) -> Result<Value, BackendError> {
        match via {
            Via::Alone(script) => self.run(script, args).await,
            Via::Batched(batcher) => batcher.call(owned(args)).await,
        }
    }

    /// How an owner or caller is named at rest: its tag under the current key, or its plain
    /// tag without one. The store never holds a principal or a client name in plaintext.
    fn tag(&self, text: &str) -> String {
        match &self.sealer {
            Some(sealer) => sealer.tag(text),
            None => sealing::plain_tag(text),
        }
    }

    fn lease_ms(&self) -> String {
        whole_ms(self.lease).max(1).to_string()
    }

    /// The error a task fails with when its result (or error) is over the size limit.
    fn too_large(&self) -> serde_json::Value {
        limit_error(LimitExceeded {
            limit: Limit::ResultBytes,
            max: u64::try_from(self.limits.max_result_bytes).unwrap_or(u64::MAX),
        })
    }

    /// Undoes the submissions in doubt (`lua/discard.lua`), [`RECOVER_BATCH`] per call;
    /// those Redis did not answer for stay in doubt.
    async fn undo_doubts(&self) -> Result<(), BackendError> {
        let ids = self.doubts.take(doubts::MAX_DOUBTS);
        let shared = [self.taken_ms.clone()];
        for ids in ids.chunks(RECOVER_BATCH) {
            let calls: Vec<Vec<String>> = ids.iter().map(|id| vec![id.clone()]).collect();
            let replies = self
                .target
                .run_items(&self.scripts.discard, &shared, &calls)
                .await?;
            let mut settled = Vec::with_capacity(ids.len());
            for (id, reply) in ids.iter().zip(replies) {
                match reply.as_ref().ok().and_then(int) {
                    Some(1 | 2) => {}
                    Some(0) => tracing::warn!(
                        task = %id,
                        "a submission whose answer was lost was released and claimed before it could be undone; it runs"
                    ),
                    _ => continue,
                }
                settled.push(id.clone());
            }
            self.doubts.settle(&settled);
        }
        Ok(())
    }

    /// One claim attempt under `claim_id`; retried with the same id, it hands out the same
    /// runs. Unavailable Redis is retried (with backoff, for half a lease), so a lost reply
    /// does not leave runs held by nobody until their lease lapses.
    async fn claim_retried(
        &self,
        worker: &WorkerId,
        max: usize,
        claim_id: &str,
        wait: Duration,
    ) -> Result<(Vec<Claimed>, String), BackendError> {
        let give_up = Instant::now() + self.lease / 2;
        let mut backoff = Duration::from_millis(25);
        loop {
            match self.claim_once(worker, max, claim_id, wait).await {
                Err(BackendError::Unavailable(error)) if Instant::now() + backoff < give_up => {
                    tracing::debug!(url = %self.url, %error, "retrying a claim");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// The context as stored, with the owner it runs for (the `owner` field holds only a
    /// tag): sealed for `binding` when a key is configured.
    fn seal_context(
        &self,
        binding: &sealing::Binding<'_>,
        owner: &Owner,
        context: &JsonObject,
    ) -> String {
        let plain = to_json(&json!({"owner": owner.as_str(), "context": context}));
        match &self.sealer {
            Some(sealer) => sealer.seal(plain.as_bytes(), binding),
            None => plain,
        }
    }

    /// How `owner` is stored.
    fn owner_tag(&self, owner: &Owner) -> String {
        self.tag(owner.as_str())
    }

    /// What a request-side script matches the stored owner against: the owner's tag under
    /// every key (space-separated), so tasks tagged before a key rotation are still found.
    /// Cancels task `id` if one of `owner_tags` owns it (`*`: whoever does).
    async fn cancel_as(
        &self,
        id: &str,
        owner_tags: &str,
    ) -> Result<Option<CancelAck>, BackendError> {
        let reply = self.run(&self.scripts.cancel, &[id, owner_tags]).await?;
        match (&reply, int(&reply)) {
            (Value::Nil, _) => Ok(None),
            (_, Some(1)) => Ok(Some(CancelAck::Cancelled)),
            (_, Some(2)) => Ok(Some(CancelAck::AlreadyTerminal)),
            _ => Err(corrupt("cancel", &reply)),
        }
    }

    fn owner_tags(&self, owner: &Owner) -> String {
        match &self.sealer {
            Some(sealer) => sealer.tags(owner.as_str()).join(" "),
            None => sealing::plain_tag(owner.as_str()),
        }
    }

    /// One claim attempt: the runs claimed, or the newest wake-up id to wait after (for up
    /// to `wait`: runs queued meanwhile add wake-ups).
    async fn claim_once(
        &self,
        worker: &WorkerId,
        max: usize,
        claim_id: &str,
        wait: Duration,
    ) -> Result<(Vec<Claimed>, String), BackendError> {
        let wait_ms = whole_ms(wait).to_string();
        let reply = self
            .run(
                &self.scripts.claim,
                &[
                    worker.as_str(),
                    &max.to_string(),
                    &self.lease_ms(),
                    claim_id,
                    &wait_ms,
                ],
            )
            .await?;
        let mut parts = items(reply, "claim")?.into_iter();
        let (Some(runs), Some(last)) = (parts.next(), parts.next()) else {
            return Err(BackendError::Corrupt("claim reply".to_owned()));
        };
        // Empty when the script claimed something.
        let last = text(&last).unwrap_or_default();
        let runs = items(runs, "claim")?;
        let mut claimed = Vec::with_capacity(runs.len());
        for run in runs {
            if let Some(run) = self.claimed(worker, run).await? {
                claimed.push(run);
            }
        }
        Ok((claimed, last))
    }

    /// One claimed run from its script row; a run whose context cannot be opened is failed
    /// instead and skipped.
    async fn claimed(
        &self,
        worker: &WorkerId,
        row: Value,
    ) -> Result<Option<Claimed>, BackendError> {
        let mut row = items(row, "claim")?;
        if row.len() < 11 {
            return Err(BackendError::Corrupt("a short claim row".to_owned()));
        }
        // Each text field is read once: its bytes are moved out of the reply, not copied.
        let id = take_text(&mut row[0])
            .ok_or_else(|| BackendError::Corrupt("a claim row without its task id".to_owned()))?;
        let lease = Lease {
            task: id.clone(),
            worker: worker.clone(),
            fence: uint(&row[1]).ok_or_else(|| corrupt("claim", &row[1]))?,
        };
        let stored_owner = take_text(&mut row[3]).unwrap_or_default();
        let tool = take_text(&mut row[4]).unwrap_or_default();
        let version = take_text(&mut row[5]).filter(|v| !v.is_empty());
        let stored_arguments = take_text(&mut row[6]).unwrap_or_else(|| "{}".to_owned());
        let stored_context = take_text(&mut row[7]).unwrap_or_else(|| "{}".to_owned());
        let binding = sealing::Binding {
            task: &id,
            owner: &stored_owner,
            tool: &tool,
            version: version.as_deref(),
            arguments: &stored_arguments,
        };
        let opened = sealing::open_stored(self.sealer.as_ref(), &stored_context, &binding)
            .map_err(|error| error.to_string())
            .and_then(|stored| open_envelope(&stored))
            .and_then(|(owner, context)| {
                // A context moved onto another owner's task (unsealed, or sealed elsewhere)
                // never runs for that task.
                let tags = self.owner_tags(&owner);
                if tags.split(' ').any(|tag| tag == stored_owner) {
                    Ok((owner, context))
                } else {
                    Err("the task's stored credentials do not belong to its owner".to_owned())
                }
            });
        let (owner, context) = match opened {
            Ok(opened) => opened,
            Err(message) => {
                tracing::warn!(task = %id, error = %message, "failing a task whose credentials cannot be opened");
                let error = json!({
                    "code": ferrymcp_types::codes::INTERNAL_ERROR,
                    "message": message,
                });
                self.fail(&lease, &error).await?;
                return Ok(None);
            }
        };
        let round = uint(&row[8])
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1);
        // Answers exist only for a later round; a first run has none to read.
        let mut answers = InputResponses::new();
        if round > 1 {
            for (key, answer) in pairs(std::mem::replace(&mut row[10], Value::Nil), "claim")? {
                answers.insert(key, parse_json(&answer, "answer")?);
            }
        }
        Ok(Some(Claimed {
            owner,
            tool,
            version,
            arguments: parse_object(&stored_arguments, "arguments")?,
            context,
            attempt: uint(&row[2])
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1),
            round,
            responses: (round > 1).then_some(answers),
            request_state: take_text(&mut row[9]),
            created_at: row
                .get(11)
                .and_then(uint)
                .map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms)),
            lease,
        }))
    }

    /// Waits (on a connection of its own) until a run is queued after wake-up `last`, or
    /// `wait` passes.
    async fn wait_after(&self, last: &str, wait: Duration) -> Result<(), BackendError> {
        let mut conn = self.connections.blocking(wait).await.map_err(unavailable)?;
        let block_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
        let _: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(block_ms)
            .arg("STREAMS")
            .arg(format!("{}:w", self.prefix))
            .arg(last)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        // Only a connection whose wait finished goes back (a dropped wait drops it).
        self.connections.give_back(conn);
        Ok(())
    }

    async fn write(&self, lease: &Lease, args: &[&str]) -> Result<WriteAck, BackendError> {
        self.leased(Via::Batched(&self.batchers.write), lease, args)
            .await
    }

    /// Runs a worker-side script for `lease` (task, worker, fence, then `args`).
    async fn leased(
        &self,
        via: Via<'_>,
        lease: &Lease,
        args: &[&str],
    ) -> Result<WriteAck, BackendError> {
        let fence = lease.fence.to_string();
        let mut all: Vec<&str> = vec![&lease.task, &lease.worker.0, &fence];
        all.extend_from_slice(args);
        let reply = self.call(via, &all).await?;
        match text(&reply).as_deref() {
            Some("R") => Ok(WriteAck::Recorded),
            Some("T") => Ok(WriteAck::Terminal),
            Some("L") => Ok(WriteAck::Lost),
            Some("G") => Ok(WriteAck::Gone),
            _ => Err(corrupt("a worker write", &reply)),
        }
    }
}

#[async_trait]
impl TaskBackend for RedisBackend {
    async fn submit(&self, task: NewTask) -> Result<TaskView, BackendError> {
        let ttl = task.ttl.map(ttl_ms);
        let poll = whole_ms(task.poll_interval);
        let owner = self.owner_tag(&task.owner);
        let arguments = to_json(&task.arguments);
        if arguments.len() > self.limits.max_argument_bytes {
            return Err(BackendError::Limit(LimitExceeded {
                limit: Limit::ArgumentBytes,
                max: u64::try_from(self.limits.max_argument_bytes).unwrap_or(u64::MAX),
            }));
        }
        let binding = sealing::Binding {
            task: &task.id,
            owner: &owner,
            tool: &task.tool,
            // Stored as absent when empty, so bound as absent.
            version: task.version.as_deref().filter(|v| !v.is_empty()),
            arguments: &arguments,
        };
        let context = self.seal_context(&binding, &task.owner, &task.context);
        let caller = self.tag(&task.caller);
        let ttl_arg = ttl.map(|ms| ms.to_string()).unwrap_or_default();
        let version = task.version.clone().unwrap_or_default();
        if !self.doubts.has_room() {
            return Err(BackendError::Unavailable(
                "too many submissions whose answer Redis never sent wait to be undone".to_owned(),
            ));
        }
        // Until its answer is read, the task may be stored or not: a submission whose answer
        // is lost (an error on the way, or the caller stopping to wait) is undone by the
        // sweep, for as long as the task could live.
        let watch = self.doubts.watch(
            &task.id,
            Instant::now() + ttl.map_or(doubts::PATIENCE, Duration::from_millis),
        );
        let reply = self
            .call(
                Via::Batched(&self.batchers.submit),
                &[
                    &task.id,
                    &owner,
                    &task.tool,
                    &version,
                    &arguments,
                    &context,
                    &ttl_arg,
                    &poll.to_string(),
                    &task.max_attempts.max(1).to_string(),
                    &caller,
                ],
            )
            .await;
        if matches!(reply, Err(BackendError::Unavailable(_))) {
            drop(watch);
        } else {
            watch.settled();
        }
        let reply = reply?;
        let refused = |limit, max| Err(BackendError::Limit(LimitExceeded { limit, max }));
        let created = match int(&reply) {
            Some(-2) => return refused(Limit::TasksPerCaller, self.limits.max_tasks_per_caller),
            Some(-3) => return refused(Limit::Tasks, self.limits.max_tasks),
            Some(-4) => return refused(Limit::Kept, self.limits.max_kept),
            Some(_) => {
                return Err(BackendError::Corrupt(format!(
                    "task id {} is already taken",
                    task.id
                )));
            }
            None => {
                let parts = items(reply, "submit")?;
                let (Some(created), Some(tag)) =
                    (parts.first().and_then(uint), parts.get(1).and_then(int))
                else {
                    return Err(BackendError::Corrupt("a submit reply".to_owned()));
                };
                let mut held = lock(&self.held);
                if held.len() < HELD_TAGS {
                    held.insert(task.id.clone(), (task.owner.clone(), tag.to_string()));
                }
                created
            }
        };
        Ok(TaskView {
            id: task.id,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: created,
            updated_at_ms: created,
            ttl_ms: ttl,
            poll_interval_ms: poll,
            result: None,
            error: None,
            input_requests: BTreeMap::new(),
        })
    }

    async fn release(&self, owner: &Owner, id: &str) -> Result<(), BackendError> {
        // Anybody else's release goes through the script's owner check.
        let tag = {
            let mut held = lock(&self.held);
            match held.get(id) {
                Some((submitter, _)) if submitter == owner => held.remove(id).map(|(_, tag)| tag),
                _ => None,
            }
        }
        .unwrap_or_default();
        // The submitter's own release (its tag known) is not checked against the owner.
        let owner_tags = if tag.is_empty() {
            self.owner_tags(owner)
        } else {
            String::new()
        };
        self.call(
            Via::Batched(&self.batchers.release),
            &[id, &owner_tags, &tag],
        )
        .await?;
        Ok(())
    }

    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<TaskView>, BackendError> {
        let reply = self
            .run_alone(&self.scripts.get_alone, &[id, &self.owner_tags(owner)])
            .await?;
        if reply == Value::Nil {
            return Ok(None);
        }
        let fields = items(reply, "get")?;
        if fields.len() < 9 {
            return Err(BackendError::Corrupt("a short task record".to_owned()));
        }
        let field = |i: usize| text(&fields[i]);
        let status = parse_status(&field(0).unwrap_or_default())?;
        let mut input_requests = BTreeMap::new();
        for (key, request) in pairs(fields[8].clone(), "get")? {
            input_requests.insert(key, parse_json(&request, "input request")?);
        }
        Ok(Some(TaskView {
            id: id.to_owned(),
            status,
            status_message: field(1),
            created_at_ms: uint(&fields[2]).unwrap_or(0),
            updated_at_ms: uint(&fields[3]).unwrap_or(0),
            ttl_ms: uint(&fields[4]),
            poll_interval_ms: uint(&fields[5]).unwrap_or(1),
            result: field(6).map(|raw| parse_json(&raw, "result")).transpose()?,
            error: field(7).map(|raw| parse_json(&raw, "error")).transpose()?,
            input_requests,
        }))
    }

    async fn deliver_input(
        &self,
        owner: &Owner,
        id: &str,
        responses: InputResponses,
    ) -> Result<Option<UpdateAck>, BackendError> {
        let answers: Vec<(String, String)> = responses
            .iter()
            .map(|(key, answer)| (key.clone(), to_json(answer)))
            .collect();
        let owners = self.owner_tags(owner);
        let mut args: Vec<&str> = vec![id, &owners];
        for (key, answer) in &answers {
            args.push(key);
            args.push(answer);
        }
        let reply = self.run(&self.scripts.deliver, &args).await?;
        match text(&reply).as_deref() {
            None if reply == Value::Nil => Ok(None),
            Some("I") => Ok(Some(UpdateAck::Ignored)),
            Some("W") => Ok(Some(UpdateAck::Waiting)),
            Some("R") => Ok(Some(UpdateAck::Resumed)),
            _ => Err(corrupt("deliver_input", &reply)),
        }
    }

    async fn cancel(&self, owner: &Owner, id: &str) -> Result<Option<CancelAck>, BackendError> {
        self.cancel_as(id, &self.owner_tags(owner)).await
    }

    async fn claim(
        &self,
        worker: &WorkerId,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Claimed>, BackendError> {
        let max = max.max(1);
        let deadline = Instant::now() + wait;
        loop {
            let claim_id = ids::random_token(12);
            let left = deadline.saturating_duration_since(Instant::now());
            let (claimed, last) = self.claim_retried(worker, max, &claim_id, left).await?;
            if !claimed.is_empty() {
                return Ok(claimed);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Vec::new());
            }
            // No newest entry: the script claimed runs, all of which were failed here (their
            // context could not be opened); look again at once.
            if !last.is_empty() {
                self.wait_after(&last, left).await?;
            }
        }
    }

    async fn heartbeat(&self, leases: &[Lease]) -> Result<Vec<LeaseState>, BackendError> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let fences: Vec<String> = leases.iter().map(|lease| lease.fence.to_string()).collect();
        let lease_ms = self.lease_ms();
        let mut args: Vec<&str> = Vec::with_capacity(leases.len() * 3 + 1);
        args.push(&lease_ms);
        for (lease, fence) in leases.iter().zip(&fences) {
            args.push(&lease.task);
            args.push(&lease.worker.0);
            args.push(fence);
        }
        let reply = self.run(&self.scripts.heartbeat, &args).await?;
        let states = items(reply, "heartbeat")?;
        if states.len() != leases.len() {
            return Err(BackendError::Corrupt(
                "one heartbeat state per lease".to_owned(),
            ));
        }
        states
            .iter()
            .map(|state| match text(state).as_deref() {
                Some("H") => Ok(LeaseState::Held {
                    cancel_requested: false,
                }),
                Some("C") => Ok(LeaseState::Held {
                    cancel_requested: true,
                }),
                Some("L") => Ok(LeaseState::Lost),
                Some("G") => Ok(LeaseState::Gone),
                _ => Err(corrupt("heartbeat", state)),
            })
            .collect()
    }

    async fn complete(
        &self,
        lease: &Lease,
        result: &serde_json::Value,
    ) -> Result<WriteAck, BackendError> {
        let result = to_json(result);
        if result.len() > self.limits.max_result_bytes {
            return self.fail(lease, &self.too_large()).await;
        }
        self.write(lease, &["complete", &result]).await
    }

    async fn fail(
        &self,
        lease: &Lease,
        error: &serde_json::Value,
    ) -> Result<WriteAck, BackendError> {
        let mut stored = to_json(error);
        let too_large;
        let mut error = error;
        if stored.len() > self.limits.max_result_bytes {
            too_large = self.too_large();
            stored = to_json(&too_large);
            error = &too_large;
        }
        let message = error.get("message").and_then(serde_json::Value::as_str);
        let has_message = if message.is_some() { "1" } else { "0" };
        self.write(
            lease,
            &["fail", &stored, has_message, message.unwrap_or_default()],
        )
        .await
    }

    async fn set_status_message(
        &self,
        lease: &Lease,
        message: String,
    ) -> Result<WriteAck, BackendError> {
        self.write(lease, &["status", &message]).await
    }

    async fn request_input(
        &self,
        lease: &Lease,
        round: InputRound,
    ) -> Result<WriteAck, BackendError> {
        let has_state = if round.request_state.is_some() {
            "1"
        } else {
            "0"
        };
        let state = round.request_state.clone().unwrap_or_default();
        let requests: Vec<(String, String, String)> = round
            .requests
            .iter()
            .map(|(tool_key, request)| {
                (
                    ids::new_input_key(&lease.task),
                    tool_key.clone(),
                    to_json(request),
                )
            })
            .collect();
        let mut args: Vec<&str> = vec!["input", has_state, &state];
        for (client_key, tool_key, request) in &requests {
            args.push(client_key);
            args.push(tool_key);
            args.push(request);
        }
        self.write(lease, &args).await
    }

    async fn hand_back(&self, lease: &Lease) -> Result<WriteAck, BackendError> {
        let error = to_json(&lost_worker_error());
        self.leased(
            Via::Alone(&self.scripts.handback),
            lease,
            &[&error, LOST_WORKER_MESSAGE],
        )
        .await
    }

    async fn expire(&self) -> Result<Duration, BackendError> {
        // This server's submissions in doubt go first, before an overdue hold releases them.
        // Only an unreachable Redis stops the sweep here: anything else must not hold up
        // the recovery of leases.
        match self.undo_doubts().await {
            Err(BackendError::Unavailable(error)) => return Err(BackendError::Unavailable(error)),
            Err(error) => {
                tracing::warn!(url = %self.url, %error, "could not undo submissions whose answer was lost");
            }
            Ok(()) => {}
        }
        let error = to_json(&lost_worker_error());
        let batch = RECOVER_BATCH.to_string();
        // Every overdue lease and release, in bounded steps (each step takes what it saw
        // off the overdue lists).
        for _ in 0..1024 {
            let reply = self
                .run(
                    &self.scripts.recover,
                    &[&batch, &error, LOST_WORKER_MESSAGE],
                )
                .await?;
            let reply = items(reply, "recover")?;
            let seen = reply.first().and_then(uint).unwrap_or(0);
            crate::metrics::recovered("rerun", reply.get(2).and_then(uint).unwrap_or(0));
            crate::metrics::recovered("fail", reply.get(3).and_then(uint).unwrap_or(0));
            if seen < u64::try_from(RECOVER_BATCH).unwrap_or(u64::MAX) {
                break;
            }
        }
        Ok((self.lease / 3).clamp(Duration::from_millis(1), Duration::from_secs(1)))
    }

    fn lease(&self) -> Duration {
        self.lease
    }

    fn sweeper_wakeup(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        Some(self.doubts.sweeper())
    }

    fn events(&self, worker: &WorkerId) -> Option<mpsc::UnboundedReceiver<WorkerEvent>> {
        Some(events::listen(&self.feed.listeners, worker))
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.feed.changes.subscribe())
    }

    async fn watch(&self, owner: &Owner, id: &str) -> Result<bool, BackendError> {
        let reply = self
            .run(&self.scripts.watch, &[id, &self.owner_tags(owner)])
            .await?;
        Ok(reply != Value::Nil)
    }

    async fn stats(&self) -> Result<Option<StoreStats>, BackendError> {
        let reply = items(self.run(&self.scripts.stats, &[]).await?, "stats")?;
        let count = |i: usize| reply.get(i).and_then(uint).unwrap_or(0);
        // Parked first runs (count 1) wait for their release: they are among `waiting`.
        let (ready, leased, unfinished, kept) = (count(0), count(2), count(3), count(4));
        Ok(Some(StoreStats {
            queued: ready,
            running: leased,
            waiting: unfinished.saturating_sub(ready + leased),
            finished: kept.saturating_sub(unfinished),
            ended: count(5),
        }))
    }

    async fn worker_seen(&self, worker: &WorkerPresence) -> Result<(), BackendError> {
        self.report_worker(worker).await
    }

    async fn worker_gone(&self, worker: &WorkerId) -> Result<(), BackendError> {
        self.forget_worker(worker).await
    }

    async fn workers(&self) -> Result<Option<(u64, Vec<WorkerPresence>)>, BackendError> {
        self.workers_known().await.map(Some)
    }

    async fn forget_workers(&self, unseen_for: Duration) -> Result<u64, BackendError> {
        self.forget_workers_unseen(unseen_for).await
    }

    async fn records(&self, filter: &TaskFilter) -> Result<Option<Vec<TaskRecord>>, BackendError> {
        self.records_of(filter).await.map(Some)
    }

    async fn record(&self, id: &str) -> Result<Option<TaskRecord>, BackendError> {
        self.record_of(id).await
    }

    async fn cancel_any(&self, id: &str) -> Result<Option<CancelAck>, BackendError> {
        self.cancel_as(id, "*").await
    }
}

#[cfg(test)]
mod tests {
    use super::memory_policy;

    #[test]
    fn the_memory_policy_is_read_from_info_memory() {
        let info = "# Memory\r\nused_memory:1\r\nmaxmemory_policy:allkeys-lru\r\n";
        assert_eq!(memory_policy(info), Some("allkeys-lru"));
        assert_eq!(memory_policy("# Memory\r\n"), None);
    }
}
