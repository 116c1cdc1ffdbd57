//! [`RedisBackend`]: tasks shared by server replicas and worker processes through Redis (or
//! Valkey) 7.0+, behind the cargo feature `redis`.
//!
//! Keys of a queue (prefix `P` = `{mcpt:<queue>}`, one hash tag, so one cluster slot):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:q` | stream, consumer group `workers` | one entry per runnable run; its pending entry is the lease |
//! | `P:t:<id>` | hash | the task: owner, tool, arguments, context, status, result or error, fence, attempts, round |
//! | `P:t:<id>:ir` / `:ik` | hashes | outstanding input requests, and the tool key of each client key |
//! | `P:t:<id>:ia` | hash | answers collected for the next round, by the tool's keys |
//! | `P:ev` | pub/sub channel | `<worker>\t<task>`: cancel the run of that task |
//!
//! Every transition is one Lua script (`lua/*.lua`), so owner checks, fences and status
//! changes are atomic with the read or write they guard. Every task key expires at the
//! task's deadline (`PEXPIREAT created + ttl`): nothing outlives its task. A claim reads a
//! stream entry inside the claim script (never outside one, so no delivery is read without
//! being recorded), and the entry stays pending while the run lasts: heartbeats reset its
//! idle time (`XCLAIM … IDLE 0`), and [`expire`](TaskBackend::expire) takes entries idle for
//! a whole lease (`XAUTOCLAIM`) and either starts the work again (attempts left, a new
//! fence) or fails the task for a lost worker. All times come from the Redis server's clock.

mod connection;
mod events;
mod options;
mod reply;
mod scripts;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use mcp_types::{InputResponses, JsonObject, TaskStatus};
use redis::Value;
use serde_json::json;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

pub use options::{DEFAULT_LEASE, DEFAULT_RESPONSE_TIMEOUT, RedisOptions};

use super::{
    BackendError, CancelAck, Claimed, InputRound, Lease, LeaseState, NewTask, Owner, TaskBackend,
    TaskView, UpdateAck, WorkerEvent, WorkerId, WriteAck, memory::whole_ms,
};
use crate::{ids, sealing};
use reply::{corrupt, int, items, pairs, text, uint};

/// The message of a task failed because its worker was lost.
///
/// ```
/// assert!(mcp_tasks::backend::redis::LOST_WORKER_MESSAGE.contains("lost"));
/// ```
pub const LOST_WORKER_MESSAGE: &str = "the worker running this task was lost";

/// How many pending entries one `XAUTOCLAIM` takes at most.
const RECOVER_BATCH: usize = 256;

/// Why a Redis backend could not be set up.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use mcp_tasks::backend::redis::{RedisBackend, RedisBackendError};
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
}

/// The distributed task store: any number of server and worker processes on one Redis queue.
/// See the [module docs](self) for the key layout.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use mcp_tasks::{TasksExtension, backend::redis::RedisBackend};
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0?queue=demo").await?;
/// let extension = TasksExtension::new().with_backend(Arc::new(backend));
/// # Ok(()) }
/// ```
pub struct RedisBackend {
    /// The shared connection, and connections for blocking waits, one per waiting claim (a
    /// blocked connection serves nobody else).
    connections: connection::Connections,
    scripts: scripts::Scripts,
    prefix: String,
    queue_key: String,
    lease: Duration,
    sealer: Option<sealing::Sealer>,
    listeners: events::Listeners,
    cursor: tokio::sync::Mutex<String>,
    stop: CancellationToken,
    url: String,
}

impl Drop for RedisBackend {
    fn drop(&mut self) {
        self.stop.cancel();
    }
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

/// The lost-worker JSON-RPC error.
fn lost_worker_error() -> serde_json::Value {
    json!({"code": mcp_types::codes::INTERNAL_ERROR, "message": LOST_WORKER_MESSAGE})
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
    /// # async fn demo() -> Result<(), mcp_tasks::backend::redis::RedisBackendError> {
    /// let backend = mcp_tasks::backend::redis::RedisBackend::connect("redis://127.0.0.1/").await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, RedisBackendError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects with `options`, which the URL's query overrides.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), mcp_tasks::backend::redis::RedisBackendError> {
    /// use mcp_tasks::backend::redis::{RedisBackend, RedisOptions};
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
        let queue_key = format!("{prefix}:q");
        Self::ensure_group(&mut conn, &queue_key)
            .await
            .map_err(connect_error)?;
        let listeners = events::Listeners::default();
        let stop = CancellationToken::new();
        events::subscribe(
            connections.subscriber(),
            format!("{prefix}:ev"),
            Arc::clone(&listeners),
            stop.clone(),
        )
        .await
        .map_err(connect_error)?;
        Ok(Self {
            connections,
            scripts: scripts::Scripts::new(),
            prefix,
            queue_key,
            lease: options.lease,
            sealer: options.sealer,
            listeners,
            cursor: tokio::sync::Mutex::new("0-0".to_owned()),
            stop,
            url: shown,
        })
    }

