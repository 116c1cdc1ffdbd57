//! The process's recorder: counters and duration histograms kept here, the rest in the
//! Prometheus recorder, and the text of both rendered together.
//!
//! A call records two counters and two durations. In the Prometheus recorder a counter is
//! three allocations apart (the handle, its generation, its value: three cache lines and two
//! atomic operations an increment), and a histogram keeps every sample, with a timestamp, in
//! a growing list it folds into buckets every few seconds (a slot, a clock read, an epoch
//! pin and, every few dozen calls, an allocation). Here a counter is one atomic value, and a
//! histogram whose name ends in `_seconds` is a fixed array of bucket counts beside its sum:
//! an increment is one atomic addition, a sample two, and a call touches a few cache lines
//! instead of a dozen. Gauges, and histograms of anything but seconds (rendered as
//! summaries), stay with the Prometheus recorder.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError, atomic::Ordering},
};

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    atomics::AtomicU64,
};
use metrics_exporter_prometheus::{LabelSet, PrometheusRecorder, formatting};
use metrics_util::registry::{Registry, Storage};

/// Upper bounds of the duration histograms' buckets, in seconds: from a fast in-process call
/// (100 µs) to a long task (5 min).
pub(super) const SECONDS_BUCKETS: [f64; 19] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Whether histograms of `name` are kept in [`SECONDS_BUCKETS`] here.
fn is_duration(name: &str) -> bool {
    name.ends_with("_seconds")
}

/// One duration histogram: its sum, then a count per bucket (the last one past every
/// bound), side by side so that a fast call's sample touches one cache line.
#[derive(Debug)]
pub(super) struct Buckets {
    /// The sum of the samples, as `f64` bits.
    sum: AtomicU64,
    counts: [AtomicU64; SECONDS_BUCKETS.len() + 1],
}

impl Buckets {
    fn new() -> Self {
        Self {
            sum: AtomicU64::new(0f64.to_bits()),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    fn add(&self, value: f64, times: u64) {
        // A NaN has no bucket, and would make the sum NaN for good.
        if value.is_nan() || times == 0 {
            return;
        }
        // Prometheus buckets count samples up to and including their bound; most samples
        // are short, so the bounds are walked from the first.
        let slot = SECONDS_BUCKETS
            .iter()
            .position(|bound| value <= *bound)
            .unwrap_or(SECONDS_BUCKETS.len());
        if let Some(count) = self.counts.get(slot) {
            count.fetch_add(times, Ordering::Relaxed);
        }
        let added = value * times as f64;
        let _ = self
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + added).to_bits())
            });
    }

    /// The cumulative count at each bound, the total count and the sum. Read while samples
    /// arrive, the sum may hold a sample the counts do not (or the other way round) for a
    /// scrape; the counts always agree with each other.
    fn read(&self) -> ([(f64, u64); SECONDS_BUCKETS.len()], u64, f64) {
        let mut total = 0;
        let cumulative = std::array::from_fn(|slot| {
            total += self.counts[slot].load(Ordering::Relaxed);
            (SECONDS_BUCKETS[slot], total)
        });
        total += self.counts[SECONDS_BUCKETS.len()].load(Ordering::Relaxed);
        let sum = f64::from_bits(self.sum.load(Ordering::Relaxed));
        (cumulative, total, sum)
    }
}

impl HistogramFn for Buckets {
    fn record(&self, value: f64) {
        self.add(value, 1);
    }

    fn record_many(&self, value: f64, count: usize) {
        self.add(value, u64::try_from(count).unwrap_or(u64::MAX));
    }
}

/// Storage for the registry of what is kept here: counters and duration histograms.
struct KeptStorage;

impl Storage<Key> for KeptStorage {
    type Counter = Arc<AtomicU64>;
    type Gauge = Arc<AtomicU64>;
    type Histogram = Arc<Buckets>;

    fn counter(&self, _: &Key) -> Self::Counter {
        Arc::new(AtomicU64::new(0))
    }

    fn gauge(&self, _: &Key) -> Self::Gauge {
        Arc::new(AtomicU64::new(0))
    }

    fn histogram(&self, _: &Key) -> Self::Histogram {
        Arc::new(Buckets::new())
    }
}

