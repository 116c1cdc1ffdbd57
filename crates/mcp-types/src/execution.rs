//! `execution.taskSupport`: how a tool may run under the Tasks extension.

use serde::{Deserialize, Serialize};

/// Whether a tool may, must, or must not run as a background task.
///
/// On the wire this is the camelCase string `"forbidden"`, `"optional"` or `"required"`.
/// In the 2026-07-28 era it is a server-side policy (SEP-2663 removed it from `Tool`):
///
/// | mode | client opted in | client did not opt in |
/// |---|---|---|
/// | `Forbidden` | synchronous | synchronous |
/// | `Optional` | task | synchronous |
/// | `Required` | task | `-32021` |
///
/// ```
/// use ferrymcp_types::TaskSupport;
/// assert_eq!(serde_json::to_string(&TaskSupport::Optional).unwrap(), "\"optional\"");
/// assert_eq!(TaskSupport::default(), TaskSupport::Forbidden);
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum TaskSupport {
    /// The tool never runs as a task (the default).
    #[default]
    Forbidden,
    /// The tool runs as a task when the client opted in, synchronously otherwise.
    Optional,
    /// The tool only runs as a task; a client that did not opt in gets `-32021`.
    Required,
}

impl TaskSupport {
    /// The wire string: `"forbidden"`, `"optional"` or `"required"`.
    ///
    /// ```
    /// assert_eq!(ferrymcp_types::TaskSupport::Required.as_str(), "required");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// Whether a task may be created in this mode (`Optional` or `Required`).
    ///
    /// ```
    /// assert!(!ferrymcp_types::TaskSupport::Forbidden.allows_tasks());
    /// ```
    pub const fn allows_tasks(self) -> bool {
        !matches!(self, TaskSupport::Forbidden)
    }
}

impl std::fmt::Display for TaskSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `execution` object of a tool listing.
///
/// ```
/// use ferrymcp_types::{TaskSupport, ToolExecution};
/// let e: ToolExecution = serde_json::from_str(r#"{"taskSupport":"required"}"#).unwrap();
/// assert_eq!(e.task_support, Some(TaskSupport::Required));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// The tool's task mode; absent means `forbidden`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Fields this version of the framework does not know, kept as they came.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl ToolExecution {
    /// An `execution` object declaring `task_support`.
    ///
    /// ```
    /// use ferrymcp_types::{TaskSupport, ToolExecution};
    /// assert_eq!(ToolExecution::new(TaskSupport::Optional).effective_task_support(), TaskSupport::Optional);
    /// ```
    pub fn new(task_support: TaskSupport) -> Self {
        Self {
            task_support: Some(task_support),
            extra: serde_json::Map::new(),
        }
    }

    /// The declared mode, with absent meaning [`TaskSupport::Forbidden`].
    ///
    /// ```
    /// assert_eq!(ferrymcp_types::ToolExecution::default().effective_task_support(), ferrymcp_types::TaskSupport::Forbidden);
    /// ```
    pub fn effective_task_support(&self) -> TaskSupport {
        self.task_support.unwrap_or_default()
    }
}
