//! `ferrymcp-tasks`: the operator's command line for the task engine.
//!
//! ```text
//! # A Redis engine, directly (the URL the servers and workers use; MCP_TASKS_URL by default):
//! ferrymcp-tasks --url redis://127.0.0.1:6379/0 status
//! ferrymcp-tasks --url redis://127.0.0.1:6379/0 tasks --status failed --tool report --older-than 10m
//! # An embedded (memory://) engine, through the server's admin routes (`demo --admin`):
//! ferrymcp-tasks --url http://127.0.0.1:8000/admin inspect TASK_ID
//! ferrymcp-tasks --url http://127.0.0.1:8000/admin --token "$TOKEN" cancel TASK_ID
//! ferrymcp-tasks --json --url redis://127.0.0.1:6379/0 purge
//! ```
//!
//! Exit status: 0 done, 1 failed (unreachable, refused, no such task), 2 bad usage.

use std::{process::ExitCode, sync::Arc, time::Duration};

use clap::{Parser, Subcommand};
use ferrymcp_core::secrets::redacted_url;
use ferrymcp_tasks::{
    TasksConfig,
    backend::{TaskFilter, TaskRecord},
    operator::{Cancelled, FleetStatus, Operator, PurgeReport},
};
use ferrymcp_types::TaskStatus;
use serde::{Serialize, de::DeserializeOwned};

/// See and steer the task engine: the queue, the workers, one task.
#[derive(Parser)]
#[command(name = "ferrymcp-tasks", version)]
struct Cli {
    /// The engine: its redis:// (rediss://, +cluster) URL, read directly, or the http(s)://
    /// URL of a server's admin routes (for a memory:// engine, or a Redis one behind a server).
    #[arg(
        long,
        env = "MCP_TASKS_URL",
        global = true,
        default_value = "memory://"
    )]
    url: String,
    /// A bearer token for the admin routes (a server with OAuth wants the operators' scope).
    #[arg(long, env = "MCP_ADMIN_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    /// Machine-readable output: one JSON document.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Queue depth, runs in flight, and the workers with how long ago each was heard from.
    Status,
    /// Tasks, newest first, filtered by status, tool and age.
    Tasks {
        /// working, input_required, completed, failed or cancelled.
        #[arg(long, value_parser = parse_status)]
        status: Option<TaskStatus>,
        /// The tool's name at the root.
        #[arg(long)]
        tool: Option<String>,
        /// Created at least this long ago (90s, 10m, 2h).
        #[arg(long, value_parser = humantime::parse_duration)]
        older_than: Option<Duration>,
        /// Created at most this long ago.
        #[arg(long, value_parser = humantime::parse_duration)]
        newer_than: Option<Duration>,
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// One task: state, attempts, worker, timings, error (never its arguments or context).
    Inspect {
        /// The task id (one may begin with `-`).
        #[arg(allow_hyphen_values = true)]
        id: String,
    },
    /// Cancels a task, whoever submitted it; its run is told to stop.
    Cancel {
        /// The task id (one may begin with `-`).
        #[arg(allow_hyphen_values = true)]
        id: String,
    },
    /// Removes what expired, recovers runs whose worker is gone, forgets stale workers.
    Purge,
}

fn parse_status(text: &str) -> Result<TaskStatus, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).map_err(|_| {
        format!("{text:?} is not a status: working, input_required, completed, failed or cancelled")
    })
}

/// Where the requests go.
enum Engine {
    /// A store read directly.
    Direct(Operator),
    /// A server's admin routes.
    Admin {
        client: reqwest::Client,
        base: String,
        token: Option<String>,
    },
}

/// A failure, as printed.
struct Failure(String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(error.to_string())
    }
}

impl Engine {
    async fn open(url: &str, token: Option<String>) -> Result<Self, Failure> {
        if url.starts_with("http://") || url.starts_with("https://") {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?;
            return Ok(Engine::Admin {
                client,
                base: url.trim_end_matches('/').to_owned(),
                token,
            });
        }
        if url.starts_with("memory://") {
            return Err(Failure(
                "a memory:// engine lives inside its server: pass the server's admin URL \
                 (--url http://HOST:PORT/admin, served with the admin routes on)"
                    .to_owned(),
            ));
        }
        let config = TasksConfig::from_env().with_url(url);
        let connected = ferrymcp_tasks::connect(&config).await?;
        Ok(Engine::Direct(Operator::new(Arc::clone(
            &connected.backend,
        ))))
    }

