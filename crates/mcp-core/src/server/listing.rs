//! The four list methods share one walk: this server's visible components, then each
//! mount's list (through the child's middleware; the mounts list concurrently, their
//! results kept in mount order) renamed into this server's namespace,
//! filtered by this server's visibility; a failing child is skipped with a warning
//!.

use std::{collections::BTreeSet, sync::Arc};

use ferrymcp_types::ErrorData;

use super::{ListKind, Server, Visibility};
use crate::{
    BoxFuture, Context, ListPrompts, ListResourceTemplates, ListResources, ListTools, Message,
    PromptInfo, Reply, ResourceInfo, TemplateInfo, ToolInfo, auth::Requirement,
    middleware::run_chain, mount::Mount, version::Version,
};

/// One kind of listed component.
pub(crate) trait Listed: Sized + Send + 'static {
    /// The method, for messages (`list_tools`, as FastMCP logs it).
    const WHAT: &'static str;
    /// `tool`, `resource`, ... for messages.
    const KIND: &'static str;
    /// The list a change of this kind announces (templates are resources).
    const LIST: ListKind;
    fn message(cx: Context, run_middleware: bool) -> Message;
    fn from_reply(reply: Reply) -> Option<Vec<Self>>;
    fn into_reply(listed: Vec<Self>) -> Reply;
    /// This server's own components of the kind, visible or not.
    fn local(server: &Server) -> Vec<Self>;
    /// The same component as `parent` lists it, through `mount`.
    fn remount(self, mount: &Mount) -> Self;
    /// The name or URI visibility rules look at.
    fn key(&self) -> &str;
    fn tags(&self) -> &BTreeSet<String>;
    fn version(&self) -> Option<&Version>;
    /// Who may use it.
    fn requirement(&self) -> &Requirement;
}

impl Server {
    /// Lists components of kind `L` at this server, through its middleware unless told not
    /// to.
    pub(crate) fn list_of<L: Listed>(
        &self,
        cx: Context,
        run_middleware: bool,
    ) -> BoxFuture<'_, Result<Vec<L>, ErrorData>> {
        let chain = self.inner.middleware.load_full();
        if !run_middleware || chain.is_empty() {
            return Box::pin(async move { self.list_endpoint::<L>(&cx, run_middleware).await });
        }
        Box::pin(async move {
            let reply = run_chain(self, &chain, L::message(cx, run_middleware)).await?;
            L::from_reply(reply).ok_or_else(|| {
                ErrorData::internal_error(
                    format!(
                        "a middleware answered {} with a reply of another kind",
                        L::WHAT
                    ),
                    None,
                )
            })
        })
    }

    /// [`list_endpoint`](Self::list_endpoint) as a [`Reply`].
    pub(crate) fn list_reply<L: Listed>(
        &self,
        cx: Context,
        run_middleware: bool,
    ) -> BoxFuture<'_, Result<Reply, ErrorData>> {
        Box::pin(async move {
            self.list_endpoint::<L>(&cx, run_middleware)
                .await
                .map(L::into_reply)
        })
    }

    /// The end of the middleware chain for a list.
    pub(crate) async fn list_endpoint<L: Listed>(
        &self,
        cx: &Context,
        run_middleware: bool,
    ) -> Result<Vec<L>, ErrorData> {
        self.run_list_hook(L::LIST).await?;
        let visibility: Arc<Visibility> = self.inner.visibility.load_full();
        // What the caller may not use is left out (per caller: no list_changed for it).
        let matcher =
            (self.is_guarded() && cx.root().hides_unauthorized()).then(|| cx.root().matcher());
        let usable = |requirement: &Requirement| {
            matcher
                .as_ref()
                .is_none_or(|m| Self::caller_meets(cx, m, requirement))
        };
        let mut listed: Vec<L> = L::local(self)
            .into_iter()
            .filter(|c| visibility.allows(c.key(), c.tags()) && usable(c.requirement()))
            .collect();
        let mounts = self.inner.mounts.load_full();
        // The mounts list at the same time (a proxy waits on its upstream), in order.
        let lists = mounts
            .iter()
            .filter(|mount| usable(&mount.requirement))
            .map(|mount| async move {
                let child = &mount.child;
                let listed = child
                    .list_of::<L>(cx.for_server(child), run_middleware)
                    .await;
                (mount, listed)
            });
        for (mount, from_child) in futures::future::join_all(lists).await {
            let child = &mount.child;
            match from_child {
                Ok(from_child) => listed.extend(
                    from_child
                        .into_iter()
                        .map(|c| c.remount(mount))
                        .filter(|c| visibility.allows(c.key(), c.tags())),
                ),
                Err(error) => tracing::warn!(
                    server = %self.name(),
                    provider = %child.name(),
                    "Error during {} from provider '{}': {}",
                    L::WHAT,
                    child.name(),
                    error.message
                ),
            }
        }
        warn_duplicates::<L>(self.name(), &listed);
        Ok(listed)
    }
}

