//! A load driver for the task path: how long a trivial task takes from submission to an
//! observed `completed`, and how many complete per second, in process on the memory engine
//! and over Streamable HTTP. See the "Task path" and "Over HTTP" sections of BENCHMARKS.md.
//!
//! ```text
//! cargo run --release --example task_load
//! cargo run --release --example task_load -- --tasks 20000 --concurrency 32 --seconds 5
//! ```
//!
//! The tool is `multiply(a, b) -> a * b` with `.task(true)` (optional task support), on a
//! server with the `TasksExtension` (memory engine, its default settings). Everything,
//! including the HTTP server and its clients, runs on one multi-threaded tokio runtime with
//! `--threads` workers (2 by default), so the clients and the server share those cores.
//!
//! | row | one sample |
//! |---|---|
//! | in process, task | opted-in `server.call(ToolCall)` → `CreateTaskResult`; wait on the memory engine's change feed (subscribed before the submission) for the task id; one `tasks/get` (`server.request`) confirming `completed` |
//! | in process, tools/call | the same `server.call` without the opt-in: the tool runs synchronously |
//! | HTTP, task | a POST `tools/call` opted in through `_meta` → `CreateTaskResult`; then POST `tasks/get` back to back (no sleep unless `--poll-interval-us`) until `completed` |
//! | HTTP, tools/call | a POST `tools/call` without the opt-in: the `CallToolResult` comes back in the answer |
//!
//! Each kind runs with one caller for `--tasks` (in process) or `--http-tasks` (HTTP) samples,
//! then with `--concurrency` callers, each looping, for `--seconds`; each run is preceded by
//! `--warmup` unrecorded samples. The in-process task runs with 32 callers twice: each caller
//! with its own subscription to the change feed ("own feed": every completion wakes every
//! caller), and with one subscription routing each id to its caller ("shared feed"). Every
//! run also stops after `--max-phase-seconds`, and every single wait is bounded by
//! `--sample-timeout-ms`. The HTTP clients are raw `reqwest` POSTs, one client (one
//! keep-alive connection) per caller, to 127.0.0.1 only.
//!
//! The memory engine keeps every task for its TTL (15 min, `MCP_TASKS_TTL_MS`), so the store
//! grows through the run (about 6 KB per finished task).

use std::{
    collections::{HashMap, HashSet},
    future::Future,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use clap::Parser;
use ferrymcp::{
    Args, HttpConfig, HttpServer, RequestScope, Server, ToolCall, ToolDef, ToolError,
    tasks::{TasksConfig, TasksExtension},
    types::{CallToolResponse, ProtocolVersion, TaskStatus},
};
use ferrymcp_test_helpers::tasks::{TaskClient, opted_in_scope};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{
    broadcast::{self, error::RecvError},
    oneshot,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Parser, Debug, Clone)]
