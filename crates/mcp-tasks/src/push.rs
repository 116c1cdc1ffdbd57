//! Task status pushed instead of polled: a `subscriptions/listen` whose filter names
//! `taskIds` gets a `notifications/tasks` for each of those tasks when it changes, its params
//! the task exactly as `tasks/get` would answer it then (without `resultType`).
//!
//! The listen first gets each task's current state (so a task that ended before the client
//! listened is reported too), then every change the backend feeds
//! ([`TaskBackend::changes`]): on Redis a change made by any replica or worker reaches a
//! listener on any replica. A backend without a feed is polled at the tasks' poll interval.
//! Only the caller's own tasks are watched; any other id is left out of the
//! acknowledgment, as a missing one is.
//!
//! ```
//! assert_eq!(ferrymcp_tasks::push::MAX_WATCHED_TASKS, 256);
//! ```

use std::{collections::HashMap, sync::Arc, time::Duration};

use ferrymcp_core::{
    Context,
    subscription::{PushedNotification, Subscription},
};
use ferrymcp_types::{ErrorData, JsonObject};
use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::{
    Engine,
    backend::{Owner, TaskBackend, TaskView},
    extension::{detailed, gate_tasks_request},
};

/// The most task ids one `subscriptions/listen` may name.
pub const MAX_WATCHED_TASKS: usize = 256;

/// The filter member this module serves.
const TASK_IDS: &str = "taskIds";

/// The notification method.
const METHOD: &str = "notifications/tasks";

/// How many notifications wait for a slow listener before the watcher waits for it.
const QUEUED: usize = 16;

/// Serves `taskIds` of a listen filter: `None` without it; `-32021` when the request did
/// not opt in to the extension; `-32602` for ids that are not an array of at most
/// [`MAX_WATCHED_TASKS`] strings.
pub(crate) async fn subscribe(
    engine: Option<Engine>,
    cx: &Context,
    requested: &JsonObject,
) -> Result<Option<Subscription>, ErrorData> {
    let Some(ids) = requested.get(TASK_IDS) else {
        return Ok(None);
    };
    gate_tasks_request(cx, "subscriptions/listen")?;
    let ids = task_ids(ids)?;
    let owner = Owner::of(cx.scope().principal());
    let Some(engine) = engine else {
        return Ok(Some(acknowledged(&[], futures::stream::empty().boxed())));
    };
    let backend = Arc::clone(&engine.backend);
    // The feed is read from before the tasks are, so no change falls in between.
    let changes = backend.changes();
    let mut watched = Vec::new();
    for id in ids {
        if backend.watch(&owner, &id).await.map_err(masked)? {
            watched.push(id);
        }
    }
    let (sender, receiver) = mpsc::channel(QUEUED);
    let accepted = watched.clone();
    tokio::spawn(watch(backend, owner, watched, changes, sender));
    let notifications =
        futures::stream::unfold(receiver, |mut r| async { r.recv().await.map(|n| (n, r)) });
    Ok(Some(acknowledged(&accepted, notifications.boxed())))
}

fn masked(error: impl std::fmt::Display) -> ErrorData {
    ferrymcp_core::masked_internal_error(error)
}

fn acknowledged(
    ids: &[String],
    notifications: futures::stream::BoxStream<'static, PushedNotification>,
) -> Subscription {
    let mut members = JsonObject::new();
    members.insert(
        TASK_IDS.into(),
        Value::Array(ids.iter().cloned().map(Value::String).collect()),
    );
    Subscription::new(members, notifications)
}