    /// The queue's key prefix, `{mcpt:<queue>}` (every key of the queue starts with it).
    ///
    /// ```no_run
    /// # async fn demo(backend: mcp_tasks::backend::redis::RedisBackend) {
    /// assert!(backend.key_prefix().starts_with("{mcpt:"));
    /// # }
    /// ```
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// How long a claim lasts without a heartbeat.
    ///
    /// ```no_run
    /// # async fn demo(backend: mcp_tasks::backend::redis::RedisBackend) {
    /// assert!(backend.lease() > std::time::Duration::ZERO);
    /// # }
    /// ```
    pub fn lease(&self) -> Duration {
        self.lease
    }

    async fn ensure_group(conn: &mut connection::Shared, queue: &str) -> redis::RedisResult<()> {
        let created: redis::RedisResult<Value> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(queue)
            .arg("workers")
            .arg("0")
            .arg("MKSTREAM")
            .query_async(conn)
            .await;
        match created {
            Err(error) if error.code() == Some("BUSYGROUP") => Ok(()),
            other => other.map(drop),
        }
    }

    /// Runs a script; recreates the consumer group once if the stream vanished (a flushed
    /// database).
    async fn run(&self, script: &redis::Script, args: &[&str]) -> Result<Value, BackendError> {
        for attempt in 0..2 {
            let mut invocation = script.prepare_invoke();
            // Every script names the queue's stream as its key: under Redis Cluster that
            // routes it to the node of the queue's slot, where all its keys live.
            invocation.key(&self.queue_key).arg(&self.prefix);
            for arg in args {
                invocation.arg(*arg);
            }
            let mut conn = self.connections.shared();
            match invocation.invoke_async::<Value>(&mut conn).await {
                Ok(value) => return Ok(value),
                Err(error) if attempt == 0 && error.to_string().contains("NOGROUP") => {
                    Self::ensure_group(&mut conn, &self.queue_key)
                        .await
                        .map_err(unavailable)?;
                }
                Err(error) => return Err(unavailable(error)),
            }
        }
        Err(BackendError::Unavailable(format!(
            "the task queue at {} has no consumer group",
            self.url
        )))
    }

    /// The stored context as the worker gets it: sealed contexts are opened.
    fn seal_context(&self, id: &str, context: &JsonObject) -> String {
        let plain = to_json(context);
        match &self.sealer {
            Some(sealer) => sealer.seal(plain.as_bytes(), id),
            None => plain,
        }
    }

    /// One claim attempt: the runs claimed, or the newest entry id to wait after.
    async fn claim_once(
        &self,
        worker: &WorkerId,
        max: usize,
    ) -> Result<(Vec<Claimed>, String), BackendError> {
        let reply = self
            .run(&self.scripts.claim, &[worker.as_str(), &max.to_string()])
            .await?;
        let mut parts = items(reply, "claim")?.into_iter();
        let (Some(runs), Some(last)) = (parts.next(), parts.next()) else {
            return Err(BackendError::Corrupt("claim reply".to_owned()));
        };
        // Empty when the script claimed something.
        let last = text(&last).unwrap_or_default();
        let mut claimed = Vec::new();
        for run in items(runs, "claim")? {
            if let Some(run) = self.claimed(worker, run).await? {
                claimed.push(run);
            }
        }
        Ok((claimed, last))
    }

