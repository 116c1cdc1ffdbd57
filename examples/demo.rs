//! The demo server: a parent with four tools and a child mounted under `child`, with the
//! SEP-2663 Tasks extension (`io.modelcontextprotocol/tasks`) on the parent.
//!
//! ```text
//! cargo run --example demo                          # stdio (the default)
//! cargo run --example demo -- --stdio
//! cargo run --example demo -- --http 127.0.0.1:8000 # Streamable HTTP at /mcp
//! # Several processes on one Redis (build with `--features redis`):
//! cargo run --features redis --example demo -- --http 127.0.0.1:8000 --tasks-url redis://127.0.0.1:6379/0 --no-worker
//! cargo run --features redis --example demo -- worker --tasks-url redis://127.0.0.1:6379/0
//! # Prometheus metrics at /metrics (a worker process: `worker --metrics 127.0.0.1:9464`):
//! cargo run --example demo -- --http 127.0.0.1:8000 --metrics
//! # The operators' dashboard at /admin, and its API (for `ferrymcp-tasks --url http://127.0.0.1:8000/admin`):
//! cargo run --example demo -- --http 127.0.0.1:8000 --admin
//! # Spans to an OpenTelemetry collector (build with `--features otlp`):
//! cargo run --features otlp --example demo -- --http 127.0.0.1:8000 --otlp http://127.0.0.1:4318/v1/traces
//! # OAuth: bearer tokens from an issuer, for this audience (this server's URL):
//! cargo run --example demo -- --http 127.0.0.1:8000 \
//!     --auth-issuer http://127.0.0.1:9000 --auth-audience http://127.0.0.1:8000/mcp
//! ```
//!
//! With `--auth-issuer` and `--auth-audience` (or `MCP_AUTH_ISSUER` and `MCP_AUTH_AUDIENCE`)
//! the HTTP endpoint is an OAuth 2.1 resource server: every request needs a JWT access
//! token from that issuer (keys from its discovery document) whose audience is this server;
//! the root's tools need nothing more, and the mounted child needs the scope `child`.
//!
//! | tool | what | task |
//! |---|---|---|
//! | `add(a, b)` | `a + b` | forbidden |
//! | `parent_tool(value)` | `value * 10` | optional |
//! | `sleep_task(seconds)` | sleeps (at most 60 s, cancellable; a cancellation is recorded in `MCP_DEMO_LEDGER`), then `"slept <seconds slept>"` | optional |
//! | `required_task(value)` | `value + 1` | required |
//! | `child_multiply(a, b)` | `a * b`, on the mounted child | optional |
//! | `child_echo(message)` | `message`, on the mounted child | forbidden |
//! | `count_task(key, millis)` | waits `millis`, records a run of `key` in `MCP_DEMO_LEDGER`, `"counted <key>"`; idempotent | optional |
//! | `once_task(key, millis)` | waits `millis` (cancellable), then records one run of `key` in `MCP_DEMO_LEDGER` as `once <key>`, `"done <key>"`; not idempotent | optional |
//! | `confirm_task(value)` | asks the client to confirm (one input round), then `value * 2` | optional |
//! | `ask_name()` | asks the user's name (an input round), then `"Hello, <name>!"` | optional |
//!
//! | resource, template or prompt | what |
//! |---|---|
//! | resource `demo://readme` | a short Markdown text about the demo |
//! | template `users://child/{id}/profile` | a JSON profile for user `id` (on the child); `id` (a number) completes to `1`, `7`, `42` |
//! | prompt `child_greet(name, style?)` | a greeting request for a model (on the child); `style` completes to `casual`, `formal` |
//!
//! A 2026-07-28 request that opts in to the tasks extension (in its `_meta`) gets a
//! `CreateTaskResult` for an optional or required tool, and polls `tasks/get`; without the
//! opt-in, optional tools run synchronously and `required_task` answers -32021. The engine
//! is configured by `MCP_TASKS_URL`, `MCP_TASKS_CONCURRENCY`, `MCP_TASKS_TTL_MS` and
//! `MCP_TASKS_POLL_INTERVAL_MS`.
//!
//! The root and the child each carry a middleware around task runs (`on_run_tool`): it
//! logs every run where it happens (the worker's process), and with `MCP_DEMO_RUN_LOG` set
//! also appends `<server>:before <tool> <task> <client>` and `<server>:after <tool> <task>
//! <ok|error>` lines to that file (`<client>` is the submitter's OAuth client id, or
//! `anonymous`).

