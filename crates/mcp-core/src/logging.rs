//! Log messages and progress a handler sends to the client through its [`Context`].
//!
//! - [`Context::log`] sends `notifications/message` when the client asked for that level: a
//!   2026-07-28 request opts in with `_meta["io.modelcontextprotocol/logLevel"]`, a
//!   2025-11-25 session with `logging/setLevel` (until then it gets every level). Every
//!   message also goes to `tracing`.
//! - [`Context::report_progress`] sends `notifications/progress` tied to the request's
//!   progress token. Inside a background task notifications are forbidden after the task is
//!   created, so progress becomes the task's `statusMessage` instead.
//!
//! ```
//! use ferrymcp_core::{Context, LogLevel, Server};
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

use ferrymcp_types::{LoggingMessageNotificationParam, ProgressNotificationParam};
use serde_json::Value;

use crate::{BoxFuture, Context};

/// The severity of a log message (RFC 5424 order: `Debug` is the lowest).
///
/// ```
/// use ferrymcp_core::LogLevel;
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
    /// assert_eq!(ferrymcp_core::LogLevel::parse("nope"), None);
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
    /// assert_eq!(ferrymcp_core::LogLevel::Notice.as_str(), "notice");
    /// ```
    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, level)| *level == self)
            .map_or("info", |(n, _)| n)
    }

    /// The `tracing` level a message of this level is emitted at: `Debug` at DEBUG,
    /// `Info` and `Notice` at INFO, `Warning` at WARN, `Error` and above at ERROR.
    ///
    /// ```
    /// use ferrymcp_core::LogLevel;
    /// assert_eq!(LogLevel::Notice.tracing_level(), tracing::Level::INFO);
    /// assert_eq!(LogLevel::Critical.tracing_level(), tracing::Level::ERROR);
    /// ```
    pub fn tracing_level(self) -> tracing::Level {
        match self {
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Info | LogLevel::Notice => tracing::Level::INFO,
            LogLevel::Warning => tracing::Level::WARN,
            LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
                tracing::Level::ERROR
            }
        }
    }

    fn to_wire(self) -> Option<ferrymcp_types::LoggingLevel> {
        serde_json::from_value(Value::String(self.as_str().to_owned())).ok()
    }

    /// The level a wire value names.
    pub(crate) fn from_wire(level: &ferrymcp_types::LoggingLevel) -> Option<LogLevel> {
        serde_json::to_value(level)
            .ok()
            .and_then(|v| v.as_str().and_then(LogLevel::parse))
    }
}

/// One progress report.
///
/// ```
/// let p = ferrymcp_core::Progress { progress: 3.0, total: Some(10.0), message: Some("copying".into()) };
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
    /// Logs `data` at `level`: to `tracing` (at [`LogLevel::tracing_level`]), and to the client when it asked for this level
    /// (never from a background task).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
    /// cx.log(ferrymcp_core::LogLevel::Info, "no client here: only tracing").await;
    /// # });
    /// ```
    pub async fn log(&self, level: LogLevel, data: impl Into<Value>) {
        let data = data.into();
        let server = self.server().name();
        // `tracing::event!` takes its level as a constant: one call per tracing level.
        macro_rules! emit {
            ($level:expr) => {
                tracing::event!(
                    $level,
                    server = %server,
                    level = level.as_str(),
                    data = %data,
                    "handler log"
                )
            };
        }
        match level.tracing_level() {
            tracing::Level::DEBUG => emit!(tracing::Level::DEBUG),
            tracing::Level::INFO => emit!(tracing::Level::INFO),
            tracing::Level::WARN => emit!(tracing::Level::WARN),
            _ => emit!(tracing::Level::ERROR),
        }
        let scope = self.scope();
        let wanted = scope.log_level().is_some_and(|min| level >= min);
        let (Some(peer), Some(wire), false) =
            (scope.peer(), level.to_wire(), self.is_background_run())
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
    /// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), Default::default());
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
        if self.is_background_run() {
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tracing::{
        Event, Level, Metadata, Subscriber,
        field::{Field, Visit},
        span,
    };

    use super::*;

    /// Records the tracing level and the MCP `level` field of every `handler log` event.
    #[derive(Clone, Default)]
    struct Levels(Arc<Mutex<Vec<(Level, String)>>>);

    #[derive(Default)]
    struct Fields {
        level: Option<String>,
        message: Option<String>,
    }

    impl Visit for Fields {
        fn record_str(&mut self, field: &Field, value: &str) {
            if field.name() == "level" {
                self.level = Some(value.to_owned());
            }
        }

        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.message = Some(format!("{value:?}"));
            }
        }
    }

    impl Subscriber for Levels {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = Fields::default();
            event.record(&mut fields);
            if let (Some(level), Some("handler log")) = (fields.level, fields.message.as_deref()) {
                self.0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((*event.metadata().level(), level));
            }
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    /// Issue 12, scope 6: each MCP level is emitted at the matching tracing level.
    #[tokio::test]
    async fn issue12_mcp_log_levels_map_to_matching_tracing_levels() {
        let levels = Levels::default();
        let _guard = tracing::subscriber::set_default(levels.clone());
        let cx = Context::new(crate::Server::new("s"), Default::default());
        for (_, level) in LogLevel::NAMES {
            cx.log(level, "message").await;
        }
        let seen = levels.0.lock().unwrap().clone();
        let expected = [
            (Level::DEBUG, "debug"),
            (Level::INFO, "info"),
            (Level::INFO, "notice"),
            (Level::WARN, "warning"),
            (Level::ERROR, "error"),
            (Level::ERROR, "critical"),
            (Level::ERROR, "alert"),
            (Level::ERROR, "emergency"),
        ]
        .map(|(tracing, mcp)| (tracing, mcp.to_owned()));
        assert_eq!(seen, expected);
    }
}
