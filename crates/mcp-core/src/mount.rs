//! Mounting: a child server's components appear in its parent under a namespace.
//!
//! `parent.mount(&child, "ns")` exposes the child's tool `t` as `ns_t` and its prompt
//! `p` as `ns_p`; its resource `data://users` becomes `data://ns/users`, the
//! namespace being the first path segment after `scheme://`, and templates likewise
//! (`users://ns/{id}`). With no namespace nothing is renamed. The link is
//! live: components added to or removed from the child later show up in the parent.
//! Nested mounts stack prefixes, outermost first (`child_gc_deep_tool`). A mount may rename
//! tools before namespacing them.
//!
//! When several providers answer one name, the highest version wins; on a tie the earliest
//! registered provider wins, and the server's own tools come before every mount.

use std::collections::HashMap;

use crate::{Server, ServerError, auth::Requirement};

/// How a child is mounted: its namespace and tool renames.
///
/// ```
/// use ferrymcp_core::{MountOptions, Server, ToolDef};
/// let child = Server::new("child");
/// child.add_tool(ToolDef::new("original_tool", || async { 1 })).unwrap();
/// let parent = Server::new("parent");
/// parent
///     .mount(&child, MountOptions::new().namespace("prefix").rename_tool("original_tool", "custom_name"))
///     .unwrap();
/// assert!(parent.get_tool("prefix_custom_name", None).is_some());
/// assert!(parent.get_tool("prefix_original_tool", None).is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct MountOptions {
    namespace: Option<String>,
    renames: Vec<(String, String)>,
    requirement: Requirement,
}

impl MountOptions {
    /// No namespace, no renames.
    ///
    /// ```
    /// let _ = ferrymcp_core::MountOptions::new();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The namespace: the child's `t` becomes `<namespace>_t`. An empty namespace is none.
    ///
    /// ```
    /// let _ = ferrymcp_core::MountOptions::new().namespace("child");
    /// ```
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.namespace = (!namespace.is_empty()).then_some(namespace);
        self
    }

    /// Exposes the child's tool `original` as `renamed` (then namespaced).
    ///
    /// ```
    /// let _ = ferrymcp_core::MountOptions::new().rename_tool("a", "b");
    /// ```
    pub fn rename_tool(mut self, original: impl Into<String>, renamed: impl Into<String>) -> Self {
        self.renames.push((original.into(), renamed.into()));
        self
    }

    /// Everything mounted this way requires `requirement`, on top of what each component
    /// requires (and of what an enclosing mount requires: nested mounts stack). A caller
    /// that does not meet it sees none of the child's components.
    ///
    /// ```
    /// use ferrymcp_core::{MountOptions, Server, ToolDef, ToolCall, RequestScope, auth::Principal};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let child = Server::new("child");
    /// child.add_tool(ToolDef::new("echo", || async { "hi" })).unwrap();
    /// let parent = Server::new("parent");
    /// parent.mount(&child, MountOptions::new().namespace("child").requires(["child"])).unwrap();
    /// let anonymous = parent.call(ToolCall::new("child_echo")).await;
    /// assert!(anonymous.is_err());
    /// let alice = RequestScope::new().with_principal(Principal::new("app").with_scopes(["child"]));
    /// assert!(parent.call(ToolCall::new("child_echo").scope(alice)).await.is_ok());
    /// # });
    /// ```
    pub fn requires(mut self, requirement: impl Into<Requirement>) -> Self {
        self.requirement = std::mem::take(&mut self.requirement).and(requirement.into());
        self
    }
}

impl From<Option<&str>> for MountOptions {
    fn from(namespace: Option<&str>) -> Self {
        match namespace {
            Some(ns) => MountOptions::new().namespace(ns),
            None => MountOptions::new(),
        }
    }
}

impl From<&str> for MountOptions {
    fn from(namespace: &str) -> Self {
        MountOptions::new().namespace(namespace)
    }
}

impl From<String> for MountOptions {
    fn from(namespace: String) -> Self {
        MountOptions::new().namespace(namespace)
    }
}

/// One mounted child, as its parent keeps it.
pub(crate) struct Mount {
    pub(crate) child: Server,
    namespace: Option<String>,
    /// `"<namespace>_"`, when namespaced.
    prefix: Option<String>,
    /// Child-level name → exposed name (before the prefix).
    renames: HashMap<String, String>,
    /// Exposed name (before the prefix) → child-level name.
    reverse: HashMap<String, String>,
    /// What a caller needs to use anything through this mount.
    pub(crate) requirement: Requirement,
}

impl Mount {
    pub(crate) fn new(child: Server, options: MountOptions) -> Result<Self, ServerError> {
        let mut renames = HashMap::new();
        let mut reverse = HashMap::new();
        for (original, renamed) in options.renames {
            if reverse.insert(renamed.clone(), original.clone()).is_some() {
                return Err(ServerError::DuplicateRename(renamed));
            }
            renames.insert(original, renamed);
        }
        Ok(Self {
            child,
            prefix: options.namespace.as_ref().map(|ns| format!("{ns}_")),
            namespace: options.namespace,
            renames,
            reverse,
            requirement: options.requirement,
        })
    }

    /// The child-level name behind `name` at the parent, if this mount can answer it.
    pub(crate) fn child_name<'n>(&'n self, name: &'n str) -> Option<&'n str> {
        let rest = match &self.prefix {
            Some(prefix) => name.strip_prefix(prefix.as_str())?,
            None => name,
        };
        if self.renames.is_empty() {
            return Some(rest);
        }
        match self.reverse.get(rest) {
            Some(original) => Some(original),
            // A renamed tool is only reachable under its new name.
            None if self.renames.contains_key(rest) => None,
            None => Some(rest),
        }
    }

    /// The name at the parent of the child's `child_name`.
    pub(crate) fn exposed_name(&self, child_name: &str) -> String {
        let base = self
            .renames
            .get(child_name)
            .map_or(child_name, String::as_str);
        match &self.prefix {
            Some(prefix) => format!("{prefix}{base}"),
            None => base.to_owned(),
        }
    }

    /// The namespace, if any.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The child's name for the prompt `name` at the parent, if it is in this mount's
    /// namespace (prompts are prefixed like tools, without renames).
    pub(crate) fn child_prompt<'n>(&self, name: &'n str) -> Option<&'n str> {
        match &self.prefix {
            Some(prefix) => name.strip_prefix(prefix.as_str()),
            None => Some(name),
        }
    }

    /// The parent's name for the child's prompt `name`.
    pub(crate) fn exposed_prompt(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => name.to_owned(),
        }
    }

    /// The child's URI for `uri` at the parent, if it is in this mount's namespace.
    pub(crate) fn child_uri(&self, uri: &str) -> Option<String> {
        match &self.namespace {
            Some(ns) => crate::uri_template::strip_namespace(uri, ns),
            None => Some(uri.to_owned()),
        }
    }

    /// The parent's URI for the child's `uri`.
    pub(crate) fn exposed_uri(&self, uri: &str) -> String {
        match &self.namespace {
            Some(ns) => crate::uri_template::namespace_uri(uri, ns),
            None => uri.to_owned(),
        }
    }
}