use std::{net::SocketAddr, time::Duration};

use clap::{Parser, Subcommand};
use ferrymcp::{
    Args, Context, Elicitation, HttpConfig, HttpServer, Json, LogLevel, Middleware, MountOptions,
    Next, PromptDef, ResourceDef, RunTool, Server, ServerError, StdioConfig, ToolDef, ToolError,
    auth::{
        ResourceServer,
        verify::{CachedVerifier, JwtVerifier},
    },
    completion::Completion,
    metrics::MetricsExporter,
    tasks::{TasksConfig, TasksExtension, Worker, admin::Admin, backend::TaskBackend},
    types::{CallToolResponse, ErrorData, TaskSupport},
};
use serde::Deserialize;

#[derive(Parser, Debug)]
#[command(about = "The ferrymcp demo server")]
struct Cli {
    /// Serve one client over stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve Streamable HTTP on this address, at /mcp (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Where tasks live: memory:// (default) or redis://host:port/db (overrides MCP_TASKS_URL).
    #[arg(long, value_name = "URL", global = true)]
    tasks_url: Option<String>,
    /// On stdio: the longest line accepted, in bytes (default 16 MiB); a longer one is
    /// answered -32700 and skipped.
    #[arg(long, value_name = "BYTES", conflicts_with = "http")]
    max_line_bytes: Option<usize>,
    /// Serve without an embedded worker: tasks run in `worker` processes.
    #[arg(long)]
    no_worker: bool,
    /// On HTTP: accept only bearer tokens (JWT) from this OAuth issuer, with the keys of its
    /// discovery document. Needs --auth-audience.
    #[arg(
        long,
        value_name = "URL",
        env = "MCP_AUTH_ISSUER",
        requires = "auth_audience",
        requires = "http"
    )]
    auth_issuer: Option<String>,
    /// On HTTP: this server's canonical URL as clients reach it (the tokens' audience and
    /// the base of the advertised metadata), such as https://mcp.example.com/mcp.
    #[arg(
        long,
        value_name = "URL",
        env = "MCP_AUTH_AUDIENCE",
        requires = "auth_issuer"
    )]
    auth_audience: Option<String>,
    /// On HTTP: serve Prometheus metrics at /metrics on the same address.
    #[arg(long, requires = "http")]
    metrics: bool,
    /// On HTTP: serve the operators' dashboard at /admin and its API at /admin/api, behind
    /// the endpoint's Host and Origin checks (and with OAuth, tokens with the scope mcp:admin).
    #[arg(long, requires = "http")]
    admin: bool,
    /// Export spans (requests, task runs) over OTLP/HTTP to this collector URL, such as
    /// http://127.0.0.1:4318/v1/traces (build with `--features otlp`).
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "URL", global = true)]
    otlp: Option<String>,
    /// With --otlp: the share of traces kept when the caller did not decide (1 keeps all;
    /// a caller's sampled `traceparent` is always kept).
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "RATIO", default_value_t = 1.0, global = true)]
    otlp_sample: f64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run tasks of the demo's tools from the queue --tasks-url names, serving no client.
    Worker {
        /// How many tasks to run at once (overrides MCP_TASKS_CONCURRENCY).
        #[arg(long)]
        concurrency: Option<usize>,
        /// Serve Prometheus metrics at http://ADDR/metrics (port 0 picks a free port).
        #[arg(long, value_name = "ADDR")]
        metrics: Option<SocketAddr>,
    },
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
    let _watch = watch_cancellation(&cx, format!("cancelled sleep_task {seconds}"));
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(capped)) => Ok(format!("slept {capped}")),
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

/// The answer `ask_name` asks for: its schema is the elicitation's `requestedSchema`.
#[derive(Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// Asks for the user's name with a typed elicitation, then greets them. The same code runs
/// on 2026-07-28 (an input round on the call), on 2025-11-25 (an `elicitation/create`
/// request to the client) and as a task (`input_required`).
async fn ask_name(cx: Context) -> Result<String, ToolError> {
    if cx.input_responses().is_none() {
        cx.log(LogLevel::Info, "asking for the user's name").await;
    }
    // The key "name" is the one clients of this demo answer under.
    let name = match cx
        .elicit_keyed::<Name>("name", "What is your name?")
        .await?
    {
        Elicitation::Accepted(Name { name }) => name,
        Elicitation::Declined | Elicitation::Cancelled => "stranger".to_owned(),
    };
    Ok(format!("Hello, {name}!"))
}

