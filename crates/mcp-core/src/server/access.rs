//! Who may use what: the requirements of components and mounts, checked at dispatch and
//! in listings, and [`Server::authorize`] for the HTTP layer.
//!
//! A server remembers whether anything in its tree has a requirement (`guarded`, set when
//! a component with one is added or a mount brings one, and never cleared); a server with
//! none takes the same path as before requirements existed: no resolution, no lookup.
//!
//! The matcher and `hide_unauthorized` of the server the request entered (the root) apply.
//! A server without a matcher of its own uses the one of the first server it is mounted
//! into that has one, so a task's worker calling a mounted child directly judges scopes
//! as the root did.

use std::sync::{Arc, atomic::Ordering};

use ferrymcp_types::{ErrorCode, ErrorData};

use super::{Resolved, Server, unknown_tool};
use crate::{
    CallTool, Context,
    auth::{Access, ExactScopes, Operation, Principal, Requirement, ScopeMatcher},
    mount::Mount,
};

/// The mounts a resolved component is reached through that carry a requirement,
/// outermost first (empty, without allocating, when none does).
pub(crate) type Gates = Vec<Arc<Mount>>;

/// The gates through `mount` followed by the child's own.
pub(crate) fn through(mount: &Arc<Mount>, inner: Gates) -> Gates {
    if mount.requirement.is_none() {
        return inner;
    }
    let mut gates = Vec::with_capacity(inner.len() + 1);
    gates.push(Arc::clone(mount));
    gates.extend(inner);
    gates
}

/// A matcher loaded for one decision.
pub(crate) struct Matcher(Option<Arc<Box<dyn ScopeMatcher>>>);

impl Matcher {
    pub(crate) fn get(&self) -> &dyn ScopeMatcher {
        match &self.0 {
            Some(matcher) => matcher.as_ref().as_ref(),
            None => &ExactScopes,
        }
    }
}

/// Whether `principal` passes every gate and `own`; otherwise every scope they name.
pub(crate) fn access(
    gates: &[Arc<Mount>],
    own: &Requirement,
    principal: Option<&Principal>,
    matcher: &dyn ScopeMatcher,
) -> Access {
    let allowed = gates
        .iter()
        .all(|mount| mount.requirement.allows(principal, matcher))
        && own.allows(principal, matcher);
    if allowed {
        return Access::Allowed;
    }
    let mut scopes: Vec<String> = Vec::new();
    for requirement in gates.iter().map(|m| &m.requirement).chain([own]) {
        for scope in requirement.required_scopes() {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
    }
    Access::Denied { scopes }
}

/// The `-32600` error of a denied request when hiding is off.
fn insufficient(kind: &str, name: &str, scopes: &[String]) -> ErrorData {
    let message = if scopes.is_empty() {
        format!("Not allowed to use {kind} '{name}'")
    } else {
        format!(
            "Insufficient scope for {kind} '{name}': it needs {}",
            scopes.join(" ")
        )
    };
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        message,
        Some(serde_json::json!({ "scopes": scopes })),
    )
}

impl Server {
    /// Sets what decides whether a granted scope covers a required one (default
    /// [`ExactScopes`]: only the same scope). The matcher of the server a request enters
    /// applies to everything below it; a mounted server without one of its own uses its
    /// parent's.
    ///
    /// ```
    /// use ferrymcp_core::{Server, ToolCall, ToolDef, RequestScope, auth::{Principal, ScopeMatcher}};
    /// struct Prefix;
    /// impl ScopeMatcher for Prefix {
    ///     fn covers(&self, granted: &[String], required: &str) -> bool {
    ///         granted.iter().any(|g| required == g || required.starts_with(&format!("{g}:")))
    ///     }
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let server = Server::new("files").with_scope_matcher(Prefix);
    /// server.add_tool(ToolDef::new("read", || async { "data" }).requires(["files:read"])).unwrap();
    /// let scope = RequestScope::new().with_principal(Principal::new("app").with_scopes(["files"]));
    /// assert!(server.call(ToolCall::new("read").scope(scope)).await.is_ok());
    /// # });
    /// ```
    pub fn with_scope_matcher(self, matcher: impl ScopeMatcher) -> Self {
        let matcher: Box<dyn ScopeMatcher> = Box::new(matcher);
        self.inner.scope_matcher.store(Some(Arc::new(matcher)));
        self
    }

