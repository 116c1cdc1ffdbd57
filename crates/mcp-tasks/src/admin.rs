//! The operators' routes: a live dashboard page and the JSON API behind it and behind the
//! `ferrymcp-tasks` command line. Off unless a server adds them, which it does behind the
//! same checks as its MCP endpoint
//! ([`HttpServer::merge_operator_routes`](ferrymcp_core::HttpServer::merge_operator_routes):
//! `Host`, `Origin`, and with OAuth a token holding the operators' scope).
//!
//! | route | answers |
//! |---|---|
//! | `GET {prefix}` | the dashboard (one HTML page with its script, no build step) |
//! | `GET {prefix}/api/status` | [`FleetStatus`]: the queue's counts, the workers and their heartbeat age |
//! | `GET {prefix}/api/history` | the counts sampled every 2 s over the last 10 minutes |
//! | `GET {prefix}/api/tasks?status=&tool=&olderThanMs=&newerThanMs=&limit=` | [`TaskRecord`](crate::backend::TaskRecord)s, newest first |
//! | `GET {prefix}/api/tasks/{id}` | one [`TaskRecord`](crate::backend::TaskRecord) (404 when there is none) |
//! | `POST {prefix}/api/tasks/{id}/cancel` | `{"outcome": "cancelled" \| "alreadyEnded" \| "notFound"}` |
//! | `POST {prefix}/api/purge` | [`PurgeReport`](crate::operator::PurgeReport) |
//!
//! Errors are JSON, `{"error": "..."}`: 400 for a bad query, 404 for an unknown task, 503
//! when the task store cannot answer.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use ferrymcp_tasks::{admin::Admin, backend::memory::MemoryBackend};
//!
//! let routes: axum::Router = Admin::new(Arc::new(MemoryBackend::new())).router("/admin");
//! // http.merge_operator_routes(routes)
//! # let _ = routes;
//! # }
//! ```

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError, Weak},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Path, Query, State, rejection::QueryRejection},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Serialize;
use serde_json::json;

use crate::{
    backend::{BackendError, StoreStats, TaskBackend, TaskFilter},
    operator::{Cancelled, FleetStatus, Operator, OperatorError},
};

/// The dashboard page.
const DASHBOARD: &str = include_str!("admin/dashboard.html");
/// How often the history is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// How many samples the history keeps (10 minutes).
const HISTORY_LEN: usize = 300;

/// The operators' routes over one task store. See the [module docs](self).
#[derive(Clone)]
pub struct Admin {
    operator: Operator,
    history: Arc<Mutex<VecDeque<Sample>>>,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}

/// The queue's counts at one instant.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct Sample {
    at_ms: u64,
    #[serde(flatten)]
    tasks: StoreStats,
}

impl Admin {
    /// The operators' routes over `backend` (the one the server's tasks extension uses).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let admin = ferrymcp_tasks::admin::Admin::new(Arc::new(
    ///     ferrymcp_tasks::backend::memory::MemoryBackend::new(),
    /// ));
    /// # let _ = admin;
    /// ```
    pub fn new(backend: Arc<dyn TaskBackend>) -> Self {
        Self {
            operator: Operator::new(backend),
            history: Arc::default(),
        }
    }

    /// The routes under `prefix` (`/admin`, say). Inside a Tokio runtime, this also starts
    /// sampling the queue's counts for the dashboard's chart, until the routes are dropped.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # use std::sync::Arc;
    /// let routes = ferrymcp_tasks::admin::Admin::new(Arc::new(
    ///     ferrymcp_tasks::backend::memory::MemoryBackend::new(),
    /// ))
    /// .router("/admin");
    /// # let _ = routes;
    /// # }
    /// ```
    pub fn router(self, prefix: &str) -> Router {
        let prefix = prefix.trim_end_matches('/');
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(sample(self.operator.clone(), Arc::downgrade(&self.history)));
        }
        let page = get(|| async {
            (
                [
                    (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                DASHBOARD,
            )
        });
        let api = Router::new()
            .route("/status", get(status))
            .route("/history", get(history))
            .route("/tasks", get(tasks))
            .route("/tasks/{id}", get(inspect))
            .route("/tasks/{id}/cancel", post(cancel))
            .route("/purge", post(purge))
            .with_state(Arc::new(self));
        let routes = Router::new()
            .route(&format!("{prefix}/"), page.clone())
            .nest(&format!("{prefix}/api"), api);
        if prefix.is_empty() {
            routes
        } else {
            routes.route(prefix, page)
        }
    }
}

/// Samples the counts every [`SAMPLE_EVERY`] while the routes exist.
async fn sample(operator: Operator, history: Weak<Mutex<VecDeque<Sample>>>) {
    let mut ticks = tokio::time::interval(SAMPLE_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(history) = history.upgrade() else {
            return;
        };
        // A store that does not answer in time misses a sample, not the next one.
        let read = tokio::time::timeout(SAMPLE_EVERY, operator.status()).await;
        if let Ok(Ok(status)) = read {
            let mut samples = history.lock().unwrap_or_else(PoisonError::into_inner);
            if samples.len() == HISTORY_LEN {
                samples.pop_front();
            }
            samples.push_back(Sample {
                at_ms: status.now_ms,
                tasks: status.tasks,
            });
        }
    }
}

/// An error as the API answers it.
fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": message.to_string() }))).into_response()
}

impl IntoResponse for OperatorError {
    fn into_response(self) -> Response {
        let status = match &self {
            OperatorError::Backend(BackendError::Limit(_)) => StatusCode::TOO_MANY_REQUESTS,
            OperatorError::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
            OperatorError::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
        };
        error(status, self)
    }
}

async fn status(State(admin): State<Arc<Admin>>) -> Result<Json<FleetStatus>, OperatorError> {
    admin.operator.status().await.map(Json)
}

async fn history(State(admin): State<Arc<Admin>>) -> Response {
    let samples: Vec<Sample> = admin
        .history
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .copied()
        .collect();
    Json(samples).into_response()
}

async fn tasks(
    State(admin): State<Arc<Admin>>,
    filter: Result<Query<TaskFilter>, QueryRejection>,
) -> Response {
    let Query(filter) = match filter {
        Ok(filter) => filter,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    match admin.operator.tasks(&filter).await {
        Ok(records) => Json(records).into_response(),
        Err(failure) => failure.into_response(),
    }
}

async fn inspect(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> Response {
    match admin.operator.inspect(&id).await {
        Ok(Some(record)) => Json(record).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no task {id:?}")),
        Err(failure) => failure.into_response(),
    }
}

async fn cancel(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> Response {
    match admin.operator.cancel(&id).await {
        Ok(Cancelled::NotFound) => error(StatusCode::NOT_FOUND, format!("no task {id:?}")),
        Ok(outcome) => Json(json!({ "outcome": outcome })).into_response(),
        Err(failure) => failure.into_response(),
    }
}

async fn purge(State(admin): State<Arc<Admin>>) -> Response {
    match admin.operator.purge().await {
        Ok(report) => Json(report).into_response(),
        Err(failure) => failure.into_response(),
    }
}
