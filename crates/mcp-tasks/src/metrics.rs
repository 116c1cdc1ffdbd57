//! What the engine records through `ferrymcp_core::metrics` (the crate docs list it): each
//! function does nothing until metrics are switched on in the process.

use std::{sync::Weak, time::Duration};

use ferrymcp_core::metrics::{Reading, ScrapeGuard, enabled, on_scrape};

use crate::backend::TaskBackend;

/// A task `tool` was created.
pub(crate) fn created(tool: &str) {
    if enabled() {
        ::metrics::counter!("mcp_tasks_created_total", "tool" => tool.to_owned()).increment(1);
    }
}

/// A submission was refused by the limit whose setting is `limit`.
pub(crate) fn rejected(limit: &'static str) {
    if enabled() {
        ::metrics::counter!("mcp_task_rejections_total", "limit" => limit).increment(1);
    }
}

/// A run of `tool` ended as `outcome` after `elapsed`.
pub(crate) fn run_done(tool: &str, outcome: &'static str, elapsed: Duration) {
    if enabled() {
        let tool = tool.to_owned();
        ::metrics::counter!("mcp_task_runs_total", "tool" => tool.clone(), "outcome" => outcome)
            .increment(1);
        ::metrics::histogram!("mcp_task_run_duration_seconds", "tool" => tool).record(elapsed);
    }
}

/// A task's first run started `waited` after the task was created.
pub(crate) fn waited(waited: Duration) {
    if enabled() {
        ::metrics::histogram!("mcp_task_wait_seconds").record(waited);
    }
}

/// A run of `tool` started again after its worker was lost.
pub(crate) fn retried(tool: &str) {
    if enabled() {
        ::metrics::counter!("mcp_task_retries_total", "tool" => tool.to_owned()).increment(1);
    }
}

/// `count` runs whose worker was lost were queued again (`rerun`) or failed (`fail`).
pub(crate) fn recovered(action: &'static str, count: u64) {
    if enabled() && count > 0 {
        ::metrics::counter!("mcp_task_lost_worker_recoveries_total", "action" => action)
            .increment(count);
    }
}

/// Reads the store's counts at each scrape, while the guard lives.
pub(crate) fn store_gauges(backend: Weak<dyn TaskBackend>) -> ScrapeGuard {
    on_scrape(move || {
        let backend = backend.clone();
        Box::pin(async move {
            let Some(backend) = backend.upgrade() else {
                return Vec::new();
            };
            match backend.stats().await {
                Ok(Some(stats)) => vec![
                    Reading::new("mcp_task_queue_depth", stats.queued as f64),
                    Reading::new("mcp_tasks", stats.queued as f64).label("state", "queued"),
                    Reading::new("mcp_tasks", stats.running as f64).label("state", "running"),
                    Reading::new("mcp_tasks", stats.waiting as f64).label("state", "waiting"),
                    Reading::new("mcp_tasks", stats.finished as f64).label("state", "finished"),
                ],
                Ok(None) => Vec::new(),
                Err(error) => {
                    tracing::debug!(%error, "the task store's counts could not be read for metrics");
                    Vec::new()
                }
            }
        })
    })
}
