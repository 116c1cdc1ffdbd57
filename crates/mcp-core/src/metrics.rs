//! Metrics: counters, gauges and histograms of what a server does, through the
//! [`metrics`](https://docs.rs/metrics) facade.
//!
//! Nothing is recorded until metrics are switched on: [`MetricsExporter::install`] (the
//! `metrics` feature) installs a Prometheus recorder and switches them on, and
//! [`MetricsExporter::router`] serves the text format on a route of your choice. With a
//! recorder of your own (OpenTelemetry, StatsD, ...), install it with the `metrics` crate
//! and call [`enable`]. Switched off, each instrumented step costs one relaxed atomic load.
//!
//! ```
//! # #[cfg(feature = "metrics")]
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use ferrymcp_core::{HttpConfig, HttpServer, Server, metrics::MetricsExporter};
//!
//! let exporter = MetricsExporter::install().expect("no other recorder installed");
//! let http = HttpServer::bind(Server::new("demo"), "127.0.0.1:0", HttpConfig::new())
//!     .await
//!     .unwrap()
//!     .merge(exporter.router("/metrics"));
//! // The bound server's gauges are read at each scrape.
//! assert!(exporter.render().await.contains("mcp_http_sessions 0"));
//! # drop(http);
//! # });
//! ```
//!
//! What is recorded (labels are bounded: methods the server knows, tools it has, limits by
//! their setting's name; never a client-chosen string):
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `mcp_requests_total` | counter | `method`, `outcome` (`ok`, `error`) |
//! | `mcp_request_duration_seconds` | histogram | `method` |
//! | `mcp_tool_calls_total` | counter | `tool`, `outcome` (`ok`, `tool_error`, `task`, `input_required`, `error`) |
//! | `mcp_tool_call_duration_seconds` | histogram | `tool` |
//! | `mcp_http_connections` | gauge | |
//! | `mcp_http_requests_in_flight` | gauge | |
//! | `mcp_http_sessions` | gauge | |
//! | `mcp_http_rejections_total` | counter | `limit` (`max_body_bytes`, `max_in_flight`, `host`, ...) |
//!
//! The tasks engine (`ferrymcp-tasks`) and the proxy (`ferrymcp-proxy`) add theirs to the
//! same recorder; their crate docs list them.

use std::{
    collections::BTreeMap,
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether metrics are recorded: false until [`enable`] (or [`MetricsExporter::install`]).
///
/// ```
/// // Code that builds labels only when they are wanted:
/// if ferrymcp_core::metrics::enabled() {
///     metrics::counter!("myapp_cache_misses_total").increment(1);
/// }
/// ```
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Switches recording on, for a recorder installed with the `metrics` crate (install it
/// first: the handles of the per-request series are taken once, from the recorder installed
/// then). There is no switching off: a recorder, once installed, stays for the process.
///
/// ```
/// ferrymcp_core::metrics::enable();
/// assert!(ferrymcp_core::metrics::enabled());
/// ```
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// A gauge's value as read at a scrape: a metric name, its labels and the value. Readings of
/// the same name and labels from several sources (two servers in one process) add up.
///
/// ```
/// let reading = ferrymcp_core::metrics::Reading::new("mcp_task_queue_depth", 12.0)
///     .label("queue", "default");
/// assert_eq!(reading.value(), 12.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    name: &'static str,
    labels: Vec<(&'static str, String)>,
    value: f64,
}

impl Reading {
    /// A reading of `name` without labels.
    ///
    /// ```
    /// let reading = ferrymcp_core::metrics::Reading::new("mcp_http_sessions", 3.0);
    /// # let _ = reading;
    /// ```
    pub fn new(name: &'static str, value: f64) -> Self {
        Self {
            name,
            labels: Vec::new(),
            value,
        }
    }

    /// The same reading with one more label.
    ///
    /// ```
    /// let reading = ferrymcp_core::metrics::Reading::new("mcp_tasks", 2.0).label("state", "running");
    /// # let _ = reading;
    /// ```
    pub fn label(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.labels.push((name, value.into()));
        self
    }

    /// The value read.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::metrics::Reading::new("g", 1.5).value(), 1.5);
    /// ```
    pub fn value(&self) -> f64 {
        self.value
    }
}

/// What a gauge source answers at a scrape.
pub type Readings = Pin<Box<dyn Future<Output = Vec<Reading>> + Send>>;

type Source = Arc<dyn Fn() -> Readings + Send + Sync>;

static SOURCES: Mutex<Vec<(u64, Source)>> = Mutex::new(Vec::new());
static NEXT_SOURCE: AtomicU64 = AtomicU64::new(0);

/// How long a scrape waits for one gauge source (a task store that does not answer) before
/// it renders without that source's readings.
pub const SOURCE_TIMEOUT: Duration = Duration::from_secs(2);

/// Registers `source`, read at every scrape to set gauges whose value is a state (sessions
/// open, tasks queued) rather than a count of events. It stays registered until the
/// returned guard is dropped.
///
/// ```
/// use ferrymcp_core::metrics::{Reading, on_scrape};
///
/// let guard = on_scrape(|| Box::pin(async { vec![Reading::new("myapp_workers", 4.0)] }));
/// drop(guard); // no longer read
/// ```
#[must_use = "the source is unregistered when the guard is dropped"]
pub fn on_scrape(source: impl Fn() -> Readings + Send + Sync + 'static) -> ScrapeGuard {
    let id = NEXT_SOURCE.fetch_add(1, Ordering::Relaxed);
    lock_sources().push((id, Arc::new(source)));
    ScrapeGuard { id }
}

/// Keeps a gauge source of [`on_scrape`] registered; dropping it unregisters the source.
///
/// ```
/// let guard = ferrymcp_core::metrics::on_scrape(|| Box::pin(async { Vec::new() }));
/// # drop(guard);
/// ```
#[derive(Debug)]
pub struct ScrapeGuard {
    id: u64,
}

impl Drop for ScrapeGuard {
    fn drop(&mut self) {
        lock_sources().retain(|(id, _)| *id != self.id);
    }
}

fn lock_sources() -> std::sync::MutexGuard<'static, Vec<(u64, Source)>> {
    SOURCES.lock().unwrap_or_else(PoisonError::into_inner)
}

type GaugeKey = (&'static str, Vec<(&'static str, String)>);