async fn readme() -> &'static str {
    "# ferrymcp demo\n\nTools: add, parent_tool, sleep_task, required_task, ask_name and the \
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
/// The demo's tree; its tasks extension uses `backend` when given (so the admin routes see the
/// same store), else connects the one `config` names.
fn demo_server(
    config: TasksConfig,
    auth: bool,
    backend: Option<std::sync::Arc<dyn TaskBackend>>,
) -> Result<Server, ServerError> {
    let child = Server::new("child");
    child.add_tool(
        ToolDef::new("multiply", multiply)
            .description("Multiplies two integers")
            .task(true),
    )?;
    child.add_tool(ToolDef::new("echo", echo).description("Returns the message"))?;
    child.add_middleware(RunAudit("child"));
    child.add_resource(
        ResourceDef::new("users://{id}/profile", profile)
            .name("user_profile")
            .description("A user's profile")
            .mime_type("application/json")
            .complete(
                "id",
                |c: Completion| async move { c.matching(["1", "7", "42"]) },
            ),
    )?;
    child.add_prompt(
        PromptDef::new("greet", greet)
            .description("Asks a model to greet someone")
            .complete("style", |c: Completion| async move {
                c.matching(["casual", "formal"])
            }),
    )?;

    let parent = Server::new("demo");
    parent.set_version(env!("CARGO_PKG_VERSION"));
    parent.set_instructions("A demo of ferrymcp: arithmetic, a sleeper, and a mounted child.");
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
    let mount = MountOptions::new().namespace("child");
    // With OAuth on, the whole child needs the scope `child`.
    parent.mount(
        &child,
        if auth {
            mount.requires(["child"])
        } else {
            mount
        },
    )?;
    add_distributed_demo_tools(&parent)?;
    parent.add_middleware(RunAudit("demo"));
    let tasks = TasksExtension::with_config(config);
    parent.add_extension(match backend {
        Some(backend) => tasks.with_backend(backend),
        None => tasks,
    })?;
    Ok(parent)
}

/// With `--features mimalloc`, the allocator `ferrymcp-gateway` ships with (the benchmarks
/// against the floor build both servers on it, and both on the system allocator).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // The error as its message reads (which setting to change), not its `Debug` form.
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let _otlp = telemetry(&cli)?;
    let mut config = TasksConfig::from_env();
    if let Some(url) = &cli.tasks_url {
        config = config.with_url(url.clone());
    }
    if cli.no_worker {
        config = config.with_embedded_worker(false);
    }
    if let Some(Command::Worker {
        concurrency,
        metrics,
    }) = cli.command
    {
        if let Some(concurrency) = concurrency {
            config = config.with_concurrency(concurrency);
        }
        let worker =
            Worker::from_config(demo_server(config.clone(), false, None)?, &config).await?;
        eprintln!(
            "worker {} running tasks from {}",
            worker.id().as_str(),
            ferrymcp::tasks::redacted_url(&config.url)
        );
        let stop_metrics = tokio_util::sync::CancellationToken::new();
        if let Some(addr) = metrics {
            let exporter = MetricsExporter::install()?;
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!("metrics on http://{}/metrics", listener.local_addr()?);
            let stop = stop_metrics.clone().cancelled_owned();
            tokio::spawn(async move { exporter.serve(listener, "/metrics", stop).await });
        }
        worker.run_until_signal().await;
        stop_metrics.cancel();
        return Ok(());
    }
    let auth = cli.auth_issuer.zip(cli.auth_audience);
    // The admin routes read the store the tasks extension uses.
    let admin = match cli.admin {
        true => Some(ferrymcp::tasks::connect(&config).await?.backend),
        false => None,
    };
    let server = demo_server(config, auth.is_some(), admin.clone())?;
    let has_admin = admin.is_some();
    match cli.http {
        Some(addr) => {
            let mut http_config = HttpConfig::new();
            if let Some((issuer, audience)) = auth {
                http_config = http_config.auth(resource_server(&issuer, &audience)?);
                eprintln!("OAuth: tokens from {issuer} for {audience}");
            }
            let mut http = HttpServer::bind(server, addr, http_config).await?;
            let base = format!("http://{}", http.local_addr());
            if cli.metrics {
                http = http.merge(MetricsExporter::install()?.router("/metrics"));
            }
            if let Some(backend) = admin {
                http = http.merge_operator_routes(Admin::new(backend).router("/admin"));
            }
            // Said once the task store is reached: a store that cannot be is an error first.
            let started = http.start().await?;
            eprintln!("listening on {base}/mcp");
            if cli.metrics {
                eprintln!("metrics on {base}/metrics");
            }
            if has_admin {
                eprintln!("admin on {base}/admin");
            }
            started.run_until(ferrymcp::shutdown_signal()).await?;
        }
        None => {
            let mut stdio = StdioConfig::new();
            if let Some(bytes) = cli.max_line_bytes {
                stdio = stdio.max_line_bytes(bytes);
            }
            // Returns once stdin ends and the requests in flight are answered: exit 0.
            server.serve_stdio_with(stdio).await?;
        }
    }
    Ok(())
}

