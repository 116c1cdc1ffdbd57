//! The demo server: a parent with four tools and a child mounted under `child`, with the
//! SEP-2663 Tasks extension (`io.modelcontextprotocol/tasks`) on the parent.
//!
//! ```text
//! cargo run --example demo                          # stdio (the default)
//! cargo run --example demo -- --stdio
//! cargo run --example demo -- --http 127.0.0.1:8000 # Streamable HTTP at /mcp
//! ```
//!
//! | tool | what | task |
//! |---|---|---|
//! | `add(a, b)` | `a + b` | forbidden |
//! | `parent_tool(value)` | `value * 10` | optional |
//! | `sleep_task(seconds)` | sleeps (at most 60 s, cancellable), then `"slept <seconds>"` | optional |
//! | `required_task(value)` | `value + 1` | required |
//! | `child_multiply(a, b)` | `a * b`, on the mounted child | optional |
//! | `child_echo(message)` | `message`, on the mounted child | forbidden |
//!
//! A 2026-07-28 request that opts in to the tasks extension (in its `_meta`) gets a
//! `CreateTaskResult` for an optional or required tool, and polls `tasks/get`; without the
//! opt-in, optional tools run synchronously and `required_task` answers -32021. The engine
//! is configured by `MCP_TASKS_URL`, `MCP_TASKS_CONCURRENCY`, `MCP_TASKS_TTL_MS` and
//! `MCP_TASKS_POLL_INTERVAL_MS`.

use std::{net::SocketAddr, time::Duration};

use clap::Parser;
use mcpkit::{
    Args, Context, HttpConfig, HttpServer, Server, ServerError, ToolDef, ToolError,
    tasks::TasksExtension, types::TaskSupport,
};
use serde::Deserialize;

#[derive(Parser, Debug)]
#[command(about = "The mcpkit demo server")]
struct Cli {
    /// Serve one client over stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve Streamable HTTP on this address, at /mcp (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    /// The first operand.
    a: i64,
    /// The second operand.
    b: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Value {
    /// An integer.
    value: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Sleep {
    /// How long to sleep, in seconds (at most 60).
    seconds: f64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Message {
    /// The text to send back.
    message: String,
}

fn overflow() -> ToolError {
    ToolError::new("the result does not fit in a 64-bit integer")
}

async fn add(Args(Pair { a, b }): Args<Pair>) -> Result<i64, ToolError> {
    a.checked_add(b).ok_or_else(overflow)
}

async fn parent_tool(Args(Value { value }): Args<Value>) -> Result<i64, ToolError> {
    value.checked_mul(10).ok_or_else(overflow)
}

async fn sleep_task(
    cx: Context,
    Args(Sleep { seconds }): Args<Sleep>,
) -> Result<String, ToolError> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(ToolError::new(
            "seconds must be a finite, non-negative number",
        ));
    }
    let capped = seconds.min(60.0);
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(capped)) => Ok(format!("slept {seconds}")),
        () = cx.cancellation().cancelled() => Err(ToolError::new("cancelled")),
    }
}

async fn required_task(Args(Value { value }): Args<Value>) -> Result<i64, ToolError> {
    value.checked_add(1).ok_or_else(overflow)
}

async fn multiply(Args(Pair { a, b }): Args<Pair>) -> Result<i64, ToolError> {
    a.checked_mul(b).ok_or_else(overflow)
}

async fn echo(Args(Message { message }): Args<Message>) -> String {
    message
}

/// The demo tree, with the tasks extension on the root. Task modes: `parent_tool`,
/// `sleep_task` and `child_multiply` optional; `required_task` required; `add` and
/// `child_echo` forbidden.
fn demo_server() -> Result<Server, ServerError> {
    let child = Server::new("child");
    child.add_tool(
        ToolDef::new("multiply", multiply)
            .description("Multiplies two integers")
            .task(true),
    )?;
    child.add_tool(ToolDef::new("echo", echo).description("Returns the message"))?;

    let parent = Server::new("demo")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_instructions("A demo of mcpkit: arithmetic, a sleeper, and a mounted child.");
    parent.add_tool(ToolDef::new("add", add).description("Adds two integers"))?;
    parent.add_tool(
        ToolDef::new("parent_tool", parent_tool)
            .description("Multiplies by ten")
            .task(true),
    )?;
    parent.add_tool(
        ToolDef::new("sleep_task", sleep_task)
            .description("Sleeps (at most 60 s), then reports")
            .task(true),
    )?;
    parent.add_tool(
        ToolDef::new("required_task", required_task)
            .description("Adds one")
            .task(TaskSupport::Required),
    )?;
    parent.mount(&child, "child")?;
    parent.add_extension(TasksExtension::new())?;
    Ok(parent)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: on stdio, stdout carries only protocol messages.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp::service=error".into()),
        )
        .init();

    let cli = Cli::parse();
    let server = demo_server()?;
    match cli.http {
        Some(addr) => {
            let http = HttpServer::bind(server, addr, HttpConfig::new()).await?;
            eprintln!("listening on http://{}/mcp", http.local_addr());
            http.run_until(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