#[command(about = "Load driver for the task path (in process and over HTTP)")]
struct Cli {
    /// Sequential samples of the in-process rows (one caller).
    #[arg(long, default_value_t = 20_000)]
    tasks: usize,
    /// Sequential samples of the HTTP rows (one caller).
    #[arg(long, default_value_t = 5_000)]
    http_tasks: usize,
    /// Concurrent callers of the throughput rows.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Duration of each throughput row, in seconds.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Warm-up samples before each row (not recorded).
    #[arg(long, default_value_t = 500)]
    warmup: usize,
    /// Upper bound on any one phase, in seconds (the count or duration usually ends it).
    #[arg(long, default_value_t = 60.0)]
    max_phase_seconds: f64,
    /// Upper bound on one sample (a submission and its wait), in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    sample_timeout_ms: u64,
    /// Sleep between two HTTP `tasks/get` polls of one task, in microseconds (0: poll back
    /// to back).
    #[arg(long, default_value_t = 0)]
    poll_interval_us: u64,
    /// The most `tasks/get` polls of one HTTP task.
    #[arg(long, default_value_t = 100_000)]
    max_polls: u32,
    /// Tokio worker threads (clients and server share them).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// The task engine's worker concurrency (the engine's default is 10).
    #[arg(long, default_value_t = 10)]
    engine_concurrency: usize,
    /// Skip the in-process rows.
    #[arg(long)]
    no_in_process: bool,
    /// Skip the HTTP rows.
    #[arg(long)]
    no_http: bool,
    /// Skip the synchronous `tools/call` rows.
    #[arg(long)]
    no_sync: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

async fn multiply(Args(Pair { a, b }): Args<Pair>) -> Result<i64, ToolError> {
    a.checked_mul(b)
        .ok_or_else(|| ToolError::new("the result does not fit in a 64-bit integer"))
}

fn load_server(cli: &Cli) -> Result<Server, Error> {
    let server = Server::new("task-load");
    server.add_tool(
        ToolDef::new("multiply", multiply)
            .description("Multiplies two integers")
            .task(true),
    )?;
    server.add_extension(TasksExtension::with_config(
        TasksConfig::from_env().with_concurrency(cli.engine_concurrency),
    ))?;
    Ok(server)
}

fn arguments() -> Value {
    json!({"a": 6, "b": 7})
}

/// Checks a `CallToolResult` (as JSON) is `multiply`'s 42.
fn check_42(result: &Value, what: &str) -> Result<(), Error> {
    if result["structuredContent"]["result"] == json!(42) {
        Ok(())
    } else {
        Err(format!("{what}: expected 42, got {result}").into())
    }
}

/// What one sample saw besides its total time.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    /// `tasks/get` requests made (the confirming one included).
    polls: u32,
    /// Until the submission's answer (`CreateTaskResult`, or the result of a plain call).
    submit: Duration,
    /// The last `tasks/get` (the one that saw `completed`).
    get: Duration,
}

/// One caller of one row: `one` does a sample.
trait Caller: Send + 'static {
    fn one(&mut self) -> impl Future<Output = Result<Sample, Error>> + Send;
}

/// The memory engine's change feed (a broadcast of task ids), subscribed before the first
/// submission.
fn change_feed(server: &Server) -> Result<broadcast::Receiver<String>, Error> {
    server
        .extension_as::<TasksExtension>()
        .and_then(|extension| extension.engine())
        .and_then(|engine| engine.backend().changes())
        .ok_or_else(|| "the task engine is not running or has no change feed".into())
}

/// One subscription to the change feed shared by all callers: a dispatcher hands each id to
/// the caller waiting for it, so a completion wakes one caller rather than every caller (with
/// one subscription per caller, each of C callers receives, clones and compares every id).
struct Router {
    state: Mutex<RouterState>,
}

#[derive(Default)]
struct RouterState {
    waiting: HashMap<String, oneshot::Sender<()>>,
    /// Changes that arrived before their caller registered.
    early: HashSet<String>,
    /// How many times the dispatcher lagged behind the feed (and woke every waiter).
    lags: u64,
}

