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
//! | `ask_name()` | asks the user's name (an input round), then `"Hello, <name>!"` | optional |
//!
//! | resource, template or prompt | what |
//! |---|---|
//! | resource `demo://readme` | a short Markdown text about the demo |
//! | template `users://child/{id}/profile` | a JSON profile for user `id` (on the child) |
//! | prompt `child_greet(name, style?)` | a greeting request for a model (on the child) |
//!
//! A 2026-07-28 request that opts in to the tasks extension (in its `_meta`) gets a
//! `CreateTaskResult` for an optional or required tool, and polls `tasks/get`; without the
//! opt-in, optional tools run synchronously and `required_task` answers -32021. The engine
//! is configured by `MCP_TASKS_URL`, `MCP_TASKS_CONCURRENCY`, `MCP_TASKS_TTL_MS` and
//! `MCP_TASKS_POLL_INTERVAL_MS`.

use std::{net::SocketAddr, time::Duration};

use clap::Parser;
use mcpkit::{
    Args, Context, HttpConfig, HttpServer, InputRequired, Json, LogLevel, Outcome, PromptDef,
    ResourceDef, Server, ServerError, ToolDef, ToolError,
    tasks::TasksExtension,
    types::{InputRequest, TaskSupport},
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

#[derive(Deserialize, schemars::JsonSchema)]
struct UserId {
    /// The user's numeric id.
    id: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Greeting {
    /// Who to greet.
    name: String,
    /// The tone: "formal" or "casual" (the default).
    style: Option<String>,
}

#[derive(serde::Serialize)]
struct Profile {
    id: u32,
    name: String,
    admin: bool,
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
    // As a task this becomes the task's statusMessage; otherwise a progress notification.
    cx.report_progress(0.0, Some(capped), Some("sleeping".into()))
        .await;
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

/// Asks for the user's name with an elicitation round, then greets them. The same code runs
/// synchronously (an input round on the call) and as a task (`input_required`).
async fn ask_name(cx: Context) -> Result<Outcome<String>, ToolError> {
    if let Some(answer) = cx.input_responses().and_then(|r| r.get("name")) {
        let name = match answer["action"].as_str() {
            Some("accept") => answer["content"]["name"].as_str().unwrap_or("stranger"),
            _ => "stranger",
        };
        return Ok(Outcome::Done(format!("Hello, {name}!")));
    }
    cx.log(LogLevel::Info, "asking for the user's name").await;
    let ask: InputRequest = serde_json::from_value(serde_json::json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }
        }
    }))
    .map_err(ToolError::internal)?;
    Ok(Outcome::InputRequired(
        InputRequired::new()
            .request("name", ask)
            .with_state("asked-name"),
    ))
}

async fn readme() -> &'static str {
    "# mcpkit demo\n\nTools: add, parent_tool, sleep_task, required_task, ask_name and the \
     child's multiply and echo. Resource templates: users://child/{id}/profile. Prompts: \
     child_greet."
}

async fn profile(Args(UserId { id }): Args<UserId>) -> Json<Profile> {
    Json(Profile {
        id,
        name: format!("user-{id}"),
        admin: id == 1,
    })
}

async fn greet(Args(Greeting { name, style }): Args<Greeting>) -> String {
    match style.as_deref() {
        Some("formal") => format!("Write a formal greeting to {name}."),
        _ => format!("Write a friendly, casual greeting to {name}."),
    }
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
    child.add_resource(
        ResourceDef::new("users://{id}/profile", profile)
            .name("user_profile")
            .description("A user's profile")
            .mime_type("application/json"),
    )?;
    child
        .add_prompt(PromptDef::new("greet", greet).description("Asks a model to greet someone"))?;

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
    parent.add_tool(
        ToolDef::new("ask_name", ask_name)
            .description("Asks for your name, then greets you")
            .task(true),
    )?;
    parent.add_resource(
        ResourceDef::new("demo://readme", readme)
            .name("readme")
            .description("What this demo serves")
            .mime_type("text/markdown"),
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
