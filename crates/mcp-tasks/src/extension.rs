//! [`TasksExtension`]: SEP-2663 on an `ferrymcp-core` server.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use async_trait::async_trait;
use ferrymcp_core::{
    BoxError, BoxFuture, CallTool, Context, Era, Extension, InputRequired, Server, ToolCallNext,
    ToolError, ToolInfo,
};
use ferrymcp_types::{
    CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask, ErrorData, GetTaskParams,
    GetTaskResult, JsonObject, TASKS_EXTENSION_ID, Task, TaskAckResult, TaskPayload, TaskStatus,
    TaskSupport, UpdateTaskParams,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    Engine, TaskSnapshot, TasksConfig, Worker,
    backend::{BackendError, NewTask, Owner, TaskBackend, TaskView, caller_key},
    ids,
};

/// The methods the Tasks extension answers (an extension that stands in for
/// [`TasksExtension`], such as a proxy's, answers the same).
///
/// ```
/// assert!(ferrymcp_tasks::extension::METHODS.contains(&"tasks/get"));
/// ```
pub const METHODS: [&str; 3] = ["tasks/get", "tasks/update", "tasks/cancel"];

/// Whether the request's client asked for tasks: it declared the extension on a
/// 2026-07-28 request (SEP-2663 is not defined on 2025-11-25 connections). Only such a
/// client's calls of task tools become tasks.
///
/// ```
/// use ferrymcp_core::RequestScope;
/// assert!(!ferrymcp_tasks::extension::client_opted_in(&RequestScope::new()));
/// ```
pub fn client_opted_in(scope: &ferrymcp_core::RequestScope) -> bool {
    scope.era() == Era::Modern && scope.client_extension(TASKS_EXTENSION_ID).is_some()
}

/// How many starts an idempotent tool's task may get when its worker is lost.
const IDEMPOTENT_ATTEMPTS: u32 = 3;

/// The Tasks extension. Register it on the root server; it advertises
/// `io.modelcontextprotocol/tasks` (with `{}` settings), turns opted-in calls to task tools
/// into background tasks, answers `tasks/get|update|cancel`, and runs the engine (backend,
/// worker, TTL sweeper) while the server runs.
///
/// ```
/// use ferrymcp_core::{Server, ToolDef};
/// use ferrymcp_tasks::TasksExtension;
///
/// let server = Server::new("demo");
/// server.add_tool(ToolDef::new("slow", || async { "done" }).task(true)).unwrap();
/// server.add_extension(TasksExtension::new()).unwrap();
/// ```
pub struct TasksExtension {
    config: Arc<TasksConfig>,
    backend: Option<Arc<dyn TaskBackend>>,
    running: Mutex<Option<RunningEngine>>,
    /// Questions asked before a task exists, by the tool's name at the root.
    asks: HashMap<String, Ask>,
}

/// A tool's questions before its task exists: an input round to answer first, or `None`.
type Ask = Arc<
    dyn Fn(Context) -> BoxFuture<'static, Result<Option<InputRequired>, ToolError>> + Send + Sync,
>;