impl Router {
    fn start(mut changes: broadcast::Receiver<String>) -> (Arc<Self>, tokio::task::JoinHandle<()>) {
        let router = Arc::new(Self {
            state: Mutex::new(RouterState::default()),
        });
        let dispatcher = Arc::clone(&router);
        let handle = tokio::spawn(async move {
            loop {
                let received = changes.recv().await;
                let mut state = dispatcher.lock();
                match received {
                    Ok(id) => match state.waiting.remove(&id) {
                        Some(waiter) => {
                            let _ = waiter.send(());
                        }
                        None => {
                            state.early.insert(id);
                        }
                    },
                    Err(RecvError::Lagged(_)) => {
                        // Ids were lost: every waiter looks for itself.
                        state.lags += 1;
                        for (_, waiter) in state.waiting.drain() {
                            let _ = waiter.send(());
                        }
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
        (router, handle)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RouterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lags(&self) -> u64 {
        self.lock().lags
    }

    /// Wakes when `id` changed, or when it may have (a lag since `lags`).
    fn register(&self, id: &str, lags: u64) -> oneshot::Receiver<()> {
        let (waiter, woken) = oneshot::channel();
        let mut state = self.lock();
        if state.early.remove(id) || state.lags != lags {
            let _ = waiter.send(());
        } else {
            state.waiting.insert(id.to_owned(), waiter);
        }
        woken
    }

    fn forget(&self, id: &str) {
        self.lock().waiting.remove(id);
    }
}

/// How an in-process caller learns that its task changed.
enum Observer {
    /// Its own subscription to the change feed.
    Feed(broadcast::Receiver<String>),
    /// The shared [`Router`].
    Router(Arc<Router>),
}

/// In process, as a task: submit, wait on the change feed, confirm with one `tasks/get`.
struct InProcessTask {
    server: Server,
    observer: Observer,
    timeout: Duration,
}

impl InProcessTask {
    /// Waits on the feed for `id`; also returns on a lag, when the id may have been lost.
    async fn feed_wait(
        changes: &mut broadcast::Receiver<String>,
        id: &str,
        deadline: tokio::time::Instant,
    ) -> Result<(), Error> {
        loop {
            match tokio::time::timeout_at(deadline, changes.recv()).await {
                Err(_) => return Err(format!("task {id}: no change in time").into()),
                Ok(Ok(changed)) if changed == id => return Ok(()),
                Ok(Ok(_)) => {}
                // Our id may have been dropped from the feed: look.
                Ok(Err(RecvError::Lagged(_))) => return Ok(()),
                Ok(Err(RecvError::Closed)) => return Err("the change feed closed".into()),
            }
        }
    }
}

impl Caller for InProcessTask {
    async fn one(&mut self) -> Result<Sample, Error> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let lags = match &self.observer {
            Observer::Router(router) => router.lags(),
            Observer::Feed(_) => 0,
        };
        let call = ToolCall::new("multiply")
            .arguments(arguments())
            .scope(opted_in_scope(None, Default::default()));
        let began = Instant::now();
        let id = match self.server.call(call).await? {
            CallToolResponse::Task(created) => created.task.task_id,
            other => return Err(format!("expected a task, got {other:?}").into()),
        };
        let mut sample = Sample {
            submit: began.elapsed(),
            ..Sample::default()
        };
        let client = TaskClient::new(&self.server);
        loop {
            match &mut self.observer {
                Observer::Feed(changes) => Self::feed_wait(changes, &id, deadline).await?,
                Observer::Router(router) => {
                    let woken = router.register(&id, lags);
                    match tokio::time::timeout_at(deadline, woken).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => return Err("the router stopped".into()),
                        Err(_) => {
                            router.forget(&id);
                            return Err(format!("task {id}: no change in time").into());
                        }
                    }
                }
            }
            // The confirming `tasks/get`.
            sample.polls += 1;
            let asked = Instant::now();
            let status = client.get(&id).await?.task.task.status;
            sample.get = asked.elapsed();
            match status {
                TaskStatus::Completed => return Ok(sample),
                TaskStatus::Working => {}
                status => return Err(format!("task {id}: {status:?}, not completed").into()),
            }
        }
    }
}

/// In process, synchronously: the same call without the tasks opt-in.
struct InProcessCall {
    server: Server,
}

impl Caller for InProcessCall {
    async fn one(&mut self) -> Result<Sample, Error> {
        let scope = RequestScope::new().with_protocol_version(ProtocolVersion::V_2026_07_28);
        let call = ToolCall::new("multiply")
            .arguments(arguments())
            .scope(scope);
        let began = Instant::now();
        match self.server.call(call).await? {
            CallToolResponse::Complete(_) => Ok(Sample {
                submit: began.elapsed(),
                ..Sample::default()
            }),
            other => Err(format!("expected a result, got {other:?}").into()),
        }
    }
}

/// A raw 2026-07-28 client: POSTs JSON-RPC with the per-request headers and `_meta`.
struct Http {
    client: reqwest::Client,
    url: String,
    next_id: u64,
    meta: Value,
}

impl Http {
    fn new(url: &str, tasks: bool) -> Result<Self, Error> {
        let capabilities = if tasks {
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({})
        };
        Ok(Self {
            client: reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(1)
                .build()?,
            url: url.to_owned(),
            next_id: 0,
            meta: json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "task_load", "version": "0"},
            }),
        })
    }

    /// One request; answers its `result`, or fails on an error answer.
    async fn post(
        &mut self,
        method: &str,
        name: &str,
        mut params: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        self.next_id += 1;
        params["_meta"] = self.meta.clone();
        let body =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let response = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name)
            .json(&body)
            .timeout(timeout)
            .send()
            .await?;
        let status = response.status();
        let mut answer: Value = response.json().await?;
        match answer.get_mut("result") {
            Some(result) if status.is_success() => Ok(result.take()),
            _ => Err(format!("{method} answered {status}: {answer}").into()),
        }
    }
}

