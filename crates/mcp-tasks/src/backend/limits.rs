//! [`TaskLimits`]: how much one caller, and everybody together, may keep in the engine.
//!
//! A caller is the verified principal, or for an anonymous request the `clientInfo` name it
//! declares (see [`NewTask::caller`](super::NewTask::caller)). The per-caller limit is a
//! quota only for verified principals: anonymous callers choose their own name, so for them
//! the global limits are the boundary.

/// The engine's limits. Every backend enforces them the same way: a submission over a limit
/// creates no task and fails with [`BackendError::Limit`](super::BackendError::Limit); a
/// result over [`max_result_bytes`](Self::max_result_bytes) fails its task with an error
/// naming the limit.
///
/// | limit | default | setting |
/// |---|---|---|
/// | [`max_tasks_per_caller`](Self::max_tasks_per_caller) | 100 unfinished tasks | `MCP_TASKS_MAX_TASKS_PER_CALLER` |
/// | [`max_tasks`](Self::max_tasks) | 10 000 unfinished tasks | `MCP_TASKS_MAX_TASKS` |
/// | [`max_kept`](Self::max_kept) | 100 000 tasks kept, finished or not | `MCP_TASKS_MAX_KEPT` |
/// | [`max_argument_bytes`](Self::max_argument_bytes) | 1 MiB of JSON | `MCP_TASKS_MAX_ARGUMENT_BYTES` |
/// | [`max_result_bytes`](Self::max_result_bytes) | 1 MiB of JSON | `MCP_TASKS_MAX_RESULT_BYTES` |
///
/// ```
/// use ferrymcp_tasks::backend::TaskLimits;
/// let limits = TaskLimits::default().with_max_tasks_per_caller(10);
/// assert_eq!(limits.max_tasks_per_caller, 10);
/// assert_eq!(limits.max_tasks, 10_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Unfinished (`working` or `input_required`) tasks one caller may have.
    pub max_tasks_per_caller: u64,
    /// Unfinished tasks in all.
    pub max_tasks: u64,
    /// Tasks kept in all, finished or not, until their TTL ends.
    pub max_kept: u64,
    /// The largest arguments a task may keep, as compact JSON.
    pub max_argument_bytes: usize,
    /// The largest result (or error) a task may keep, as compact JSON.
    pub max_result_bytes: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_tasks_per_caller: 100,
            max_tasks: 10_000,
            max_kept: 100_000,
            max_argument_bytes: 1 << 20,
            max_result_bytes: 1 << 20,
        }
    }
}

impl TaskLimits {
    /// Limits that never refuse anything (tests and benchmarks only).
    ///
    /// ```
    /// assert_eq!(ferrymcp_tasks::backend::TaskLimits::unlimited().max_tasks, u64::MAX);
    /// ```
    pub fn unlimited() -> Self {
        Self {
            max_tasks_per_caller: u64::MAX,
            max_tasks: u64::MAX,
            max_kept: u64::MAX,
            max_argument_bytes: usize::MAX,
            max_result_bytes: usize::MAX,
        }
    }

    /// Sets [`max_tasks_per_caller`](Self::max_tasks_per_caller) (at least 1).
    ///
    /// ```
    /// let _ = ferrymcp_tasks::backend::TaskLimits::default().with_max_tasks_per_caller(5);
    /// ```
    pub fn with_max_tasks_per_caller(mut self, max: u64) -> Self {
        self.max_tasks_per_caller = max.max(1);
        self
    }

    /// Sets [`max_tasks`](Self::max_tasks) (at least 1).
    ///
    /// ```
    /// let _ = ferrymcp_tasks::backend::TaskLimits::default().with_max_tasks(1_000);
    /// ```
    pub fn with_max_tasks(mut self, max: u64) -> Self {
        self.max_tasks = max.max(1);
        self
    }

    /// Sets [`max_kept`](Self::max_kept) (at least 1).
    ///
    /// ```
    /// let _ = ferrymcp_tasks::backend::TaskLimits::default().with_max_kept(50_000);
    /// ```
    pub fn with_max_kept(mut self, max: u64) -> Self {
        self.max_kept = max.max(1);
        self
    }