    /// Whether listings leave out what the caller may not use (default `true`). A denied
    /// request is then answered exactly like one for an unknown name; with `false`
    /// everything is listed and a denied request gets `-32600` naming the scopes it
    /// needs. The setting of the server a request enters applies.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s").hide_unauthorized(false);
    /// assert!(!s.hides_unauthorized());
    /// ```
    pub fn hide_unauthorized(self, hide: bool) -> Self {
        self.inner.hide_unauthorized.store(hide, Ordering::Relaxed);
        self
    }

    /// See [`hide_unauthorized`](Self::hide_unauthorized).
    ///
    /// ```
    /// assert!(ferrymcp_core::Server::new("s").hides_unauthorized());
    /// ```
    pub fn hides_unauthorized(&self) -> bool {
        self.inner.hide_unauthorized.load(Ordering::Relaxed)
    }

    /// Whether `principal` may perform `operation` on this server, decided before
    /// dispatch from the name alone: the tool, resource (or template) or prompt is
    /// resolved as a request without a version would resolve it, through mounts and
    /// renames. `Denied` names every scope it needs (the mounts' and its own, without
    /// repeats, outermost first). A name nothing answers, and any other method, is
    /// `Allowed`: dispatch answers it.
    ///
    /// ```
    /// use ferrymcp_core::{MountOptions, Server, ToolDef, auth::{Access, Operation, Principal}};
    /// let child = Server::new("child");
    /// child.add_tool(ToolDef::new("multiply", || async { 6 }).requires(["math"])).unwrap();
    /// let server = Server::new("s");
    /// server.mount(&child, MountOptions::new().namespace("child").requires(["child"])).unwrap();
    /// let bob = Principal::new("app").with_scopes(["math"]);
    /// assert_eq!(
    ///     server.authorize(Some(&bob), Operation::CallTool("child_multiply")),
    ///     Access::Denied { scopes: vec!["child".into(), "math".into()] },
    /// );
    /// assert_eq!(server.authorize(None, Operation::Other("tools/list")), Access::Allowed);
    /// assert_eq!(server.authorize(None, Operation::CallTool("nothing")), Access::Allowed);
    /// ```
    pub fn authorize(&self, principal: Option<&Principal>, operation: Operation<'_>) -> Access {
        if !self.is_guarded() {
            return Access::Allowed;
        }
        let matcher = self.matcher();
        let matcher = matcher.get();
        match operation {
            Operation::CallTool(name) => match self.resolve(name, None) {
                Some(Resolved { tool, gates, .. }) => {
                    access(&gates, &tool.requirement, principal, matcher)
                }
                None => Access::Allowed,
            },
            Operation::ReadResource(uri) => match self.resolve_resource(uri, None, &|_, _| true) {
                Some(found) => access(&found.gates, found.hit.requirement(), principal, matcher),
                None => Access::Allowed,
            },
            Operation::GetPrompt(name) => match self.resolve_prompt(name, None, &|_, _| true) {
                Some((prompt, _, gates)) => access(&gates, &prompt.requirement, principal, matcher),
                None => Access::Allowed,
            },
            Operation::Other(_) => Access::Allowed,
        }
    }

