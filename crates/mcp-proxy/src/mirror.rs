//! Keeping a proxy server's components in step with its upstream.
//!
//! The proxy server is filled from the upstream's listings when it is built. After that,
//! each list reaching it (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`, directly or through a mount) first reads the upstream's list of that
//! kind again, unless the copy is younger than [`ProxyServer::relist_after`] (zero by
//! default: every list reads it). Components the upstream added are registered, those it
//! dropped are removed, and those whose listing changed are registered again; each change
//! is announced to clients (`list_changed`) as any registration is. Calls resolve against
//! the copy and never list, except a call (or a get, or a read) naming something the copy
//! does not have: the core runs the same hook first (see `Server::before_list`), so a tool
//! the upstream added since the last list is read and called.
//!
//! A list the upstream announces a change of (`announcements.rs`) is read again the same
//! way, whatever the copy's age.
//!
//! Lists arriving together share one read: a list waits for a read that is under way and
//! reads again only if that read began before the list arrived. A list waits at most 2 s
//! for the upstream: a slower one is listed from the copy, and the read goes on in the
//! background for the lists after it. When the upstream cannot
//! be read, the list answers from the copy it has, with a warning; a proxy built lazily
//! ([`ProxyServer::build_lazy`]) has no copy until its upstream first answers, and its
//! lists fail with the reason until then.
//!
//! [`ProxyServer::build_lazy`]: crate::ProxyServer::build_lazy
//!
//! [`ProxyServer::relist_after`]: crate::ProxyServer::relist_after

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use ferrymcp_core::{ListKind, Server, ServerError, TaskConfig, types::ErrorData};
use serde::Serialize;
use serde_json::Value;
use tokio::{
    sync::{Mutex, broadcast::error::RecvError, oneshot, watch},
    time::Instant,
};

use crate::{ClientFactory, ProxyError, ProxyTool, Upstream, components};

/// What a proxy server mirrors of its upstream, and how.
pub(crate) struct Mirror {
    upstream: Upstream,
    factory: ClientFactory,
    task_modes: HashMap<String, TaskConfig>,
    relist_after: Duration,
    copy: Mutex<Listings>,
    /// Whether each kind was read once (by index), readable while a read holds `copy`.
    copied: [AtomicBool; 3],
    /// The lists of each kind whose read is under way or waiting for one.
    pending: [AtomicUsize; 3],
    /// The URIs of the resources listed, sorted, for the relay of their updates.
    uris: watch::Sender<Vec<String>>,
    /// Whether [`follow`](Self::follow) started.
    following: AtomicBool,
}

/// How many reads of one kind may be under way or waiting (one reading, one next).
const MAX_PENDING: usize = 2;

/// How long a list waits for the upstream's list before it answers from the copy.
const READ_WAIT: Duration = Duration::from_secs(2);

/// One list counted in [`Mirror::pending`] until its read task ends, however it ends.
struct Pending(Arc<Mirror>, ListKind);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.pending[index(self.1)].fetch_sub(1, Ordering::AcqRel);
    }
}

/// `kind`'s place in [`Mirror::copied`].
fn index(kind: ListKind) -> usize {
    match kind {
        ListKind::Tools => 0,
        ListKind::Resources => 1,
        ListKind::Prompts => 2,
    }
}

/// The upstream's listings as last registered: each component's wire form by key, and when
/// each kind's read began.
#[derive(Default)]
struct Listings {
    tools: HashMap<String, Value>,
    resources: HashMap<String, Value>,
    templates: HashMap<String, Value>,
    prompts: HashMap<String, Value>,
    read_at: HashMap<ListKind, Instant>,
    /// When each kind's last read began, whether it succeeded or not.
    tried_at: HashMap<ListKind, Instant>,
    /// Why the last read of a kind that was never read failed.
    failures: HashMap<ListKind, ErrorData>,
    /// The upstream's instructions as last set on the server.
    instructions: Option<String>,
}

impl Mirror {
    pub(crate) fn new(
        upstream: Upstream,
        task_modes: HashMap<String, TaskConfig>,
        relist_after: Duration,
    ) -> Self {
        Self {
            factory: ClientFactory::upstream(upstream.clone()),
            upstream,
            task_modes,
            relist_after,
            copy: Mutex::new(Listings::default()),
            copied: Default::default(),
            pending: Default::default(),
            uris: watch::Sender::new(Vec::new()),
            following: AtomicBool::new(false),
        }
    }