    /// Sets [`max_argument_bytes`](Self::max_argument_bytes).
    ///
    /// ```
    /// let _ = ferrymcp_tasks::backend::TaskLimits::default().with_max_argument_bytes(64 * 1024);
    /// ```
    pub fn with_max_argument_bytes(mut self, max: usize) -> Self {
        self.max_argument_bytes = max;
        self
    }

    /// Sets [`max_result_bytes`](Self::max_result_bytes).
    ///
    /// ```
    /// let _ = ferrymcp_tasks::backend::TaskLimits::default().with_max_result_bytes(64 * 1024);
    /// ```
    pub fn with_max_result_bytes(mut self, max: usize) -> Self {
        self.max_result_bytes = max;
        self
    }
}

/// Which limit a refusal hit.
///
/// ```
/// use ferrymcp_tasks::backend::Limit;
/// assert_eq!(Limit::TasksPerCaller.setting(), "MCP_TASKS_MAX_TASKS_PER_CALLER");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// [`TaskLimits::max_tasks_per_caller`].
    TasksPerCaller,
    /// [`TaskLimits::max_tasks`].
    Tasks,
    /// [`TaskLimits::max_kept`].
    Kept,
    /// [`TaskLimits::max_argument_bytes`].
    ArgumentBytes,
    /// [`TaskLimits::max_result_bytes`].
    ResultBytes,
}

impl Limit {
    /// The environment variable that sets this limit.
    ///
    /// ```
    /// assert_eq!(ferrymcp_tasks::backend::Limit::ResultBytes.setting(), "MCP_TASKS_MAX_RESULT_BYTES");
    /// ```
    pub fn setting(self) -> &'static str {
        match self {
            Limit::TasksPerCaller => "MCP_TASKS_MAX_TASKS_PER_CALLER",
            Limit::Tasks => "MCP_TASKS_MAX_TASKS",
            Limit::Kept => "MCP_TASKS_MAX_KEPT",
            Limit::ArgumentBytes => "MCP_TASKS_MAX_ARGUMENT_BYTES",
            Limit::ResultBytes => "MCP_TASKS_MAX_RESULT_BYTES",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Limit::TasksPerCaller => "unfinished tasks per caller",
            Limit::Tasks => "unfinished tasks in this task store",
            Limit::Kept => "tasks kept in this task store",
            Limit::ArgumentBytes => "bytes of task arguments",
            Limit::ResultBytes => "bytes of task result",
        }
    }
}

/// A refusal: `limit` allows at most `max`.
///
/// ```
/// use ferrymcp_tasks::backend::{Limit, LimitExceeded};
/// let refusal = LimitExceeded { limit: Limit::TasksPerCaller, max: 100 };
/// assert_eq!(
///     refusal.to_string(),
///     "task limit reached: at most 100 unfinished tasks per caller (MCP_TASKS_MAX_TASKS_PER_CALLER); retry when some have finished"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The limit.
    pub limit: Limit,
    /// Its value.
    pub max: u64,
}

impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let advice = match self.limit {
            Limit::TasksPerCaller | Limit::Tasks => "; retry when some have finished",
            Limit::Kept => "; retry when older tasks have expired",
            Limit::ArgumentBytes | Limit::ResultBytes => "",
        };
        write!(
            f,
            "task limit reached: at most {} {} ({}){advice}",
            self.max,
            self.limit.what(),
            self.limit.setting()
        )
    }
}

impl std::error::Error for LimitExceeded {}

/// The JSON-RPC code of a submission refused by a task limit: `-32000`, from the
/// implementation-defined server range, as the HTTP edge answers its own limits. Arguments
/// over [`TaskLimits::max_argument_bytes`] are invalid parameters instead (`-32602`).
///
/// ```
/// assert_eq!(ferrymcp_tasks::backend::LIMIT_CODE, -32000);
/// ```
pub const LIMIT_CODE: i32 = -32000;
