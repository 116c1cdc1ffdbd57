//! What an upstream announces, relayed: changes of its lists, and updates of its resources.
//!
//! List changes: a 2025-11-25 session delivers `notifications/*/list_changed` to the proxy's
//! client handler ([`UpstreamHandler`]); from a 2026-07-28 upstream the proxy asks for them
//! on a `subscriptions/listen` stream, for each list the upstream says it announces. Either
//! way they reach the upstream's list-change channel, and a proxy server following it reads
//! that list again at once (see `mirror.rs`): what was added, dropped or changed is
//! registered, and the proxy's clients get `list_changed`. After the stream is opened again
//! (the upstream restarted), every list is read again: changes made meanwhile were not
//! announced to anyone.
//!
//! Resource updates: when the upstream advertises `resources.subscribe`, the proxy
//! subscribes to every resource it lists (at most
//! [`MAX_RESOURCE_SUBSCRIPTIONS`](ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS)), and each
//! update is announced on the proxy server, which tells only the clients watching that URI
//! (under its mount prefix). On 2026-07-28 the same stream carries them, opened again
//! whenever that set changes; on 2025-11-25 the session is sent a `resources/subscribe` for
//! each resource that joins the set (and `resources/unsubscribe` for each that leaves it),
//! and its `notifications/resources/updated` reach [`UpstreamHandler`].
//!
//! The stream (or, on 2025-11-25, the session, pinged every [`SESSION_CHECK`]) is opened
//! again after it ends (capped, jittered backoff, started over only after one that lived a
//! while), and the relay ends with the proxy server.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use ferrymcp_core::{ListKind, Server, WeakServer};
use ferrymcp_types::ClientConfig;
use rmcp::{
    RoleClient,
    model::{ResourceUpdatedNotificationParam, ServerNotification},
    service::NotificationContext,
};
use tokio::sync::{broadcast, oneshot, watch};

use crate::{
    Upstream,
    connection::{Listening, Session},
};

/// The first delay before listening again (each next one doubles).
const RETRY_MIN: Duration = Duration::from_millis(250);
/// The longest delay between two attempts.
const RETRY_MAX: Duration = Duration::from_secs(10);
/// How long the upstream has to acknowledge a `subscriptions/listen`.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a quiet relay checks that its proxy server still exists.
pub(crate) const ALIVE_CHECK: Duration = Duration::from_secs(30);
/// How many list changes wait for the proxy servers following them (more: all lists are
/// read again).
pub(crate) const LIST_CHANGES_CAPACITY: usize = 16;
/// How many resource updates from a 2025-11-25 session wait for the relay (more: every
/// subscribed resource is announced as updated).
pub(crate) const UPDATES_CAPACITY: usize = 256;
/// How often the relay pings a 2025-11-25 session it follows: an upstream that restarted
/// answers that it no longer knows the session, which is then replaced (announcements
/// missed meanwhile made up for, resources subscribed to again).
const SESSION_CHECK: Duration = Duration::from_secs(5);

/// The proxy's client side of an upstream session: the client's identity, and the list
/// changes and resource updates a 2025-11-25 session announces, passed to the upstream's
/// channels.
pub(crate) struct UpstreamHandler {
    pub(crate) config: ClientConfig,
    changes: broadcast::Sender<ListKind>,
    updates: broadcast::Sender<String>,
}

impl UpstreamHandler {
    pub(crate) fn new(
        config: ClientConfig,
        changes: broadcast::Sender<ListKind>,
        updates: broadcast::Sender<String>,
    ) -> Self {
        Self {
            config,
            changes,
            updates,
        }
    }

    fn changed(&self, kind: ListKind) {
        // No proxy server follows this upstream: nobody to tell.
        let _ = self.changes.send(kind);
    }
}

impl rmcp::ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(ListKind::Tools);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(ListKind::Resources);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(ListKind::Prompts);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // No relay follows this session's resources: nobody to tell.
        let _ = self.updates.send(params.uri);
    }
}

/// Starts relaying what `upstream` announces to `server`, updates of the resources `uris`
/// holds included (the set the proxy lists, as it changes). The receiver it returns hears
/// when the first attempt to listen is over: from then on, every change is announced.
pub(crate) fn relay(
    server: &Server,
    upstream: Upstream,
    uris: watch::Receiver<Vec<String>>,
) -> oneshot::Receiver<()> {
    let (tried, first) = oneshot::channel();
    tokio::spawn(run(server.downgrade(), upstream, uris, tried));
    first
}

/// `delay` with jitter: somewhere between half of it and all of it (replicas restarted
/// together do not listen again in step).
pub(crate) fn jittered(delay: Duration) -> Duration {
    use std::hash::BuildHasher as _;
    let random = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
    let fraction = (random % 1024) as f64 / 1024.0;
    delay.mul_f64(0.5 + fraction / 2.0)
}