/// the same key and version from two providers is listed twice, with a warning.
fn warn_duplicates<L: Listed>(server: &str, listed: &[L]) {
    if listed.len() < 2 {
        return;
    }
    let mut seen = std::collections::HashSet::with_capacity(listed.len());
    for item in listed {
        if !seen.insert((item.key(), item.version())) {
            tracing::warn!(
                server,
                "Duplicate {} '{}'{} from two providers; requests resolve to the first",
                L::KIND,
                item.key(),
                item.version()
                    .map(|v| format!(" version {v}"))
                    .unwrap_or_default()
            );
        }
    }
}

impl Listed for ToolInfo {
    const KIND: &'static str = "tool";
    const LIST: ListKind = ListKind::Tools;
    const WHAT: &'static str = "list_tools";
    fn message(cx: Context, run_middleware: bool) -> Message {
        Message::ListTools(ListTools { cx, run_middleware })
    }
    fn from_reply(reply: Reply) -> Option<Vec<Self>> {
        match reply {
            Reply::ListTools(listed) => Some(listed),
            _ => None,
        }
    }
    fn into_reply(listed: Vec<Self>) -> Reply {
        Reply::ListTools(listed)
    }
    fn local(server: &Server) -> Vec<Self> {
        server
            .inner
            .tools
            .load()
            .iter()
            .map(|t| ToolInfo {
                name: Arc::clone(&t.name),
                tool: Arc::clone(t),
                owner: server.clone(),
                owner_name: Arc::clone(&t.name),
            })
            .collect()
    }
    fn remount(self, mount: &Mount) -> Self {
        ToolInfo {
            name: mount.exposed_name(&self.name).into(),
            tool: self.tool,
            owner: mount.child.clone(),
            owner_name: self.name,
        }
    }
    fn key(&self) -> &str {
        &self.name
    }
    fn tags(&self) -> &BTreeSet<String> {
        &self.tool.tags
    }
    fn version(&self) -> Option<&Version> {
        self.tool.version.as_ref()
    }
    fn requirement(&self) -> &Requirement {
        &self.tool.requirement
    }
}