    /// Reads every kind and registers it on `server`; any failure fails the whole (the
    /// server is being built).
    pub(crate) async fn fill(&self, server: &Server) -> Result<(), ProxyError> {
        let config = |e: ServerError| ProxyError::Config(e.to_string());
        let mut copy = self.copy.lock().await;
        for kind in ListKind::ALL {
            self.read(server, &mut copy, kind).await?.map_err(config)?;
        }
        Ok(())
    }

    /// Reads `kind` again unless the copy is fresh enough, waiting for the read at most
    /// [`READ_WAIT`]: a slower upstream is listed from the copy while its read goes on (and
    /// updates the copy for the lists after it). A failure leaves the copy as it is, with a
    /// warning; with no copy yet (a proxy built lazily whose upstream has not answered),
    /// the listing fails with the reason.
    pub(crate) async fn refresh(
        self: &Arc<Self>,
        server: &Server,
        kind: ListKind,
    ) -> Result<(), ErrorData> {
        self.refresh_older_than(server, kind, self.relist_after)
            .await
    }

    /// [`refresh`](Self::refresh), reading unless the copy is younger than `fresh_for`.
    async fn refresh_older_than(
        self: &Arc<Self>,
        server: &Server,
        kind: ListKind,
        fresh_for: Duration,
    ) -> Result<(), ErrorData> {
        let arrived = Instant::now();
        let name = self.upstream.name();
        let pending = &self.pending[index(kind)];
        if pending.fetch_add(1, Ordering::AcqRel) >= MAX_PENDING {
            // A read is under way and one more waits for it: that one reads for this list
            // too, so this list waits for them (as long as any list waits) and answers from
            // the copy they leave, starting no task of its own (a client listing in a loop
            // against a hanging upstream starts no more tasks).
            pending.fetch_sub(1, Ordering::AcqRel);
            let _ = tokio::time::timeout(READ_WAIT, self.copy.lock()).await;
            return self.answer_from_copy(kind);
        }
        let mirror = Arc::clone(self);
        let weak = server.downgrade();
        let read = tokio::spawn(async move {
            let _pending = Pending(Arc::clone(&mirror), kind);
            match weak.upgrade() {
                Some(server) => {
                    mirror
                        .read_if_stale(&server, kind, arrived, fresh_for)
                        .await
                }
                None => Ok(()),
            }
        });
        match tokio::time::timeout(READ_WAIT, read).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(failed)) => Err(ErrorData::internal_error(
                format!(
                    "reading the {} of upstream '{name}' failed: {failed}",
                    method(kind)
                ),
                None,
            )),
            Err(_) if self.copied[index(kind)].load(Ordering::Acquire) => {
                tracing::warn!(
                    upstream = %name,
                    "the upstream's {} takes more than {} s; listing the last copy",
                    method(kind),
                    READ_WAIT.as_secs()
                );
                Ok(())
            }
            Err(_) => Err(ErrorData::internal_error(
                format!(
                    "upstream '{name}' has not answered {} within {} s",
                    method(kind),
                    READ_WAIT.as_secs()
                ),
                None,
            )),
        }
    }

    /// Relays what the upstream announces to `server` (`announcements.rs`), and reads a list
    /// again, whatever its age, each time the upstream announces it changed, until `server`
    /// is gone. The receiver hears when the first attempt to listen is over; `None` when
    /// this mirror follows its upstream already. Needs a Tokio runtime.
    pub(crate) fn follow(self: &Arc<Self>, server: &Server) -> Option<oneshot::Receiver<()>> {
        if self.following.swap(true, Ordering::AcqRel) {
            return None;
        }
        let listening =
            crate::announcements::relay(server, self.upstream.clone(), self.uris.subscribe());
        let mut changes = self.upstream.list_changes();
        let mirror = Arc::clone(self);
        let weak = server.downgrade();
        tokio::spawn(async move {
            loop {
                let kinds = tokio::select! {
                    change = changes.recv() => match change {
                        Ok(kind) => vec![kind],
                        Err(RecvError::Lagged(_)) => ListKind::ALL.to_vec(),
                        Err(RecvError::Closed) => return,
                    },
                    () = tokio::time::sleep(crate::announcements::ALIVE_CHECK) => {
                        if weak.upgrade().is_none() {
                            return;
                        }
                        continue;
                    }
                };
                let Some(server) = weak.upgrade() else {
                    return;
                };
                for kind in kinds {
                    if let Err(error) = mirror
                        .refresh_older_than(&server, kind, Duration::ZERO)
                        .await
                    {
                        tracing::debug!(
                            upstream = %mirror.upstream.name(),
                            error = %error.message,
                            "could not read a list the upstream announced a change of"
                        );
                    }
                }
            }
        });
        Some(listening)
    }

    /// The copy as it is, or (never read yet) the error saying so.
    fn answer_from_copy(&self, kind: ListKind) -> Result<(), ErrorData> {
        if self.copied[index(kind)].load(Ordering::Acquire) {
            return Ok(());
        }
        Err(ErrorData::internal_error(
            format!(
                "upstream '{}' has not answered {} yet",
                self.upstream.name(),
                method(kind)
            ),
            None,
        ))
    }

    /// [`refresh`](Self::refresh)'s read, one at a time: skipped when the copy is fresh
    /// enough, or when a read began after this list arrived (its outcome is this list's).
    async fn read_if_stale(
        &self,
        server: &Server,
        kind: ListKind,
        arrived: Instant,
        fresh_for: Duration,
    ) -> Result<(), ErrorData> {
        let mut copy = self.copy.lock().await;
        let read_at = copy.read_at.get(&kind).copied();
        if let Some(read_at) = read_at
            && (read_at >= arrived || read_at.elapsed() < fresh_for)
        {
            return Ok(());
        }
        if copy
            .tried_at
            .get(&kind)
            .is_some_and(|tried| *tried >= arrived)
        {
            return match (read_at, copy.failures.get(&kind)) {
                (None, Some(error)) => Err(error.clone()),
                _ => Ok(()),
            };
        }
        copy.tried_at.insert(kind, Instant::now());
        match self.read(server, &mut copy, kind).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(
                upstream = %self.upstream.name(),
                %error,
                "an upstream component could not be registered; the others are listed"
            ),
            Err(error) if read_at.is_none() => {
                let error = error.into_error_data();
                copy.failures.insert(kind, error.clone());
                return Err(error);
            }
            Err(error) => tracing::warn!(
                upstream = %self.upstream.name(),
                %error,
                "could not read the upstream's {} again; listing the last copy",
                method(kind)
            ),
        }
        Ok(())
    }

    /// Reads the upstream's listing of `kind` and brings `server` in line with it. The outer
    /// error is the read's (nothing changed), the inner one the first registration that
    /// failed (the others went through).
    async fn read(
        &self,
        server: &Server,
        copy: &mut Listings,
        kind: ListKind,
    ) -> Result<Result<(), ServerError>, ProxyError> {
        let began = Instant::now();
        let upstream = &self.upstream;
        let outcome = match kind {
            ListKind::Tools => {
                let tools = upstream.list_tools().await?;
                sync(
                    &mut copy.tools,
                    tools,
                    |t| t.name().to_owned(),
                    |name| server.remove_tool(name),
                    |descriptor| {
                        let mode = self.task_modes.get(descriptor.name()).copied();
                        let mut tool = ProxyTool::from_mcp_tool(self.factory.clone(), descriptor);
                        if let Some(mode) = mode {
                            tool = tool.with_task(mode);
                        }
                        server.add_tool(tool.into_tool_def())
                    },
                )
            }
            ListKind::Resources => {
                let resources = components::list_resources(upstream).await?;
                let templates = components::list_templates(upstream).await?;
                let completes = upstream.offers_completions().await?;
                let resources = sync(
                    &mut copy.resources,
                    resources,
                    |r| r.uri.clone(),
                    |uri| server.remove_resource(uri),
                    |r| server.add_resource(components::proxy_resource(upstream, r)),
                );
                let templates = sync(
                    &mut copy.templates,
                    templates,
                    |t| t.uri_template.clone(),
                    |uri| server.remove_resource(uri),
                    |t| server.add_resource(components::proxy_template(upstream, t, completes)),
                );
                let mut uris: Vec<String> = copy.resources.keys().cloned().collect();
                uris.sort_unstable();
                self.uris.send_if_modified(|listed| {
                    let changed = *listed != uris;
                    *listed = uris;
                    changed
                });
                resources.and(templates)
            }
            ListKind::Prompts => {
                let prompts = components::list_prompts(upstream).await?;
                let completes = upstream.offers_completions().await?;
                sync(
                    &mut copy.prompts,
                    prompts,
                    |p| p.name.clone(),
                    |name| server.remove_prompt(name),
                    |p| server.add_prompt(components::proxy_prompt(upstream, p, completes)),
                )
            }
        };
        copy.read_at.insert(kind, began);
        self.copied[index(kind)].store(true, Ordering::Release);
        self.take_instructions(server, copy);
        Ok(outcome)
    }

    /// Gives `server` the instructions of the session just read from, when they are new
    /// and the server's are still the ones the upstream gave (or none): instructions
    /// set on the server otherwise are kept.
    fn take_instructions(&self, server: &Server, copy: &mut Listings) {
        let Some(Some(instructions)) = self.upstream.open_instructions() else {
            return;
        };
        if copy.instructions.as_ref() == Some(&instructions)
            || server.instructions() != copy.instructions
        {
            return;
        }
        server.set_instructions(instructions.clone());
        copy.instructions = Some(instructions);
    }
}