    /// One claimed run from its script row; a run whose context cannot be opened is failed
    /// instead (R55) and skipped.
    async fn claimed(
        &self,
        worker: &WorkerId,
        row: Value,
    ) -> Result<Option<Claimed>, BackendError> {
        let row = items(row, "claim")?;
        if row.len() < 11 {
            return Err(BackendError::Corrupt("a short claim row".to_owned()));
        }
        let field = |i: usize| text(&row[i]);
        let id = field(0).ok_or_else(|| corrupt("claim", &row[0]))?;
        let lease = Lease {
            task: id.clone(),
            worker: worker.clone(),
            fence: uint(&row[1]).ok_or_else(|| corrupt("claim", &row[1]))?,
        };
        let stored_context = field(7).unwrap_or_else(|| "{}".to_owned());
        let context = match sealing::open_stored(self.sealer.as_ref(), &stored_context, &id) {
            Ok(context) => parse_object(&context, "context")?,
            Err(error) => {
                tracing::warn!(task = %id, %error, "failing a task whose credentials cannot be opened");
                let error = json!({
                    "code": mcp_types::codes::INTERNAL_ERROR,
                    "message": error.to_string(),
                });
                self.fail(&lease, error).await?;
                return Ok(None);
            }
        };
        let round = uint(&row[8])
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1);
        let mut answers = InputResponses::new();
        for (key, answer) in pairs(row[10].clone(), "claim")? {
            answers.insert(key, parse_json(&answer, "answer")?);
        }
        Ok(Some(Claimed {
            owner: Owner(field(3).unwrap_or_default()),
            tool: field(4).unwrap_or_default(),
            version: field(5).filter(|v| !v.is_empty()),
            arguments: parse_object(&field(6).unwrap_or_else(|| "{}".to_owned()), "arguments")?,
            context,
            attempt: uint(&row[2])
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1),
            round,
            responses: (round > 1).then_some(answers),
            request_state: field(9),
            lease,
        }))
    }

    /// Waits (on a connection of its own) until an entry newer than `last` is added, or
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
            .arg(&self.queue_key)
            .arg(last)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        // Only a connection whose wait finished goes back (a dropped wait drops it).
        self.connections.give_back(conn);
        Ok(())
    }

    async fn write(&self, lease: &Lease, args: &[&str]) -> Result<WriteAck, BackendError> {
        self.leased(&self.scripts.write, lease, args).await
    }

    /// Runs a worker-side script for `lease` (task, worker, fence, then `args`).
    async fn leased(
        &self,
        script: &redis::Script,
        lease: &Lease,
        args: &[&str],
    ) -> Result<WriteAck, BackendError> {
        let fence = lease.fence.to_string();
        let mut all: Vec<&str> = vec![&lease.task, &lease.worker.0, &fence];
        all.extend_from_slice(args);
        let reply = self.run(script, &all).await?;
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
        let context = self.seal_context(&task.id, &task.context);
        let arguments = to_json(&task.arguments);
        let ttl_arg = ttl.map(|ms| ms.to_string()).unwrap_or_default();
        let version = task.version.clone().unwrap_or_default();
        let reply = self
            .run(
                &self.scripts.submit,
                &[
                    &task.id,
                    &task.owner.0,
                    &task.tool,
                    &version,
                    &arguments,
                    &context,
                    &ttl_arg,
                    &poll.to_string(),
                    &task.max_attempts.max(1).to_string(),
                ],
            )
            .await?;
        let created = int(&reply).ok_or_else(|| corrupt("submit", &reply))?;
        let created = u64::try_from(created)
            .map_err(|_| BackendError::Corrupt(format!("task id {} is already taken", task.id)))?;
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
        self.run(&self.scripts.release, &[id, &owner.0]).await?;
        Ok(())
    }

    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<TaskView>, BackendError> {
        let reply = self.run(&self.scripts.get, &[id, &owner.0]).await?;
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
        let mut args: Vec<&str> = vec![id, &owner.0];
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
        let reply = self.run(&self.scripts.cancel, &[id, &owner.0]).await?;
        match (&reply, int(&reply)) {
            (Value::Nil, _) => Ok(None),
            (_, Some(1)) => Ok(Some(CancelAck::Cancelled)),
            (_, Some(2)) => Ok(Some(CancelAck::AlreadyTerminal)),
            _ => Err(corrupt("cancel", &reply)),
        }
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
            let (claimed, last) = self.claim_once(worker, max).await?;
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
        let mut args: Vec<&str> = Vec::with_capacity(leases.len() * 3);
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
        result: serde_json::Value,
    ) -> Result<WriteAck, BackendError> {
        let result = to_json(&result);
        self.write(lease, &["complete", &result]).await
    }

    async fn fail(
        &self,
        lease: &Lease,
        error: serde_json::Value,
    ) -> Result<WriteAck, BackendError> {
        let message = error
            .get("message")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let has_message = if message.is_some() { "1" } else { "0" };
        let message = message.unwrap_or_default();
        let error = to_json(&error);
        self.write(lease, &["fail", &error, has_message, &message])
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
            &self.scripts.handback,
            lease,
            &[&error, LOST_WORKER_MESSAGE],
        )
        .await
    }

    async fn expire(&self) -> Result<Duration, BackendError> {
        let lease_ms = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        let error = to_json(&lost_worker_error());
        let mut cursor = self.cursor.lock().await;
        // One pass over the whole pending list, in bounded steps.
        for _ in 0..1024 {
            let reply = self
                .run(
                    &self.scripts.recover,
                    &[
                        &lease_ms.to_string(),
                        &cursor,
                        &RECOVER_BATCH.to_string(),
                        &error,
                        LOST_WORKER_MESSAGE,
                    ],
                )
                .await?;
            let mut parts = items(reply, "recover")?.into_iter();
            let next = parts
                .next()
                .as_ref()
                .and_then(text)
                .unwrap_or_else(|| "0-0".to_owned());
            let wrapped = next == "0-0";
            *cursor = next;
            if wrapped {
                break;
            }
        }
        Ok((self.lease / 3).clamp(Duration::from_millis(1), Duration::from_secs(1)))
    }

    fn lease(&self) -> Duration {
        self.lease
    }

    fn events(&self, worker: &WorkerId) -> Option<mpsc::UnboundedReceiver<WorkerEvent>> {
        Some(events::listen(&self.listeners, worker))
    }
}