/// How one listen ended.
enum Ended {
    /// The proxy server (or its mirror) is gone: the relay ends.
    Gone,
    /// The listed resources changed: listen again at once.
    Resubscribe,
    /// The stream or session ended or failed: listen again after a delay.
    Lost,
}

async fn run(
    server: WeakServer,
    upstream: Upstream,
    mut uris: watch::Receiver<Vec<String>>,
    tried: oneshot::Sender<()>,
) {
    let mut tried = Some(tried);
    let mut delay = RETRY_MIN;
    // The open stream; when the listed resources change it stays open until the next one
    // is, so no list change falls between the two.
    let mut current = None;
    // The resources a 2025-11-25 session is subscribed to.
    let mut subscribed = BTreeSet::new();
    // Whether the last stream or session was lost: what changed until the next one opened
    // was announced to nobody.
    let mut lost = false;
    while server.upgrade().is_some() {
        let mut watched = uris.borrow_and_update().clone();
        watched.truncate(ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS);
        let listen = tokio::time::timeout(LISTEN_TIMEOUT, upstream.listen(&watched)).await;
        if let Some(tried) = tried.take() {
            let _ = tried.send(());
        }
        let opened = tokio::time::Instant::now();
        let ended = match listen {
            Ok(Ok(None)) => {
                // Nothing to listen for now (an upstream announcing nothing): wait for
                // the listed resources to change.
                current = None;
                until_changed(&server, &mut uris).await
            }
            Ok(Ok(Some(listening))) => {
                if std::mem::take(&mut lost) {
                    for kind in ListKind::ALL {
                        upstream.announce(kind);
                    }
                }
                match listening {
                    Listening::Stream(subscription) => {
                        let stream = current.insert(subscription);
                        relay_stream(&server, &upstream, stream, &mut uris).await
                    }
                    Listening::Session { session, updates } => {
                        current = None;
                        let session = FollowedSession {
                            session,
                            updates: updates.then_some(&mut subscribed),
                        };
                        follow_session(&server, &upstream, session, &mut uris).await
                    }
                }
            }
            Ok(Err(error)) => {
                tracing::debug!(upstream = %upstream.name(), %error, "cannot listen for what the upstream announces");
                Ended::Lost
            }
            Err(_) => {
                tracing::debug!(upstream = %upstream.name(), "the upstream did not acknowledge subscriptions/listen in time");
                Ended::Lost
            }
        };
        match ended {
            Ended::Gone => return,
            Ended::Resubscribe => continue,
            Ended::Lost => {
                current = None;
                subscribed.clear();
                lost = true;
            }
        }
        // Only a stream or session that lived a while starts the delays over: an upstream
        // that ends each one at once is asked (and read) ever less often.
        if opened.elapsed() >= RETRY_MAX {
            delay = RETRY_MIN;
        }
        tokio::time::sleep(jittered(delay)).await;
        delay = (delay * 2).min(RETRY_MAX);
    }
}

/// A 2025-11-25 session the relay follows, and the resources it is subscribed to when it
/// relays their updates.
struct FollowedSession<'a> {
    session: Arc<Session>,
    updates: Option<&'a mut BTreeSet<String>>,
}

/// Follows a 2025-11-25 session until it closes, the listed resources change, or `server`
/// is gone: its list changes reach the handler on their own; the listed resources are
/// subscribed to (those no longer listed unsubscribed) and their updates relayed.
async fn follow_session(
    server: &WeakServer,
    upstream: &Upstream,
    followed: FollowedSession<'_>,
    uris: &mut watch::Receiver<Vec<String>>,
) -> Ended {
    let FollowedSession { session, updates } = followed;
    // Heard from before subscribing, so no update falls between the two.
    let mut announced = upstream.resource_updates();
    let none = BTreeSet::new();
    let subscribed = match updates {
        Some(subscribed) => match subscribe_listed(upstream, &session, subscribed, uris).await {
            Ok(true) => &*subscribed,
            // It advertises subscriptions but does not take them: the session is still
            // followed, with no updates to relay (asked again when the set changes).
            Ok(false) => &none,
            Err(ended) => return ended,
        },
        None => &none,
    };
    follow(server, upstream, &session, &mut announced, subscribed, uris).await
}

