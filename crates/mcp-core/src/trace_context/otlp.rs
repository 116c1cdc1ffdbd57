//! Exporting spans over OTLP (HTTP, protobuf) to a collector: Jaeger, Tempo, an
//! OpenTelemetry Collector.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_subscriber::{Layer as _, filter::Filtered};

/// Why OTLP export could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The exporter refused its configuration (a malformed endpoint, say).
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

/// Spans exported over OTLP/HTTP (protobuf) in batches, from a thread of their own. Add
/// [`layer`](Self::layer) to your `tracing` subscriber; [`shutdown`](Self::shutdown) flushes
/// what is left before the process exits.
///
/// ```no_run
/// use tracing_subscriber::prelude::*;
///
/// let otlp = ferrymcp_core::trace_context::OtlpTracing::install(
///     "http://127.0.0.1:4318/v1/traces",
///     "my-mcp-server",
/// )?;
/// tracing_subscriber::registry().with(otlp.layer()).init();
/// // ... serve ...
/// otlp.shutdown();
/// # Ok::<(), ferrymcp_core::trace_context::OtlpError>(())
/// ```
pub struct OtlpTracing {
    provider: SdkTracerProvider,
    ratio: f64,
}

impl std::fmt::Debug for OtlpTracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpTracing").finish_non_exhaustive()
    }
}

impl OtlpTracing {
    /// Exports to `endpoint` (the collector's traces URL, such as
    /// `http://127.0.0.1:4318/v1/traces`) as service `service_name`, and makes W3C trace
    /// context the process's propagator.
    ///
    /// ```no_run
    /// let otlp = ferrymcp_core::trace_context::OtlpTracing::install("http://127.0.0.1:4318/v1/traces", "gateway")?;
    /// # Ok::<(), ferrymcp_core::trace_context::OtlpError>(())
    /// ```
    pub fn install(endpoint: &str, service_name: &str) -> Result<Self, OtlpError> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .build()
            .map_err(|error| OtlpError::Exporter(error.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name(service_name.to_owned())
                    .build(),
            )
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Self {
            provider,
            ratio: 1.0,
        })
    }

    /// Keeps about `ratio` of the traces whose caller did not decide (every one by
    /// default): see [`RequestSampler`](super::RequestSampler). A caller's sampled
    /// `traceparent` is always kept, an unsampled one never.
    ///
    /// ```no_run
    /// let otlp = ferrymcp_core::trace_context::OtlpTracing::install("http://127.0.0.1:4318/v1/traces", "s")?
    ///     .with_sampling(0.01);
    /// # Ok::<(), ferrymcp_core::trace_context::OtlpError>(())
    /// ```
    pub fn with_sampling(mut self, ratio: f64) -> Self {
        self.ratio = ratio;
        self
    }

    /// The `tracing` layer that turns the spans of sampled requests into OpenTelemetry spans
    /// and exports them (a request that is not sampled costs it nothing).
    ///
    /// ```no_run
    /// # let otlp = ferrymcp_core::trace_context::OtlpTracing::install("http://127.0.0.1:4318/v1/traces", "s").unwrap();
    /// use tracing_subscriber::prelude::*;
    /// let subscriber = tracing_subscriber::registry().with(otlp.layer());
    /// # drop(subscriber);
    /// ```
    pub fn layer<S>(
        &self,
    ) -> Filtered<
        tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>,
        super::RequestSampler,
        S,
    >
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        // Without the per-span extras (busy/idle timing on every poll, source location,
        // thread): they cost more than the span itself on a short request.
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("ferrymcp"))
            .with_tracked_inactivity(false)
            .with_location(false)
            .with_threads(false)
            .with_filter(super::RequestSampler::ratio(self.ratio))
    }

    /// Exports the spans still buffered and stops the exporter.
    ///
    /// ```no_run
    /// # let otlp = ferrymcp_core::trace_context::OtlpTracing::install("http://127.0.0.1:4318/v1/traces", "s").unwrap();
    /// otlp.shutdown();
    /// ```
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "the OTLP exporter did not shut down cleanly");
        }
    }
}
