//! [`ToolDescriptor`]: a tool listing entry that keeps `execution`.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool};
use serde::{Deserialize, Serialize};

use crate::{TaskSupport, ToolExecution, meta};

/// A tool as listed by a server, `execution` included.
///
/// rmcp's [`Tool`] has no `execution` field and drops it when parsing. A `ToolDescriptor` is
/// rmcp's `Tool` plus `execution`, serialized flat, so a 2025-11-25 listing such as
/// `{"name":"t","inputSchema":{...},"execution":{"taskSupport":"optional"}}` survives a
/// round trip.
///
/// Conversion to rmcp's `Tool` is lossless: `execution` moves into `_meta` under
/// [`meta::EXECUTION`], and converting back moves it out again.
///
/// ```
/// use ferrymcp_types::{TaskSupport, Tool, ToolDescriptor};
///
/// let wire = serde_json::json!({
///     "name": "t",
///     "inputSchema": {"type": "object"},
///     "execution": {"taskSupport": "optional"}
/// });
/// let listed: ToolDescriptor = serde_json::from_value(wire.clone()).unwrap();
/// assert_eq!(listed.task_support(), TaskSupport::Optional);
///
/// let tool: Tool = listed.clone().into();
/// assert_eq!(ToolDescriptor::from(tool), listed);
/// assert_eq!(serde_json::to_value(&listed).unwrap(), wire);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDescriptor {
    /// Everything rmcp models about the tool.
    #[serde(flatten)]
    pub tool: Tool,
    /// The `execution` object, absent when the tool declares nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
}

impl ToolDescriptor {
    /// A descriptor with no `execution`.
    ///
    /// ```
    /// let d = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::default());
    /// assert!(d.execution.is_none());
    /// ```
    pub fn new(tool: Tool) -> Self {
        Self {
            tool,
            execution: None,
        }
    }

    /// Sets `execution.taskSupport`; [`TaskSupport::Forbidden`] removes `execution`'s mode,
    /// matching FastMCP's listing (forbidden means no `execution` at all).
    ///
    /// ```
    /// use ferrymcp_types::{TaskSupport, Tool, ToolDescriptor};
    /// let d = ToolDescriptor::new(Tool::default()).with_task_support(TaskSupport::Forbidden);
    /// assert!(d.execution.is_none());
    /// ```
    pub fn with_task_support(mut self, mode: TaskSupport) -> Self {
        match mode {
            TaskSupport::Forbidden => {
                if let Some(execution) = self.execution.as_mut() {
                    execution.task_support = None;
                    if execution.extra.is_empty() {
                        self.execution = None;
                    }
                }
            }
            mode => {
                self.execution
                    .get_or_insert_with(ToolExecution::default)
                    .task_support = Some(mode);
            }
        }
        self
    }

    /// The declared task mode; no `execution` means [`TaskSupport::Forbidden`].
    ///
    /// ```
    /// let d = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::default());
    /// assert_eq!(d.task_support(), ferrymcp_types::TaskSupport::Forbidden);
    /// ```
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .map(ToolExecution::effective_task_support)
            .unwrap_or_default()
    }

    /// The tool's name.
    ///
    /// ```
    /// let d = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::new("t", "", serde_json::Map::new()));
    /// assert_eq!(d.name(), "t");
    /// ```
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The input schema.
    ///
    /// ```
    /// let d = ferrymcp_types::ToolDescriptor::new(ferrymcp_types::Tool::default());
    /// assert!(d.input_schema().is_empty());
    /// ```
    pub fn input_schema(&self) -> &Arc<JsonObject> {
        &self.tool.input_schema
    }
}

impl From<Tool> for ToolDescriptor {
    /// Recovers `execution` from `_meta[`[`meta::EXECUTION`]`]` if a previous conversion put it
    /// there; any other tool gets no `execution`.
    fn from(mut tool: Tool) -> Self {
        let execution = tool.meta.as_mut().and_then(|m| {
            let value = m.remove(meta::EXECUTION)?;
            serde_json::from_value::<ToolExecution>(value).ok()
        });
        if tool.meta.as_ref().is_some_and(|m| m.is_empty()) {
            tool.meta = None;
        }
        Self { tool, execution }
    }
}

impl From<ToolDescriptor> for Tool {
    /// Keeps `execution` in `_meta[`[`meta::EXECUTION`]`]`, since `Tool` has no field for it.
    fn from(descriptor: ToolDescriptor) -> Self {
        let ToolDescriptor {
            mut tool,
            execution,
        } = descriptor;
        if let Some(execution) = execution
            && let Ok(value) = serde_json::to_value(execution)
        {
            tool.meta
                .get_or_insert_with(MetaObject::new)
                .insert(meta::EXECUTION.to_owned(), value);
        }
        tool
    }
}
