//! A task watched by push against the same task polled: how many requests a client makes
//! per task, and how long after the tool finished the client knows, over Streamable HTTP on
//! loopback, on the memory engine and (with `--redis-url`) on Redis. See "Task status:
//! pushed or polled" in BENCHMARKS.md.
//!
//! ```text
//! cargo run --release --example push_vs_poll
//! cargo run --release --features redis --example push_vs_poll -- --redis-url redis://127.0.0.1:6379/15
//! ```
//!
//! The tool `work(n, ms)` sleeps `ms` (default 1000 plus up to 500 of jitter per task, so
//! completions do not line up with poll ticks), records the instant it returns under `n`,
//! and answers. The server (its engine with the embedded worker, the tool) and the clients
//! run in this process, so that instant and the client's are on one clock.
//!
//! * **poll**: `tools/call` (opted in) → `CreateTaskResult`, then `tasks/get` every
//!   `pollIntervalMs` (the default, 5000 ms, unless `--poll-interval-ms`) until `completed`.
//! * **push**: `tools/call` → `CreateTaskResult`, then one `subscriptions/listen` naming the
//!   task, read until its `notifications/tasks` says `completed`.
//!
//! "Knows" is when the client has the message saying `completed`, minus when the tool
//! returned. `--tasks` tasks run at once per mode, each on its own HTTP client.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use clap::Parser;
use ferrymcp::{
    Args, HttpConfig, HttpServer, Server, State, ToolDef,
    tasks::{TasksConfig, TasksExtension},
};
use serde_json::{Value, json};

#[derive(Parser)]
struct Options {
    /// Tasks per mode, all at once.
    #[arg(long, default_value_t = 50)]
    tasks: usize,
    /// The tool's base duration, in ms (plus up to half of it as jitter).
    #[arg(long, default_value_t = 1000)]
    work_ms: u64,
    /// The poll interval the server suggests (and the poller keeps to).
    #[arg(long, default_value_t = 5000)]
    poll_interval_ms: u64,
    /// Also measure on this Redis (needs the `redis` feature); its queue is `push-vs-poll`.
    #[arg(long)]
    redis_url: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Work {
    n: usize,
    ms: u64,
}

/// When each task's tool returned, by its `n`.
#[derive(Clone, Default)]
struct Finished(Arc<Mutex<Vec<Option<Instant>>>>);

impl Finished {
    fn set(&self, n: usize) {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if all.len() <= n {
            all.resize(n + 1, None);
        }
        all[n] = Some(Instant::now());
    }

    fn get(&self, n: usize) -> Option<Instant> {
        let all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.get(n).copied().flatten()
    }
}

async fn work(State(done): State<Finished>, Args(w): Args<Work>) -> String {
    tokio::time::sleep(Duration::from_millis(w.ms)).await;
    done.set(w.n);
    format!("worked {} ms", w.ms)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "push-vs-poll", "version": "0"},
    })
}

async fn post(client: &reqwest::Client, url: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let text = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(body.to_string())
        .send()
        .await
        .expect("POST")
        .text()
        .await
        .expect("an answer");
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    serde_json::from_str(json.trim()).expect("a JSON answer")
}

/// One sample: requests made, and how long after the tool returned the client knew.
struct Sample {
    requests: usize,
    knew_after: Duration,
}

async fn create(client: &reqwest::Client, url: &str, n: usize, ms: u64) -> String {
    let created = post(
        client,
        url,
        "tools/call",
        json!({"name": "work", "arguments": {"n": n, "ms": ms}}),
    )
    .await;
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a task: {created}"))
        .to_owned()
}

async fn poll_one(url: String, n: usize, ms: u64, interval: Duration, done: Finished) -> Sample {
    let client = reqwest::Client::new();
    let id = create(&client, &url, n, ms).await;
    let mut requests = 1;
    loop {
        tokio::time::sleep(interval).await;
        let got = post(&client, &url, "tasks/get", json!({"taskId": id})).await;
        requests += 1;
        if got["result"]["status"] == "completed" {
            let knew = Instant::now();
            let finished = done.get(n).expect("the tool recorded its end");
            return Sample {
                requests,
                knew_after: knew.saturating_duration_since(finished),
            };
        }
    }
}

async fn push_one(url: String, n: usize, ms: u64, done: Finished) -> Sample {
    let client = reqwest::Client::new();
    let id = create(&client, &url, n, ms).await;
    let mut listen = ferrymcp_test_helpers::http::Listen::open(
        &url,
        json!({"taskIds": [id]}),
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    loop {
        let message = listen
            .next(Duration::from_secs(60))
            .await
            .expect("a notification within 60 s");
        if message["method"] == "notifications/tasks" && message["params"]["status"] == "completed"
        {
            let knew = Instant::now();
            let finished = done.get(n).expect("the tool recorded its end");
            return Sample {
                requests: 2,
                knew_after: knew.saturating_duration_since(finished),
            };
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(engine: &str, mode: &str, samples: &[Sample]) {
    let mut knew: Vec<Duration> = samples.iter().map(|s| s.knew_after).collect();
    knew.sort();
    let requests = samples.iter().map(|s| s.requests).sum::<usize>() as f64 / samples.len() as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {engine} | {mode} | {requests:.1} | {:.2} | {:.2} | {:.2} |",
        ms(percentile(&knew, 0.5)),
        ms(percentile(&knew, 0.9)),
        ms(percentile(&knew, 1.0)),
    );
}

async fn measure(engine: &str, tasks_url: &str, options: &Options) {
    let done = Finished::default();
    let server = Server::new("push-vs-poll");
    server.insert_state(done.clone());
    server
        .add_tool(ToolDef::new("work", work).task(true))
        .expect("the tool");
    let config = TasksConfig::default()
        .with_url(tasks_url)
        .with_concurrency(options.tasks.max(1))
        .with_poll_interval(Duration::from_millis(options.poll_interval_ms));
    server
        .add_extension(TasksExtension::with_config(config))
        .expect("the tasks extension");
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    let interval = Duration::from_millis(options.poll_interval_ms);
    let jitter = |n: usize| options.work_ms + (n as u64 * 7919) % (options.work_ms / 2).max(1);
    for mode in ["poll", "push"] {
        let offset = if mode == "poll" { 0 } else { options.tasks };
        let runs: Vec<_> = (0..options.tasks)
            .map(|i| {
                let (url, done, n) = (url.clone(), done.clone(), offset + i);
                let ms = jitter(n);
                tokio::spawn(async move {
                    if mode == "poll" {
                        poll_one(url, n, ms, interval, done).await
                    } else {
                        push_one(url, n, ms, done).await
                    }
                })
            })
            .collect();
        let mut samples = Vec::with_capacity(runs.len());
        for run in runs {
            samples.push(run.await.expect("a sample"));
        }
        report(engine, mode, &samples);
    }
    let _ = stop.send(());
    let _ = serving.await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = Options::parse();
    println!(
        "{} tasks per mode at once, tools of {}–{} ms, pollIntervalMs {}",
        options.tasks,
        options.work_ms,
        options.work_ms * 3 / 2,
        options.poll_interval_ms
    );
    println!("| engine | mode | requests per task | knew after p50 (ms) | p90 | max |");
    println!("|---|---|---:|---:|---:|---:|");
    measure("memory", "memory://", &options).await;
    if let Some(redis) = &options.redis_url {
        let separator = if redis.contains('?') { '&' } else { '?' };
        let url = format!(
            "{redis}{separator}queue=push-vs-poll-{}",
            std::process::id()
        );
        measure("redis", &url, &options).await;
    }
}
