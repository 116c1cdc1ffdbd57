//! A load driver for the task engines at the backend level: submit throughput, `get`
//! latency, and how fast workers drain a queue, on the Redis backend (worker *processes*)
//! and on the memory engine (workers in process), with the same trivial tool. See the
//! "Redis engine" section of BENCHMARKS.md.
//!
//! ```text
//! cargo run --release --features redis --example redis_load -- --url redis://127.0.0.1:6390/0
//! ```
//!
//! | row | what is timed |
//! |---|---|
//! | submit | `submit` + `release` of `--tasks` tasks by `--callers` concurrent callers on one backend handle |
//! | get | `--gets` sequential `get`s of stored tasks (p50, p99) |
//! | drain, N workers | `--tasks` queued tasks, then N worker processes (Redis) or N `Worker`s in this process (memory), each `--concurrency` runs at once: from the moment all workers have started until the queue has no unfinished task left (Redis: its count of unfinished tasks, which each `complete` decrements, read every 2 ms) or the tool has run `--tasks` times (memory); every task is then checked `completed`, untimed |
//!
//! The tool is `multiply(a, b) -> a * b`, run through the worker's whole path (claim, the
//! tool call on its server, `complete`). Every task is checked `completed` at the end of a
//! drain. The machine's cores are shared by Redis, the workers and this driver.
//!
//! On Redis, each phase also prints what it cost Redis (`cost` lines), from `INFO cpu`,
//! `INFO stats` and `INFO commandstats` read just before and just after the phase: Redis CPU
//! (`used_cpu_user + used_cpu_sys`) per operation, bytes into and out of Redis
//! (`total_net_input_bytes`, `total_net_output_bytes`) per operation, and the commands run
//! per operation (a script's own commands are counted too, under their names). The
//! operation is a submitted task (`submit` + `release`), a `get`, or a completed task (the
//! workers' claims, completions, heartbeats and idle blocking reads during the drain). What
//! the readings themselves cost is measured once at the start and taken off. Only the
//! public `TaskBackend` API is driven; the one key read is the queue's count of unfinished
//! tasks, which times a drain on Redis.