/// The counters and duration histograms of the process, and their descriptions.
pub(super) struct Kept {
    registry: Registry<Key, KeptStorage>,
    help: Mutex<HashMap<String, SharedString>>,
}

/// One family's series: their labels (as rendered, to sort by), and their values.
type Family<T> = BTreeMap<String, Vec<(Vec<String>, LabelSet, T)>>;

impl Kept {
    pub(super) fn new() -> Self {
        Self {
            registry: Registry::new(KeptStorage),
            help: Mutex::new(HashMap::new()),
        }
    }

    fn describe(&self, name: KeyName, description: SharedString) {
        self.help
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(formatting::sanitize_metric_name(name.as_str()), description);
    }

    /// Appends the counters, then the histograms, in the Prometheus text format: a family at
    /// a time, in name order and, within a family, in label order.
    pub(super) fn render_into(&self, out: &mut String) {
        let no_global_labels = indexmap::IndexMap::new();
        let mut counters: Family<Arc<AtomicU64>> = BTreeMap::new();
        self.registry.visit_counters(|key, counter| {
            add_series(&mut counters, key, &no_global_labels, counter);
        });
        let mut histograms: Family<Arc<Buckets>> = BTreeMap::new();
        self.registry.visit_histograms(|key, histogram| {
            add_series(&mut histograms, key, &no_global_labels, histogram);
        });
        let help = self.help.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, mut series) in counters {
            series.sort_by(|a, b| a.0.cmp(&b.0));
            family_header(out, &help, &name, "counter");
            for (_, labels, counter) in series {
                let value = counter.load(Ordering::Relaxed);
                formatting::write_metric_line::<&str, u64>(
                    out, &name, None, &labels, None, value, None,
                );
            }
            out.push('\n');
        }
        for (name, mut series) in histograms {
            series.sort_by(|a, b| a.0.cmp(&b.0));
            family_header(out, &help, &name, "histogram");
            for (_, labels, histogram) in series {
                let (cumulative, count, sum) = histogram.read();
                for (bound, below) in cumulative {
                    let le = Some(("le", bound));
                    formatting::write_metric_line(
                        out,
                        &name,
                        Some("bucket"),
                        &labels,
                        le,
                        below,
                        None,
                    );
                }
                let le = Some(("le", "+Inf"));
                formatting::write_metric_line(out, &name, Some("bucket"), &labels, le, count, None);
                formatting::write_metric_line::<&str, f64>(
                    out,
                    &name,
                    Some("sum"),
                    &labels,
                    None,
                    sum,
                    None,
                );
                formatting::write_metric_line::<&str, u64>(
                    out,
                    &name,
                    Some("count"),
                    &labels,
                    None,
                    count,
                    None,
                );
            }
            out.push('\n');
        }
    }
}

fn add_series<T: Clone>(
    family: &mut Family<T>,
    key: &Key,
    global: &indexmap::IndexMap<String, String>,
    value: &T,
) {
    let labels = LabelSet::from_key_and_global(key, global);
    // As the exporter does: a name Prometheus would refuse (`jobs.done`) is made valid.
    let series = family
        .entry(formatting::sanitize_metric_name(key.name()))
        .or_default();
    series.push((labels.to_strings().collect(), labels, value.clone()));
}

fn family_header(out: &mut String, help: &HashMap<String, SharedString>, name: &str, kind: &str) {
    if let Some(text) = help.get(name) {
        formatting::write_help_line(out, name, None, None, text);
    }
    formatting::write_type_line(out, name, None, None, kind);
}

/// The process's recorder: counters and duration histograms in [`Kept`], gauges and other
/// histograms in Prometheus.
pub(super) struct SplitRecorder {
    pub(super) prometheus: PrometheusRecorder,
    pub(super) kept: Arc<Kept>,
}

impl Recorder for SplitRecorder {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.kept.describe(key, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        if is_duration(key.as_str()) {
            self.kept.describe(key, description);
        } else {
            self.prometheus.describe_histogram(key, unit, description);
        }
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.kept.registry.get_or_create_counter(key, Arc::clone))
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.prometheus.register_gauge(key, metadata)
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        if is_duration(key.name()) {
            Histogram::from_arc(self.kept.registry.get_or_create_histogram(key, Arc::clone))
        } else {
            self.prometheus.register_histogram(key, metadata)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> SplitRecorder {
        SplitRecorder {
            prometheus: metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder(),
            kept: Arc::new(Kept::new()),
        }
    }

    fn metadata() -> Metadata<'static> {
        Metadata::new("t", metrics::Level::INFO, None)
    }

