//! The task engine under faults and floods, on real processes: a Redis of the suite's own
//! (AOF on), a `FaultProxy` between it and every demo process, 2 demo servers over HTTP
//! without embedded workers, 2 `demo worker` processes. The test's observer connection goes
//! straight to Redis. Each scenario runs 1,000 mixed tasks (quick, slow, idempotent
//! `count_task`, non-idempotent `once_task` that writes one ledger line per execution,
//! `confirm_task` with an input round), submitted through alternating servers and polled
//! (and answered) through the other one, and checks:
//!
//! * nothing lost: every task whose submission got a `CreateTaskResult` ends terminal; it
//!   neither vanishes ("not found"), nor stays unfinished, nor fails "worker lost" unless a
//!   fault outlasted the lease (and then only a non-idempotent task: an idempotent one runs
//!   again and completes);
//! * every task in flight when the fault clears is terminal within lease + one heartbeat
//!   after that (plus its own work and a generous margin: this proves things end, it does
//!   not time them);
//! * exactly one ledger line per completed non-idempotent task, at most one per failed one;
//! * a refused submission is a JSON-RPC error and leaves no task in Redis (R16).
//!
//! Scenarios run one at a time (they share the machine's cores). Nothing sleeps to
//! synchronise: waits poll observable state (`tasks/get`, Redis' pending list, the demo's
//! ledger) against deadlines; the only timed waits are the faults' own durations.

mod common;

use std::{
    collections::BTreeMap,
    ops::Range,
    path::PathBuf,
    time::{Duration, Instant},
};

use ferrymcp::types::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, JsonObject,
    TaskPayload, UpdateTaskParams,
};
use ferrymcp_test_helpers::{
    client::{TestClient, client_config},
    fault_proxy::FaultProxy,
    redis_persistent::{AppendFsync, PersistentRedis},
};
use futures::StreamExt as _;
use rmcp::{
    ServiceError,
    model::{ErrorData, Implementation, ProtocolVersion},
    service::{ClientLifecycleMode, ClientServiceExt as _},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};

/// The lost-worker message of a failed task.
const LOST_WORKER: &str = ferrymcp::tasks::lost_worker::LOST_WORKER_MESSAGE;

/// The lease of every fleet (workers heartbeat every third of it).
const LEASE: Duration = Duration::from_millis(3000);

/// How long any one wait may take before the test calls it broken.
const PATIENCE: Duration = Duration::from_secs(120);

/// What a task in flight when a fault clears may take beyond lease + heartbeat + its own
/// work: reconnection back-off, the queue's backlog, a loaded 2-core machine.
const MARGIN: Duration = Duration::from_secs(20);

/// The longest a submission may take to be answered (a task or an error), fault or not.
const ANSWER_BOUND: Duration = Duration::from_secs(30);

/// The pause between two polls of a remote process's state.
const POLL_PAUSE: Duration = Duration::from_millis(40);

/// How many tasks each scenario submits.
const TOTAL: usize = 1000;

/// Scenarios one at a time: each one's bounds assume the machine is its own.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn heartbeat() -> Duration {
    LEASE / 3
}

// ---------------------------------------------------------------------------------------------
// The fleet

struct Fleet {
    redis: PersistentRedis,
    proxy: FaultProxy,
    /// The queue's key prefix, `{mcpt:<queue>}`.
    prefix: String,
    ledger: PathBuf,
    worker_args: Vec<String>,
    worker_env: Vec<(String, String)>,
    _servers: Vec<common::DemoHttp>,
    workers: Vec<common::DemoWorker>,
    clients: Vec<TestClient>,
}

struct Spec<'a> {
    name: &'a str,
    fsync: AppendFsync,
    concurrency: usize,
    server_env: &'a [(&'a str, &'a str)],
}

impl Fleet {
    async fn start(spec: Spec<'_>) -> Fleet {
        let redis = PersistentRedis::start(spec.fsync);
        let proxy = FaultProxy::start(redis.addr())
            .await
            .expect("start the fault proxy");
        let queue = format!("chaos-{}-{}", spec.name, std::process::id());
        let url = format!(
            "redis://{}/0?queue={queue}&lease_ms={}",
            proxy.addr(),
            LEASE.as_millis()
        );
        let ledger = std::env::temp_dir().join(format!(
            "ferrymcp-chaos-ledger-{}-{}",
            spec.name,
            ferrymcp::tasks::new_task_id()
        ));
        let _ = std::fs::remove_file(&ledger);
        let server_args = ["--tasks-url", url.as_str(), "--no-worker"];
        let servers = vec![
            common::spawn_demo_http_with(&server_args, spec.server_env).await,
            common::spawn_demo_http_with(&server_args, spec.server_env).await,
        ];
        let worker_args = vec![
            "--tasks-url".to_owned(),
            url.clone(),
            "--concurrency".to_owned(),
            spec.concurrency.to_string(),
        ];
        let worker_env = vec![("MCP_DEMO_LEDGER".to_owned(), ledger.display().to_string())];
        let mut fleet = Fleet {
            redis,
            proxy,
            prefix: format!("{{mcpt:{queue}}}"),
            ledger,
            worker_args,
            worker_env,
            clients: Vec::new(),
            workers: Vec::new(),
            _servers: Vec::new(),
        };
        for _ in 0..2 {
            let worker = fleet.spawn_worker().await;
            fleet.workers.push(worker);
        }
        fleet.clients = vec![
            named_client(&servers[0].url, "chaos").await,
            named_client(&servers[1].url, "chaos").await,
        ];
        fleet._servers = servers;
        fleet
    }

