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
//! | drain, N workers | `--tasks` queued tasks, then N worker processes (Redis) or N `Worker`s in this process (memory), each `--concurrency` runs at once: from the moment all workers have started until the queue stream is empty (Redis: each completion deletes its entry) or the tool has run `--tasks` times (memory); every task is then checked `completed`, untimed |
//!
//! The tool is `multiply(a, b) -> a * b`, run through the worker's whole path (claim, the
//! tool call on its server, `complete`). Every task is checked `completed` at the end of a
//! drain. The machine's cores are shared by Redis, the workers and this driver.

use std::{
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use clap::Parser;
use futures::StreamExt as _;
use mcpkit::{
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
        id: mcpkit::tasks::new_task_id(),
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

async fn run_worker_process(url: &str, concurrency: usize) -> Result<(), Error> {
    let config = TasksConfig::default()
        .with_url(url)
        .with_concurrency(concurrency);
    let worker = Worker::from_config(tool_server(Arc::default())?, &config).await?;
    eprintln!("ready");
    worker.run_until_signal().await;
    Ok(())
}

/// Redis' own CPU time so far (`INFO cpu`: user + sys of the server's main thread and
/// children), in seconds.
async fn redis_cpu(redis: &mut redis::aio::MultiplexedConnection) -> Result<f64, Error> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(redis).await?;
    Ok(info
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| matches!(*name, "used_cpu_sys" | "used_cpu_user"))
        .filter_map(|(_, value)| value.trim().parse::<f64>().ok())
        .sum())
}

/// Drains `tasks` queued tasks with `workers` worker processes; returns tasks/s and the
/// share of one core Redis used meanwhile.
async fn drain_redis(cli: &Cli, workers: usize) -> Result<(f64, f64), Error> {
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
    let mut redis = redis::Client::open(cli.url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let prefix = RedisOptions::default().from_url(&url)?.1.key_prefix();
    let (cpu_before, cpu_clock) = (redis_cpu(&mut redis).await?, Instant::now());
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
    // Timed on the queue: a completed run leaves the queue (the ready set and the leases;
    // engines before fair queueing: the stream) with its completion.
    loop {
        let (stream, ready, leased): (u64, u64, u64) = redis::pipe()
            .xlen(format!("{prefix}:q"))
            .zcard(format!("{prefix}:r"))
            .zcard(format!("{prefix}:l"))
            .query_async(&mut redis)
            .await?;
        if stream + ready + leased == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let redis_share =
        (redis_cpu(&mut redis).await? - cpu_before) / cpu_clock.elapsed().as_secs_f64();
    let rate = cli.tasks as f64 / elapsed;
    all_completed(&backend, &ids).await?;
    for child in &mut children {
        child.start_kill()?;
        let _ = child.wait().await;
    }
    Ok((rate, redis_share))
}

/// The same drain on the memory engine, with `workers` `Worker`s in this process.
async fn drain_memory(cli: &Cli, workers: usize) -> Result<f64, Error> {
    let backend: Arc<dyn TaskBackend> = Arc::new(MemoryBackend::new());
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
            Arc::new(MemoryBackend::new())
        };
        let (ids, rate) = submit_all(&backend, cli.tasks, cli.callers).await?;
        println!("{engine}: submit {rate:.0} tasks/s");
        let (p50, p99) = gets(&backend, &ids, cli.gets).await?;
        println!("{engine}: get p50 {p50:?} p99 {p99:?}");
        for &workers in &cli.workers {
            if engine == "redis" {
                let (rate, share) = drain_redis(&cli, workers).await?;
                println!(
                    "{engine}: drain with {workers} worker process(es): {rate:.0} completed/s (Redis busy {:.0} % of a core)",
                    share * 100.0
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
