//! The Prometheus exporter: a recorder for the whole process and the route that renders it.

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use axum::{Router, http::header, routing::get};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use super::recorder::{Kept, SplitRecorder};

/// How often the Prometheus recorder's histograms (those not in seconds, kept as samples)
/// are folded in when nobody scrapes, so that they do not grow.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Why the exporter could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// Another `metrics` recorder is installed in this process (there is one per process).
    #[error("another metrics recorder is already installed in this process")]
    OtherRecorder,
}

/// The process's Prometheus recorder, and what renders it in the text exposition format.
/// Install it once; every clone renders the same metrics.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::metrics::MetricsExporter;
///
/// let exporter = MetricsExporter::install().unwrap();
/// // Installing again hands back the same exporter.
/// let again = MetricsExporter::install().unwrap();
/// metrics::counter!("myapp_jobs_total").increment(1);
/// assert!(again.render().await.contains("myapp_jobs_total 1"));
/// # let _ = exporter;
/// # });
/// ```
#[derive(Clone)]
pub struct MetricsExporter {
    handle: PrometheusHandle,
    kept: Arc<Kept>,
}

impl std::fmt::Debug for MetricsExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsExporter").finish_non_exhaustive()
    }
}

type Installed = (PrometheusHandle, Arc<Kept>);

/// The exporter installed by the first call, or `None` if another recorder was there first.
static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();

impl MetricsExporter {
    /// Installs the Prometheus recorder as the process's `metrics` recorder and switches
    /// recording on ([`enable`](super::enable)). Histograms whose name ends in `_seconds` get
    /// fixed buckets from 100 µs to 5 min, counted as they are recorded; other histograms
    /// are rendered as summaries. A later call returns the same exporter; an error if another
    /// recorder was installed first.
    ///
    /// ```
    /// let exporter = ferrymcp_core::metrics::MetricsExporter::install();
    /// assert!(exporter.is_ok());
    /// ```
    pub fn install() -> Result<Self, MetricsError> {
        let installed = INSTALLED.get_or_init(|| {
            let prometheus = PrometheusBuilder::new().build_recorder();
            let handle = prometheus.handle();
            let kept = Arc::new(Kept::new());
            ::metrics::set_global_recorder(SplitRecorder {
                prometheus,
                kept: Arc::clone(&kept),
            })
            .ok()?;
            let upkeep = handle.clone();
            // A thread of its own: the exporter may be installed before any runtime runs.
            let spawned = std::thread::Builder::new()
                .name("metrics-upkeep".to_owned())
                .spawn(move || {
                    loop {
                        std::thread::sleep(UPKEEP_EVERY);
                        upkeep.run_upkeep();
                    }
                });
            if let Err(error) = spawned {
                tracing::warn!(%error, "no metrics upkeep thread: histograms fold in at scrapes only");
            }
            Some((handle, kept))
        });
        let (handle, kept) = installed.as_ref().ok_or(MetricsError::OtherRecorder)?;
        super::enable();
        Ok(Self {
            handle: handle.clone(),
            kept: Arc::clone(kept),
        })
    }

    /// The metrics in the Prometheus text format, after reading the gauge sources
    /// ([`on_scrape`](super::on_scrape)).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let exporter = ferrymcp_core::metrics::MetricsExporter::install().unwrap();
    /// let text = exporter.render().await;
    /// # let _ = text;
    /// # });
    /// ```
    pub async fn render(&self) -> String {
        super::read_sources().await;
        let mut text = self.handle.render();
        self.kept.render_into(&mut text);
        text
    }

    /// A router that answers `GET path` with [`render`](Self::render), to merge into an
    /// [`HttpServer`](crate::HttpServer) or an axum application.
    ///
    /// ```
    /// let exporter = ferrymcp_core::metrics::MetricsExporter::install().unwrap();
    /// let app: axum::Router = exporter.router("/metrics");
    /// # let _ = app;
    /// ```
    pub fn router(&self, path: &str) -> Router {
        let exporter = self.clone();
        Router::new().route(
            path,
            get(move || {
                let exporter = exporter.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                        exporter.render().await,
                    )
                }
            }),
        )
    }

    /// Serves only [`router`](Self::router)`(path)` on `listener` until `shutdown`, with
    /// [`HttpConfig`](crate::HttpConfig)'s default connection and time limits: for a process
    /// with no HTTP server of its own, such as a task worker.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// let exporter = ferrymcp_core::metrics::MetricsExporter::install().unwrap();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:9464").await?;
    /// exporter.serve(listener, "/metrics", async { tokio::signal::ctrl_c().await.ok(); }).await;
    /// # Ok(()) }
    /// ```
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        path: &str,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        crate::transport::http::serve_router(listener, self.router(path), shutdown).await;
    }
}