    async fn spawn_worker(&self) -> common::DemoWorker {
        let args: Vec<&str> = self.worker_args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = self
            .worker_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        common::spawn_demo_worker(&args, &env).await
    }

    /// A fresh connection straight to Redis (it survives nothing; open one per use).
    async fn observer(&self) -> redis::aio::MultiplexedConnection {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let connected = async {
                redis::Client::open(self.redis.url())?
                    .get_multiplexed_async_connection()
                    .await
            }
            .await;
            match connected {
                Ok(connection) => return connection,
                Err(e) => assert!(Instant::now() < deadline, "observe Redis: {e}"),
            }
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    /// How many runs workers hold: the queue's leases (`<prefix>:l`, a sorted set), or in
    /// the stream layout the pending deliveries of `<prefix>:q`.
    async fn held(&self) -> i64 {
        let mut redis = self.observer().await;
        let leases = format!("{}:l", self.prefix);
        let layout: String = redis::cmd("TYPE")
            .arg(&leases)
            .query_async(&mut redis)
            .await
            .unwrap_or_default();
        if layout == "zset" {
            return redis::cmd("ZCARD")
                .arg(&leases)
                .query_async(&mut redis)
                .await
                .unwrap_or(0);
        }
        let reply: redis::Value = redis::cmd("XPENDING")
            .arg(format!("{}:q", self.prefix))
            .arg("workers")
            .query_async(&mut redis)
            .await
            .unwrap_or(redis::Value::Nil);
        match reply {
            redis::Value::Array(items) => match items.first() {
                Some(redis::Value::Int(n)) => *n,
                _ => 0,
            },
            _ => 0,
        }
    }

    async fn wait_until_held(&self, runs: i64) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let held = self.held().await;
            if held >= runs {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "workers hold {held} runs, never {runs}"
            );
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    /// How many tasks the queue keeps in Redis (`<prefix>:t:<id>` hashes).
    async fn tasks_in_redis(&self) -> usize {
        let mut redis = self.observer().await;
        let pattern = format!("{}:t:*", self.prefix);
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query_async(&mut redis)
            .await
            .expect("KEYS");
        let task_prefix = format!("{}:t:", self.prefix);
        keys.iter()
            .filter(|key| {
                key.strip_prefix(&task_prefix)
                    .is_some_and(|id| !id.contains(':'))
            })
            .count()
    }

    fn ledger_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.ledger)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ledger);
    }
}

/// A 2026-07-28 client of `url`, opted in to tasks, declaring `clientInfo.name = name`
/// (an anonymous caller's quota and fairness key).
async fn named_client(url: &str, name: &str) -> TestClient {
    let mut config = client_config(true);
    config.client_info = Implementation::new(name, "0.0.0");
    config
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url.to_owned()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The mixed tasks

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// `child_multiply(i, 3)`.
    Fast,
    /// `count_task("k<i>", 20)`, idempotent.
    Count,
    /// `once_task("o<i>", 30)`, not idempotent: one ledger line per execution.
    Once,
    /// `sleep_task(0.2)`.
    Sleep,
    /// `confirm_task(i)`: one input round.
    Confirm,
    /// `count_task("k<i>", slow_ms)`: idempotent and in flight when the fault hits.
    SlowCount,
    /// `once_task("o<i>", slow_ms)`: not idempotent and in flight when the fault hits.
    SlowOnce,
    /// `sleep_task(40 + j)`: cancelled while it runs.
    LongSleep,
}

/// Which tasks a scenario submits: the mixed load, with `window` (submitted just before
/// the fault) made of `window_kind` runs.
#[derive(Clone)]
struct Plan {
    window: Range<usize>,
    cancels: bool,
    /// How long the window's slow runs take, in milliseconds.
    slow_ms: u64,
}

impl Plan {
    fn kind(&self, i: usize) -> Kind {
        if self.window.contains(&i) {
            return if self.cancels {
                Kind::LongSleep
            } else if i.is_multiple_of(2) {
                Kind::SlowOnce
            } else {
                Kind::SlowCount
            };
        }
        match i % 10 {
            0 => Kind::Sleep,
            1 => Kind::Confirm,
            2 | 3 => Kind::Count,
            4 | 5 => Kind::Once,
            _ => Kind::Fast,
        }
    }

