//! Background tasks: a tool marked `task` runs in the background for a client that asks
//! for a task (SEP-2663, `io.modelcontextprotocol/tasks`), on the embedded in-memory
//! engine, and runs inline for one that does not.
//!
//! `cargo run --example tasks -- 127.0.0.1:8000`. `MCP_TASKS_URL=redis://...` (with the
//! `redis` feature) moves the engine to Redis; see `examples/redis_workers.rs`.

use std::time::Duration;

use ferrymcp::{Server, tasks::TasksExtension, tool};

/// Squares `n` slowly.
#[tool(task)]
async fn slow_square(
    /// The number to square
    n: u64,
    /// How long to take, in milliseconds (at most 10 000)
    #[arg(default)]
    millis: u64,
) -> u64 {
    tokio::time::sleep(Duration::from_millis(millis.min(10_000))).await;
    n * n
}

/// Only runs as a task.
#[tool(task = "required")]
async fn report() -> String {
    "a long report".into()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8000".into());
    let server = Server::new("tasks");
    server.add_tool(slow_square)?;
    server.add_tool(report)?;
    server.add_extension(TasksExtension::from_env())?;
    server.serve_http(address).await?;
    Ok(())
}