/// Over HTTP, as a task: submit, then poll `tasks/get` until `completed`.
struct HttpTask {
    http: Http,
    timeout: Duration,
    poll_interval: Duration,
    max_polls: u32,
}

impl Caller for HttpTask {
    async fn one(&mut self) -> Result<Sample, Error> {
        let began = Instant::now();
        let deadline = began + self.timeout;
        let created = self
            .http
            .post(
                "tools/call",
                "multiply",
                json!({"name": "multiply", "arguments": arguments()}),
                self.timeout,
            )
            .await?;
        if created["resultType"] != "task" {
            return Err(format!("expected a task, got {created}").into());
        }
        let id = created["taskId"]
            .as_str()
            .ok_or("a CreateTaskResult without taskId")?
            .to_owned();
        let submit = began.elapsed();
        for polls in 1..=self.max_polls {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let asked = Instant::now();
            let got = self
                .http
                .post("tasks/get", &id, json!({"taskId": id}), left)
                .await?;
            match got["status"].as_str() {
                Some("completed") => {
                    let get = asked.elapsed();
                    return Ok(Sample { polls, submit, get });
                }
                Some("working") => {}
                _ => return Err(format!("task {id}: {got}").into()),
            }
            if !self.poll_interval.is_zero() {
                tokio::time::sleep(self.poll_interval).await;
            }
        }
        Err(format!(
            "task {id}: not completed within {:?} / {} polls",
            self.timeout, self.max_polls
        )
        .into())
    }
}

/// Over HTTP, synchronously: `tools/call` without the opt-in.
struct HttpCall {
    http: Http,
    timeout: Duration,
}

impl Caller for HttpCall {
    async fn one(&mut self) -> Result<Sample, Error> {
        let began = Instant::now();
        let result = self
            .http
            .post(
                "tools/call",
                "multiply",
                json!({"name": "multiply", "arguments": arguments()}),
                self.timeout,
            )
            .await?;
        if result.get("taskId").is_some() {
            return Err(format!("expected a result, got a task: {result}").into());
        }
        Ok(Sample {
            submit: began.elapsed(),
            ..Sample::default()
        })
    }
}

/// What one phase measured.
struct Stats {
    /// Whole samples, sorted.
    samples: Vec<Duration>,
    /// Their submissions, sorted.
    submits: Vec<Duration>,
    /// Their last `tasks/get`, sorted.
    gets: Vec<Duration>,
    polls: u64,
    elapsed: Duration,
}

/// The nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let n = sorted.len();
    if n == 0 {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

impl Stats {
    fn per_second(&self) -> f64 {
        self.samples.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs `callers` callers (made by `make`) until `count` samples or `duration`, whichever
/// comes first; a caller stops after the sample in progress.
async fn phase<C: Caller>(
    callers: usize,
    count: usize,
    duration: Duration,
    mut make: impl FnMut() -> Result<C, Error>,
) -> Result<Stats, Error> {
    let claimed = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(callers);
    for _ in 0..callers {
        let mut caller = make()?;
        let claimed = Arc::clone(&claimed);
        handles.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while claimed.fetch_add(1, Ordering::Relaxed) < count && start.elapsed() < duration {
                let began = Instant::now();
                let sample = caller.one().await?;
                samples.push((began.elapsed(), sample));
            }
            Ok::<_, Error>(samples)
        }));
    }
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await??);
    }
    let elapsed = start.elapsed();
    let mut samples: Vec<Duration> = all.iter().map(|(total, _)| *total).collect();
    let mut submits: Vec<Duration> = all.iter().map(|(_, sample)| sample.submit).collect();
    let mut gets: Vec<Duration> = all.iter().map(|(_, sample)| sample.get).collect();
    samples.sort_unstable();
    submits.sort_unstable();
    gets.sort_unstable();
    Ok(Stats {
        samples,
        submits,
        gets,
        polls: all.iter().map(|(_, sample)| u64::from(sample.polls)).sum(),
        elapsed,
    })
}

