//! [`Engine`]: the running task engine, as tools and test helpers reach it.

use std::sync::Arc;

use ferrymcp_core::{Context, FromContext, ToolError};

use crate::{TasksConfig, TasksExtension, backend::TaskBackend};

/// The running engine of the root server: its backend and settings. Cheap to clone.
///
/// It is also an extractor: a tool that takes an `Engine` gets the root's engine, even when
/// it lives on a mounted child, which owns none. Outside a running engine the
/// call fails with a message that says so.
///
/// ```
/// use ferrymcp_tasks::Engine;
/// async fn queue_depth(engine: Engine) -> String {
///     format!("engine on {}", ferrymcp_tasks::redacted_url(&engine.config().url))
/// }
/// ```
#[derive(Clone)]
pub struct Engine {
    pub(crate) backend: Arc<dyn TaskBackend>,
    pub(crate) config: Arc<TasksConfig>,
}

impl Engine {
    /// The task store.
    pub fn backend(&self) -> &Arc<dyn TaskBackend> {
        &self.backend
    }

    /// The settings the engine runs with.
    pub fn config(&self) -> &TasksConfig {
        &self.config
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .finish()
    }
}

impl FromContext for Engine {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        cx.root()
            .extension_as::<TasksExtension>()
            .and_then(|extension| extension.engine())
            .ok_or_else(|| {
                ToolError::internal(
                    "No task engine is running: register ferrymcp_tasks::TasksExtension on the root server and start it",
                )
            })
    }
}