    fn call(&self, i: usize) -> (&'static str, Value) {
        match self.kind(i) {
            Kind::Fast => ("child_multiply", json!({"a": i, "b": 3})),
            Kind::Count => ("count_task", json!({"key": format!("k{i}"), "millis": 20})),
            Kind::SlowCount => (
                "count_task",
                json!({"key": format!("k{i}"), "millis": self.slow_ms}),
            ),
            Kind::Once => ("once_task", json!({"key": format!("o{i}"), "millis": 30})),
            Kind::SlowOnce => (
                "once_task",
                json!({"key": format!("o{i}"), "millis": self.slow_ms}),
            ),
            Kind::Sleep => ("sleep_task", json!({"seconds": 0.2})),
            Kind::Confirm => ("confirm_task", json!({"value": i})),
            Kind::LongSleep => ("sleep_task", json!({"seconds": self.long_seconds(i)})),
        }
    }

    /// The seconds of a `LongSleep` (distinct, so its cancellation line names it).
    fn long_seconds(&self, i: usize) -> usize {
        40 + (i - self.window.start)
    }

    /// How long task `i`'s own work lasts at most.
    fn work(&self, i: usize) -> Duration {
        match self.kind(i) {
            Kind::SlowCount | Kind::SlowOnce => Duration::from_millis(self.slow_ms),
            Kind::Sleep => Duration::from_millis(200),
            _ => Duration::from_millis(30),
        }
    }

    fn idempotent(&self, i: usize) -> bool {
        matches!(self.kind(i), Kind::Count | Kind::SlowCount)
    }

    fn non_idempotent(&self, i: usize) -> bool {
        matches!(self.kind(i), Kind::Once | Kind::SlowOnce)
    }

    fn completed_right(&self, i: usize, payload: &TaskPayload) -> bool {
        let TaskPayload::Completed { result } = payload else {
            return false;
        };
        let structured = result
            .get("structuredContent")
            .and_then(|s| s.get("result"));
        match self.kind(i) {
            Kind::Fast => structured == Some(&json!(i * 3)),
            Kind::Confirm => structured == Some(&json!(i * 2)),
            Kind::Count | Kind::SlowCount => text(result) == Some(&format!("counted k{i}")),
            Kind::Once | Kind::SlowOnce => text(result) == Some(&format!("done o{i}")),
            Kind::Sleep => text(result) == Some("slept 0.2"),
            Kind::LongSleep => false,
        }
    }
}

/// The first text content of a `CallToolResult`.
fn text(result: &JsonObject) -> Option<&str> {
    result.get("content")?.get(0)?.get("text")?.as_str()
}

fn lost_worker(payload: &TaskPayload) -> bool {
    matches!(payload, TaskPayload::Failed { error } if error.get("message") == Some(&json!(LOST_WORKER)))
}

// ---------------------------------------------------------------------------------------------
// Submitting and driving

/// What a submission got back.
enum Submitted {
    Task(String),
    /// A JSON-RPC error: no task.
    Refused(ErrorData),
}

/// Submits `name(arguments)` through `client`; `Err` when the answer is neither a task nor
/// a JSON-RPC error within [`ANSWER_BOUND`].
async fn submit(client: &TestClient, name: &str, arguments: Value) -> Result<Submitted, String> {
    let arguments: JsonObject = arguments.as_object().cloned().unwrap_or_default();
    let call = client
        .call_tool_once(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments));
    match tokio::time::timeout(ANSWER_BOUND, call).await {
        Err(_) => Err(format!("tools/call {name}: no answer in {ANSWER_BOUND:?}")),
        Ok(Ok(CallToolResponse::Task(created))) => Ok(Submitted::Task(created.task.task_id)),
        Ok(Ok(other)) => Err(format!("tools/call {name}: not a task: {other:?}")),
        Ok(Err(ServiceError::McpError(error))) => Ok(Submitted::Refused(error)),
        Ok(Err(other)) => Err(format!("tools/call {name}: {other}")),
    }
}

/// What polling a task ended with.
#[derive(Debug)]
struct Outcome {
    i: usize,
    id: String,
    /// `None`: still unfinished at the deadline (stuck).
    payload: Option<TaskPayload>,
    /// `tasks/get` said it does not exist.
    vanished: bool,
    /// When it was first seen terminal (or given up on).
    at: Instant,
}