impl Listed for ResourceInfo {
    const KIND: &'static str = "resource";
    const LIST: ListKind = ListKind::Resources;
    const WHAT: &'static str = "list_resources";
    fn message(cx: Context, run_middleware: bool) -> Message {
        Message::ListResources(ListResources { cx, run_middleware })
    }
    fn from_reply(reply: Reply) -> Option<Vec<Self>> {
        match reply {
            Reply::ListResources(listed) => Some(listed),
            _ => None,
        }
    }
    fn into_reply(listed: Vec<Self>) -> Reply {
        Reply::ListResources(listed)
    }
    fn local(server: &Server) -> Vec<Self> {
        server
            .inner
            .resources
            .load()
            .iter()
            .map(|r| ResourceInfo {
                uri: Arc::clone(&r.core.key),
                resource: Arc::clone(r),
                owner: server.clone(),
                owner_uri: Arc::clone(&r.core.key),
            })
            .collect()
    }
    fn remount(self, mount: &Mount) -> Self {
        ResourceInfo {
            uri: mount.exposed_uri(&self.uri).into(),
            resource: self.resource,
            owner: mount.child.clone(),
            owner_uri: self.uri,
        }
    }
    fn key(&self) -> &str {
        &self.uri
    }
    fn tags(&self) -> &BTreeSet<String> {
        &self.resource.core.tags
    }
    fn version(&self) -> Option<&Version> {
        self.resource.core.version.as_ref()
    }
    fn requirement(&self) -> &Requirement {
        &self.resource.core.requirement
    }
}

impl Listed for TemplateInfo {
    const KIND: &'static str = "resource template";
    const LIST: ListKind = ListKind::Resources;
    const WHAT: &'static str = "list_resource_templates";
    fn message(cx: Context, run_middleware: bool) -> Message {
        Message::ListResourceTemplates(ListResourceTemplates { cx, run_middleware })
    }
    fn from_reply(reply: Reply) -> Option<Vec<Self>> {
        match reply {
            Reply::ListResourceTemplates(listed) => Some(listed),
            _ => None,
        }
    }
    fn into_reply(listed: Vec<Self>) -> Reply {
        Reply::ListResourceTemplates(listed)
    }
    fn local(server: &Server) -> Vec<Self> {
        server
            .inner
            .templates
            .load()
            .iter()
            .map(|t| TemplateInfo {
                template: t.template.clone(),
                registered: Arc::clone(t),
                owner: server.clone(),
            })
            .collect()
    }
    fn remount(self, mount: &Mount) -> Self {
        TemplateInfo {
            template: match mount.namespace() {
                Some(ns) => self.template.namespaced(ns),
                None => self.template,
            },
            registered: self.registered,
            owner: mount.child.clone(),
        }
    }
    fn key(&self) -> &str {
        self.template.as_str()
    }
    fn tags(&self) -> &BTreeSet<String> {
        &self.registered.core.tags
    }
    fn version(&self) -> Option<&Version> {
        self.registered.core.version.as_ref()
    }
    fn requirement(&self) -> &Requirement {
        &self.registered.core.requirement
    }
}

impl Listed for PromptInfo {
    const KIND: &'static str = "prompt";
    const LIST: ListKind = ListKind::Prompts;
    const WHAT: &'static str = "list_prompts";
    fn message(cx: Context, run_middleware: bool) -> Message {
        Message::ListPrompts(ListPrompts { cx, run_middleware })
    }
    fn from_reply(reply: Reply) -> Option<Vec<Self>> {
        match reply {
            Reply::ListPrompts(listed) => Some(listed),
            _ => None,
        }
    }
    fn into_reply(listed: Vec<Self>) -> Reply {
        Reply::ListPrompts(listed)
    }
    fn local(server: &Server) -> Vec<Self> {
        server
            .inner
            .prompts
            .load()
            .iter()
            .map(|p| PromptInfo {
                name: Arc::clone(&p.name),
                prompt: Arc::clone(p),
                owner: server.clone(),
                owner_name: Arc::clone(&p.name),
            })
            .collect()
    }
    fn remount(self, mount: &Mount) -> Self {
        PromptInfo {
            name: mount.exposed_prompt(&self.name).into(),
            prompt: self.prompt,
            owner: mount.child.clone(),
            owner_name: self.name,
        }
    }
    fn key(&self) -> &str {
        &self.name
    }
    fn tags(&self) -> &BTreeSet<String> {
        &self.prompt.tags
    }
    fn version(&self) -> Option<&Version> {
        self.prompt.version.as_ref()
    }
    fn requirement(&self) -> &Requirement {
        &self.prompt.requirement
    }
}
