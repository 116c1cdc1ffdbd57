//! Which server runs a task's tool, resolved from what the task stored.

use ferrymcp_core::{
    Server, ToolInfo,
    auth::Principal,
    version::{Version, VersionSpec},
};
use serde::{Deserialize, Serialize};

/// What a task keeps of its submitting request, so any worker (in this process or another)
/// can run it: the tool's name at the root and exact version, and the caller.
///
/// ```
/// let snapshot = ferrymcp_tasks::TaskSnapshot { tool: Some("child_multiply".into()), ..Default::default() };
/// let json = serde_json::to_value(&snapshot).unwrap();
/// assert_eq!(json["tool"], "child_multiply");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSnapshot {
    /// The tool's name as exposed at the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool's exact version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The submitting caller; `None` is anonymous.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
    /// The answers gathered in input rounds before the task existed (see
    /// [`TasksExtension::ask_first`](crate::TasksExtension::ask_first)): the first run sees
    /// them as its `inputResponses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<ferrymcp_types::InputResponses>,
    /// The W3C trace context of the submitting request, when it was traced with
    /// OpenTelemetry: the run's span continues that trace on whichever worker runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<ferrymcp_core::trace_context::TraceContext>,
}

/// The tool a snapshot names, looked up on `root` at exactly the recorded version.
pub fn resolve_tool(root: &Server, tool: &str, version: Option<&str>) -> Option<ToolInfo> {
    let spec = match version {
        Some(version) => Some(VersionSpec::exact(Version::new(version).ok()?)),
        None => None,
    };
    root.get_tool(tool, spec.as_ref())
}

/// The mounted child that owns the snapshot's tool: the **directly** mounted child the tool
/// is reached through, however deep it lives (single level). `None` when the tool
/// is the root's own, unknown, or the snapshot names none; the caller then runs it on the
/// root.
///
/// ```
/// use ferrymcp_core::{Server, ToolDef};
/// use ferrymcp_tasks::{TaskSnapshot, resolve_owning_server};
/// let child = Server::new("child");
/// child.add_tool(ToolDef::new("multiply", || async { 72 })).unwrap();
/// let root = Server::new("root");
/// root.mount(&child, "child").unwrap();
/// let snapshot = TaskSnapshot { tool: Some("child_multiply".into()), ..Default::default() };
/// assert!(resolve_owning_server(&root, &snapshot).unwrap().ptr_eq(&child));
/// assert!(resolve_owning_server(&root, &TaskSnapshot::default()).is_none());
/// ```
pub fn resolve_owning_server(root: &Server, snapshot: &TaskSnapshot) -> Option<Server> {
    let tool = resolve_tool(root, snapshot.tool.as_deref()?, snapshot.version.as_deref())?;
    (!tool.owner().ptr_eq(root)).then(|| tool.owner().clone())
}
