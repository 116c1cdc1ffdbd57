//! Head sampling before the OpenTelemetry layer: a request's trace is kept or dropped before
//! its span is made, so that a dropped one costs the subscriber nothing.

use std::{
    cell::Cell,
    sync::atomic::{AtomicU64, Ordering},
};

use tracing::{Metadata, subscriber::Interest};
use tracing_subscriber::layer::{Context, Filter};

thread_local! {
    /// The decision for the trace-starting span being made on this thread, while it is made:
    /// `Some(kept)` when it is decided already (by the sampler, or by the caller's
    /// `traceparent` for a sampler the dispatcher does not expose), `None` when not.
    static DECIDED: Cell<Option<bool>> = const { Cell::new(None) };
}

/// The suffix of the target of a dropped trace's first span (see `trace_root_span!`).
const UNSAMPLED: &str = "::unsampled";

/// Makes a trace's first span: asks the installed [`RequestSampler`] first, and makes
/// `unsampled()` (a call site the sampler is never interested in) for a trace it drops. A
/// sampler the dispatcher cannot find (inside a filter combinator) decides in its filter.
pub(crate) fn root_span(
    caller: Option<bool>,
    kept: impl FnOnce() -> tracing::Span,
    unsampled: impl FnOnce() -> tracing::Span,
) -> tracing::Span {
    let decided = tracing::dispatcher::get_default(|dispatch| {
        dispatch
            .downcast_ref::<RequestSampler>()
            .map(|sampler| sampler.starts_kept_trace(caller))
    });
    match decided {
        Some(false) => unsampled(),
        Some(true) => while_decided(Some(true), kept),
        None => while_decided(caller, kept),
    }
}

/// Runs `make` with `decision` visible to the filter.
fn while_decided(decision: Option<bool>, make: impl FnOnce() -> tracing::Span) -> tracing::Span {
    let before = DECIDED.with(|cell| cell.replace(decision));
    let made = make();
    DECIDED.with(|cell| cell.set(before));
    made
}

/// The spans a trace starts at: a request's and a task run's.
const TRACE_ROOTS: [&str; 2] = ["mcp.request", "mcp.task_run"];

/// A per-layer filter for the OpenTelemetry layer that samples whole traces at their start:
/// a request's (or a task run's) span is kept when its caller's `traceparent` says sampled,
/// dropped when it says not, and otherwise kept for one request in `every`; spans and events
/// inside are kept exactly when the span they are in was. Spans outside any request are
/// dropped. The framework asks the sampler before it makes a request's span, so a dropped
/// request costs the layer nothing, which sampling in the SDK cannot give (the layer builds
/// every span before the SDK's sampler sees it), and, when no other layer wants its spans,
/// costs the subscriber nothing either.
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

    /// Whether a trace starts kept: the caller's decision if it made one, else one in
    /// `every`.
    fn starts_kept_trace(&self, caller: Option<bool>) -> bool {
        if let Some(decided) = caller {
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
        if meta.target().ends_with(UNSAMPLED) {
            return false;
        }
        if meta.is_span() && TRACE_ROOTS.contains(&meta.name()) {
            let decided = DECIDED.with(Cell::get);
            return decided.unwrap_or_else(|| self.starts_kept_trace(None));
        }
        // Inside a kept span (the context only sees the spans this filter let through).
        cx.lookup_current().is_some()
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        if meta.target().ends_with(UNSAMPLED) {
            Interest::never()
        } else {
            // Decided span by span.
            Interest::sometimes()
        }
    }
}