/// The `taskIds` of a listen filter, each once, in order: `-32602` unless it is an array of
/// at most [`MAX_WATCHED_TASKS`] strings (for other extensions that serve task ids, such as
/// a proxy's).
///
/// ```
/// let ids = ferrymcp_tasks::push::task_ids(&serde_json::json!(["a", "b", "a"])).unwrap();
/// assert_eq!(ids, ["a", "b"]);
/// assert_eq!(ferrymcp_tasks::push::task_ids(&serde_json::json!("a")).unwrap_err().code.0, -32602);
/// ```
pub fn task_ids(value: &Value) -> Result<Vec<String>, ErrorData> {
    let invalid = |why: String| ErrorData::invalid_params(why, None);
    let Value::Array(items) = value else {
        return Err(invalid(
            "params.notifications.taskIds must be an array of task ids".to_owned(),
        ));
    };
    let mut ids: Vec<String> = Vec::with_capacity(items.len().min(MAX_WATCHED_TASKS));
    for item in items {
        let Value::String(id) = item else {
            return Err(invalid(format!(
                "params.notifications.taskIds must hold strings, not {item}"
            )));
        };
        if !ids.contains(id) {
            ids.push(id.clone());
        }
        if ids.len() > MAX_WATCHED_TASKS {
            return Err(invalid(format!(
                "a subscriptions/listen may watch at most {MAX_WATCHED_TASKS} tasks"
            )));
        }
    }
    Ok(ids)
}

/// The notification params of a task: its `tasks/get` body without `resultType`.
fn params_of(view: TaskView) -> Option<JsonObject> {
    match serde_json::to_value(detailed(view)) {
        Ok(Value::Object(params)) => Some(params),
        _ => None,
    }
}

/// Pushes the current state of `ids`, then each change, until the listener is gone or
/// every task ended (or expired).
async fn watch(
    backend: Arc<dyn TaskBackend>,
    owner: Owner,
    ids: Vec<String>,
    mut changes: Option<broadcast::Receiver<String>>,
    sender: mpsc::Sender<PushedNotification>,
) {
    let mut last: HashMap<String, JsonObject> = HashMap::new();
    let mut pending: Vec<String> = ids.clone();
    let mut watched = ids;
    let mut poll_every = Duration::from_secs(1);
    loop {
        for id in std::mem::take(&mut pending) {
            let view = match backend.get(&owner, &id).await {
                Ok(view) => view,
                Err(error) => {
                    // Read again at the next change or tick.
                    tracing::debug!(%error, task = %id, "a watched task could not be read");
                    continue;
                }
            };
            let Some(view) = view else {
                // Expired: nothing more will happen to it.
                watched.retain(|w| *w != id);
                continue;
            };
            let ended = view.status.is_terminal();
            poll_every = poll_every.min(Duration::from_millis(view.poll_interval_ms.max(50)));
            let Some(params) = params_of(view) else {
                continue;
            };
            if last.get(&id) != Some(&params) {
                last.insert(id.clone(), params.clone());
                if sender
                    .send(PushedNotification::new(METHOD, params))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            if ended {
                watched.retain(|w| *w != id);
            }
        }
        if watched.is_empty() {
            return;
        }
        let next = match changes.as_mut() {
            Some(feed) => tokio::select! {
                () = sender.closed() => return,
                change = feed.recv() => match change {
                    Ok(id) if id.is_empty() => watched.clone(),
                    Ok(id) => watched.iter().filter(|w| **w == id).cloned().collect(),
                    Err(broadcast::error::RecvError::Lagged(_)) => watched.clone(),
                    Err(broadcast::error::RecvError::Closed) => {
                        changes = None;
                        watched.clone()
                    }
                },
            },
            None => tokio::select! {
                () = sender.closed() => return,
                () = tokio::time::sleep(poll_every) => watched.clone(),
            },
        };
        pending = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deduplicated_and_bounded() {
        let ids = task_ids(&serde_json::json!(["a", "b", "a"])).unwrap();
        assert_eq!(ids, ["a", "b"]);
        assert!(task_ids(&serde_json::json!("a")).is_err());
        assert!(task_ids(&serde_json::json!([1])).is_err());
        let many: Vec<String> = (0..=MAX_WATCHED_TASKS).map(|i| i.to_string()).collect();
        assert!(task_ids(&serde_json::json!(many)).is_err());
        let most: Vec<String> = (0..MAX_WATCHED_TASKS).map(|i| i.to_string()).collect();
        assert_eq!(
            task_ids(&serde_json::json!(most)).unwrap().len(),
            MAX_WATCHED_TASKS
        );
    }
}
