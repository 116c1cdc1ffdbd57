//! The Prometheus exporter: a recorder for the whole process and the route that renders it.

use std::{sync::OnceLock, time::Duration};

use axum::{Router, http::header, routing::get};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Upper bounds of the duration histograms' buckets, in seconds: from a fast in-process call
/// (100 µs) to a long task (5 min).
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 300.0,
];

/// How often histograms are folded in when nobody scrapes, so that they do not grow.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Why the exporter could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// Another `metrics` recorder is installed in this process (there is one per process).
    #[error("another metrics recorder is already installed in this process")]
    OtherRecorder,
    /// The exporter's own configuration was refused.
    #[error("the Prometheus exporter could not be built: {0}")]
    Build(String),
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
}

impl std::fmt::Debug for MetricsExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsExporter").finish_non_exhaustive()
    }
}

static INSTALLED: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

impl MetricsExporter {
    /// Installs the Prometheus recorder as the process's `metrics` recorder and switches
    /// recording on ([`enable`](super::enable)). Duration histograms get buckets from 100 µs
    /// to 5 min. A later call returns the same exporter; an error if another recorder was
    /// installed first.
    ///
    /// ```
    /// let exporter = ferrymcp_core::metrics::MetricsExporter::install();
    /// assert!(exporter.is_ok());
    /// ```
    pub fn install() -> Result<Self, MetricsError> {
        let installed = INSTALLED.get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), SECONDS_BUCKETS)
                .map_err(|error| error.to_string())?;
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            ::metrics::set_global_recorder(recorder)
                .map_err(|_| "another recorder".to_owned())?;
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
            Ok(handle)
        });
        match installed {
            Ok(handle) => {
                super::enable();
                Ok(Self {
                    handle: handle.clone(),
                })
            }
            Err(reason) if reason == "another recorder" => Err(MetricsError::OtherRecorder),
            Err(reason) => Err(MetricsError::Build(reason.clone())),
        }
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
        self.handle.render()
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