/// The gauges set at the previous scrape: one no source reports any more is set to zero.
static LAST_READ: Mutex<Vec<GaugeKey>> = Mutex::new(Vec::new());

/// Reads every registered source (each within [`SOURCE_TIMEOUT`]) and sets its gauges.
/// [`MetricsExporter::render`] does this before rendering; a custom exporter calls it before
/// its own.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// ferrymcp_core::metrics::read_sources().await;
/// # });
/// ```
pub async fn read_sources() {
    let sources: Vec<Source> = lock_sources()
        .iter()
        .map(|(_, source)| Arc::clone(source))
        .collect();
    let reads = sources.iter().map(|source| async move {
        tokio::time::timeout(SOURCE_TIMEOUT, source())
            .await
            .unwrap_or_default()
    });
    let mut sums: BTreeMap<GaugeKey, f64> = BTreeMap::new();
    for reading in futures::future::join_all(reads).await.into_iter().flatten() {
        *sums.entry((reading.name, reading.labels)).or_default() += reading.value;
    }
    let mut last = LAST_READ.lock().unwrap_or_else(PoisonError::into_inner);
    for key in last.iter().filter(|key| !sums.contains_key(*key)) {
        gauge_of(key).set(0.0);
    }
    for (key, value) in &sums {
        gauge_of(key).set(*value);
    }
    *last = sums.into_keys().collect();
}

fn gauge_of((name, labels): &GaugeKey) -> ::metrics::Gauge {
    let labels: Vec<::metrics::Label> = labels
        .iter()
        .map(|(name, value)| ::metrics::Label::new(*name, value.clone()))
        .collect();
    ::metrics::gauge!(*name, labels)
}

/// A request's outcome, as an index into its counters' outcomes (`ok`, `error`).
pub(crate) fn outcome<T, E>(result: &Result<T, E>) -> usize {
    usize::from(result.is_err())
}

/// The methods beyond the specification's ([`crate::server::SPEC_METHODS`]) that a request
/// counter names: the tasks extension's and the extended listen. Any other is `other`, so a
/// client cannot make series of any name.
pub(crate) const EXTENSION_METHODS: &[&str] = &[
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/list",
    "tasks/result",
    "ferrymcp/subscriptions/listen",
];

/// `method` as a metric label: itself when it is an MCP method this crate knows, else
/// `other`, so that a client cannot make series of any name.
///
/// ```
/// use ferrymcp_core::metrics::method_label;
/// assert_eq!(method_label("tools/call"), "tools/call");
/// assert_eq!(method_label("x/made-up"), "other");
/// ```
pub fn method_label(method: &str) -> &'static str {
    Method::named(method).label()
}

/// Times `answer` and counts it as a request of `method`.
pub(crate) async fn observe_request<T, E>(
    method: Method,
    answer: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    if !enabled() {
        return answer.await;
    }
    let started = Instant::now();
    let result = answer.await;
    calls::request_done(method, outcome(&result), started.elapsed());
    result
}

pub(crate) use calls::{Method, TOOL_OUTCOMES, request_done, tool_series};

/// Counts a refusal by the HTTP edge, by the limit's setting name.
pub(crate) fn rejected(limit: &'static str) {
    if enabled() {
        ::metrics::counter!("mcp_http_rejections_total", "limit" => limit).increment(1);
    }
}

mod calls;
#[cfg(feature = "metrics")]
mod exporter;
#[cfg(feature = "metrics")]
mod recorder;
#[cfg(feature = "metrics")]
pub use exporter::{MetricsError, MetricsExporter};
