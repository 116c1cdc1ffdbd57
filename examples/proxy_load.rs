//! A load driver for the proxy hop: `tools/call` over Streamable HTTP, straight to a server
//! and through an `ferrymcp-proxy` gateway in front of that same server, side by side in one run.
//! See the "Proxy hop" section of BENCHMARKS.md.
//!
//! ```text
//! cargo run --release --example proxy_load
//! cargo run --release --example proxy_load -- --calls 5000 --concurrency 32 --seconds 5
//! cargo run --release --example proxy_load --features mimalloc   # ferrymcp-gateway's allocator
//! ```
//!
//! The upstream is an in-process `Server` with `add(a, b)`, served by `HttpServer` on
//! 127.0.0.1. The gateway is another `Server` on 127.0.0.1 with a `ProxyServer` of the
//! upstream mounted under `up`, so `up_add`; its calls go out as single POSTs (the upstream
//! speaks 2026-07-28). Both
//! servers and the clients run on one tokio runtime with `--threads` workers (2 by default):
//! they share the machine's cores. Clients are raw `reqwest` POSTs in the 2026-07-28 style
//! (`mcp-protocol-version`, `mcp-method`, `mcp-name` headers and `_meta`), one client (one
//! keep-alive connection) per caller. Each row: `--warmup` unrecorded calls, then 1 caller for
//! `--calls` sequential calls, or `--concurrency` callers looping for `--seconds`. The direct
//! and proxied rows alternate (direct, proxied, direct, proxied) so drift hits both. Last, two
//! attribution rows with 1 caller: the proxy's upstream client alone, and the gateway called
//! in process (no front HTTP).

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use clap::Parser;
use ferrymcp::{Args, CancellationToken, HttpConfig, HttpServer, Server, ToolDef, ToolError};
use ferrymcp_proxy::{HttpTarget, ProxyServer, RequestOptions, Upstream};
use serde::Deserialize;
use serde_json::{Value, json};

/// With `--features mimalloc`, the allocator `ferrymcp-gateway` ships with.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Parser, Debug, Clone)]
#[command(about = "tools/call over HTTP: direct vs through an ferrymcp-proxy gateway")]
struct Cli {
    /// Sequential calls in the 1-caller rows.
    #[arg(long, default_value_t = 5000)]
    calls: usize,
    /// Callers in the concurrent rows.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Duration of each concurrent row, in seconds.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Unrecorded calls before each row.
    #[arg(long, default_value_t = 500)]
    warmup: usize,
    /// Tokio worker threads (servers and clients share them).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Per-call timeout, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Measure servers running elsewhere instead of in process: the upstream's URL (its tool
    /// `add`) ...
    #[arg(long, requires = "gateway_url", value_name = "URL")]
    upstream_url: Option<String>,
    /// ... and the URL of a gateway in front of it (see `--gateway-tool`).
    #[arg(long, requires = "upstream_url", value_name = "URL")]
    gateway_url: Option<String>,
    /// The gateway's name for the upstream's `add`, with `--gateway-url`.
    #[arg(long, default_value = "up_add")]
    gateway_tool: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

async fn add(Args(Pair { a, b }): Args<Pair>) -> Result<i64, ToolError> {
    a.checked_add(b)
        .ok_or_else(|| ToolError::new("the sum does not fit in 64 bits"))
}

async fn serve(server: Server, stop: &CancellationToken) -> Result<String, Error> {
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new()).await?;
    let url = format!("http://{}/mcp", http.local_addr());
    let stop = stop.clone();
    tokio::spawn(async move { http.run_until(stop.cancelled_owned()).await });
    Ok(url)
}

/// One caller: a keep-alive connection and the 2026-07-28 request shape.
struct Caller {
    client: reqwest::Client,
    url: String,
    tool: String,
    next_id: u64,
    timeout: Duration,
}

impl Caller {
    fn new(url: &str, tool: &str, timeout: Duration) -> Result<Self, Error> {
        Ok(Self {
            client: reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(1)
                .build()?,
            url: url.to_owned(),
            tool: tool.to_owned(),
            next_id: 0,
            timeout,
        })
    }

    async fn call(&mut self) -> Result<(), Error> {
        self.next_id += 1;
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {
                "name": self.tool,
                "arguments": {"a": 40, "b": 2},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "proxy_load", "version": "0"},
                },
            },
        });
        let response = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", &self.tool)
            .json(&body)
            .timeout(self.timeout)
            .send()
            .await?;
        let status = response.status();
        let answer: Value = response.json().await?;
        if !status.is_success() || answer["result"]["structuredContent"]["result"] != 42 {
            return Err(format!("{} answered {status}: {answer}", self.tool).into());
        }
        Ok(())
    }
}

/// One row's figures.
struct Row {
    case: String,
    samples: Vec<Duration>,
    elapsed: Duration,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn run_row(
    case: String,
    url: &str,
    tool: &str,
    callers: usize,
    count: usize,
    duration: Duration,
    cli: &Cli,
) -> Result<Row, Error> {
    let timeout = Duration::from_millis(cli.timeout_ms);
    let mut warm = Caller::new(url, tool, timeout)?;
    for _ in 0..cli.warmup {
        warm.call().await?;
    }
    let claimed = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(callers);
    for _ in 0..callers {
        let mut caller = Caller::new(url, tool, timeout)?;
        let claimed = Arc::clone(&claimed);
        handles.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while claimed.fetch_add(1, Ordering::Relaxed) < count && start.elapsed() < duration {
                let began = Instant::now();
                caller.call().await?;
                samples.push(began.elapsed());
            }
            Ok::<_, Error>(samples)
        }));
    }
    let mut samples = Vec::new();
    for handle in handles {
        samples.extend(handle.await??);
    }
    let elapsed = start.elapsed();
    samples.sort_unstable();
    Ok(Row {
        case,
        samples,
        elapsed,
    })
}