/// Logs to stderr (on stdio, stdout carries only protocol messages), filtered by `RUST_LOG`;
/// with `--otlp` (feature `otlp`), the spans of sampled requests are also exported there. The
/// returned exporter flushes its last spans when dropped at exit.
fn telemetry(cli: &Cli) -> Result<Option<OtlpGuard>, Box<dyn std::error::Error>> {
    use tracing_subscriber::{Layer as _, prelude::*};
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp::service=error".into()),
        );
    #[cfg(feature = "otlp")]
    if let Some(endpoint) = &cli.otlp {
        let otlp = ferrymcp::trace_context::OtlpTracing::install(endpoint, "ferrymcp-demo")?
            .with_sampling(cli.otlp_sample);
        let spans = otlp.layer();
        tracing_subscriber::registry().with(logs).with(spans).init();
        return Ok(Some(OtlpGuard(Some(otlp))));
    }
    let _ = cli;
    tracing_subscriber::registry().with(logs).init();
    Ok(None)
}

/// Flushes the OTLP exporter's last spans when the demo exits.
struct OtlpGuard(#[cfg(feature = "otlp")] Option<ferrymcp::trace_context::OtlpTracing>);

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(otlp) = self.0.take() {
            otlp.shutdown();
        }
    }
}

/// The resource server of `--auth-issuer`/`--auth-audience`: JWTs from `issuer` (keys from
/// its discovery document) for `audience`, verified once per token and then cached.
fn resource_server(
    issuer: &str,
    audience: &str,
) -> Result<ResourceServer, Box<dyn std::error::Error>> {
    let verifier = JwtVerifier::builder(issuer).audience(audience).build()?;
    Ok(
        ResourceServer::new(audience, CachedVerifier::new(verifier))?
            .authorization_server(issuer)?
            .scopes_supported(["child"])
            .resource_name("ferrymcp demo"),
    )
}

// ---------------------------------------------------------------------------------------------
// Tools for the distributed (Redis) demo and its multi-process tests: an idempotent tool that
// records its runs, and a tool with one input round.

#[derive(Deserialize, schemars::JsonSchema)]
struct Count {
    /// What to count a run of.
    key: String,
    /// How long the run takes, in milliseconds (at most 60 000).
    #[serde(default)]
    millis: u64,
}

/// Around every task run at one server: a log line where the run happens, and lines in the
/// file `MCP_DEMO_RUN_LOG` names (if any).
struct RunAudit(&'static str);

#[async_trait::async_trait]
impl Middleware for RunAudit {
    async fn on_run_tool(
        &self,
        run: RunTool,
        next: Next<'_, RunTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (server, tool, task) = (self.0, run.tool().name().to_owned(), run.id().to_owned());
        let client = run
            .principal()
            .map_or_else(|| "anonymous".to_owned(), |p| p.client_id.clone());
        audit(&format!("{server}:before {tool} {task} {client}"));
        let started = std::time::Instant::now();
        let outcome = next.run(run).await;
        let ok = if outcome.is_ok() { "ok" } else { "error" };
        tracing::info!(server, %tool, %task, %client, elapsed = ?started.elapsed(), ok, "task run");
        audit(&format!("{server}:after {tool} {task} {ok}"));
        outcome
    }
}

/// Appends `line` to the file `MCP_DEMO_RUN_LOG` names, if any.
fn audit(line: &str) {
    if let Ok(path) = std::env::var("MCP_DEMO_RUN_LOG") {
        append_line(&path, line);
    }
}

/// Appends `line` to the file `MCP_DEMO_LEDGER` names, if any (one short `O_APPEND` write:
/// atomic whatever other processes write). `false` when it could not be written.
fn record_in_ledger(line: &str) -> bool {
    match std::env::var("MCP_DEMO_LEDGER") {
        Ok(path) => append_line(&path, line),
        Err(_) => true,
    }
}

/// One short `O_APPEND` write of `line` to `path` (atomic whatever other processes write).
fn append_line(path: &str, line: &str) -> bool {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()))
        .is_ok()
}

