//! Resource updates: a server announces that one of its resources changed, every server it
//! is mounted in hears it under the URI it exposes the resource at, and the transports send
//! `notifications/resources/updated` to the clients subscribed to that URI
//! (`resources/subscribe` on 2025-11-25 sessions, the `resourceSubscriptions` of
//! `subscriptions/listen` on 2026-07-28).

use std::{
    collections::HashSet,
    sync::{Arc, Weak},
};

use ferrymcp_types::ErrorData;
use tokio::sync::broadcast;

use super::{Server, ServerInner, lock, resources::unknown_resource};
use crate::Context;

/// How many updates a slow listener may fall behind before it skips ahead (it then
/// announces every URI it watches once, which is always correct: a client re-reads).
pub(super) const UPDATES_CAPACITY: usize = 256;

/// The most resources one session (or one `subscriptions/listen`) may watch.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;

impl Server {
    /// Announces that the resource at `uri` changed. Clients subscribed to it hear
    /// `notifications/resources/updated`, here and on every server this one is mounted in,
    /// there under the URI the mount exposes (`data://readme` of a child mounted as `docs`
    /// is `data://docs/readme` at the parent).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use ferrymcp_core::Server;
    /// let (parent, child) = (Server::new("parent"), Server::new("child"));
    /// parent.mount(&child, "docs").unwrap();
    /// let mut updates = parent.resource_updates();
    /// child.resource_updated("data://readme");
    /// assert_eq!(&*updates.recv().await.unwrap(), "data://docs/readme");
    /// # });
    /// ```
    pub fn resource_updated(&self, uri: impl Into<String>) {
        let mut pending: Vec<(Arc<ServerInner>, String)> =
            vec![(Arc::clone(&self.inner), uri.into())];
        let mut seen = HashSet::new();
        while let Some((server, uri)) = pending.pop() {
            if !seen.insert((Arc::as_ptr(&server), uri.clone())) {
                continue;
            }
            // No receiver is fine: nobody is listening.
            let _ = server.updates.send(Arc::from(uri.as_str()));
            let parents: Vec<Arc<ServerInner>> = {
                let mut parents = lock(&server.parents);
                parents.retain(|p| p.strong_count() > 0);
                parents.iter().filter_map(Weak::upgrade).collect()
            };
            for parent in parents {
                for mount in parent.mounts.load().iter() {
                    if Arc::ptr_eq(&mount.child.inner, &server) {
                        pending.push((Arc::clone(&parent), mount.exposed_uri(&uri)));
                    }
                }
            }
        }
    }

    /// Subscribes to the URIs of resources that changed here or on any server mounted below,
    /// as this server exposes them. A receiver that lags gets `RecvError::Lagged`: treat it
    /// as "everything watched changed".
    ///
    /// ```
    /// let mut updates = ferrymcp_core::Server::new("s").resource_updates();
    /// assert!(updates.try_recv().is_err());
    /// ```
    pub fn resource_updates(&self) -> broadcast::Receiver<Arc<str>> {
        self.inner.updates.subscribe()
    }

    /// Whether `uri` names a resource the caller may read here (a resource or a URI one of
    /// the templates matches, through mounts): only those can be watched.
    pub(crate) fn check_watchable(&self, cx: &Context, uri: &str) -> Result<(), ErrorData> {
        let resolved = self
            .resolve_resource(uri, None, &|_, _| true)
            .ok_or_else(|| unknown_resource(uri))?;
        Self::check_access(
            cx,
            &resolved.gates,
            resolved.hit.requirement(),
            "resource",
            uri,
            || unknown_resource(uri),
        )
    }

    /// Whether `uri` names a resource here, whoever asks.
    pub(crate) fn has_resource(&self, uri: &str) -> bool {
        self.resolve_resource(uri, None, &|_, _| true).is_some()
    }
}