    /// Every scope something in this server's tree requires (components and mounts),
    /// without repeats, in the order found: for `scopes_supported` in the protected
    /// resource metadata, say.
    ///
    /// ```
    /// use ferrymcp_core::{MountOptions, Server, ToolDef};
    /// let child = Server::new("child");
    /// child.add_tool(ToolDef::new("t", || async {}).requires(["write", "child"])).unwrap();
    /// let server = Server::new("s");
    /// server.add_tool(ToolDef::new("r", || async {}).requires(["read"])).unwrap();
    /// server.mount(&child, MountOptions::new().namespace("child").requires(["child"])).unwrap();
    /// assert_eq!(server.required_scopes(), ["read", "child", "write"]);
    /// assert!(Server::new("open").required_scopes().is_empty());
    /// ```
    pub fn required_scopes(&self) -> Vec<String> {
        let mut scopes = Vec::new();
        if self.is_guarded() {
            self.collect_scopes(&mut scopes);
        }
        scopes
    }

    fn collect_scopes(&self, scopes: &mut Vec<String>) {
        fn add(scopes: &mut Vec<String>, requirement: &Requirement) {
            for scope in requirement.required_scopes() {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
        }
        for tool in self.inner.tools.load().iter() {
            add(scopes, &tool.requirement);
        }
        for resource in self.inner.resources.load().iter() {
            add(scopes, &resource.core.requirement);
        }
        for template in self.inner.templates.load().iter() {
            add(scopes, &template.core.requirement);
        }
        for prompt in self.inner.prompts.load().iter() {
            add(scopes, &prompt.requirement);
        }
        for mount in self.inner.mounts.load().iter() {
            add(scopes, &mount.requirement);
            mount.child.collect_scopes(scopes);
        }
    }

    /// Whether anything in this server's tree has a requirement.
    pub(crate) fn is_guarded(&self) -> bool {
        self.inner.guarded.load(Ordering::Acquire)
    }

    /// Records that this server's tree has a requirement, here and in every server it is
    /// mounted into.
    pub(crate) fn mark_guarded(&self) {
        self.mark_up(|inner| &inner.guarded);
    }

    /// This server's matcher, else the first one set on a server it is mounted into.
    pub(crate) fn matcher(&self) -> Matcher {
        if let Some(own) = self.inner.scope_matcher.load_full() {
            return Matcher(Some(own));
        }
        for parent in self.parents() {
            let found = parent.matcher();
            if found.0.is_some() {
                return found;
            }
        }
        Matcher(None)
    }

    /// Whether the caller of `cx` meets `requirement` (listings).
    pub(crate) fn caller_meets(cx: &Context, matcher: &Matcher, requirement: &Requirement) -> bool {
        requirement.allows(cx.scope().principal(), matcher.get())
    }

    /// Refuses a request the caller of `cx` may not make: as an unknown `name` when the
    /// root hides (`unknown`), else `-32600` naming the scopes.
    pub(crate) fn check_access(
        cx: &Context,
        gates: &[Arc<Mount>],
        own: &Requirement,
        kind: &str,
        name: &str,
        unknown: impl FnOnce() -> ErrorData,
    ) -> Result<(), ErrorData> {
        if gates.is_empty() && own.is_none() {
            return Ok(());
        }
        let root = cx.root();
        let matcher = root.matcher();
        match access(gates, own, cx.scope().principal(), matcher.get()) {
            Access::Allowed => Ok(()),
            Access::Denied { scopes } => {
                tracing::debug!(kind, name, "request refused: the caller lacks access");
                Err(if root.hides_unauthorized() {
                    unknown()
                } else {
                    insufficient(kind, name, &scopes)
                })
            }
        }
    }

    /// Refuses a `tools/call` the caller may not make, before any extension sees it.
    pub(crate) fn check_call(&self, call: &CallTool) -> Result<(), ErrorData> {
        if !self.is_guarded() {
            return Ok(());
        }
        let Some(resolved) = self.resolve(&call.name, call.version.as_ref()) else {
            return Ok(());
        };
        Self::check_access(
            &call.cx,
            &resolved.gates,
            &resolved.tool.requirement,
            "tool",
            &call.name,
            || unknown_tool(&call.name),
        )
    }
}
