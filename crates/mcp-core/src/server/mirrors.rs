//! Servers whose components mirror another source (they have a
//! [`before_list`](Server::before_list) hook, as a proxy server does): a request naming a
//! component that nothing in the tree has gives them the chance to read their source again
//! before the name is looked up once more, so a tool the source added since the last list
//! can be called without listing first.
//!
//! A server remembers whether anything in its tree mirrors (`mirrors`, set when a hook is
//! set or a mirroring child is mounted, and passed up to every parent), so a tree without
//! hooks never looks twice.

use std::{borrow::Cow, sync::atomic::Ordering};

use futures::future::{BoxFuture, join_all};

use super::{ListKind, Server};
use crate::mount::Mount;

impl Server {
    /// Whether this server or anything mounted below it has a `before_list` hook.
    pub(crate) fn mirrors(&self) -> bool {
        self.inner.mirrors.load(Ordering::Acquire)
    }

    /// Records that this server's tree mirrors, here and in every server it is mounted into.
    pub(crate) fn mark_mirroring(&self) {
        self.mark_up(|inner| &inner.mirrors);
    }

    /// At the root of the request `cx` belongs to, when `name` (a component of `kind`)
    /// resolves to nothing (`missing`), lets the mirroring servers it would reach look again,
    /// once a request: `looked` records that they did, so a later step (past the middleware,
    /// which may have renamed it) does not look again.
    pub(crate) async fn look_again_once(
        &self,
        cx: &crate::Context,
        kind: ListKind,
        name: &str,
        looked: &mut bool,
        missing: impl FnOnce() -> bool,
    ) {
        if self.mirrors() && !*looked && cx.root().ptr_eq(self) && missing() {
            *looked = true;
            self.look_again(kind, name).await;
        }
    }

    /// Runs the `before_list` hook of every server that `name` (a component of `kind`) would
    /// reach, here and through the mounts whose namespace it is in, all at once, and waits
    /// for them. A hook that fails is logged: the name then stays unknown.
    pub(crate) fn look_again<'a>(&'a self, kind: ListKind, name: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if !self.mirrors() {
                return;
            }
            let mounts = self.inner.mounts.load_full();
            let below = mounts.iter().filter_map(|mount| {
                let child_name = child_name(mount, kind, name)?;
                Some(async move { mount.child.look_again(kind, &child_name).await })
            });
            let (own, _) = futures::join!(self.run_list_hook(kind), join_all(below));
            if let Err(error) = own {
                tracing::debug!(
                    server = %self.name(),
                    error = %error.message,
                    "looking for an unknown component again failed"
                );
            }
        })
    }
}

/// The child's name for the component `name` of `kind` at the parent, if `mount` can
/// answer it.
fn child_name<'n>(mount: &'n Mount, kind: ListKind, name: &'n str) -> Option<Cow<'n, str>> {
    match kind {
        ListKind::Tools => mount.child_name(name).map(Cow::Borrowed),
        ListKind::Prompts => mount.child_prompt(name).map(Cow::Borrowed),
        ListKind::Resources => mount.child_uri(name).map(Cow::Owned),
    }
}
