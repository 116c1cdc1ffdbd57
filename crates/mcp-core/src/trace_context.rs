//! W3C trace context (`traceparent`, `tracestate`) across processes, so that one trace
//! follows a call from the client's HTTP request through a gateway's hop to its upstream, and
//! from a task's submission to its run on a worker.
//!
//! The spans are `tracing` spans (`mcp.request`, `mcp.task_run`); with the `otel` feature and
//! a [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry) layer installed, they are
//! OpenTelemetry spans, and:
//!
//! * a request's span continues the trace of the `traceparent` header it came with;
//! * a task keeps the trace context of the request that submitted it, and its run's span
//!   continues that trace on whichever worker runs it;
//! * the proxy sends the current trace context to upstreams as `traceparent`.
//!
//! Without the feature, or without such a layer, there is no trace context: every function
//! here answers `None` or does nothing.
//!
//! ```
//! use ferrymcp_core::trace_context::TraceContext;
//! // Outside an OpenTelemetry span there is nothing to carry.
//! assert!(TraceContext::current().is_none());
//! ```

use serde::{Deserialize, Serialize};

#[cfg(feature = "otlp")]
mod otlp;
#[cfg(feature = "otel")]
mod sampling;
#[cfg(feature = "otlp")]
pub use otlp::{OtlpError, OtlpTracing};
#[cfg(feature = "otel")]
pub use sampling::RequestSampler;

/// Makes the span a trace starts at (a request's, a task run's) with `tracing::info_span!`'s
/// arguments, continuing the sampling decision of the trace context `caller` came with.
///
/// With a `RequestSampler` (feature `otel`) installed, the sampler decides before the span is
/// made: a trace it keeps gets the span as written, and one it drops gets the same span from a
/// second call site whose target ends in `::unsampled`, which the sampler never sees. Other
/// layers (logs filtered by level, for instance) see both as usual, and when none of them
/// wants the dropped one it is never made: a dropped request costs the subscriber nothing.
/// Without a sampler it is the span as written.
///
/// ```
/// use ferrymcp_core::{trace_context::TraceContext, trace_root_span};
/// let caller = TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
/// let span = trace_root_span!(Some(&caller), "mcp.task_run", attempt = 1);
/// caller.adopt(&span);
/// ```
#[macro_export]
macro_rules! trace_root_span {
    ($caller:expr, $name:literal $($fields:tt)*) => {
        $crate::trace_context::root_span(
            $caller,
            || $crate::trace_context::__tracing::info_span!($name $($fields)*),
            || $crate::trace_context::__tracing::info_span!(
                target: ::core::concat!(::core::module_path!(), "::unsampled"),
                $name $($fields)*
            ),
        )
    };
}

#[doc(hidden)]
pub use tracing as __tracing;

/// What [`trace_root_span!`](crate::trace_root_span) expands to: `kept()` when the trace is
/// sampled (or nothing samples), `unsampled()` when a `RequestSampler` (feature `otel`) drops
/// it.
///
/// ```
/// use ferrymcp_core::trace_context::root_span;
/// let span = root_span(
///     None,
///     || tracing::info_span!("mcp.request"),
///     || tracing::info_span!(target: "my_app::unsampled", "mcp.request"),
/// );
/// # drop(span);
/// ```
pub fn root_span(
    caller: Option<&TraceContext>,
    kept: impl FnOnce() -> tracing::Span,
    unsampled: impl FnOnce() -> tracing::Span,
) -> tracing::Span {
    #[cfg(feature = "otel")]
    {
        sampling::root_span(caller.and_then(TraceContext::sampled), kept, unsampled)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (caller, unsampled);
        kept()
    }
}

/// The W3C trace context of a span, as it crosses a process boundary: in HTTP headers, or
/// stored with a task.
///
/// ```
/// let context = ferrymcp_core::trace_context::TraceContext::new(
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
/// );
/// assert_eq!(context.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceContext {
    traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
}

impl TraceContext {
    /// A context from its `traceparent` value (checked when it is adopted: a malformed one
    /// starts no trace).
    ///
    /// ```
    /// let context = ferrymcp_core::trace_context::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    /// assert!(context.tracestate().is_none());
    /// ```
    pub fn new(traceparent: impl Into<String>) -> Self {
        Self {
            traceparent: traceparent.into(),
            tracestate: None,
        }
    }

    /// The same context with a `tracestate`.
    ///
    /// ```
    /// let context = ferrymcp_core::trace_context::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    ///     .with_tracestate("vendor=value");
    /// assert_eq!(context.tracestate(), Some("vendor=value"));
    /// ```
    pub fn with_tracestate(mut self, tracestate: impl Into<String>) -> Self {
        self.tracestate = Some(tracestate.into());
        self
    }