/// The list method of `kind`, for messages.
fn method(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools/list",
        ListKind::Resources => "resources/list",
        ListKind::Prompts => "prompts/list",
    }
}

/// Brings the registered components of one kind from `copy` to `fresh`: those no longer
/// listed are removed, new ones added, changed ones removed and added again; unchanged ones
/// are left alone (calls under way keep running). Returns the first registration error.
fn sync<T: Serialize>(
    copy: &mut HashMap<String, Value>,
    fresh: Vec<T>,
    key: impl Fn(&T) -> String,
    remove: impl Fn(&str) -> bool,
    mut add: impl FnMut(T) -> Result<(), ServerError>,
) -> Result<(), ServerError> {
    let fresh: Vec<(String, Value, T)> = fresh
        .into_iter()
        .map(|item| {
            let wire = serde_json::to_value(&item).unwrap_or(Value::Null);
            (key(&item), wire, item)
        })
        .collect();
    let listed: HashSet<&str> = fresh.iter().map(|(key, ..)| key.as_str()).collect();
    for gone in copy.keys().filter(|key| !listed.contains(key.as_str())) {
        remove(gone);
    }
    let mut next = HashMap::with_capacity(fresh.len());
    let mut first_error = None;
    for (key, wire, item) in fresh {
        match copy.get(&key) {
            Some(known) if *known == wire => {
                next.insert(key, wire);
                continue;
            }
            Some(_) => {
                remove(&key);
            }
            None => {}
        }
        match add(item) {
            Ok(()) => {
                next.insert(key, wire);
            }
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    *copy = next;
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(
        copy: &mut HashMap<String, Value>,
        fresh: &[(&str, i64)],
    ) -> (Vec<String>, Vec<String>) {
        let removed = std::cell::RefCell::new(Vec::new());
        let mut added = Vec::new();
        let fresh: Vec<Value> = fresh
            .iter()
            .map(|(k, v)| serde_json::json!({"k": k, "v": v}))
            .collect();
        sync(
            copy,
            fresh,
            |item| item["k"].as_str().unwrap_or_default().to_owned(),
            |key| {
                removed.borrow_mut().push(key.to_owned());
                true
            },
            |item| {
                added.push(item["k"].as_str().unwrap_or_default().to_owned());
                Ok(())
            },
        )
        .expect("no registration fails");
        let mut removed = removed.into_inner();
        removed.sort();
        added.sort();
        (removed, added)
    }

    #[test]
    fn only_what_changed_is_registered_again() {
        let mut copy = HashMap::new();
        assert_eq!(
            apply(&mut copy, &[("a", 1), ("b", 1)]),
            (vec![], vec!["a".into(), "b".into()])
        );
        assert_eq!(apply(&mut copy, &[("a", 1), ("b", 1)]), (vec![], vec![]));
        assert_eq!(
            apply(&mut copy, &[("b", 2), ("c", 1)]),
            (vec!["a".into(), "b".into()], vec!["b".into(), "c".into()])
        );
        assert_eq!(copy.len(), 2);
    }
}