struct Row {
    path: &'static str,
    what: &'static str,
    callers: usize,
    stats: Stats,
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| path | what | callers | samples | p50 µs | p99 µs | max µs | per s | submit p50 µs | submit p99 µs | last get p50 µs | tasks/get per sample |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let s = &row.stats;
        let (get, polls) = if row.what.contains("task") {
            (
                micros(percentile(&s.gets, 50.0)),
                format!("{:.2}", s.polls as f64 / s.samples.len().max(1) as f64),
            )
        } else {
            ("–".to_owned(), "–".to_owned())
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {} | {} |",
            row.path,
            row.what,
            row.callers,
            s.samples.len(),
            micros(percentile(&s.samples, 50.0)),
            micros(percentile(&s.samples, 99.0)),
            micros(s.samples.last().copied().unwrap_or_default()),
            s.per_second(),
            micros(percentile(&s.submits, 50.0)),
            micros(percentile(&s.submits, 99.0)),
            get,
            polls,
        );
    }
}

/// One row, after a warm-up of the same shape: `callers` callers until `count` samples or
/// `duration` (both capped by `--max-phase-seconds`).
#[allow(clippy::too_many_arguments)]
async fn row<C: Caller>(
    cli: &Cli,
    rows: &mut Vec<Row>,
    path: &'static str,
    what: &'static str,
    callers: usize,
    count: usize,
    duration: Duration,
    mut make: impl FnMut() -> Result<C, Error>,
) -> Result<(), Error> {
    let cap = Duration::from_secs_f64(cli.max_phase_seconds);
    phase(callers, cli.warmup, cap, &mut make).await?;
    let stats = phase(callers, count, duration.min(cap), &mut make).await?;
    eprintln!(
        "{path} {what}, {callers} callers: {} samples",
        stats.samples.len()
    );
    rows.push(Row {
        path,
        what,
        callers,
        stats,
    });
    Ok(())
}

/// A sequential row of `count` samples, then a concurrent one of `--seconds`.
async fn pair<C: Caller>(
    cli: &Cli,
    rows: &mut Vec<Row>,
    path: &'static str,
    what: &'static str,
    count: usize,
    mut make: impl FnMut() -> Result<C, Error>,
) -> Result<(), Error> {
    let forever = Duration::MAX;
    row(cli, rows, path, what, 1, count, forever, &mut make).await?;
    let seconds = Duration::from_secs_f64(cli.seconds);
    row(
        cli,
        rows,
        path,
        what,
        cli.concurrency,
        usize::MAX,
        seconds,
        &mut make,
    )
    .await
}