struct RunningEngine {
    engine: Engine,
    shutdown: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// The most characters of an unknown task id that a "not found" error repeats.
const SHOWN_ID_CHARS: usize = 256;

/// The error for a task id the caller cannot see (unknown, expired or another caller's):
/// `-32602` `Task {id} not found`, repeating at most 256 characters of the id.
///
/// ```
/// let error = ferrymcp_tasks::task_not_found("t-1");
/// assert_eq!(error.code.0, -32602);
/// assert_eq!(error.message, "Task t-1 not found");
/// assert!(ferrymcp_tasks::task_not_found(&"x".repeat(10_000)).message.len() < 300);
/// ```
pub fn task_not_found(id: &str) -> ErrorData {
    let message = match id.char_indices().nth(SHOWN_ID_CHARS) {
        Some((cut, _)) => format!("Task {}… not found", &id[..cut]),
        None => format!("Task {id} not found"),
    };
    ErrorData::invalid_params(message, None)
}

/// The `clientInfo` name a request's client declared: in the request's `_meta` (2026-07-28)
/// or at `initialize` (2025-11-25).
fn client_name(scope: &ferrymcp_core::RequestScope) -> Option<String> {
    let declared = scope
        .meta()
        .get("io.modelcontextprotocol/clientInfo")
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    declared.or_else(|| {
        scope
            .peer()
            .and_then(|peer| peer.peer_info())
            .map(|info| info.client_info.name.clone())
    })
}

/// A backend failure as the client sees it: a limit names itself (`-32000`, with the limit
/// and its value as data; arguments too large are invalid params, `-32602`); an unreachable
/// store is a masked internal error saying to retry; anything else is masked as an internal
/// error.
fn backend_error(error: BackendError) -> ErrorData {
    if let BackendError::Limit(refusal) = &error {
        crate::metrics::rejected(refusal.limit.setting());
    }
    match error {
        BackendError::Limit(refusal) if refusal.limit == crate::backend::Limit::ArgumentBytes => {
            ErrorData::invalid_params(
                refusal.to_string(),
                Some(serde_json::json!({"limit": refusal.limit.setting(), "max": refusal.max})),
            )
        }
        BackendError::Limit(refusal) => ErrorData::new(
            ferrymcp_types::ErrorCode(crate::backend::LIMIT_CODE),
            refusal.to_string(),
            Some(serde_json::json!({"limit": refusal.limit.setting(), "max": refusal.max})),
        ),
        BackendError::Unavailable(_) => {
            // Which store and why stay in the log; the client learns it may retry.
            let mut masked = internal(error);
            masked.message = masked
                .message
                .replacen(
                    "Internal error",
                    "The task store is unavailable; retry later",
                    1,
                )
                .into();
            masked
        }
        other => internal(other),
    }
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ferrymcp_core::masked_internal_error(error)
}

fn iso8601(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The wire `Task` of a stored task.
pub(crate) fn task_of(view: &TaskView) -> Task {
    let mut task = Task::new(
        view.id.clone(),
        view.status,
        iso8601(view.created_at_ms),
        iso8601(view.updated_at_ms),
    )
    .with_poll_interval_ms(view.poll_interval_ms);
    task.ttl_ms = view.ttl_ms;
    if let Some(message) = &view.status_message {
        task = task.with_status_message(message.clone());
    }
    task
}

fn object(value: Option<Value>) -> JsonObject {
    match value {
        Some(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// The `tasks/get` body of a stored task. Takes the view by value so
/// the stored result moves into the answer instead of being copied again.
pub(crate) fn detailed(view: TaskView) -> DetailedTask {
    let task = task_of(&view);
    let payload = match view.status {
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: view
                .input_requests
                .iter()
                .filter_map(|(key, request)| {
                    serde_json::from_value(request.clone())
                        .ok()
                        .map(|request| (key.clone(), request))
                })
                .collect(),
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: object(view.result),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: object(view.error),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    DetailedTask::new(task, payload)
}

impl Default for TasksExtension {
    fn default() -> Self {
        Self::new()
    }
}

impl TasksExtension {
    /// The extension with the default settings ([`TasksConfig::default`]: the in-memory
    /// engine in this process). Nothing is read from the environment; for that, see
    /// [`from_env`](Self::from_env).
    ///
    /// ```
    /// let _ = ferrymcp_tasks::TasksExtension::new();
    /// ```
    pub fn new() -> Self {
        Self::with_config(TasksConfig::default())
    }

    /// The extension configured from the `MCP_TASKS_*` environment variables
    /// ([`TasksConfig::from_env`]), as a deployed server is.
    ///
    /// ```
    /// let _ = ferrymcp_tasks::TasksExtension::from_env();
    /// ```
    pub fn from_env() -> Self {
        Self::with_config(TasksConfig::from_env())
    }

    /// The extension with explicit settings.
    ///
    /// ```
    /// let _ = ferrymcp_tasks::TasksExtension::with_config(ferrymcp_tasks::TasksConfig::default().with_concurrency(2));
    /// ```
    pub fn with_config(config: TasksConfig) -> Self {
        Self {
            config: Arc::new(config),
            backend: None,
            running: Mutex::new(None),
            asks: HashMap::new(),
        }
    }

    /// Lets the task tool `tool` (its name at the root) gather input before its task
    /// exists. On each round of a `tools/call` that would create the task, `ask` runs first,
    /// in the request: while it answers `Some(InputRequired)`, that input round goes back to
    /// the client as the call's answer (no task); once it answers `None`, the task is
    /// created, and its run sees that round's answers (`Context::input_responses`). Input
    /// rounds inside the running task keep working as before.
    ///
    /// ```
    /// use ferrymcp_core::{Context, InputRequired, types::InputRequest};
    /// use ferrymcp_tasks::TasksExtension;
    ///
    /// let _ = TasksExtension::new().ask_first("greet", |cx: Context| async move {
    ///     if cx.input_responses().is_some_and(|r| r.contains_key("name")) {
    ///         return Ok(None);
    ///     }
    ///     let ask = serde_json::json!({"method": "elicitation/create", "params": {
    ///         "mode": "form", "message": "Your name?",
    ///         "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
    ///     let request: InputRequest = serde_json::from_value(ask).unwrap();
    ///     Ok(Some(InputRequired::new().request("name", request)))
    /// });
    /// ```
    pub fn ask_first<F, Fut>(mut self, tool: impl Into<String>, ask: F) -> Self
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut:
            std::future::Future<Output = Result<Option<InputRequired>, ToolError>> + Send + 'static,
    {
        let ask: Ask = Arc::new(move |cx| Box::pin(ask(cx)));
        self.asks.insert(tool.into(), ask);
        self
    }

    /// Uses `backend` instead of the one the URL names.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ferrymcp_tasks::{TasksExtension, backend::memory::MemoryBackend};
    /// let _ = TasksExtension::new().with_backend(Arc::new(MemoryBackend::new()));
    /// ```
    pub fn with_backend(mut self, backend: Arc<dyn TaskBackend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// The settings.
    pub fn config(&self) -> &TasksConfig {
        &self.config
    }

    /// The running engine; `None` before start and after stop.
    pub fn engine(&self) -> Option<Engine> {
        self.lock().as_ref().map(|running| running.engine.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<RunningEngine>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn make_backend(&self) -> Result<crate::Connected, BoxError> {
        if let Some(backend) = &self.backend {
            return Ok(crate::Connected {
                backend: Arc::clone(backend),
                lease: backend.lease(),
            });
        }
        Ok(crate::connect(&self.config).await?)
    }

    /// The decision for one `tools/call`: `None` runs it
    /// synchronously, `Some(Ok)` creates a task, `Some(Err)` refuses it.
    fn wants_task(call: &CallTool, tool: &ToolInfo) -> Option<Result<(), ErrorData>> {
        let mode = tool.task_config().mode;
        if mode == TaskSupport::Forbidden {
            return None;
        }
        match (mode, client_opted_in(call.context().scope())) {
            (_, true) => Some(Ok(())),
            (TaskSupport::Required, false) => {
                Some(Err(ferrymcp_types::codes::tool_needs_tasks(&call.name)))
            }
            _ => None,
        }
    }

    async fn submit(
        &self,
        engine: &Engine,
        call: &CallTool,
        tool: &ToolInfo,
        gathered: bool,
    ) -> Result<CreateTaskResult, ErrorData> {
        // Arguments are checked before anything exists (I15, D05).
        tool.validate_arguments(&call.arguments)?;
        let scope = call.context().scope();
        let principal = scope.principal().cloned();
        let owner = Owner::of(principal.as_ref());
        let caller = caller_key(principal.as_ref(), client_name(scope).as_deref());
        let snapshot = TaskSnapshot {
            tool: Some(call.name.clone()),
            version: tool.version().map(ToString::to_string),
            principal,
            // Answers gathered before the task existed go to its first run.
            input_responses: gathered.then(|| scope.input_responses().cloned()).flatten(),
            trace: ferrymcp_core::trace_context::TraceContext::current(),
        };
        let context = match serde_json::to_value(&snapshot) {
            Ok(Value::Object(context)) => context,
            _ => JsonObject::new(),
        };
        let idempotent = crate::LostWorker::of(tool) == crate::LostWorker::Rerun;
        let id = ids::new_task_id();
        let view = engine
            .backend
            .submit(NewTask {
                id: id.clone(),
                owner: owner.clone(),
                caller,
                tool: call.name.clone(),
                version: snapshot.version,
                arguments: call.arguments.clone(),
                context,
                ttl: Some(self.config.ttl),
                poll_interval: tool
                    .task_config()
                    .poll_interval
                    .unwrap_or(self.config.poll_interval),
                max_attempts: if idempotent { IDEMPOTENT_ATTEMPTS } else { 1 },
            })
            .await
            .map_err(backend_error)?;
        crate::metrics::created(&call.name);
        // The work may start only once this submission has been answered through the root's
        // middleware (D32): the order is guaranteed, not a race the worker usually loses.
        let backend = Arc::clone(&engine.backend);
        scope.after_response(move |delivered| {
            tokio::spawn(async move {
                // Retried while the store is unavailable, for up to a lease.
                let until = tokio::time::Instant::now() + backend.lease();
                let mut backoff = crate::worker::Backoff::new();
                loop {
                    let outcome = if delivered {
                        backend.release(&owner, &id).await
                    } else {
                        // The client never learned the id: do not leave the task behind.
                        backend.cancel(&owner, &id).await.map(drop)
                    };
                    match outcome {
                        Ok(()) => return,
                        Err(BackendError::Unavailable(_))
                            if tokio::time::Instant::now() < until =>
                        {
                            let left = until.saturating_duration_since(tokio::time::Instant::now());
                            tokio::time::sleep(backoff.next_delay().min(left)).await;
                        }
                        Err(error) => {
                            tracing::warn!(task = %id, %error, "could not release a submitted task");
                            return;
                        }
                    }
                }
            });
        });
        Ok(CreateTaskResult::new(task_of(&view)))
    }

    async fn answer(
        &self,
        cx: &Context,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorData> {
        let scope = cx.scope();
        // R6: checked before any lookup, so a bogus id also gets -32021.
        gate_tasks_request(cx, method)?;
        let params = params.unwrap_or(Value::Null);
        let invalid = |e: serde_json::Error| {
            ErrorData::invalid_params(format!("Invalid params for {method}: {e}"), None)
        };
        let owner = Owner::of(scope.principal());
        let ack = || serde_json::to_value(TaskAckResult::new()).map_err(internal);
        match method {
            "tasks/get" => {
                let params: GetTaskParams = serde_json::from_value(params).map_err(invalid)?;
                let Some(engine) = self.engine() else {
                    return Err(task_not_found(&params.task_id));
                };
                let view = engine
                    .backend
                    .get(&owner, &params.task_id)
                    .await
                    .map_err(backend_error)?
                    .ok_or_else(|| task_not_found(&params.task_id))?;
                serde_json::to_value(GetTaskResult::new(detailed(view))).map_err(internal)
            }
            "tasks/update" => {
                let params: UpdateTaskParams = serde_json::from_value(params).map_err(invalid)?;
                let Some(engine) = self.engine() else {
                    return Err(task_not_found(&params.task_id));
                };
                engine
                    .backend
                    .deliver_input(&owner, &params.task_id, params.input_responses)
                    .await
                    .map_err(backend_error)?
                    .ok_or_else(|| task_not_found(&params.task_id))?;
                ack()
            }
            "tasks/cancel" => {
                let params: CancelTaskParams = serde_json::from_value(params).map_err(invalid)?;
                let Some(engine) = self.engine() else {
                    return Err(task_not_found(&params.task_id));
                };
                engine
                    .backend
                    .cancel(&owner, &params.task_id)
                    .await
                    .map_err(backend_error)?
                    .ok_or_else(|| task_not_found(&params.task_id))?;
                ack()
            }
            other => Err(ErrorData::new(
                ferrymcp_types::ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
                None,
            )),
        }
    }
}

/// What every `tasks/*` request must pass before anything is looked up: a 2026-07-28
/// request (`-32601` on 2025-11-25, where the extension is not defined) that declares
/// the extension in its own `_meta` (`-32021` otherwise). For other extensions that
/// answer `tasks/*` (a proxy's passthrough).
///
/// ```
/// let cx = ferrymcp_core::Context::new(ferrymcp_core::Server::new("s"), ferrymcp_core::RequestScope::new());
/// let refused = ferrymcp_tasks::gate_tasks_request(&cx, "tasks/get").unwrap_err();
/// assert_eq!(refused.code.0, -32021);
/// ```
pub fn gate_tasks_request(cx: &Context, method: &str) -> Result<(), ErrorData> {
    let scope = cx.scope();
    if scope.era() == Era::Legacy {
        let version = scope
            .protocol_version()
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default();
        return Err(ErrorData::new(
            ferrymcp_types::ErrorCode::METHOD_NOT_FOUND,
            format!("Method '{method}' is not available at protocol version '{version}'."),
            None,
        ));
    }
    if scope.client_extension(TASKS_EXTENSION_ID).is_none() {
        return Err(ferrymcp_types::codes::request_needs_tasks());
    }
    Ok(())
}

#[async_trait]
impl Extension for TasksExtension {
    fn id(&self) -> &str {
        TASKS_EXTENSION_ID
    }

    fn runs_task_tools(&self) -> bool {
        true
    }

    /// Fills in the `Mcp-Name` header some clients leave out of `tasks/*` requests.
    fn prepare_http_request(&self, headers: &mut http::HeaderMap, body: &[u8]) {
        crate::http_headers::fill_missing_task_name(headers, body);
    }

    /// SEP-2663 is not defined on 2025-11-25 connections.
    fn legacy_era(&self) -> bool {
        false
    }

    /// Exactly `{}`.
    fn settings(&self) -> JsonObject {
        JsonObject::new()
    }

    fn methods(&self) -> Vec<String> {
        METHODS.iter().map(|m| (*m).to_owned()).collect()
    }

    async fn handle_request(
        &self,
        cx: Context,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorData> {
        self.answer(&cx, method, params).await
    }

    /// `taskIds`: see [`crate::push`].
    async fn subscribe(
        &self,
        cx: Context,
        requested: &JsonObject,
    ) -> Result<Option<ferrymcp_core::subscription::Subscription>, ErrorData> {
        crate::push::subscribe(self.engine(), &cx, requested).await
    }

    /// A call it does not make a task of goes on unchanged; one it does runs no tool.
    fn leaves_results_unchanged(&self) -> bool {
        true
    }

    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = call
            .context()
            .server()
            .get_tool(&call.name, call.version.as_ref())
        else {
            // Unknown tools take the normal path and its error (C09).
            return next.run(call).await;
        };
        match Self::wants_task(&call, &tool) {
            None => next.run(call).await,
            Some(Err(refusal)) => Err(refusal),
            Some(Ok(())) => match self.engine() {
                Some(engine) => {
                    let asked = match self.asks.get(&call.name) {
                        Some(ask) => Some(ask(call.context().clone()).await.map_err(|e| {
                            let masked = call.context().server().masks_error_details();
                            e.into_request_error("tool", &call.name, masked)
                        })?),
                        None => None,
                    };
                    if let Some(Some(round)) = asked {
                        return Ok(CallToolResponse::InputRequired(round.into()));
                    }
                    let gathered = asked.is_some();
                    self.submit(&engine, &call, &tool, gathered)
                        .await
                        .map(CallToolResponse::Task)
                }
                // Not started (an in-process call without `start`): run it (C41).
                None => next.run(call).await,
            },
        }
    }

    async fn on_start(&self, server: &Server) -> Result<(), BoxError> {
        let connected = self.make_backend().await?;
        let backend = Arc::clone(&connected.backend);
        let shutdown = CancellationToken::new();
        let mut tasks = vec![tokio::spawn(crate::worker::sweep(
            Arc::clone(&backend),
            shutdown.clone(),
        ))];
        if self.config.embedded_worker {
            let worker = Worker::new(server.clone(), Arc::clone(&backend))
                .with_concurrency(self.config.concurrency)
                .with_heartbeat(connected.heartbeat());
            tasks.push(tokio::spawn(worker.run(shutdown.clone())));
        }
        *self.lock() = Some(RunningEngine {
            engine: Engine {
                backend,
                config: Arc::clone(&self.config),
            },
            shutdown,
            tasks,
        });
        Ok(())
    }

    async fn on_stop(&self, _server: &Server) {
        let running = self.lock().take();
        if let Some(running) = running {
            running.shutdown.cancel();
            for task in running.tasks {
                let _ = task.await;
            }
            // Freeing a large store takes seconds (hundreds of thousands of records): do it
            // off the async threads so stopping stays prompt.
            let engine = running.engine;
            tokio::task::spawn_blocking(move || drop(engine));
        }
    }
}
