//! What the proxy records through `ferrymcp_core::metrics` (the crate docs list it), once
//! metrics are switched on in the process. Each upstream's series are looked up once and
//! kept, so a call builds no label.

use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use metrics::{Counter, Gauge, Histogram};

use crate::ProxyError;

/// The outcomes an upstream request counter takes.
const OUTCOMES: [&str; 7] = [
    "ok",
    "error",
    "protocol",
    "timeout",
    "unavailable",
    "credentials",
    "config",
];

/// One upstream's series: its duration histogram, its health gauge, and per method its
/// counters by outcome.
struct UpstreamSeries {
    name: String,
    duration: Histogram,
    up: Gauge,
    methods: RwLock<HashMap<&'static str, Arc<[Counter; OUTCOMES.len()]>>>,
}

impl UpstreamSeries {
    fn new(name: &str) -> Self {
        let label = name.to_owned();
        Self {
            name: label.clone(),
            duration: metrics::histogram!(
                "mcp_upstream_request_duration_seconds",
                "upstream" => label.clone()
            ),
            up: metrics::gauge!("mcp_upstream_up", "upstream" => label),
            methods: RwLock::new(HashMap::new()),
        }
    }

    fn counters(&self, method: &'static str) -> Arc<[Counter; OUTCOMES.len()]> {
        if let Some(counters) = self
            .methods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(method)
        {
            return Arc::clone(counters);
        }
        let counters = Arc::new(OUTCOMES.map(|outcome| {
            metrics::counter!(
                "mcp_upstream_requests_total",
                "upstream" => self.name.clone(),
                "method" => method,
                "outcome" => outcome,
            )
        }));
        Arc::clone(
            self.methods
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(method)
                .or_insert(counters),
        )
    }
}

static UPSTREAMS: RwLock<Option<HashMap<Box<str>, Arc<UpstreamSeries>>>> = RwLock::new(None);

fn series_of(upstream: &str) -> Arc<UpstreamSeries> {
    if let Some(series) = UPSTREAMS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|all| all.get(upstream))
    {
        return Arc::clone(series);
    }
    let series = Arc::new(UpstreamSeries::new(upstream));
    Arc::clone(
        UPSTREAMS
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .entry(upstream.into())
            .or_insert(series),
    )
}

/// A request to upstream `upstream` ended after `elapsed`.
pub(crate) fn upstream_done<T>(
    upstream: &str,
    method: &'static str,
    answer: &Result<T, ProxyError>,
    elapsed: Duration,
) {
    let (outcome, up) = match answer {
        Ok(_) => ("ok", true),
        // The upstream answered: it is up, whatever it said.
        Err(ProxyError::Upstream(_)) => ("error", true),
        Err(ProxyError::Protocol { .. }) => ("protocol", true),
        Err(ProxyError::Timeout { .. }) => ("timeout", false),
        Err(
            ProxyError::Connect { .. } | ProxyError::Down { .. } | ProxyError::Disconnected { .. },
        ) => ("unavailable", false),
        Err(ProxyError::Credentials { .. }) => ("credentials", true),
        Err(ProxyError::Config(_)) => ("config", true),
    };
    let series = series_of(upstream);
    let counters = series.counters(method);
    if let Some(counter) = OUTCOMES
        .iter()
        .position(|known| *known == outcome)
        .and_then(|index| counters.get(index))
    {
        counter.increment(1);
    }
    series.duration.record(elapsed);
    series.up.set(if up { 1.0 } else { 0.0 });
}