async fn in_process(cli: &Cli, rows: &mut Vec<Row>) -> Result<(), Error> {
    let server = load_server(cli)?;
    let running = server.start().await?;
    let timeout = Duration::from_millis(cli.sample_timeout_ms);

    // The task's stored result is the synchronous call's result.
    let created = TaskClient::new(&server)
        .submit("multiply", arguments())
        .await?;
    let done = TaskClient::new(&server)
        .wait(
            &created.task.task_id,
            &[TaskStatus::Completed],
            Duration::from_secs(5),
        )
        .await?;
    check_42(&serde_json::to_value(&done)?["result"], "in-process task")?;

    let own_feed = || {
        Ok(InProcessTask {
            server: server.clone(),
            observer: Observer::Feed(change_feed(&server)?),
            timeout,
        })
    };
    pair(
        cli,
        rows,
        "in process",
        "task (own feed)",
        cli.tasks,
        own_feed,
    )
    .await?;
    let (router, dispatcher) = Router::start(change_feed(&server)?);
    let shared = || {
        Ok(InProcessTask {
            server: server.clone(),
            observer: Observer::Router(Arc::clone(&router)),
            timeout,
        })
    };
    let seconds = Duration::from_secs_f64(cli.seconds);
    let what = "task (shared feed)";
    row(
        cli,
        rows,
        "in process",
        what,
        cli.concurrency,
        usize::MAX,
        seconds,
        shared,
    )
    .await?;
    dispatcher.abort();
    if !cli.no_sync {
        pair(cli, rows, "in process", "tools/call", cli.tasks, || {
            Ok(InProcessCall {
                server: server.clone(),
            })
        })
        .await?;
    }
    // Every task stays stored for its TTL (15 min by default), so stopping drops them all.
    let stored: usize = 1 + rows
        .iter()
        .filter(|row| row.what.starts_with("task"))
        .map(|row| row.stats.samples.len() + cli.warmup)
        .sum::<usize>();
    let stopping = Instant::now();
    running.stop().await;
    eprintln!(
        "stopping the in-process server with about {stored} stored tasks took {:.0} ms",
        stopping.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

async fn over_http(cli: &Cli, rows: &mut Vec<Row>) -> Result<(), Error> {
    let http = HttpServer::bind(load_server(cli)?, "127.0.0.1:0", HttpConfig::new()).await?;
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async {
        stopped.await.ok();
    }));
    let timeout = Duration::from_millis(cli.sample_timeout_ms);

    // Both answers are `multiply`'s.
    let result = Http::new(&url, false)?
        .post(
            "tools/call",
            "multiply",
            json!({"name": "multiply", "arguments": arguments()}),
            timeout,
        )
        .await?;
    check_42(&result, "HTTP tools/call")?;
    let mut tasks = Http::new(&url, true)?;
    let created = tasks
        .post(
            "tools/call",
            "multiply",
            json!({"name": "multiply", "arguments": arguments()}),
            timeout,
        )
        .await?;
    let id = created["taskId"].as_str().unwrap_or_default().to_owned();
    let started = Instant::now();
    loop {
        let got = tasks
            .post("tasks/get", &id, json!({"taskId": id}), timeout)
            .await?;
        if got["status"] == "completed" {
            check_42(&got["result"], "HTTP task")?;
            break;
        }
        if started.elapsed() > timeout {
            return Err(format!("HTTP task {id} not completed: {got}").into());
        }
    }

    let outcome = async {
        pair(
            cli,
            rows,
            "HTTP",
            "task (poll tasks/get)",
            cli.http_tasks,
            || {
                Ok(HttpTask {
                    http: Http::new(&url, true)?,
                    timeout,
                    poll_interval: Duration::from_micros(cli.poll_interval_us),
                    max_polls: cli.max_polls.max(1),
                })
            },
        )
        .await?;
        if !cli.no_sync {
            pair(cli, rows, "HTTP", "tools/call", cli.http_tasks, || {
                Ok(HttpCall {
                    http: Http::new(&url, false)?,
                    timeout,
                })
            })
            .await?;
        }
        Ok(())
    }
    .await;
    let _ = stop.send(());
    serving.await??;
    outcome
}

fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp::service=error".into()),
        )
        .init();
    let cli = Cli::parse();
    let valid = |seconds: f64| seconds.is_finite() && seconds >= 0.0;
    if !valid(cli.seconds) || !valid(cli.max_phase_seconds) {
        return Err("--seconds and --max-phase-seconds must be finite and non-negative".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut rows = Vec::new();
        if !cli.no_in_process {
            in_process(&cli, &mut rows).await?;
        }
        if !cli.no_http {
            over_http(&cli, &mut rows).await?;
        }
        print_table(&rows);
        println!(
            "\n{} tokio worker threads shared by callers and server; engine concurrency {}; warm-up {} samples per row; {} s per concurrent row.",
            cli.threads.max(1),
            cli.engine_concurrency,
            cli.warmup,
            cli.seconds
        );
        Ok(())
    })
}