use std::{
    collections::BTreeMap,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use clap::Parser;
use ferrymcp::{
    Args, Server, ToolDef,
    tasks::{
        TasksConfig, Worker,
        backend::{
            NewTask, Owner, TaskBackend, TaskLimits,
            memory::MemoryBackend,
            redis::{RedisBackend, RedisOptions},
        },
    },
    types::TaskStatus,
};
use futures::StreamExt as _;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio_util::sync::CancellationToken;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Parser, Debug, Clone)]
#[command(about = "Load driver for the task engines (Redis and memory)")]
struct Cli {
    /// The Redis to measure (its queue is chosen here).
    #[arg(long, default_value = "redis://127.0.0.1:6390/0")]
    url: String,
    /// Tasks per submit and drain run.
    #[arg(long, default_value_t = 20_000)]
    tasks: usize,
    /// Concurrent submitters.
    #[arg(long, default_value_t = 64)]
    callers: usize,
    /// Sequential gets for the latency row.
    #[arg(long, default_value_t = 5_000)]
    gets: usize,
    /// Runs at once per worker.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Worker counts to drain with.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    workers: Vec<usize>,
    /// Internal: run as a worker process on this queue URL.
    #[arg(long, hide = true)]
    worker_of: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// The tool's server; `runs` counts the tool's runs (in-process workers only).
fn tool_server(runs: Arc<AtomicUsize>) -> Result<Server, Error> {
    let server = Server::new("load");
    server.add_tool(
        ToolDef::new("multiply", move |Args(p): Args<Pair>| {
            runs.fetch_add(1, Ordering::Relaxed);
            async move { p.a * p.b }
        })
        .task(true),
    )?;
    Ok(server)
}

fn new_task(i: usize) -> NewTask {
    let mut arguments = serde_json::Map::new();
    arguments.insert("a".into(), (i as i64).into());
    arguments.insert("b".into(), 3.into());
    NewTask {
        id: ferrymcp::tasks::new_task_id(),
        owner: Owner::of(None),
        caller: "anon:load".to_owned(),
        tool: "multiply".into(),
        version: None,
        arguments,
        context: serde_json::Map::new(),
        ttl: Some(Duration::from_secs(600)),
        poll_interval: Duration::from_secs(1),
        max_attempts: 1,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Submits and releases `tasks` tasks with `callers` concurrent callers; returns their ids
/// and tasks/s.
async fn submit_all(
    backend: &Arc<dyn TaskBackend>,
    tasks: usize,
    callers: usize,
) -> Result<(Vec<String>, f64), Error> {
    let owner = Owner::of(None);
    let started = Instant::now();
    let ids: Vec<Result<String, Error>> = futures::stream::iter(0..tasks)
        .map(|i| {
            let backend = Arc::clone(backend);
            let owner = owner.clone();
            async move {
                let task = new_task(i);
                let id = task.id.clone();
                backend.submit(task).await?;
                backend.release(&owner, &id).await?;
                Ok(id)
            }
        })
        .buffer_unordered(callers)
        .collect()
        .await;
    let rate = tasks as f64 / started.elapsed().as_secs_f64();
    Ok((ids.into_iter().collect::<Result<_, _>>()?, rate))
}

/// This process's CPU time so far (user + system), where the platform tells it (Linux).
fn client_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Linux reports in clock ticks of 1/100 s (USER_HZ) on every architecture it runs on.
    Some(Duration::from_millis(ticks * 10))
}

async fn gets(
    backend: &Arc<dyn TaskBackend>,
    ids: &[String],
    count: usize,
) -> Result<(Duration, Duration), Error> {
    let owner = Owner::of(None);
    let mut samples = Vec::with_capacity(count);
    for i in 0..count {
        let started = Instant::now();
        backend.get(&owner, &ids[i % ids.len()]).await?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok((percentile(&samples, 0.5), percentile(&samples, 0.99)))
}

/// Checks that every task is `completed` (after the timed part; retries briefly for the last
/// writes of a drain that was timed on the tool's runs).
async fn all_completed(backend: &Arc<dyn TaskBackend>, ids: &[String]) -> Result<(), Error> {
    let owner = Owner::of(None);
    let mut pending: Vec<&String> = ids.iter().collect();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !pending.is_empty() {
        let mut still = Vec::new();
        for id in pending {
            match backend.get(&owner, id).await? {
                Some(view) if view.status == TaskStatus::Completed => {}
                Some(view) if view.status.is_terminal() => {
                    return Err(format!("task {id} ended {:?}", view.status).into());
                }
                _ => still.push(id),
            }
        }
        pending = still;
        if Instant::now() > deadline {
            return Err(format!("{} tasks not completed in 600 s", pending.len()).into());
        }
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

/// A worker process: the worker `Worker::from_config` builds, as a deployment runs it.
async fn run_worker_process(url: &str, concurrency: usize) -> Result<(), Error> {
    let config = TasksConfig::default()
        .with_url(url)
        .with_concurrency(concurrency);
    let worker = Worker::from_config(tool_server(Arc::default())?, &config).await?;
    eprintln!("ready");
    worker.run_until_signal().await;
    Ok(())
}

/// One reading of Redis' counters.
#[derive(Debug, Clone, Default)]
struct Reading {
    /// `used_cpu_user + used_cpu_sys`, seconds.
    cpu: f64,
    /// `total_net_input_bytes`.
    bytes_in: u64,
    /// `total_net_output_bytes`.
    bytes_out: u64,
    /// `INFO commandstats`: command → (calls, usec).
    commands: BTreeMap<String, (u64, u64)>,
}

/// What one phase cost Redis: a reading's growth.
#[derive(Debug, Clone, Default)]
struct Cost {
    cpu: f64,
    bytes_in: f64,
    bytes_out: f64,
    commands: BTreeMap<String, (u64, u64)>,
}

fn info_fields(info: &str) -> impl Iterator<Item = (&str, &str)> {
    info.lines()
        .filter_map(|line| line.trim_end().split_once(':'))
}

/// Reads Redis' CPU, network and command counters (three `INFO`s, which any Redis since
/// 2.6 answers).
async fn read_redis(redis: &mut redis::aio::MultiplexedConnection) -> Result<Reading, Error> {
    let mut reading = Reading::default();
    let cpu: String = redis::cmd("INFO").arg("cpu").query_async(redis).await?;
    for (name, value) in info_fields(&cpu) {
        if matches!(name, "used_cpu_sys" | "used_cpu_user") {
            reading.cpu += value.parse::<f64>().unwrap_or(0.0);
        }
    }
    let stats: String = redis::cmd("INFO").arg("stats").query_async(redis).await?;
    for (name, value) in info_fields(&stats) {
        match name {
            "total_net_input_bytes" => reading.bytes_in = value.parse().unwrap_or(0),
            "total_net_output_bytes" => reading.bytes_out = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    let commands: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(redis)
        .await?;
    // cmdstat_evalsha:calls=2,usec=87,usec_per_call=43.50,rejected_calls=0,failed_calls=0
    for (name, value) in info_fields(&commands) {
        let Some(command) = name.strip_prefix("cmdstat_") else {
            continue;
        };
        let field = |key: &str| {
            value
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        reading
            .commands
            .insert(command.to_owned(), (field("calls"), field("usec")));
    }
    Ok(reading)
}

impl Cost {
    /// `after - before`, less `overhead` (what a pair of readings costs by itself); the
    /// readings' own `INFO` calls are left out of the commands.
    fn between(before: &Reading, after: &Reading, overhead: &Cost) -> Cost {
        let mut commands = BTreeMap::new();
        for (name, &(calls, usec)) in &after.commands {
            if name == "info" {
                continue;
            }
            let (calls0, usec0) = before.commands.get(name).copied().unwrap_or_default();
            if calls > calls0 {
                commands.insert(name.clone(), (calls - calls0, usec.saturating_sub(usec0)));
            }
        }
        Cost {
            cpu: (after.cpu - before.cpu - overhead.cpu).max(0.0),
            bytes_in: (after.bytes_in.saturating_sub(before.bytes_in) as f64 - overhead.bytes_in)
                .max(0.0),
            bytes_out: (after.bytes_out.saturating_sub(before.bytes_out) as f64
                - overhead.bytes_out)
                .max(0.0),
            commands,
        }
    }

    /// The cost of two readings in a row, with nothing else going on.
    async fn of_readings(redis: &mut redis::aio::MultiplexedConnection) -> Result<Cost, Error> {
        let mut samples = Vec::new();
        for _ in 0..5 {
            let before = read_redis(redis).await?;
            let after = read_redis(redis).await?;
            samples.push(Cost::between(&before, &after, &Cost::default()));
        }
        let n = samples.len() as f64;
        Ok(Cost {
            cpu: samples.iter().map(|c| c.cpu).sum::<f64>() / n,
            bytes_in: samples.iter().map(|c| c.bytes_in).sum::<f64>() / n,
            bytes_out: samples.iter().map(|c| c.bytes_out).sum::<f64>() / n,
            commands: BTreeMap::new(),
        })
    }

    /// One `cost` line: per operation, Redis CPU, bytes in and out, and the commands run
    /// (most CPU first).
    fn line(&self, phase: &str, ops: usize, per: &str) -> String {
        let n = ops.max(1) as f64;
        let mut commands: Vec<_> = self.commands.iter().collect();
        commands.sort_by_key(|(_, (_, usec))| std::cmp::Reverse(*usec));
        let commands: Vec<String> = commands
            .iter()
            .filter(|(_, (calls, _))| *calls as f64 / n >= 0.005)
            .map(|(name, (calls, usec))| {
                format!(
                    "{name} {:.2} ({:.1} us)",
                    *calls as f64 / n,
                    *usec as f64 / n
                )
            })
            .collect();
        format!(
            "redis: cost {phase}: {:.1} us Redis CPU, {:.0} B in, {:.0} B out per {per} ({ops} ops); commands per {per}: {}",
            self.cpu * 1e6 / n,
            self.bytes_in / n,
            self.bytes_out / n,
            commands.join(", ")
        )
    }
}

/// Drains `tasks` queued tasks with `workers` worker processes; returns tasks/s, the share
/// of one core Redis used meanwhile, and what the drain cost Redis.
async fn drain_redis(
    cli: &Cli,
    workers: usize,
    redis: &mut redis::aio::MultiplexedConnection,
    overhead: &Cost,
) -> Result<(f64, f64, Cost), Error> {
    let url = format!(
        "{}?queue=load-{}-{workers}",
        cli.url.trim_end_matches('/'),
        std::process::id()
    );
    let backend: Arc<dyn TaskBackend> = Arc::new(
        RedisBackend::connect_with(
            &url,
            RedisOptions::default().with_limits(TaskLimits::unlimited()),
        )
        .await?,
    );
    let (ids, _) = submit_all(&backend, cli.tasks, cli.callers).await?;
    // The queue's counts (see the Redis scripts' prelude): `u` is its unfinished tasks.
    let counts = format!(
        "{}:n",
        RedisOptions::default().from_url(&url)?.1.key_prefix()
    );
    let (before, cpu_clock) = (read_redis(redis).await?, Instant::now());
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    let mut ready = Vec::new();
    for _ in 0..workers {
        let mut child = tokio::process::Command::new(&exe)
            .args([
                "--worker-of",
                &url,
                "--concurrency",
                &cli.concurrency.to_string(),
            ])
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        ready.push(tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if line == "ready" {
                    // Keep reading so the child never blocks on a full pipe.
                    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                    return Instant::now();
                }
            }
            Instant::now()
        }));
        children.push(child);
    }
    let mut started = None::<Instant>;
    for handle in ready {
        let at = handle.await?;
        started = Some(started.map_or(at, |s| s.max(at)));
    }
    let started = started.ok_or("no worker")?;
    // Timed on the queue's count of unfinished tasks, which each `complete` decrements (or
    // removes, with the counts' hash, when nothing is left): read every 2 ms, as the engine
    // before the fair queue was timed on its stream's length.
    loop {
        let left: Option<u64> = redis::cmd("HGET")
            .arg(&counts)
            .arg("u")
            .query_async(redis)
            .await?;
        if left.unwrap_or(0) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = read_redis(redis).await?;
    let redis_share = (after.cpu - before.cpu) / cpu_clock.elapsed().as_secs_f64();
    let rate = cli.tasks as f64 / elapsed;
    all_completed(&backend, &ids).await?;
    for child in &mut children {
        child.start_kill()?;
        let _ = child.wait().await;
    }
    Ok((rate, redis_share, Cost::between(&before, &after, overhead)))
}

/// The same drain on the memory engine, with `workers` `Worker`s in this process.
async fn drain_memory(cli: &Cli, workers: usize) -> Result<f64, Error> {
    let backend: Arc<dyn TaskBackend> =
        Arc::new(MemoryBackend::new().with_limits(TaskLimits::unlimited()));
    let (ids, _) = submit_all(&backend, cli.tasks, cli.callers).await?;
    let stop = CancellationToken::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let worker = Worker::new(tool_server(Arc::clone(&runs))?, Arc::clone(&backend))
            .with_concurrency(cli.concurrency);
        handles.push(tokio::spawn(worker.run(stop.clone())));
    }
    // Timed on the tool's runs (the last few completions land just after).
    while runs.load(Ordering::Relaxed) < cli.tasks {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let rate = cli.tasks as f64 / started.elapsed().as_secs_f64();
    all_completed(&backend, &ids).await?;
    stop.cancel();
    for handle in handles {
        handle.await?;
    }
    Ok(rate)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let cli = Cli::parse();
    if let Some(url) = &cli.worker_of {
        return run_worker_process(url, cli.concurrency).await;
    }
    println!(
        "tasks {} callers {} concurrency {} (machine: {} cores)",
        cli.tasks,
        cli.callers,
        cli.concurrency,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let mut redis = redis::Client::open(cli.url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let overhead = Cost::of_readings(&mut redis).await?;
    for engine in ["redis", "memory"] {
        let backend: Arc<dyn TaskBackend> = if engine == "redis" {
            let url = format!(
                "{}?queue=load-submit-{}",
                cli.url.trim_end_matches('/'),
                std::process::id()
            );
            // Unlimited: the driver is one caller submitting far more than its quota.
            let options = RedisOptions::default().with_limits(TaskLimits::unlimited());
            Arc::new(RedisBackend::connect_with(&url, options).await?)
        } else {
            Arc::new(MemoryBackend::new().with_limits(TaskLimits::unlimited()))
        };
        let before = read_redis(&mut redis).await?;
        let cpu_before = client_cpu();
        let (ids, rate) = submit_all(&backend, cli.tasks, cli.callers).await?;
        if let (Some(start), Some(end)) = (cpu_before, client_cpu()) {
            println!(
                "{engine}: client CPU {:.1} us per submitted task",
                (end - start).as_secs_f64() * 1e6 / cli.tasks as f64
            );
        }
        let submitted = read_redis(&mut redis).await?;
        println!("{engine}: submit {rate:.0} tasks/s");
        let (p50, p99) = gets(&backend, &ids, cli.gets).await?;
        let got = read_redis(&mut redis).await?;
        println!("{engine}: get p50 {p50:?} p99 {p99:?}");
        if engine == "redis" {
            println!(
                "{}",
                Cost::between(&before, &submitted, &overhead).line("submit", cli.tasks, "task")
            );
            println!(
                "{}",
                Cost::between(&submitted, &got, &overhead).line("get", cli.gets, "get")
            );
        }
        for &workers in &cli.workers {
            if engine == "redis" {
                let (rate, share, cost) = drain_redis(&cli, workers, &mut redis, &overhead).await?;
                println!(
                    "{engine}: drain with {workers} worker process(es): {rate:.0} completed/s (Redis busy {:.0} % of a core)",
                    share * 100.0
                );
                println!(
                    "{}",
                    cost.line(&format!("drain {workers}"), cli.tasks, "completed task")
                );
            } else {
                let rate = drain_memory(&cli, workers).await?;
                println!(
                    "{engine}: drain with {workers} in-process worker(s): {rate:.0} completed/s"
                );
            }
        }
    }
    Ok(())
}