    /// Sends `method` to `path` under the admin routes and reads the JSON answer.
    async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Option<T>, Failure> {
        let Engine::Admin {
            client,
            base,
            token,
        } = self
        else {
            return Err(Failure("not an admin URL".to_owned()));
        };
        let mut request = client
            .request(method, format!("{base}/api{path}"))
            .query(query)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|error| {
            Failure(format!(
                "cannot reach {}: {}",
                redacted_url(base),
                error.without_url()
            ))
        })?;
        let status = response.status();
        let body = response.bytes().await?;
        if status == reqwest::StatusCode::NOT_FOUND && !body.is_empty() {
            return Ok(None);
        }
        if !status.is_success() {
            let message = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|value| {
                    let value = value
                        .get("error")
                        .or_else(|| value.pointer("/error/message"))?;
                    value.as_str().map(str::to_owned)
                })
                .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(300).collect());
            return Err(Failure(format!("the server answered {status}: {message}")));
        }
        Ok(Some(serde_json::from_slice(&body).map_err(|error| {
            Failure(format!(
                "the server's answer is not what was expected: {error}"
            ))
        })?))
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, Failure> {
        self.call(reqwest::Method::GET, path, &[]).await
    }

    async fn status(&self) -> Result<FleetStatus, Failure> {
        match self {
            Engine::Direct(operator) => Ok(operator.status().await?),
            Engine::Admin { .. } => required(self.get("/status").await?),
        }
    }

    async fn tasks(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>, Failure> {
        match self {
            Engine::Direct(operator) => Ok(operator.tasks(filter).await?),
            Engine::Admin { .. } => {
                let mut query = vec![("limit", filter.limit.to_string())];
                if let Some(status) = filter.status {
                    query.push(("status", status_name(status)));
                }
                if let Some(tool) = &filter.tool {
                    query.push(("tool", tool.clone()));
                }
                if let Some(ms) = filter.older_than_ms {
                    query.push(("olderThanMs", ms.to_string()));
                }
                if let Some(ms) = filter.newer_than_ms {
                    query.push(("newerThanMs", ms.to_string()));
                }
                required(self.call(reqwest::Method::GET, "/tasks", &query).await?)
            }
        }
    }

    async fn inspect(&self, id: &str) -> Result<Option<TaskRecord>, Failure> {
        match self {
            Engine::Direct(operator) => Ok(operator.inspect(id).await?),
            Engine::Admin { .. } => self.get(&format!("/tasks/{}", path_segment(id))).await,
        }
    }

    async fn cancel(&self, id: &str) -> Result<Cancelled, Failure> {
        match self {
            Engine::Direct(operator) => Ok(operator.cancel(id).await?),
            Engine::Admin { .. } => {
                #[derive(serde::Deserialize)]
                struct Answer {
                    outcome: Cancelled,
                }
                let path = format!("/tasks/{}/cancel", path_segment(id));
                let answer: Option<Answer> = self.call(reqwest::Method::POST, &path, &[]).await?;
                Ok(answer.map_or(Cancelled::NotFound, |answer| answer.outcome))
            }
        }
    }

    async fn purge(&self) -> Result<PurgeReport, Failure> {
        match self {
            Engine::Direct(operator) => Ok(operator.purge().await?),
            Engine::Admin { .. } => {
                required(self.call(reqwest::Method::POST, "/purge", &[]).await?)
            }
        }
    }
}

fn required<T>(answer: Option<T>) -> Result<T, Failure> {
    answer.ok_or_else(|| Failure("the server has no such admin route".to_owned()))
}

