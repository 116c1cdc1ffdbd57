//! [`LostWorker`]: what the engine does with a run whose worker was lost.

/// The status message (and error message) of a task failed because its worker was lost:
/// the run's outcome was never recorded, so the tool may have run.
///
/// ```
/// assert!(ferrymcp_tasks::lost_worker::LOST_WORKER_MESSAGE.contains("may have run"));
/// ```
pub const LOST_WORKER_MESSAGE: &str = "the worker running this task was lost before it recorded an outcome; the tool may have run in part or in full";

/// What happens to a task whose worker was lost mid-run (its process died, or its lease
/// lapsed): run the tool again from the start, or fail the task with
/// [`LOST_WORKER_MESSAGE`]. Attach it to a tool with [`ToolDef::data`](ferrymcp_core::ToolDef::data)
/// (with `#[tool]`: `#[tool(task, data = LostWorker::Fail)]`); without it, a tool annotated
/// `idempotentHint: true` is run again and any other fails.
///
/// ```
/// use ferrymcp_core::{Server, ToolDef};
/// use ferrymcp_tasks::LostWorker;
///
/// let server = Server::new("s");
/// // Charging a card twice is not harmless, whatever the annotations say.
/// server.add_tool(ToolDef::new("charge", || async { "charged" }).task(true).data(LostWorker::Fail)).unwrap();
/// assert_eq!(LostWorker::of(&server.get_tool("charge", None).unwrap()), LostWorker::Fail);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostWorker {
    /// Running the tool twice is harmless: start it again on another worker (up to the
    /// engine's attempt limit).
    Rerun,
    /// Fail the task.
    Fail,
}

impl LostWorker {
    /// The policy for `tool`: the one it declares, else what its `idempotentHint` says.
    ///
    /// ```
    /// use ferrymcp_core::{Server, ToolDef, types::ToolAnnotations};
    /// use ferrymcp_tasks::LostWorker;
    ///
    /// let server = Server::new("s");
    /// let hinted = ToolDef::new("count", || async { 1 })
    ///     .annotations(ToolAnnotations::new().idempotent(true))
    ///     .task(true);
    /// server.add_tool(hinted).unwrap();
    /// assert_eq!(LostWorker::of(&server.get_tool("count", None).unwrap()), LostWorker::Rerun);
    /// ```
    pub fn of(tool: &ferrymcp_core::ToolInfo) -> Self {
        if let Some(declared) = tool.data::<LostWorker>() {
            return *declared;
        }
        let idempotent = tool
            .annotations()
            .and_then(|annotations| annotations.idempotent_hint)
            .unwrap_or(false);
        if idempotent { Self::Rerun } else { Self::Fail }
    }
}