/// Records `line` in the ledger if the run's cancellation token fires while the returned
/// guard lives. The watch outlives the tool's future (a worker drops the future of a
/// cancelled run), so it shows the token firing even then.
fn watch_cancellation(cx: &Context, line: String) -> tokio::sync::oneshot::Sender<()> {
    let (alive, ended) = tokio::sync::oneshot::channel::<()>();
    let token = cx.cancellation().clone();
    tokio::spawn(async move {
        tokio::select! {
            biased;
            () = token.cancelled() => {
                record_in_ledger(&line);
            }
            _ = ended => {
                // The run ended; a cancel that fired just before the guard dropped still counts.
                if token.is_cancelled() {
                    record_in_ledger(&line);
                }
            }
        }
    });
    alive
}

/// Waits `millis` (cancellable), appends `<key>\n` to the file `MCP_DEMO_LEDGER` names (if
/// any), and answers `"counted <key>"`. Declared idempotent, so a run lost with its worker is
/// started again elsewhere.
async fn count_task(
    cx: Context,
    Args(Count { key, millis }): Args<Count>,
) -> Result<String, ToolError> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(millis.min(60_000))) => {}
        () = cx.cancellation().cancelled() => return Err(ToolError::new("cancelled")),
    }
    if !record_in_ledger(&key) {
        return Err(ToolError::new("cannot write the ledger (MCP_DEMO_LEDGER)"));
    }
    Ok(format!("counted {key}"))
}

/// Waits `millis` (cancellable), then appends `once <key>\n` to the file `MCP_DEMO_LEDGER`
/// names (if any) and answers `"done <key>"`: a side effect per execution. Not idempotent,
/// so a run lost with its worker is not started again (the task fails instead).
async fn once_task(
    cx: Context,
    Args(Count { key, millis }): Args<Count>,
) -> Result<String, ToolError> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(millis.min(60_000))) => {}
        () = cx.cancellation().cancelled() => return Err(ToolError::new("cancelled")),
    }
    if !record_in_ledger(&format!("once {key}")) {
        return Err(ToolError::new("cannot write the ledger (MCP_DEMO_LEDGER)"));
    }
    Ok(format!("done {key}"))
}

/// Asks the client to confirm (`{"ok": "yes"}`), then answers `value * 2`.
async fn confirm_task(
    cx: Context,
    Args(Value { value }): Args<Value>,
) -> Result<ferrymcp::Outcome<i64>, ToolError> {
    let confirmed = cx
        .input_responses()
        .and_then(|answers| answers.get("confirm").cloned())
        .and_then(|answer| {
            answer
                .get("content")?
                .get("ok")?
                .as_str()
                .map(str::to_owned)
        });
    match confirmed {
        Some(_) => Ok(ferrymcp::Outcome::Done(
            value.checked_mul(2).ok_or_else(overflow)?,
        )),
        None => {
            let request = serde_json::from_value(serde_json::json!({
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": format!("Double {value}?"),
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"ok": {"type": "string"}},
                        "required": ["ok"]
                    }
                }
            }))
            .map_err(|e| ToolError::new(format!("building the input request: {e}")))?;
            Ok(ferrymcp::Outcome::InputRequired(
                ferrymcp::InputRequired::new().request("confirm", request),
            ))
        }
    }
}

fn add_distributed_demo_tools(parent: &Server) -> Result<(), ServerError> {
    parent.add_tool(
        ToolDef::new("count_task", count_task)
            .description("Records a run of `key` (idempotent)")
            .annotations(ferrymcp::types::ToolAnnotations::new().idempotent(true))
            .task(true),
    )?;
    parent.add_tool(
        ToolDef::new("once_task", once_task)
            .description("Records one run of `key` per execution (not idempotent)")
            .task(true),
    )?;
    parent.add_tool(
        ToolDef::new("confirm_task", confirm_task)
            .description("Asks for confirmation, then doubles the value")
            .task(true),
    )?;
    Ok(())
}