    fn rendered(recorder: &SplitRecorder) -> String {
        let mut out = String::new();
        recorder.kept.render_into(&mut out);
        out
    }

    #[test]
    fn a_sample_on_a_bound_counts_in_that_bucket_and_the_buckets_are_cumulative() {
        let recorder = recorder();
        let key = Key::from_parts("x_seconds", vec![metrics::Label::new("tool", "a\"b")]);
        let histogram = recorder.register_histogram(&key, &metadata());
        histogram.record(0.5);
        histogram.record(0.125);
        histogram.record(512.0);
        histogram.record(f64::NAN);
        histogram.record_many(0.75, 2);
        let text = rendered(&recorder);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.first(), Some(&"# TYPE x_seconds histogram"), "{text}");
        for line in [
            "x_seconds_bucket{tool=\"a\\\"b\",le=\"0.1\"} 0",
            "x_seconds_bucket{tool=\"a\\\"b\",le=\"0.25\"} 1",
            "x_seconds_bucket{tool=\"a\\\"b\",le=\"0.5\"} 2",
            "x_seconds_bucket{tool=\"a\\\"b\",le=\"1\"} 4",
            "x_seconds_bucket{tool=\"a\\\"b\",le=\"300\"} 4",
            "x_seconds_bucket{tool=\"a\\\"b\",le=\"+Inf\"} 5",
            "x_seconds_sum{tool=\"a\\\"b\"} 514.125",
            "x_seconds_count{tool=\"a\\\"b\"} 5",
        ] {
            assert!(lines.contains(&line), "no {line} in:\n{text}");
        }
        let buckets: Vec<u64> = lines
            .iter()
            .filter(|line| line.starts_with("x_seconds_bucket"))
            .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
            .collect();
        assert_eq!(buckets.len(), SECONDS_BUCKETS.len() + 1, "{text}");
        assert!(buckets.windows(2).all(|pair| pair[0] <= pair[1]), "{text}");
    }

    #[test]
    fn counters_are_kept_and_rendered_by_family_in_label_order() {
        let recorder = recorder();
        let key = |tool: &str| {
            Key::from_parts(
                "y_total",
                vec![metrics::Label::new("tool", tool.to_owned())],
            )
        };
        recorder.describe_counter("y_total".into(), None, "Calls.".into());
        recorder
            .register_counter(&key("b"), &metadata())
            .increment(2);
        recorder
            .register_counter(&key("a"), &metadata())
            .increment(1);
        recorder
            .register_counter(&key("b"), &metadata())
            .increment(3);
        assert_eq!(
            rendered(&recorder),
            "# HELP y_total Calls.\n# TYPE y_total counter\ny_total{tool=\"a\"} 1\ny_total{tool=\"b\"} 5\n\n"
        );
    }

    #[test]
    fn a_name_prometheus_would_refuse_is_made_valid_as_the_exporter_does() {
        let recorder = recorder();
        recorder.describe_counter("jobs.done".into(), None, "Jobs.".into());
        recorder
            .register_counter(&Key::from_name("jobs.done"), &metadata())
            .increment(1);
        assert_eq!(
            rendered(&recorder),
            "# HELP jobs_done Jobs.\n# TYPE jobs_done counter\njobs_done 1\n\n"
        );
    }

    #[test]
    fn gauges_and_other_histograms_stay_with_prometheus() {
        let recorder = recorder();
        let handle = recorder.prometheus.handle();
        recorder
            .register_histogram(&Key::from_name("payload_bytes"), &metadata())
            .record(3.0);
        recorder
            .register_gauge(&Key::from_name("open_things"), &metadata())
            .set(4.0);
        assert_eq!(rendered(&recorder), "");
        let text = handle.render();
        assert!(text.contains("payload_bytes_count 1"), "{text}");
        assert!(text.contains("open_things 4"), "{text}");
    }
}
