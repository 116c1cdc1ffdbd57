//! Background tasks on Redis, run by worker processes: the server only accepts tasks and
//! answers `tasks/*`; any number of `worker` processes (on any machine that reaches the same
//! Redis) run them. A worker killed mid-run loses no task: its lease lapses and another
//! worker takes the run over.
//!
//! ```sh
//! cargo run --features redis --example redis_workers -- serve 127.0.0.1:8000
//! cargo run --features redis --example redis_workers -- worker   # as many as you like
//! ```
//!
//! `MCP_TASKS_URL` names the Redis (`redis://127.0.0.1:6379/0` by default; add
//! `?queue=<name>` to keep apps apart), and the other `MCP_TASKS_*` settings apply.

use ferrymcp::{
    Server, ServerError,
    tasks::{TasksConfig, TasksExtension, Worker},
    tool,
};

/// Squares `n` in the background and says which process did it.
#[tool(task = "required")]
async fn square(n: u64) -> String {
    format!(
        "{n} squared is {} (process {})",
        n.saturating_mul(n),
        std::process::id()
    )
}

/// The tree both kinds of process hold: a worker resolves a task's tool in it as the server
/// did when it accepted the task.
fn app(config: TasksConfig) -> Result<Server, ServerError> {
    let server = Server::new("workers");
    server.add_tool(square)?;
    server.add_extension(TasksExtension::with_config(config))?;
    Ok(server)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "serve".into());
    let url = std::env::var("MCP_TASKS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
    let config = TasksConfig::from_env().with_url(url);
    match mode.as_str() {
        "serve" => {
            let address = args.next().unwrap_or_else(|| "127.0.0.1:8000".into());
            // No embedded worker: runs happen in the worker processes.
            app(config.clone().with_embedded_worker(false))?
                .serve_http(address)
                .await?;
        }
        "worker" => {
            // Claims runs until SIGINT or SIGTERM, then lets the runs in flight finish.
            Worker::from_config(app(config.clone())?, &config)
                .await?
                .run_until_signal()
                .await;
        }
        other => return Err(format!("unknown mode {other:?}: serve or worker").into()),
    }
    Ok(())
}
