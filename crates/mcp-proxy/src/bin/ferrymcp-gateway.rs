//! `ferrymcp-gateway`: serves the upstreams a config file lists as one MCP endpoint.
//!
//! ```text
//! cargo run -p ferrymcp-proxy --bin ferrymcp-gateway -- --config gateway.toml            # stdio
//! cargo run -p ferrymcp-proxy --bin ferrymcp-gateway -- --config gateway.toml --http 127.0.0.1:9000
//! cargo run -p ferrymcp-proxy --bin ferrymcp-gateway -- --config gateway.toml --http 127.0.0.1:9000 --metrics
//! cargo run -p ferrymcp-proxy --bin ferrymcp-gateway -- --config gateway.toml --otlp http://127.0.0.1:4318/v1/traces
//! ```
//!
//! The config format is documented in `ferrymcp_proxy::gateway`.

use std::{net::SocketAddr, path::PathBuf};

use clap::Parser;
use ferrymcp_core::{HttpServer, metrics::MetricsExporter, trace_context::OtlpTracing};
use ferrymcp_proxy::gateway::GatewayConfig;
use tracing_subscriber::{Layer as _, prelude::*};

/// mimalloc: with glibc's allocator a gateway under load spends about a quarter of its CPU
/// in `malloc`/`free` and their arena locks; mimalloc doubles its throughput at 32 callers
/// (BENCHMARKS.md, "Proxy hop").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(about = "Serve several MCP servers as one, each under its namespace")]
struct Cli {
    /// The TOML config listing the upstreams.
    #[arg(long, short)]
    config: PathBuf,
    /// Serve Streamable HTTP on this address, at /mcp (port 0 picks a free port); stdio
    /// otherwise.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With --http: serve Prometheus metrics (calls, upstreams' health and latency) at
    /// /metrics on the same address.
    #[arg(long, requires = "http")]
    metrics: bool,
    /// Export spans (requests, upstream calls) over OTLP/HTTP to this collector URL, such as
    /// http://127.0.0.1:4318/v1/traces; upstreams get the W3C `traceparent` of each call.
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// With --otlp: the share of traces kept when the caller did not decide (1 keeps all;
    /// a caller's sampled `traceparent` is always kept).
    #[arg(long, value_name = "RATIO", default_value_t = 1.0, requires = "otlp")]
    otlp_sample: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    runtime()?.block_on(run(cli))
}

/// The gateway's runtime: one thread when the process may use one CPU (its affinity or its
/// cgroup's quota), where a multi-thread runtime's single worker only adds the bookkeeping
/// of handing work between threads (about a tenth of a proxied call's CPU); else, or when
/// `TOKIO_WORKER_THREADS` asks for workers, tokio's multi-thread runtime.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let one_cpu = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
    let mut builder = if one_cpu && std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.enable_all().build()
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: on stdio, stdout carries only protocol messages.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp::service=error".into()),
        );
    let otlp = match &cli.otlp {
        Some(endpoint) => {
            Some(OtlpTracing::install(endpoint, "ferrymcp-gateway")?.with_sampling(cli.otlp_sample))
        }
        None => None,
    };
    let spans = otlp.as_ref().map(OtlpTracing::layer);
    tracing_subscriber::registry().with(logs).with(spans).init();
    let served = serve(cli).await;
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    served
}

async fn serve(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let config = GatewayConfig::load(&cli.config)?;
    if cli.http.is_none() && config.auth.is_some() {
        return Err("[auth] protects the HTTP front: serve it with --http".into());
    }
    // Checked before connecting the upstreams, so a bad section fails at once.
    let http_config = config.http_config()?;
    let server = config.build().await?;
    match cli.http {
        Some(addr) => {
            let mut http = HttpServer::bind(server, addr, http_config).await?;
            let base = format!("http://{}", http.local_addr());
            if cli.metrics {
                http = http.merge(MetricsExporter::install()?.router("/metrics"));
            }
            let started = http.start().await?;
            eprintln!("listening on {base}/mcp");
            if cli.metrics {
                eprintln!("metrics on {base}/metrics");
            }
            started.run_until(ferrymcp_core::shutdown_signal()).await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