/// `--warmup` unrecorded then `--calls` recorded sequential runs of `call`, sorted.
async fn sample<F, Fut>(cli: &Cli, mut call: F) -> Result<Vec<Duration>, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    let mut samples = Vec::with_capacity(cli.calls);
    for i in 0..cli.warmup + cli.calls {
        let began = Instant::now();
        call().await?;
        if i >= cli.warmup {
            samples.push(began.elapsed());
        }
    }
    samples.sort_unstable();
    Ok(samples)
}

fn micros(d: Duration) -> String {
    format!("{} µs", d.as_micros())
}

fn print_rows(rows: &[Row]) {
    println!("| case | calls | p50 | p99 | max | per s |");
    println!("|---|---:|---:|---:|---:|---:|");
    for row in rows {
        println!(
            "| {} | {} | {} | {} | {} | {:.0} |",
            row.case,
            row.samples.len(),
            micros(percentile(&row.samples, 50.0)),
            micros(percentile(&row.samples, 99.0)),
            micros(row.samples.last().copied().unwrap_or_default()),
            row.samples.len() as f64 / row.elapsed.as_secs_f64(),
        );
    }
    println!();
    println!("| hop added | p50 | p99 |");
    println!("|---|---:|---:|");
    for pair in rows.chunks(2) {
        if let [direct, proxied] = pair {
            let delta = |p| {
                let d = percentile(&proxied.samples, p).as_micros() as i128
                    - percentile(&direct.samples, p).as_micros() as i128;
                format!("{d} µs")
            };
            println!("| {} | {} | {} |", proxied.case, delta(50.0), delta(99.0));
        }
    }
}

/// The direct and proxied rows, alternating, for 1 caller then `--concurrency` callers.
async fn compare(
    cli: &Cli,
    upstream_url: &str,
    gateway_url: &str,
    gateway_tool: &str,
) -> Result<Vec<Row>, Error> {
    let sequential = Duration::from_secs(3600);
    let concurrent = Duration::from_secs_f64(cli.seconds);
    let mut rows = Vec::new();
    for (callers, count, duration) in [
        (1, cli.calls, sequential),
        (cli.concurrency, usize::MAX, concurrent),
    ] {
        let shape = if callers == 1 {
            format!("1 caller, {count} sequential")
        } else {
            format!("{callers} callers, {} s", cli.seconds)
        };
        rows.push(
            run_row(
                format!("direct, {shape}"),
                upstream_url,
                "add",
                callers,
                count,
                duration,
                cli,
            )
            .await?,
        );
        rows.push(
            run_row(
                format!("through the proxy, {shape}"),
                gateway_url,
                gateway_tool,
                callers,
                count,
                duration,
                cli,
            )
            .await?,
        );
    }
    Ok(rows)
}

async fn run(cli: Cli) -> Result<(), Error> {
    if let (Some(upstream_url), Some(gateway_url)) = (&cli.upstream_url, &cli.gateway_url) {
        let rows = compare(&cli, upstream_url, gateway_url, &cli.gateway_tool).await?;
        print_rows(&rows);
        return Ok(());
    }
    let stop = CancellationToken::new();
    let upstream = Server::new("upstream");
    upstream.add_tool(ToolDef::new("add", add))?;
    let upstream_url = serve(upstream, &stop).await?;

    let proxy = ProxyServer::new(Upstream::http("upstream", HttpTarget::new(&upstream_url)))
        .build()
        .await?;
    let gateway = Server::new("gateway");
    gateway.mount(&proxy, "up")?;
    let gateway_url = serve(gateway.clone(), &stop).await?;

    let rows = compare(&cli, &upstream_url, &gateway_url, "up_add").await?;
    print_rows(&rows);

    // Attribution, 1 caller each: the proxy's upstream client alone, then the gateway called
    // in process (no front HTTP); both reach the upstream over HTTP.
    let client = Upstream::http("upstream", HttpTarget::new(&upstream_url));
    let arguments = json!({"a": 40, "b": 2});
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let alone = sample(&cli, || async {
        client
            .call_tool("add", arguments.clone(), RequestOptions::default())
            .await
            .map(drop)
            .map_err(Error::from)
    })
    .await?;
    let in_process = sample(&cli, || async {
        gateway
            .call_tool("up_add", Value::Object(arguments.clone()))
            .await
            .map(drop)
            .map_err(|e| Error::from(e.message.to_string()))
    })
    .await?;
    println!();
    println!("| attribution, 1 caller, upstream over HTTP | p50 | p99 |");
    println!("|---|---:|---:|");
    for (case, samples) in [
        (
            "the proxy's upstream client alone (Upstream::call_tool)",
            alone,
        ),
        ("the gateway in process (Server::call_tool)", in_process),
    ] {
        println!(
            "| {case} | {} | {} |",
            micros(percentile(&samples, 50.0)),
            micros(percentile(&samples, 99.0))
        );
    }
    stop.cancel();
    Ok(())
}

fn main() -> Result<(), Error> {
    let cli = Cli::parse();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads)
        .enable_all()
        .build()?
        .block_on(run(cli))
}