/// Polls the task through `client` until it is terminal, answering its input rounds (with
/// `{"ok": "yes"}`), until `deadline`. Errors other than "not found" (a server whose Redis
/// is still reconnecting) are polled through.
async fn drive(client: &TestClient, i: usize, id: String, deadline: Instant) -> Outcome {
    loop {
        let got = tokio::time::timeout(ANSWER_BOUND, client.get_task(GetTaskParams::new(&id)))
            .await
            .map_err(|_| "no answer".to_owned())
            .and_then(|got| got.map_err(|e| e.to_string()));
        match got {
            Ok(got) => match got.task.payload {
                TaskPayload::InputRequired { input_requests } => {
                    let answers = input_requests
                        .keys()
                        .map(|key| {
                            (
                                key.clone(),
                                json!({"action": "accept", "content": {"ok": "yes"}}),
                            )
                        })
                        .collect();
                    let _ = client
                        .update_task(UpdateTaskParams::new(id.clone(), answers))
                        .await;
                }
                TaskPayload::Working => {}
                terminal => {
                    return Outcome {
                        i,
                        id,
                        payload: Some(terminal),
                        vanished: false,
                        at: Instant::now(),
                    };
                }
            },
            Err(error) if error.contains("not found") => {
                return Outcome {
                    i,
                    id,
                    payload: None,
                    vanished: true,
                    at: Instant::now(),
                };
            }
            Err(_) => {}
        }
        if Instant::now() >= deadline {
            return Outcome {
                i,
                id,
                payload: None,
                vanished: false,
                at: Instant::now(),
            };
        }
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

/// Drives every `(i, id)` through the server it was not submitted to.
async fn drive_all(clients: &[TestClient], tasks: Vec<(usize, String)>) -> Vec<Outcome> {
    let deadline = Instant::now() + PATIENCE;
    futures::stream::iter(tasks)
        .map(|(i, id)| drive(&clients[(i + 1) % 2], i, id, deadline))
        .buffer_unordered(32)
        .collect()
        .await
}

/// One scenario's run of the mixed load: who was accepted, refused, and what went wrong.
struct Run {
    name: &'static str,
    plan: Plan,
    started: Instant,
    accepted: Vec<(usize, String)>,
    refused: usize,
    problems: Vec<String>,
    /// When the fault cleared, and which tasks were accepted before that.
    cleared: Option<(Instant, usize)>,
    /// Whether a fault outlasted the lease (so a non-idempotent task may fail "worker lost").
    outlasted_lease: bool,
    /// Whether the window's runs, longer than the lease, were cut off from Redis: their
    /// workers must have stopped them before the lease ended (self-fencing), so a failed one
    /// wrote no ledger line and a re-run idempotent one wrote exactly one.
    fenced: bool,
}

impl Run {
    fn new(name: &'static str, plan: Plan) -> Run {
        Run {
            name,
            plan,
            started: Instant::now(),
            accepted: Vec::new(),
            refused: 0,
            problems: Vec::new(),
            cleared: None,
            outlasted_lease: false,
            fenced: false,
        }
    }

    /// Submits tasks `range` one by one through alternating servers.
    async fn submit(&mut self, clients: &[TestClient], range: Range<usize>) {
        for i in range {
            let (name, arguments) = self.plan.call(i);
            match submit(&clients[i % 2], name, arguments).await {
                Ok(Submitted::Task(id)) => self.accepted.push((i, id)),
                Ok(Submitted::Refused(_)) => self.refused += 1,
                Err(problem) => self.problems.push(format!("task {i}: {problem}")),
            }
        }
    }

    /// The fault cleared now: tasks accepted so far must end within the bound from now.
    fn fault_cleared(&mut self, outlasted_lease: bool) {
        self.cleared = Some((Instant::now(), self.accepted.len()));
        self.outlasted_lease |= outlasted_lease;
    }

    /// Drives the tasks accepted before the fault cleared while submitting `rest`, then
    /// drives the rest; checks every outcome, the ledger and Redis; prints the figures;
    /// fails on any problem.
    async fn finish(mut self, fleet: &Fleet, rest: Range<usize>) -> Vec<Outcome> {
        let before = self.cleared.map_or(0, |(_, n)| n);
        let early: Vec<_> = self.accepted[..before].to_vec();
        let (mut outcomes, ()) = tokio::join!(drive_all(&fleet.clients, early), async {
            self.submit(&fleet.clients, rest).await;
        });
        let late: Vec<_> = self.accepted[before..].to_vec();
        outcomes.extend(drive_all(&fleet.clients, late).await);
        self.check(fleet, &outcomes).await;
        outcomes
    }

    async fn check(&mut self, fleet: &Fleet, outcomes: &[Outcome]) {
        let plan = self.plan.clone();
        let ledger = fleet.ledger_lines();
        let mut lines: BTreeMap<&str, usize> = BTreeMap::new();
        for line in &ledger {
            *lines.entry(line.as_str()).or_default() += 1;
        }
        let (mut completed, mut failed_lost, mut cancelled, mut lost) = (0, 0, 0, 0);
        let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
        let early = self.cleared.map_or(0, |(_, n)| n);
        let early_ids: std::collections::HashSet<&str> = self.accepted[..early]
            .iter()
            .map(|(_, id)| id.as_str())
            .collect();
        for outcome in outcomes {
            let i = outcome.i;
            let kind = plan.kind(i);
            let Some(payload) = &outcome.payload else {
                lost += 1;
                let what = if outcome.vanished {
                    "vanished"
                } else {
                    "stuck"
                };
                self.problems
                    .push(format!("task {i} ({kind:?}, {}) {what}", outcome.id));
                continue;
            };
            *by_kind
                .entry(format!("{kind:?} {:?}", payload.status()))
                .or_default() += 1;
            if let Some((cleared, _)) = self.cleared
                && early_ids.contains(outcome.id.as_str())
            {
                let bound = LEASE + heartbeat() + plan.work(i) + MARGIN;
                let took = outcome.at.saturating_duration_since(cleared);
                if took > bound {
                    self.problems.push(format!(
                        "task {i} ({kind:?}) terminal {took:?} after the fault cleared (bound {bound:?})"
                    ));
                }
            }
            let once_lines = lines
                .get(format!("once o{i}").as_str())
                .copied()
                .unwrap_or(0);
            if self.fenced && matches!(kind, Kind::SlowOnce | Kind::SlowCount) {
                let (line, most) = if kind == Kind::SlowOnce {
                    (format!("once o{i}"), usize::from(!lost_worker(payload)))
                } else {
                    (format!("k{i}"), 1)
                };
                let n = lines.get(line.as_str()).copied().unwrap_or(0);
                if n > most {
                    self.problems.push(format!(
                        "task {i} ({kind:?}, {payload:?}) ran to its end {n} times: a run cut off from Redis went on past its lease"
                    ));
                }
            }
            match payload {
                TaskPayload::Cancelled => cancelled += 1,
                TaskPayload::Completed { .. } => completed += 1,
                _ => {}
            }
            if kind == Kind::LongSleep {
                if *payload != TaskPayload::Cancelled {
                    self.problems
                        .push(format!("cancelled task {i} ended {payload:?}"));
                }
            } else if plan.idempotent(i) {
                if !plan.completed_right(i, payload) {
                    lost += usize::from(lost_worker(payload));
                    self.problems.push(format!(
                        "idempotent task {i} ({kind:?}) must complete with its result: {payload:?}"
                    ));
                } else if lines.get(format!("k{i}").as_str()).copied().unwrap_or(0) == 0 {
                    self.problems.push(format!(
                        "idempotent task {i} completed without a ledger line"
                    ));
                }
            } else if lost_worker(payload) {
                // Any tool not safe to run twice (every kind but Count/SlowCount here, a
                // 0.2 s Sleep included) may end "worker lost" when its run was in flight as
                // the fault outlasted the lease: that is the engine's contract.
                if self.outlasted_lease {
                    failed_lost += 1;
                } else {
                    lost += 1;
                    self.problems.push(format!(
                        "task {i} ({kind:?}) failed \"worker lost\" though no fault outlasted the lease"
                    ));
                }
                if once_lines > 1 {
                    self.problems
                        .push(format!("failed task {i} ran {once_lines} times"));
                }
            } else if !plan.completed_right(i, payload) {
                self.problems
                    .push(format!("task {i} ({kind:?}) ended wrong: {payload:?}"));
            } else if plan.non_idempotent(i) && once_lines != 1 {
                self.problems.push(format!(
                    "completed non-idempotent task {i} has {once_lines} ledger lines, not 1"
                ));
            }
        }
        let in_redis = fleet.tasks_in_redis().await;
        if in_redis != self.accepted.len() {
            self.problems.push(format!(
                "Redis keeps {in_redis} tasks, {} were accepted: a refused submission left a task (R16)",
                self.accepted.len()
            ));
        }
        eprintln!(
            "chaos {}: accepted {}, refused {}, completed {completed}, cancelled {cancelled}, \
             failed-lost {failed_lost}, lost {lost}, {:.1} s; {by_kind:?}",
            self.name,
            self.accepted.len(),
            self.refused,
            self.started.elapsed().as_secs_f64()
        );
        assert!(
            self.problems.is_empty(),
            "chaos {}: {} problems, the first ones:\n{}",
            self.name,
            self.problems.len(),
            self.problems
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The plan of the fault scenarios: the slow window 480..520, then the fault.
const FAULT_AT: usize = 520;

fn slow_plan(slow_ms: u64) -> Plan {
    Plan {
        window: 480..FAULT_AT,
        cancels: false,
        slow_ms,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// a. A worker `kill -9`ed while both workers hold runs, and replaced: idempotent runs lost
/// with it run again and complete; its non-idempotent runs fail "worker lost" (the dead
/// worker is a fault that outlasts the lease); everything else completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_a_worker_killed_mid_run_loses_no_task() {
    let _serial = SERIAL.lock().await;
    let mut fleet = Fleet::start(Spec {
        name: "kill",
        fsync: AppendFsync::Always,
        concurrency: 16,
        server_env: &[],
    })
    .await;
    let mut run = Run::new("a (worker kill -9)", slow_plan(1500));
    run.submit(&fleet.clients, 0..FAULT_AT).await;
    fleet.wait_until_held(17).await;
    let mut killed = fleet.workers.remove(0);
    killed.child.start_kill().expect("kill -9 a worker");
    let _ = killed.child.wait().await;
    let replacement = fleet.spawn_worker().await;
    fleet.workers.push(replacement);
    run.fault_cleared(true);
    run.finish(&fleet, FAULT_AT..TOTAL).await;
}

/// b. Redis unreachable (a blackhole between it and every demo process) for twice the
/// lease while runs are in flight, then back. Meanwhile `add` keeps answering and a
/// submission gets a JSON-RPC error, no task (R16). Afterwards nothing is lost: a worker cut
/// off from Redis stops its runs (self-fencing), idempotent ones run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_b_r16_redis_unreachable_longer_than_the_lease_loses_no_task() {
    let _serial = SERIAL.lock().await;
    let fleet = Fleet::start(Spec {
        name: "blackhole",
        fsync: AppendFsync::Always,
        concurrency: 16,
        server_env: &[],
    })
    .await;
    // Runs longer than the lease: a worker that cannot renew must stop them in time.
    let mut run = Run::new("b (Redis blackholed 2 leases)", slow_plan(4500));
    run.fenced = true;
    run.submit(&fleet.clients, 0..FAULT_AT).await;
    fleet.wait_until_held(17).await;

    fleet.proxy.blackhole();
    let fault = Instant::now();
    let during = async {
        let submissions = futures::future::join_all((0..4).map(|k| {
            submit(
                &fleet.clients[k % 2],
                "child_multiply",
                json!({"a": k, "b": 1}),
            )
        }))
        .await;
        for (k, submitted) in submissions.into_iter().enumerate() {
            match submitted {
                Ok(Submitted::Refused(error)) => {
                    eprintln!("chaos b: a submission while Redis is away: {error:?}");
                }
                Ok(Submitted::Task(id)) => {
                    panic!("submission {k} while Redis is unreachable got task {id} (R16)")
                }
                Err(problem) => panic!("submission {k} while Redis is unreachable: {problem}"),
            }
        }
    };
    let answering = async {
        let mut answered = 0u64;
        let mut k = 0i64;
        // The fault's own duration: add keeps answering all along.
        while fault.elapsed() < LEASE * 2 {
            let client = &fleet.clients[usize::from(k % 2 == 0)];
            let call = client.call_tool_once(
                CallToolRequestParams::new("add").with_arguments(
                    json!({"a": k, "b": 1})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            );
            let reply = tokio::time::timeout(Duration::from_secs(10), call)
                .await
                .unwrap_or_else(|_| panic!("add did not answer within 10 s while Redis is away"))
                .unwrap_or_else(|e| panic!("add failed while Redis is away: {e}"));
            let CallToolResponse::Complete(result) = reply else {
                panic!("add answered {reply:?}");
            };
            assert_eq!(
                result
                    .structured_content
                    .as_ref()
                    .and_then(|s| s.get("result")),
                Some(&json!(k + 1)),
                "add's answer while Redis is away"
            );
            answered += 1;
            k += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        answered
    };
    let ((), answered) = tokio::join!(during, answering);
    eprintln!("chaos b: add answered {answered} times while Redis was away");
    assert!(answered > 0);
    fleet.proxy.restore();
    run.fault_cleared(true);
    run.finish(&fleet, FAULT_AT..TOTAL).await;
}

/// c. The pub/sub connections killed on Redis (`CLIENT KILL TYPE pubsub`), then cancels
/// issued for ten running `sleep_task`s through the other server: each run's cancellation
/// token fires within one heartbeat (plus margin) of its cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_c_cancels_after_pubsub_connections_are_killed_stop_runs_within_a_heartbeat() {
    let _serial = SERIAL.lock().await;
    let fleet = Fleet::start(Spec {
        name: "pubsub",
        fsync: AppendFsync::Always,
        concurrency: 16,
        server_env: &[],
    })
    .await;
    let plan = Plan {
        window: 500..510,
        cancels: true,
        slow_ms: 0,
    };
    let mut run = Run::new("c (pub/sub killed, then cancels)", plan.clone());
    run.submit(&fleet.clients, 0..500).await;
    // The first 500 end (finish checks them again), so that the queue holds only the long
    // sleeps: workers hold 10 runs once every one of them is running.
    let first = drive_all(&fleet.clients, run.accepted.clone()).await;
    assert!(
        first.iter().all(|o| o.payload.is_some()),
        "the first 500 end"
    );
    let before = run.accepted.len();
    run.submit(&fleet.clients, 500..510).await;
    let long: Vec<(usize, String)> = run.accepted[before..].to_vec();
    assert_eq!(long.len(), 10, "the long sleeps were accepted");
    fleet.wait_until_held(10).await;
    let mut redis = fleet.observer().await;
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut redis)
        .await
        .expect("CLIENT KILL TYPE pubsub");
    eprintln!("chaos c: killed {killed} pub/sub connections");
    assert!(killed >= 2, "each worker holds a pub/sub connection");

    let bound = heartbeat() + Duration::from_secs(2);
    let mut slowest = Duration::ZERO;
    for (i, id) in &long {
        let sent = Instant::now();
        fleet.clients[(i + 1) % 2]
            .cancel_task(CancelTaskParams::new(id.clone()))
            .await
            .expect("tasks/cancel");
        let line = format!("cancelled sleep_task {}", plan.long_seconds(*i));
        loop {
            if fleet.ledger_lines().contains(&line) {
                break;
            }
            assert!(
                sent.elapsed() < bound,
                "sleep_task {i}'s run did not stop within {bound:?} of its cancel"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        slowest = slowest.max(sent.elapsed());
    }
    eprintln!("chaos c: the slowest cancel reached its run after {slowest:?} (bound {bound:?})");
    run.fault_cleared(false);
    run.finish(&fleet, 510..TOTAL).await;
}

/// d. Redis killed (`SIGKILL`) and restarted on the same port and directory mid-run, twice,
/// with AOF `appendfsync always`: nothing acknowledged is lost, no task fails "worker lost"
/// (the outage is shorter than the lease), every task ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_d_redis_restarted_with_aof_always_loses_no_task() {
    let _serial = SERIAL.lock().await;
    let mut fleet = Fleet::start(Spec {
        name: "restart",
        fsync: AppendFsync::Always,
        concurrency: 16,
        server_env: &[],
    })
    .await;
    let mut run = Run::new(
        "d (Redis SIGKILL + restart, AOF always, twice)",
        slow_plan(1500),
    );
    run.submit(&fleet.clients, 0..FAULT_AT).await;
    fleet.wait_until_held(17).await;
    fleet.redis.kill();
    fleet.redis.restart();
    fleet.wait_until_held(1).await;
    fleet.redis.kill();
    fleet.redis.restart();
    run.fault_cleared(false);
    run.finish(&fleet, FAULT_AT..TOTAL).await;
}

/// d'. The same with AOF `everysec` and a graceful restart (`SIGTERM` flushes the AOF).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_d_redis_stopped_gracefully_with_aof_everysec_loses_no_task() {
    let _serial = SERIAL.lock().await;
    let mut fleet = Fleet::start(Spec {
        name: "sigterm",
        fsync: AppendFsync::EverySec,
        concurrency: 16,
        server_env: &[],
    })
    .await;
    let mut run = Run::new(
        "d' (Redis SIGTERM + restart, AOF everysec)",
        slow_plan(1500),
    );
    run.submit(&fleet.clients, 0..FAULT_AT).await;
    fleet.wait_until_held(17).await;
    fleet.redis.stop();
    fleet.redis.restart();
    run.fault_cleared(false);
    run.finish(&fleet, FAULT_AT..TOTAL).await;
}

/// e. One anonymous caller (`clientInfo.name = "flooder"`) submits 10× its quota of
/// `sleep_task(3)` while another (`"patient"`) runs 1,000 mixed tasks, four at a time (its
/// fair half of the run slots). The flooder's excess gets -32000 naming
/// `MCP_TASKS_MAX_TASKS_PER_CALLER` and creates no task; every patient task ends right,
/// each within one of the flooder's run durations (plus margin) of its submission, though
/// the flooder's backlog alone would take many run durations (fair queue).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_e_a_flood_over_the_quota_is_refused_and_others_run_on_time() {
    const QUOTA: usize = 40;
    const FLOOD_RUN: Duration = Duration::from_secs(3);
    // The patient caller's tasks in flight at once: its fair half of the 8 run slots.
    const PATIENT_WINDOW: usize = 4;
    let _serial = SERIAL.lock().await;
    let quota = QUOTA.to_string();
    let fleet = Fleet::start(Spec {
        name: "flood",
        fsync: AppendFsync::Always,
        // 2 workers x 4 slots: the flooder's 40 runs of 3 s are a 15 s backlog first in,
        // first out.
        concurrency: 4,
        server_env: &[("MCP_TASKS_MAX_TASKS_PER_CALLER", quota.as_str())],
    })
    .await;
    let servers: Vec<String> = fleet._servers.iter().map(|s| s.url.clone()).collect();
    let flooders = [
        named_client(&servers[0], "flooder").await,
        named_client(&servers[1], "flooder").await,
    ];
    let patients = [
        named_client(&servers[0], "patient").await,
        named_client(&servers[1], "patient").await,
    ];
    let started = Instant::now();

    // The flood: 10x the quota, as fast as answers come.
    let mut flood_ids = Vec::new();
    let mut refusals = 0;
    let mut problems = Vec::new();
    for k in 0..QUOTA * 10 {
        match submit(
            &flooders[k % 2],
            "sleep_task",
            json!({"seconds": FLOOD_RUN.as_secs()}),
        )
        .await
        {
            Ok(Submitted::Task(id)) => flood_ids.push((k, id)),
            Ok(Submitted::Refused(error)) => {
                refusals += 1;
                let limit = error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("limit"))
                    .and_then(Value::as_str);
                if error.code.0 != -32000 || limit != Some("MCP_TASKS_MAX_TASKS_PER_CALLER") {
                    problems.push(format!("flood {k} refused wrongly: {error:?}"));
                }
            }
            Err(problem) => problems.push(format!("flood {k}: {problem}")),
        }
    }
    assert!(
        flood_ids.len() <= QUOTA + QUOTA / 2,
        "the quota holds: {} of {} flood submissions accepted",
        flood_ids.len(),
        QUOTA * 10
    );
    assert!(
        refusals >= QUOTA * 8,
        "most of the flood is refused: {refusals}"
    );

    // The patient caller: 1,000 mixed tasks, PATIENT_WINDOW at once; each must end within one
    // flood run (plus margin) of its submission.
    let plan = Plan {
        window: 0..0,
        cancels: false,
        slow_ms: 0,
    };
    let patient_bound = FLOOD_RUN + Duration::from_secs(3);
    let results: Vec<(usize, Result<Outcome, String>, Duration)> = futures::stream::iter(0..TOTAL)
        .map(|i| {
            let plan = plan.clone();
            let patients = &patients;
            async move {
                let (name, arguments) = plan.call(i);
                let submitted = Instant::now();
                let outcome = match submit(&patients[i % 2], name, arguments).await {
                    Ok(Submitted::Task(id)) => {
                        Ok(drive(&patients[(i + 1) % 2], i, id, Instant::now() + PATIENCE).await)
                    }
                    Ok(Submitted::Refused(error)) => Err(format!("refused: {error:?}")),
                    Err(problem) => Err(problem),
                };
                (i, outcome, submitted.elapsed())
            }
        })
        .buffer_unordered(PATIENT_WINDOW)
        .collect()
        .await;
    let mut completed = 0;
    let mut slowest = Duration::ZERO;
    let mut late = 0;
    let ledger = fleet.ledger_lines();
    for (i, outcome, took) in &results {
        match outcome {
            Err(problem) => problems.push(format!("patient task {i}: {problem}")),
            Ok(outcome) => match &outcome.payload {
                Some(payload) if plan.completed_right(*i, payload) => {
                    completed += 1;
                    if plan.non_idempotent(*i) {
                        let line = format!("once o{i}");
                        let n = ledger.iter().filter(|l| **l == line).count();
                        if n != 1 {
                            problems.push(format!("patient task {i} has {n} ledger lines"));
                        }
                    }
                }
                other => problems.push(format!("patient task {i} ended {other:?}")),
            },
        }
        // Confirm tasks wait on this client's own answers; the others on the queue only.
        if plan.kind(*i) != Kind::Confirm {
            slowest = slowest.max(*took);
            if *took > patient_bound {
                late += 1;
                if late <= 10 {
                    problems.push(format!(
                        "patient task {i} ({:?}) took {took:?} (bound {patient_bound:?})",
                        plan.kind(*i)
                    ));
                }
            }
        }
    }
    let flood_outcomes = drive_all(&flooders, flood_ids.clone()).await;
    let flood_done = flood_outcomes
        .iter()
        .filter(|o| matches!(o.payload, Some(TaskPayload::Completed { .. })))
        .count();
    if flood_done != flood_ids.len() {
        problems.push(format!(
            "{} of {} accepted flood tasks completed",
            flood_done,
            flood_ids.len()
        ));
    }
    let in_redis = fleet.tasks_in_redis().await;
    if in_redis != flood_ids.len() + TOTAL {
        problems.push(format!(
            "Redis keeps {in_redis} tasks; {} were accepted",
            flood_ids.len() + TOTAL
        ));
    }
    eprintln!(
        "chaos e (flood 10x quota {QUOTA}): flood accepted {}, refused {refusals}; patient \
         accepted {TOTAL}, completed {completed}, late {late}, slowest {slowest:?}; {:.1} s",
        flood_ids.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        problems.is_empty(),
        "chaos e: {} problems, the first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
