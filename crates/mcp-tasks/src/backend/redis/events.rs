//! The queue's two pub/sub channels, on one subscription per backend instance (opened
//! before `connect` returns):
//!
//! * `<prefix>:ev`, the fast path of cancellation: the cancel script names the holding
//!   worker and the task, and the message goes to the local worker it names. Messages lost
//!   while the subscription reconnects are covered by heartbeats, which carry the durable
//!   cancel.
//! * `<prefix>:ch`, the change feed: the id of a watched task that changed (see
//!   `watch.lua`), handed to [`changes`](crate::backend::TaskBackend::changes). After a
//!   reconnection the feed sends an empty id: changes may have been missed meanwhile.
//!
//! The subscription `PING`s its server every [`PING_EVERY`] and counts a missing answer
//! (within the response timeout) as a lost connection, so a dead or frozen server is noticed
//! even while no messages flow. On a Redis Cluster it subscribes on one seed node (trying the
//! next one after a failure): a cluster delivers `PUBLISH` to subscribers on every node.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::StreamExt as _;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::connection::Subscriber;
use crate::backend::{WorkerEvent, WorkerId};

/// Local workers' event senders, by worker id.
pub(super) type Listeners = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<WorkerEvent>>>>;

/// Where the subscription delivers: workers' cancels, and the change feed.
#[derive(Clone)]
pub(super) struct Feed {
    pub(super) listeners: Listeners,
    pub(super) changes: broadcast::Sender<String>,
    /// `<prefix>:ev`.
    pub(super) cancels: String,
    /// `<prefix>:ch`.
    pub(super) changed: String,
}

impl Feed {
    pub(super) fn new(prefix: &str) -> Self {
        Self {
            listeners: Listeners::default(),
            changes: broadcast::channel(CHANGES_BUFFER).0,
            cancels: format!("{prefix}:ev"),
            changed: format!("{prefix}:ch"),
        }
    }

    fn deliver(&self, channel: &str, payload: String) {
        if channel == self.changed {
            // Nobody listening is fine.
            let _ = self.changes.send(payload);
        } else {
            dispatch(&self.listeners, &payload);
        }
    }
}

/// How many changes the feed holds for a listener that has not read them yet; one that
/// falls further behind is told it lagged, and reads again everything it watches.
const CHANGES_BUFFER: usize = 1024;

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

/// How often the subscription `PING`s its server: a server that does not answer within the
/// response timeout is taken as lost, and the subscription reconnects.
pub(super) const PING_EVERY: Duration = Duration::from_secs(5);
/// The first delay before resubscribing (each next one doubles, with jitter).
const RESUBSCRIBE_MIN_DELAY: Duration = Duration::from_millis(250);
/// The longest delay between resubscription attempts.
const RESUBSCRIBE_MAX_DELAY: Duration = Duration::from_secs(10);

/// Why a subscription ended.
enum Ended {
    Stopped,
    Lost(String),
}

/// `delay` with jitter: somewhere between half of it and all of it.
fn jittered(delay: Duration) -> Duration {
    let fraction = f64::from(getrandom::u32().unwrap_or(u32::MAX / 2)) / f64::from(u32::MAX);
    delay.mul_f64(0.5 + fraction / 2.0)
}

/// A subscription to the feed's channels through the `attempt`-th node.
async fn open(
    subscriber: &Subscriber,
    attempt: usize,
    feed: &Feed,
) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = subscriber.connect(attempt).await?;
    let limit = subscriber.response_timeout;
    let channels = [feed.cancels.as_str(), feed.changed.as_str()];
    match tokio::time::timeout(limit, pubsub.subscribe(&channels)).await {
        Ok(subscribed) => subscribed.map(|()| pubsub),
        Err(_) => Err(redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("SUBSCRIBE got no answer within {} ms", limit.as_millis()),
        ))),
    }
}

/// Dispatches the messages of `pubsub` until `stop`, or until its connection is lost (closed,
/// or a `PING` unanswered).
async fn relay(
    pubsub: redis::aio::PubSub,
    feed: &Feed,
    stop: &CancellationToken,
    response_timeout: Duration,
) -> Ended {
    let (mut sink, mut messages) = pubsub.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.reset();
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ended::Stopped,
            message = messages.next() => match message {
                Some(message) => match message.get_payload::<String>() {
                    Ok(payload) => feed.deliver(message.get_channel_name(), payload),
                    Err(error) => tracing::debug!(%error, "ignoring a task event"),
                },
                None => return Ended::Lost("the connection closed".to_owned()),
            },
            _ = ping.tick() => {
                let answered = tokio::select! {
                    () = stop.cancelled() => return Ended::Stopped,
                    answered = tokio::time::timeout(response_timeout, sink.ping::<redis::Value>()) => answered,
                };
                match answered {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => return Ended::Lost(error.to_string()),
                    Err(_) => {
                        return Ended::Lost(format!(
                            "PING got no answer within {} ms",
                            response_timeout.as_millis()
                        ));
                    }
                }
            }
        }
    }
}

/// Subscribes to `channel` and returns once the subscription is in place; a background task
/// then dispatches its messages until `stop`, resubscribing after a lost connection with
/// capped, jittered exponential backoff. One warning per outage, one info on recovery.
pub(super) async fn subscribe(
    subscriber: Subscriber,
    feed: Feed,
    stop: CancellationToken,
) -> redis::RedisResult<()> {
    let pubsub = open(&subscriber, 0, &feed).await?;
    let channel = feed.cancels.clone();
    tokio::spawn(async move {
        let mut connected = Some(pubsub);
        let mut attempt = 0usize;
        let mut delay = RESUBSCRIBE_MIN_DELAY;
        let mut outage = false;
        loop {
            if let Some(pubsub) = connected.take() {
                if outage {
                    tracing::info!(%channel, "task event subscription restored");
                    // Changes published during the outage were not heard.
                    let _ = feed.changes.send(String::new());
                }
                delay = RESUBSCRIBE_MIN_DELAY;
                match relay(pubsub, &feed, &stop, subscriber.response_timeout).await {
                    Ended::Stopped => return,
                    Ended::Lost(why) => {
                        tracing::warn!(%channel, %why, "task event subscription lost; reconnecting (heartbeats still deliver cancels)");
                        outage = true;
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(jittered(delay)) => {}
            }
            delay = (delay * 2).min(RESUBSCRIBE_MAX_DELAY);
            attempt = attempt.wrapping_add(1);
            tokio::select! {
                () = stop.cancelled() => return,
                opened = open(&subscriber, attempt, &feed) => match opened {
                    Ok(fresh) => connected = Some(fresh),
                    Err(error) => tracing::debug!(%error, "resubscribing to task events failed"),
                },
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