    /// The `traceparent` value.
    ///
    /// ```
    /// # let context = ferrymcp_core::trace_context::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    /// assert!(context.traceparent().starts_with("00-"));
    /// ```
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// Whether the caller sampled this trace (the `sampled` flag of `traceparent`); `None`
    /// for a malformed value.
    ///
    /// ```
    /// use ferrymcp_core::trace_context::TraceContext;
    /// assert_eq!(TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").sampled(), Some(true));
    /// assert_eq!(TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").sampled(), Some(false));
    /// assert_eq!(TraceContext::new("garbage").sampled(), None);
    /// ```
    pub fn sampled(&self) -> Option<bool> {
        let mut parts = self.traceparent.split('-');
        let (_version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
            return None;
        }
        u8::from_str_radix(flags, 16)
            .ok()
            .map(|flags| flags & 1 == 1)
    }

    /// The `tracestate` value, if any.
    ///
    /// ```
    /// # let context = ferrymcp_core::trace_context::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    /// assert_eq!(context.tracestate(), None);
    /// ```
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The context in `headers` (`traceparent`, `tracestate`), if they carry one.
    ///
    /// ```
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse().unwrap());
    /// let context = ferrymcp_core::trace_context::TraceContext::from_headers(&headers).unwrap();
    /// assert_eq!(context.traceparent(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    /// ```
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        let traceparent = headers.get("traceparent")?.to_str().ok()?;
        let tracestate = headers
            .get("tracestate")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        Some(Self {
            traceparent: traceparent.to_owned(),
            tracestate,
        })
    }

    /// Sets `traceparent` (and `tracestate`) in `headers`; a value that is not a valid header
    /// value is left out.
    ///
    /// ```
    /// let context = ferrymcp_core::trace_context::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    /// let mut headers = http::HeaderMap::new();
    /// context.insert_into(&mut headers);
    /// assert!(headers.contains_key("traceparent"));
    /// ```
    pub fn insert_into(&self, headers: &mut http::HeaderMap) {
        if let Ok(value) = http::HeaderValue::from_str(&self.traceparent) {
            headers.insert(http::HeaderName::from_static("traceparent"), value);
        }
        if let Some(Ok(value)) = self.tracestate.as_deref().map(http::HeaderValue::from_str) {
            headers.insert(http::HeaderName::from_static("tracestate"), value);
        }
    }

    /// The trace context of the current span, when it is an OpenTelemetry span (the `otel`
    /// feature and a `tracing-opentelemetry` layer); `None` otherwise.
    ///
    /// ```
    /// assert!(ferrymcp_core::trace_context::TraceContext::current().is_none());
    /// ```
    pub fn current() -> Option<Self> {
        Self::of(&tracing::Span::current())
    }

    /// The trace context of `span`, as [`current`](Self::current).
    ///
    /// ```
    /// let span = tracing::info_span!("work");
    /// assert!(ferrymcp_core::trace_context::TraceContext::of(&span).is_none());
    /// ```
    pub fn of(span: &tracing::Span) -> Option<Self> {
        #[cfg(feature = "otel")]
        {
            otel::context_of(span)
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = span;
            None
        }
    }

    /// Makes this context the parent of `span` (an OpenTelemetry span: the `otel` feature
    /// and a `tracing-opentelemetry` layer), so that `span` continues its trace. Does
    /// nothing otherwise, or when the context is malformed.
    ///
    /// ```
    /// let span = tracing::info_span!("run");
    /// ferrymcp_core::trace_context::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    ///     .adopt(&span);
    /// ```
    pub fn adopt(&self, span: &tracing::Span) {
        #[cfg(feature = "otel")]
        otel::adopt(self, span);
        #[cfg(not(feature = "otel"))]
        let _ = span;
    }
}

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;

    use opentelemetry::{propagation::TextMapPropagator as _, trace::TraceContextExt as _};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    use super::TraceContext;

    pub(super) fn context_of(span: &tracing::Span) -> Option<TraceContext> {
        if span.is_none() {
            return None;
        }
        let context = span.context();
        let span_context = context.span().span_context().clone();
        if !span_context.is_valid() {
            return None;
        }
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
        let traceparent = carrier.remove("traceparent")?;
        Some(TraceContext {
            traceparent,
            tracestate: carrier
                .remove("tracestate")
                .filter(|state| !state.is_empty()),
        })
    }

    pub(super) fn adopt(trace: &TraceContext, span: &tracing::Span) {
        if span.is_none() {
            return;
        }
        let mut carrier = HashMap::new();
        carrier.insert("traceparent".to_owned(), trace.traceparent.clone());
        if let Some(state) = &trace.tracestate {
            carrier.insert("tracestate".to_owned(), state.clone());
        }
        let parent = TraceContextPropagator::new().extract(&carrier);
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }
}
