//! List-changed announcements: adding or removing a tool, resource or prompt on a server, or
//! on anything mounted below it, tells every server above it. The transports turn these
//! into `notifications/*/list_changed` (legacy sessions) or `subscriptions/listen` events
//! (2026-07-28).

use std::sync::{Arc, Weak};

use tokio::sync::broadcast;

use super::{Server, ServerInner, lock};

/// Which list changed.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{ListKind, Server};
/// let (parent, child) = (Server::new("parent"), Server::new("child"));
/// parent.mount(&child, "child").unwrap();
/// let mut changes = parent.list_changes();
/// child.tool("late", || async {}).unwrap();
/// assert_eq!(changes.recv().await.unwrap(), ListKind::Tools);
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list` and `resources/templates/list`.
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// Every kind.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Resources, ListKind::Prompts];
}

/// How many announcements a slow listener may fall behind before it skips ahead (it then
/// announces every kind once, which is always correct).
pub(super) const CHANNEL_CAPACITY: usize = 64;

impl Server {
    /// Subscribes to this server's list changes, including those of every server mounted
    /// below it. A receiver that lags gets `RecvError::Lagged`: treat it as "everything
    /// changed".
    ///
    /// ```
    /// let mut changes = ferrymcp_core::Server::new("s").list_changes();
    /// assert!(changes.try_recv().is_err());
    /// ```
    pub fn list_changes(&self) -> broadcast::Receiver<ListKind> {
        self.inner.changes.subscribe()
    }

    /// Announces a change here and to every server this one is mounted in.
    pub(crate) fn announce(&self, kind: ListKind) {
        let mut pending: Vec<Arc<ServerInner>> = vec![Arc::clone(&self.inner)];
        let mut seen = std::collections::HashSet::new();
        while let Some(server) = pending.pop() {
            if !seen.insert(Arc::as_ptr(&server)) {
                continue;
            }
            // No receiver is fine: nobody is listening.
            let _ = server.changes.send(kind);
            let mut parents = lock(&server.parents);
            parents.retain(|p| p.strong_count() > 0);
            pending.extend(parents.iter().filter_map(Weak::upgrade));
        }
    }

    /// Records `parent` as a server this one is mounted in.
    pub(super) fn add_parent(&self, parent: &Server) {
        lock(&self.inner.parents).push(Arc::downgrade(&parent.inner));
    }

    /// Sets `flag` (a fact about a server's tree) here and in every server above it.
    pub(super) fn mark_up(&self, flag: fn(&ServerInner) -> &std::sync::atomic::AtomicBool) {
        flag(&self.inner).store(true, std::sync::atomic::Ordering::Release);
        for parent in self.parents() {
            parent.mark_up(flag);
        }
    }

    /// The servers this one is mounted in, as they are now.
    pub(super) fn parents(&self) -> Vec<Server> {
        lock(&self.inner.parents)
            .iter()
            .filter_map(Weak::upgrade)
            .map(|inner| Server { inner })
            .collect()
    }
}
