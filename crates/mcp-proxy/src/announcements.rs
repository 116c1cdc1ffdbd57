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
//! Resource updates: when the upstream session is 2026-07-28 and advertises
//! `resources.subscribe`, the same stream subscribes to every resource the proxy lists (at
//! most [`MAX_RESOURCE_SUBSCRIPTIONS`](ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS)), opened
//! again whenever that set changes, and each update is announced on the proxy server, which
//! tells only the clients watching that URI (under its mount prefix). A 2025-11-25
//! upstream's updates are not relayed.
//!
//! The stream is opened again after it ends (capped, jittered backoff, started over only
//! after a stream that lived a while), and the relay ends with the proxy server.

use std::time::Duration;

use ferrymcp_core::{ListKind, Server, WeakServer};
use ferrymcp_types::ClientConfig;
use rmcp::{RoleClient, model::ServerNotification, service::NotificationContext};
use tokio::sync::{broadcast, oneshot, watch};

use crate::Upstream;

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

/// The proxy's client side of an upstream session: the client's identity, and the list
/// changes a 2025-11-25 session announces, passed to the upstream's channel.
pub(crate) struct UpstreamHandler {
    pub(crate) config: ClientConfig,
    changes: broadcast::Sender<ListKind>,
}

impl UpstreamHandler {
    pub(crate) fn new(config: ClientConfig, changes: broadcast::Sender<ListKind>) -> Self {
        Self { config, changes }
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
    /// The stream ended or failed: listen again after a delay.
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
    let mut listened = false;
    while server.upgrade().is_some() {
        let mut watched = uris.borrow_and_update().clone();
        watched.truncate(ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS);
        let listen = tokio::time::timeout(LISTEN_TIMEOUT, upstream.listen(&watched)).await;
        if let Some(tried) = tried.take() {
            let _ = tried.send(());
        }
        let ended = match listen {
            Ok(Ok(None)) => {
                // Nothing to listen for now (a 2025-11-25 upstream, or one announcing
                // nothing): wait for the listed resources to change.
                current = None;
                until_changed(&server, &mut uris).await
            }
            Ok(Ok(Some(subscription))) => {
                if listened && current.is_none() {
                    // What changed while no stream was open was announced to nobody.
                    for kind in ListKind::ALL {
                        upstream.announce(kind);
                    }
                }
                listened = true;
                let opened = tokio::time::Instant::now();
                let ended =
                    relay_stream(&server, &upstream, current.insert(subscription), &mut uris).await;
                // Only a stream that lived a while starts the delays over: an upstream that
                // ends each stream at once is asked (and read) ever less often.
                if opened.elapsed() >= RETRY_MAX {
                    delay = RETRY_MIN;
                }
                ended
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
            Ended::Lost => current = None,
        }
        tokio::time::sleep(jittered(delay)).await;
        delay = (delay * 2).min(RETRY_MAX);
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
