//! Upstream resource updates, relayed to whoever watches the proxied resources.
//!
//! When the upstream session is 2026-07-28 and advertises `resources.subscribe`, the proxy
//! keeps one `subscriptions/listen` on it for every resource it proxies (at most
//! [`MAX_RESOURCE_SUBSCRIPTIONS`](ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS)), and announces each
//! update on the proxy server, which tells only the clients watching that URI (under its
//! mount prefix). The listen is opened again after the upstream restarts (capped,
//! jittered backoff), and the relay ends with the proxy server. A 2025-11-25 upstream's
//! updates are not relayed.

use std::time::Duration;

use ferrymcp_core::{Server, WeakServer};
use rmcp::model::ServerNotification;

use crate::Upstream;

/// The first delay before listening again (each next one doubles).
const RETRY_MIN: Duration = Duration::from_millis(250);
/// The longest delay between two attempts.
const RETRY_MAX: Duration = Duration::from_secs(10);
/// How often a quiet relay checks that its proxy server still exists.
const ALIVE_CHECK: Duration = Duration::from_secs(30);

/// Starts relaying `upstream`'s updates of `uris` to `server`.
pub(crate) fn relay(server: &Server, upstream: Upstream, mut uris: Vec<String>) {
    if uris.is_empty() {
        return;
    }
    uris.truncate(ferrymcp_core::MAX_RESOURCE_SUBSCRIPTIONS);
    tokio::spawn(run(server.downgrade(), upstream, uris));
}

/// `delay` with jitter: somewhere between half of it and all of it (replicas restarted
/// together do not listen again in step).
pub(crate) fn jittered(delay: Duration) -> Duration {
    use std::hash::BuildHasher as _;
    let random = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
    let fraction = (random % 1024) as f64 / 1024.0;
    delay.mul_f64(0.5 + fraction / 2.0)
}

async fn run(server: WeakServer, upstream: Upstream, uris: Vec<String>) {
    let mut delay = RETRY_MIN;
    while server.upgrade().is_some() {
        match upstream.listen_resources(&uris).await {
            Ok(None) => return,
            Ok(Some(mut subscription)) => {
                delay = RETRY_MIN;
                loop {
                    let next = tokio::select! {
                        next = subscription.next() => next,
                        () = tokio::time::sleep(ALIVE_CHECK) => {
                            if server.upgrade().is_none() {
                                return;
                            }
                            continue;
                        }
                    };
                    match next {
                        Ok(Some(ServerNotification::ResourceUpdatedNotification(update))) => {
                            let Some(server) = server.upgrade() else {
                                return;
                            };
                            server.resource_updated(update.params.uri);
                        }
                        Ok(Some(_)) => {}
                        Ok(None) | Err(_) => break,
                    }
                }
                tracing::debug!(upstream = %upstream.name(), "the upstream's resource updates ended; listening again");
            }
            Err(error) => {
                tracing::debug!(upstream = %upstream.name(), %error, "cannot listen for the upstream's resource updates");
            }
        }
        tokio::time::sleep(jittered(delay)).await;
        delay = (delay * 2).min(RETRY_MAX);
    }
}
