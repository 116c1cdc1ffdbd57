//! Log messages and progress a handler sends to the client through its [`Context`].
//!
//! - [`Context::log`] sends `notifications/message` when the client asked for that level: a
//!   2026-07-28 request opts in with `_meta["io.modelcontextprotocol/logLevel"]`, a
//!   2025-11-25 session with `logging/setLevel` (until then it gets every level). Every
//!   message also goes to `tracing`.
//! - [`Context::report_progress`] sends `notifications/progress` tied to the request's
//!   progress token. Inside a background task notifications are forbidden after the task is
//!   created (SEP-2663 R50), so progress becomes the task's `statusMessage` instead.
//!
//! ```
//! use mcp_core::{Context, LogLevel, Server};
//!
//! async fn import(cx: Context) -> &'static str {
//!     cx.log(LogLevel::Info, "starting the import").await;
//!     cx.report_progress(1.0, Some(2.0), Some("half way".into())).await;
//!     "done"
//! }
//! Server::new("s").tool("import", import).unwrap();
//! ```

// rmcp marks the logging types deprecated (SEP-2577 moved the opt-in into request `_meta`);
// the 2026-07-28 schema still defines `notifications/message`, and so do we.
#![allow(deprecated)]

use std::sync::Arc;

use mcp_types::{LoggingMessageNotificationParam, ProgressNotificationParam};
use serde_json::Value;

use crate::{BoxFuture, Context};

/// The severity of a log message (RFC 5424 order: `Debug` is the lowest).
///
/// ```
/// use mcp_core::LogLevel;
/// assert!(LogLevel::Error > LogLevel::Info);
/// assert_eq!(LogLevel::parse("warning"), Some(LogLevel::Warning));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    const NAMES: [(&'static str, LogLevel); 8] = [
        ("debug", LogLevel::Debug),
        ("info", LogLevel::Info),
        ("notice", LogLevel::Notice),
        ("warning", LogLevel::Warning),
        ("error", LogLevel::Error),
        ("critical", LogLevel::Critical),
        ("alert", LogLevel::Alert),
        ("emergency", LogLevel::Emergency),
    ];

    /// The level named as on the wire (`"info"`, `"warning"`, ...).
    ///
    /// ```
    /// assert_eq!(mcp_core::LogLevel::parse("nope"), None);
    /// ```
    pub fn parse(name: &str) -> Option<LogLevel> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, level)| *level)
    }

    /// The wire name.
    ///
    /// ```
    /// assert_eq!(mcp_core::LogLevel::Notice.as_str(), "notice");
    /// ```
    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, level)| *level == self)
            .map_or("info", |(n, _)| n)
    }

    fn to_wire(self) -> Option<mcp_types::LoggingLevel> {
        serde_json::from_value(Value::String(self.as_str().to_owned())).ok()
    }

    /// The level a wire value names.
    pub(crate) fn from_wire(level: &mcp_types::LoggingLevel) -> Option<LogLevel> {
        serde_json::to_value(level)
            .ok()
            .and_then(|v| v.as_str().and_then(LogLevel::parse))
    }
}

/// One progress report.
///
/// ```
/// let p = mcp_core::Progress { progress: 3.0, total: Some(10.0), message: Some("copying".into()) };
/// assert_eq!(p.status_text(), "copying (3/10)");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far along (increases with every report).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

impl Progress {
    /// A one-line text for a task's `statusMessage`.
    pub fn status_text(&self) -> String {
        let amount = match self.total {
            Some(total) => format!("{}/{}", self.progress, total),
            None => format!("{}", self.progress),
        };
        match &self.message {
            Some(message) => format!("{message} ({amount})"),
            None => format!("progress {amount}"),
        }
    }
}

/// Where progress goes instead of `notifications/progress` (the tasks extension points it
/// at the task's `statusMessage`).
pub type ProgressSink = Arc<dyn Fn(Progress) -> BoxFuture<'static, ()> + Send + Sync>;

impl Context {
    /// Logs `data` at `level`: to `tracing`, and to the client when it asked for this level
    /// (never from a background task, R50).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let cx = mcp_core::Context::new(mcp_core::Server::new("s"), Default::default());
    /// cx.log(mcp_core::LogLevel::Info, "no client here: only tracing").await;
    /// # });
    /// ```
    pub async fn log(&self, level: LogLevel, data: impl Into<Value>) {
        let data = data.into();
        tracing::event!(
            tracing::Level::INFO,
            server = %self.server().name(),
            level = level.as_str(),
            data = %data,
            "handler log"
        );
        let scope = self.scope();
        let wanted = scope.log_level().is_some_and(|min| level >= min);
        let (Some(peer), Some(wire), false) =
            (scope.peer(), level.to_wire(), self.is_background_task())
        else {
            return;
        };
        if !wanted {
            return;
        }
        let mut param = LoggingMessageNotificationParam::new(wire, data);
        param.logger = Some(self.server().name().to_owned());
        if let Err(error) = peer.notify_logging_message(param).await {
            tracing::debug!(%error, "could not send a log message");
        }
    }

    /// Reports progress: as the task's status inside a background task, otherwise as
    /// `notifications/progress` when the request carried a progress token.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let cx = mcp_core::Context::new(mcp_core::Server::new("s"), Default::default());
    /// cx.report_progress(1.0, None, None).await; // no token, no task: nothing to do
    /// # });
    /// ```
    pub async fn report_progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let report = Progress {
            progress,
            total,
            message,
        };
        let scope = self.scope();
        if let Some(sink) = scope.progress_sink() {
            sink(report).await;
            return;
        }
        if self.is_background_task() {
            return;
        }
        let (Some(peer), Some(token)) = (scope.peer(), scope.progress_token()) else {
            return;
        };
        let mut param = ProgressNotificationParam::new(token, report.progress);
        param.total = report.total;
        param.message = report.message;
        if let Err(error) = peer.notify_progress(param).await {
            tracing::debug!(%error, "could not send a progress notification");
        }
    }
}
