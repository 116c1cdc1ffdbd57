//! Head sampling before the OpenTelemetry layer: a request's trace is kept or dropped when its
//! span is made, so that a dropped one costs the layer nothing.

use std::{
    cell::Cell,
    sync::atomic::{AtomicU64, Ordering},
};

use tracing::{Metadata, subscriber::Interest};
use tracing_subscriber::layer::{Context, Filter};

thread_local! {
    /// The caller's decision for the span being made on this thread: `Some(sampled)` when the
    /// request (or the task) came with a trace context, `None` when it did not.
    static CALLER_SAMPLED: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Makes a span with `make` while the sampler knows the caller's decision (`Some(sampled)`
/// from its `traceparent` flags, or `None`).
pub(crate) fn with_caller_decision<T>(decision: Option<bool>, make: impl FnOnce() -> T) -> T {
    let before = CALLER_SAMPLED.with(|cell| cell.replace(decision));
    let made = make();
    CALLER_SAMPLED.with(|cell| cell.set(before));
    made
}

/// The spans a trace starts at: a request's and a task run's.
const TRACE_ROOTS: [&str; 2] = ["mcp.request", "mcp.task_run"];

/// A per-layer filter for the OpenTelemetry layer that samples whole traces at their start:
/// a request's (or a task run's) span is kept when its caller's `traceparent` says sampled,
/// dropped when it says not, and otherwise kept for one request in `every`; spans and events
/// inside are kept exactly when the span they are in was. Spans outside any request are
/// dropped. A dropped request costs the layer nothing, which sampling in the SDK cannot give
/// (the layer builds every span before the SDK's sampler sees it).
///
/// [`OtlpTracing`](super::OtlpTracing) applies it; with a layer of your own:
///
/// ```
/// use tracing_subscriber::{Layer as _, prelude::*};
/// use ferrymcp_core::trace_context::RequestSampler;
///
/// let spans = tracing_opentelemetry::layer().with_filter(RequestSampler::ratio(0.01));
/// let subscriber = tracing_subscriber::registry().with(spans);
/// # drop(subscriber);
/// ```
#[derive(Debug)]
pub struct RequestSampler {
    every: u64,
    seen: AtomicU64,
}

impl RequestSampler {
    /// Keeps about `ratio` of the traces that do not come with a caller's decision (1 keeps
    /// them all, 0 none; it keeps one in `round(1 / ratio)`).
    ///
    /// ```
    /// let all = ferrymcp_core::trace_context::RequestSampler::ratio(1.0);
    /// # drop(all);
    /// ```
    pub fn ratio(ratio: f64) -> Self {
        let every = if ratio.is_nan() || ratio <= 0.0 {
            0
        } else if ratio >= 1.0 {
            1
        } else {
            // Whole and at least 2 here: 1 / ratio is above 1 and finite.
            (1.0 / ratio).round().max(1.0) as u64
        };
        Self {
            every,
            seen: AtomicU64::new(0),
        }
    }

    fn starts_kept_trace(&self) -> bool {
        if let Some(decided) = CALLER_SAMPLED.with(Cell::get) {
            return decided;
        }
        match self.every {
            0 => false,
            1 => true,
            every => self
                .seen
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(every),
        }
    }
}

impl<S> Filter<S> for RequestSampler
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    fn enabled(&self, meta: &Metadata<'_>, cx: &Context<'_, S>) -> bool {
        if meta.is_span() && TRACE_ROOTS.contains(&meta.name()) {
            return self.starts_kept_trace();
        }
        // Inside a kept span (the context only sees the spans this filter let through).
        cx.lookup_current().is_some()
    }

    fn callsite_enabled(&self, _meta: &'static Metadata<'static>) -> Interest {
        // Decided span by span.
        Interest::sometimes()
    }
}