/// Subscribes `session` to the listed resources it is not subscribed to yet, and
/// unsubscribes it from those no longer listed; `Ok(false)` when the upstream does not take
/// subscriptions.
async fn subscribe_listed(
    upstream: &Upstream,
    session: &Arc<Session>,
    subscribed: &mut BTreeSet<String>,
    uris: &watch::Receiver<Vec<String>>,
) -> Result<bool, Ended> {
    let wanted: BTreeSet<String> = uris
        .borrow()
        .iter()
        .take(ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS)
        .cloned()
        .collect();
    let joined = wanted.difference(subscribed).cloned().collect();
    let left = subscribed.difference(&wanted).cloned().collect();
    let subscribing = upstream.subscribe_each(session, joined, true);
    match tokio::time::timeout(LISTEN_TIMEOUT, subscribing).await {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => return Ok(false),
        Ok(Err(error)) => {
            tracing::debug!(upstream = %upstream.name(), %error, "cannot subscribe to the upstream's resources");
            return Err(Ended::Lost);
        }
        Err(_) => {
            tracing::debug!(upstream = %upstream.name(), "the upstream did not acknowledge resources/subscribe in time");
            return Err(Ended::Lost);
        }
    }
    // A resource no longer listed: its updates would be dropped anyway.
    let unsubscribing = upstream.subscribe_each(session, left, false);
    if !matches!(
        tokio::time::timeout(LISTEN_TIMEOUT, unsubscribing).await,
        Ok(Ok(_))
    ) {
        tracing::debug!(upstream = %upstream.name(), "cannot unsubscribe from the upstream's resources");
    }
    *subscribed = wanted;
    Ok(true)
}

/// Relays the updates of `subscribed` that `announced` hears until `session` is no longer
/// the upstream's current one, the listed resources change, or `server` is gone; pings the
/// session every [`SESSION_CHECK`].
async fn follow(
    server: &WeakServer,
    upstream: &Upstream,
    session: &Arc<Session>,
    announced: &mut broadcast::Receiver<String>,
    subscribed: &BTreeSet<String>,
    uris: &mut watch::Receiver<Vec<String>>,
) -> Ended {
    loop {
        tokio::select! {
            update = announced.recv() => {
                let Some(server) = server.upgrade() else {
                    return Ended::Gone;
                };
                match update {
                    Ok(uri) if subscribed.contains(&uri) => server.resource_updated(uri),
                    Ok(_) => {}
                    // Some updates were missed: each resource may have changed.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        for uri in subscribed.iter() {
                            server.resource_updated(uri.clone());
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ended::Gone,
                }
            }
            changed = uris.changed() => {
                return if changed.is_ok() { Ended::Resubscribe } else { Ended::Gone };
            }
            () = tokio::time::sleep(SESSION_CHECK) => {
                if server.upgrade().is_none() {
                    return Ended::Gone;
                }
                if upstream.is_current(session) {
                    // A failure drops the session (seen below); its answer says nothing else.
                    drop(tokio::time::timeout(LISTEN_TIMEOUT, upstream.ping()).await);
                }
                if !upstream.is_current(session) {
                    tracing::debug!(upstream = %upstream.name(), "the upstream's session closed; following the next one");
                    return Ended::Lost;
                }
            }
        }
    }
}

/// Relays one open stream until it ends, the listed resources change, or `server` is gone.
async fn relay_stream(
    server: &WeakServer,
    upstream: &Upstream,
    subscription: &mut rmcp::service::Subscription,
    uris: &mut watch::Receiver<Vec<String>>,
) -> Ended {
    loop {
        let next = tokio::select! {
            next = subscription.next() => next,
            changed = uris.changed() => {
                return if changed.is_ok() { Ended::Resubscribe } else { Ended::Gone };
            }
            () = tokio::time::sleep(ALIVE_CHECK) => {
                if server.upgrade().is_none() {
                    return Ended::Gone;
                }
                continue;
            }
        };
        let kind = match next {
            Ok(Some(ServerNotification::ResourceUpdatedNotification(update))) => {
                let Some(server) = server.upgrade() else {
                    return Ended::Gone;
                };
                server.resource_updated(update.params.uri);
                continue;
            }
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => ListKind::Tools,
            Ok(Some(ServerNotification::ResourceListChangedNotification(_))) => ListKind::Resources,
            Ok(Some(ServerNotification::PromptListChangedNotification(_))) => ListKind::Prompts,
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => {
                tracing::debug!(upstream = %upstream.name(), "the upstream's announcements ended; listening again");
                return Ended::Lost;
            }
        };
        upstream.announce(kind);
    }
}

/// Waits until the listed resources change, or `server` is gone.
async fn until_changed(server: &WeakServer, uris: &mut watch::Receiver<Vec<String>>) -> Ended {
    loop {
        tokio::select! {
            changed = uris.changed() => {
                return if changed.is_ok() { Ended::Resubscribe } else { Ended::Gone };
            }
            () = tokio::time::sleep(ALIVE_CHECK) => {
                if server.upgrade().is_none() {
                    return Ended::Gone;
                }
            }
        }
    }
}
