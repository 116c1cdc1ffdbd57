//! The fast path of cancellation: one pub/sub channel per queue (`<prefix>:ev`), on which
//! the cancel script names the holding worker and the task. Every backend instance
//! subscribes once (before `connect` returns) and hands each message to the local worker it
//! names. Messages lost while the subscription reconnects are covered by heartbeats, which
//! carry the durable cancel.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::StreamExt as _;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::backend::{WorkerEvent, WorkerId};

/// Local workers' event senders, by worker id.
pub(super) type Listeners = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<WorkerEvent>>>>;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `worker` and returns its receiver.
pub(super) fn listen(
    listeners: &Listeners,
    worker: &WorkerId,
) -> mpsc::UnboundedReceiver<WorkerEvent> {
    let (sender, receiver) = mpsc::unbounded_channel();
    lock(listeners).insert(worker.as_str().to_owned(), sender);
    receiver
}

/// Delivers one channel message, `<worker>\t<task>`, to its worker if it lives here.
fn dispatch(listeners: &Listeners, payload: &str) {
    let Some((worker, task)) = payload.split_once('\t') else {
        tracing::debug!(payload, "ignoring a malformed task event");
        return;
    };
    let mut listeners = lock(listeners);
    if let Some(sender) = listeners.get(worker)
        && sender.send(WorkerEvent::Cancel(task.to_owned())).is_err()
    {
        // The worker stopped listening.
        listeners.remove(worker);
    }
}

/// Subscribes to `channel` and returns once the subscription is in place; a background task
/// then dispatches its messages until `stop`, resubscribing after a lost connection.
pub(super) async fn subscribe(
    client: redis::Client,
    channel: String,
    listeners: Listeners,
    stop: CancellationToken,
) -> redis::RedisResult<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(&channel).await?;
    tokio::spawn(async move {
        let mut pubsub = Some(pubsub);
        loop {
            if let Some(connected) = pubsub.take() {
                let mut messages = connected.into_on_message();
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        message = messages.next() => match message {
                            Some(message) => match message.get_payload::<String>() {
                                Ok(payload) => dispatch(&listeners, &payload),
                                Err(error) => tracing::debug!(%error, "ignoring a task event"),
                            },
                            None => break,
                        },
                    }
                }
                tracing::warn!(%channel, "task event subscription lost; reconnecting (heartbeats still deliver cancels)");
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            match client.get_async_pubsub().await {
                Ok(mut fresh) => match fresh.subscribe(&channel).await {
                    Ok(()) => pubsub = Some(fresh),
                    Err(error) => tracing::warn!(%error, "resubscribing to task events failed"),
                },
                Err(error) => tracing::warn!(%error, "reconnecting for task events failed"),
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reaches_only_the_worker_it_names() {
        let listeners = Listeners::default();
        let (a, b) = (WorkerId::new(), WorkerId::new());
        let mut to_a = listen(&listeners, &a);
        let mut to_b = listen(&listeners, &b);
        dispatch(&listeners, &format!("{}\ttask-1", a.as_str()));
        dispatch(&listeners, "no tab here");
        assert_eq!(
            to_a.try_recv().ok(),
            Some(WorkerEvent::Cancel("task-1".into()))
        );
        assert!(to_b.try_recv().is_err());
    }
}