/// A task id as one path segment (ids are URL-safe; anything else is escaped).
fn path_segment(id: &str) -> String {
    id.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn status_name(status: TaskStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn ms_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A duration for people: `850 ms`, `12.5 s`, `3 min`, `2.0 h`.
fn human(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..120_000 => format!("{:.1} s", ms as f64 / 1e3),
        120_000..7_200_000 => format!("{} min", ms / 60_000),
        _ => format!("{:.1} h", ms as f64 / 3.6e6),
    }
}

fn print_json(value: &impl Serialize) -> Result<(), Failure> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn print_status(status: &FleetStatus) {
    let tasks = &status.tasks;
    println!(
        "tasks: {} queued, {} running, {} waiting, {} finished (kept); {} ended in all",
        tasks.queued, tasks.running, tasks.waiting, tasks.finished, tasks.ended
    );
    println!(
        "workers: {} (stale when not heard from for over {})",
        status.workers.len(),
        human(status.lease_ms)
    );
    for worker in &status.workers {
        println!(
            "  {:<20} {:<24} runs {:>3}/{:<3} heard from {:>9} ago  {}",
            worker.presence.id,
            format!("{} (pid {})", worker.presence.host, worker.presence.pid),
            worker.presence.running,
            worker.presence.capacity,
            human(worker.age_ms),
            if worker.stale { "STALE" } else { "alive" }
        );
    }
}

fn print_tasks(tasks: &[TaskRecord], now_ms: u64) {
    println!(
        "{:<34} {:<15} {:<24} {:>9} {:>7}  WORKER",
        "ID", "STATUS", "TOOL", "AGE", "ATTEMPT"
    );
    for task in tasks {
        println!(
            "{:<34} {:<15} {:<24} {:>9} {:>3}/{:<3}  {}",
            task.id,
            status_name(task.status),
            task.tool,
            human(now_ms.saturating_sub(task.created_at_ms)),
            task.attempt,
            task.max_attempts,
            task.worker.as_deref().unwrap_or("-")
        );
    }
    println!("{} task(s)", tasks.len());
}

fn print_task(task: &TaskRecord, now_ms: u64) {
    let at = |ms: u64| format!("{} ({} ago)", rfc3339(ms), human(now_ms.saturating_sub(ms)));
    println!("id:        {}", task.id);
    println!("status:    {}", status_name(task.status));
    if let Some(message) = &task.status_message {
        println!("message:   {message}");
    }
    match &task.version {
        Some(version) => println!("tool:      {} {version}", task.tool),
        None => println!("tool:      {}", task.tool),
    }
    println!("caller:    {}", task.caller);
    println!("created:   {}", at(task.created_at_ms));
    println!("updated:   {}", at(task.updated_at_ms));
    if let Some(expires) = task.expires_at_ms {
        println!(
            "expires:   {} (in {})",
            rfc3339(expires),
            human(expires.saturating_sub(now_ms))
        );
    }
    println!("attempts:  {} of {}", task.attempt, task.max_attempts);
    println!("round:     {}", task.round);
    println!("queued:    {}", if task.queued { "yes" } else { "no" });
    if let Some(worker) = &task.worker {
        match task.lease_until_ms {
            Some(until) => println!(
                "worker:    {worker} (lease for {} more)",
                human(until.saturating_sub(now_ms))
            ),
            None => println!("worker:    {worker}"),
        }
    }
    if let Some(error) = &task.error {
        println!("error:     {error}");
    }
}

/// Unix milliseconds as an RFC 3339 UTC time.
fn rfc3339(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, ms_of)
}

async fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let engine = Engine::open(&cli.url, cli.token).await?;
    match cli.command {
        Command::Status => {
            let status = engine.status().await?;
            if cli.json {
                print_json(&status)?;
            } else {
                print_status(&status);
            }
        }
        Command::Tasks {
            status,
            tool,
            older_than,
            newer_than,
            limit,
        } => {
            let filter = TaskFilter {
                status,
                tool,
                older_than_ms: older_than.map(ms_of),
                newer_than_ms: newer_than.map(ms_of),
                limit,
            };
            let tasks = engine.tasks(&filter).await?;
            if cli.json {
                print_json(&tasks)?;
            } else {
                print_tasks(&tasks, now_ms());
            }
        }
        Command::Inspect { id } => {
            let Some(task) = engine.inspect(&id).await? else {
                return Err(Failure(format!("no task {id:?}")));
            };
            if cli.json {
                print_json(&task)?;
            } else {
                print_task(&task, now_ms());
            }
        }
        Command::Cancel { id } => {
            let outcome = engine.cancel(&id).await?;
            if cli.json {
                print_json(&serde_json::json!({ "id": id, "outcome": outcome }))?;
            } else {
                match outcome {
                    Cancelled::Cancelled => println!("cancelled {id}"),
                    Cancelled::AlreadyEnded => println!("{id} had already ended; nothing changed"),
                    Cancelled::NotFound => {}
                }
            }
            if outcome == Cancelled::NotFound {
                return Err(Failure(format!("no task {id:?}")));
            }
        }
        Command::Purge => {
            let report = engine.purge().await?;
            if cli.json {
                print_json(&report)?;
            } else {
                println!(
                    "tasks: {} before, {} after; {} stale worker(s) forgotten",
                    report.tasks_before, report.tasks_after, report.workers_forgotten
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(Failure(message)) => {
            eprintln!("ferrymcp-tasks: {message}");
            ExitCode::FAILURE
        }
    }
}
