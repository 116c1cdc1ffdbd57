//! The fast path of cancellation: one pub/sub channel per queue (`<prefix>:ev`), on which
//! the cancel script names the holding worker and the task. Every backend instance
//! subscribes once (before `connect` returns) and hands each message to the local worker it
//! names. Messages lost while the subscription reconnects are covered by heartbeats, which
//! carry the durable cancel.
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
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::Subscriber;
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

/// A subscription to `channel` through the `attempt`-th node.
async fn open(
    subscriber: &Subscriber,
    attempt: usize,
    channel: &str,
) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = subscriber.connect(attempt).await?;
    let limit = subscriber.response_timeout;
    match tokio::time::timeout(limit, pubsub.subscribe(channel)).await {
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
    listeners: &Listeners,
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
                    Ok(payload) => dispatch(listeners, &payload),
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
    channel: String,
    listeners: Listeners,
    stop: CancellationToken,
) -> redis::RedisResult<()> {
    let pubsub = open(&subscriber, 0, &channel).await?;
    tokio::spawn(async move {
        let mut connected = Some(pubsub);
        let mut attempt = 0usize;
        let mut delay = RESUBSCRIBE_MIN_DELAY;
        let mut outage = false;
        loop {
            if let Some(pubsub) = connected.take() {
                if outage {
                    tracing::info!(%channel, "task event subscription restored");
                }
                delay = RESUBSCRIBE_MIN_DELAY;
                match relay(pubsub, &listeners, &stop, subscriber.response_timeout).await {
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
                opened = open(&subscriber, attempt, &channel) => match opened {
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
