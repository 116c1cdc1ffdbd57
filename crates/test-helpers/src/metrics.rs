//! Reading a server's `/metrics` (the Prometheus text format) in tests.

use prometheus_parse::{Sample, Value};

/// One scrape of a Prometheus text endpoint, to look samples up by name and labels.
///
/// ```
/// use ferrymcp_test_helpers::metrics::Scrape;
/// let text = "# TYPE calls_total counter\ncalls_total{tool=\"add\",outcome=\"ok\"} 3\ncalls_total{tool=\"add\",outcome=\"error\"} 1\n";
/// let scrape = Scrape::parse(text);
/// assert_eq!(scrape.value("calls_total", &[("tool", "add"), ("outcome", "ok")]), Some(3.0));
/// assert_eq!(scrape.sum("calls_total", &[("tool", "add")]), 4.0);
/// assert_eq!(scrape.value("calls_total", &[("tool", "other")]), None);
/// ```
#[derive(Debug)]
pub struct Scrape {
    samples: Vec<Sample>,
    text: String,
}

impl Scrape {
    /// GETs `url` (`http://127.0.0.1:PORT/metrics`) and parses it; panics with the status or
    /// the body when it is not a 200 in the text format.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let scrape = ferrymcp_test_helpers::metrics::Scrape::fetch("http://127.0.0.1:8000/metrics").await;
    /// # drop(scrape);
    /// # }
    /// ```
    pub async fn fetch(url: &str) -> Self {
        let response = reqwest::get(url)
            .await
            .unwrap_or_else(|error| panic!("GET {url}: {error}"));
        let status = response.status();
        let text = response
            .text()
            .await
            .unwrap_or_else(|error| panic!("GET {url}: reading the body: {error}"));
        assert_eq!(status, 200, "GET {url}: {text}");
        Self::parse(&text)
    }

    /// Parses the text format; panics when it does not parse.
    ///
    /// ```
    /// let scrape = ferrymcp_test_helpers::metrics::Scrape::parse("up 1\n");
    /// assert_eq!(scrape.value("up", &[]), Some(1.0));
    /// ```
    pub fn parse(text: &str) -> Self {
        let lines = text.lines().map(|line| Ok(line.to_owned()));
        let parsed = prometheus_parse::Scrape::parse(lines)
            .unwrap_or_else(|error| panic!("not the Prometheus text format ({error}):\n{text}"));
        Self {
            samples: parsed.samples,
            text: text.to_owned(),
        }
    }

    /// The text as scraped (for failure messages).
    ///
    /// ```
    /// assert_eq!(ferrymcp_test_helpers::metrics::Scrape::parse("up 1\n").text(), "up 1\n");
    /// ```
    pub fn text(&self) -> &str {
        &self.text
    }

    fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |sample| {
            sample.metric == name
                && labels
                    .iter()
                    .all(|(key, value)| sample.labels.get(key) == Some(*value))
        })
    }

    /// The value of the one counter or gauge sample `name` whose labels include `labels`
    /// (for a histogram, its count); `None` when there is none. Panics when several match.
    ///
    /// ```
    /// let scrape = ferrymcp_test_helpers::metrics::Scrape::parse("g{a=\"1\"} 2\n");
    /// assert_eq!(scrape.value("g", &[("a", "1")]), Some(2.0));
    /// ```
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<f64> = self.matching(name, labels).map(number).collect();
        assert!(
            found.len() <= 1,
            "{} samples of {name} match {labels:?}:\n{}",
            found.len(),
            self.text
        );
        found.first().copied()
    }

    /// The sum of the samples of `name` whose labels include `labels` (histograms by their
    /// count); 0 when none match.
    ///
    /// ```
    /// let scrape = ferrymcp_test_helpers::metrics::Scrape::parse("c{a=\"1\"} 2\nc{a=\"2\"} 3\n");
    /// assert_eq!(scrape.sum("c", &[]), 5.0);
    /// ```
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(number).sum()
    }

    /// The values a label takes among the samples of `name`.
    ///
    /// ```
    /// let scrape = ferrymcp_test_helpers::metrics::Scrape::parse("c{tool=\"a\"} 1\nc{tool=\"b\"} 1\n");
    /// assert_eq!(scrape.label_values("c", "tool"), vec!["a", "b"]);
    /// ```
    pub fn label_values(&self, name: &str, label: &str) -> Vec<String> {
        let mut values: Vec<String> = self
            .matching(name, &[])
            .filter_map(|sample| sample.labels.get(label).map(str::to_owned))
            .collect();
        values.sort();
        values.dedup();
        values
    }
}

/// A sample's number: a counter's or gauge's value, a histogram's or summary's count.
fn number(sample: &Sample) -> f64 {
    match &sample.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        Value::Histogram(buckets) => buckets
            .iter()
            .map(|bucket| bucket.count)
            .fold(0.0, f64::max),
        Value::Summary(_) => f64::NAN,
    }
}
