//! Driving SEP-2663 tasks in process, the Rust counterparts of FastMCP's `task_helpers`.
//!
//! The submission goes through the real `tools/call` path (middleware, the tasks
//! interceptor) with a request scope that carries the 2026-07-28 protocol version and the
//! tasks opt-in; `tasks/get|update|cancel` go through the server's request path too. A
//! [`TaskClient`] adds a caller identity and opt-in settings; the free functions are the
//! anonymous shorthand.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use ferrymcp_core::{Server, ToolDef};
//! use ferrymcp_test_helpers::tasks::{running_task_server, run_task};
//!
//! let server = Server::new("s");
//! server.add_tool(ToolDef::new("answer", || async { 42 }).task(true)).unwrap();
//! server.add_extension(ferrymcp_tasks::TasksExtension::new()).unwrap();
//! let running = running_task_server(&server).await.unwrap();
//! let done = run_task(&server, "answer", serde_json::json!({})).await;
//! assert_eq!(done.task.payload, ferrymcp_core::types::TaskPayload::Completed {
//!     result: serde_json::from_value(serde_json::json!({
//!         "resultType": "complete", "content": [{"type": "text", "text": "42"}],
//!         "structuredContent": {"result": 42}, "isError": false,
//!         "_meta": {"fastmcp": {"wrap_result": true}}
//!     })).unwrap(),
//! });
//! running.stop().await;
//! # });
//! ```

use std::time::Duration;

use ferrymcp_core::{
    RequestScope, RunningServer, Server, ServerError, ToolCall,
    auth::Principal,
    types::{
        CallToolResponse, CreateTaskResult, ErrorData, GetTaskResult, InputResponses, JsonObject,
        ProtocolVersion, TASKS_EXTENSION_ID, TaskStatus,
    },
};
use serde_json::{Value, json};

/// The terminal statuses, the default targets of [`TaskClient::wait`].
pub const TERMINAL: [TaskStatus; 3] = [
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

/// Starts the server (its extensions, so the task engine and worker) until
/// [`RunningServer::stop`].
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let running = ferrymcp_test_helpers::tasks::running_task_server(&ferrymcp_core::Server::new("s")).await.unwrap();
/// running.stop().await;
/// # });
/// ```
pub async fn running_task_server(server: &Server) -> Result<RunningServer, ServerError> {
    server.start().await
}

/// A 2026-07-28 request scope that opts in to the tasks extension with `settings`, as
/// `caller` (anonymous when `None`).
///
/// ```
/// let scope = ferrymcp_test_helpers::tasks::opted_in_scope(None, Default::default());
/// assert!(scope.client_extension("io.modelcontextprotocol/tasks").is_some());
/// ```
pub fn opted_in_scope(caller: Option<&Principal>, settings: JsonObject) -> RequestScope {
    let scope = RequestScope::new()
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
        .with_client_extension(TASKS_EXTENSION_ID, settings);
    match caller {
        Some(caller) => scope.with_principal(caller.clone()),
        None => scope,
    }
}

/// Tasks requests against one server, as one caller.
///
/// ```
/// use ferrymcp_core::auth::Principal;
/// let server = ferrymcp_core::Server::new("s");
/// let alice = ferrymcp_test_helpers::tasks::TaskClient::new(&server).as_caller(Principal::new("app").with_subject("alice"));
/// ```
#[derive(Debug, Clone)]
pub struct TaskClient<'a> {
    server: &'a Server,
    caller: Option<Principal>,
    settings: JsonObject,
}

impl<'a> TaskClient<'a> {
    /// An anonymous caller of `server`.
    pub fn new(server: &'a Server) -> Self {
        Self {
            server,
            caller: None,
            settings: JsonObject::new(),
        }
    }

    /// Calls as `caller`.
    pub fn as_caller(mut self, caller: Principal) -> Self {
        self.caller = Some(caller);
        self
    }

    /// Opts in with these extension settings (default `{}`).
    pub fn with_settings(mut self, settings: JsonObject) -> Self {
        self.settings = settings;
        self
    }

    fn scope(&self) -> RequestScope {
        opted_in_scope(self.caller.as_ref(), self.settings.clone())
    }

    /// An opted-in `tools/call`; the answer must be a task handle. A synchronous
    /// result panics; a JSON-RPC error is returned.
    pub async fn submit(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CreateTaskResult, ErrorData> {
        let call = ToolCall::new(name).arguments(arguments).scope(self.scope());
        match self.server.call(call).await? {
            CallToolResponse::Task(created) => Ok(created),
            other => panic!("expected `{name}` to become a task, got {other:?}"),
        }
    }

    /// An opted-in `tools/call`, whatever it answers.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCall::new(name).arguments(arguments).scope(self.scope());
        self.server.call(call).await
    }

    /// A `tools/call` without the opt-in (and without a protocol version).
    pub async fn call_without_optin(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut scope = RequestScope::new();
        if let Some(caller) = &self.caller {
            scope = scope.with_principal(caller.clone());
        }
        self.server
            .call(ToolCall::new(name).arguments(arguments).scope(scope))
            .await
    }

    /// `tasks/get`.
    pub async fn get(&self, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let value = self
            .server
            .request("tasks/get", Some(json!({"taskId": task_id})), self.scope())
            .await?;
        serde_json::from_value(value).map_err(|e| {
            ErrorData::internal_error(format!("tasks/get answered an invalid body: {e}"), None)
        })
    }

    /// `tasks/update` with `responses` by client-facing key.
    pub async fn update(
        &self,
        task_id: &str,
        responses: InputResponses,
    ) -> Result<Value, ErrorData> {
        let params = json!({"taskId": task_id, "inputResponses": responses});
        self.server
            .request("tasks/update", Some(params), self.scope())
            .await
    }

    /// `tasks/cancel`.
    pub async fn cancel(&self, task_id: &str) -> Result<Value, ErrorData> {
        self.server
            .request(
                "tasks/cancel",
                Some(json!({"taskId": task_id})),
                self.scope(),
            )
            .await
    }

    /// Polls `tasks/get` until the status is one of `targets`, for at most `timeout`. It
    /// waits on the engine's change notifications when it has them (the memory engine does),
    /// so it neither sleeps nor spins.
    pub async fn wait(
        &self,
        task_id: &str,
        targets: &[TaskStatus],
        timeout: Duration,
    ) -> Result<GetTaskResult, ErrorData> {
        let deadline = tokio::time::Instant::now() + timeout;
        let backend = self
            .server
            .extension_as::<ferrymcp_tasks::TasksExtension>()
            .and_then(|extension| extension.engine())
            .map(|engine| std::sync::Arc::clone(engine.backend()));
        let mut changes = backend.as_ref().and_then(|backend| backend.changes());
        if let (Some(backend), Some(_)) = (&backend, &changes) {
            // A backend may feed only the changes of watched tasks (Redis does).
            let owner = ferrymcp_tasks::backend::Owner::of(self.scope().principal());
            backend.watch(&owner, task_id).await.map_err(|error| {
                ErrorData::internal_error(format!("watching {task_id}: {error}"), None)
            })?;
        }
        loop {
            let current = self.get(task_id).await?;
            if targets.contains(&current.task.task.status) {
                return Ok(current);
            }
            let timed_out = || {
                ErrorData::internal_error(
                    format!(
                        "task {task_id} still {:?} after {timeout:?} (waiting for {targets:?})",
                        current.task.task.status
                    ),
                    None,
                )
            };
            match changes.as_mut() {
                Some(receiver) => loop {
                    match tokio::time::timeout_at(deadline, receiver.recv()).await {
                        Err(_) => return Err(timed_out()),
                        Ok(Ok(id)) if !id.is_empty() && id != task_id => continue,
                        // Ours, or changes may have been missed: read again.
                        Ok(_) => break,
                    }
                },
                None => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(timed_out());
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    /// Submits and waits for a terminal status (5 s at most).
    pub async fn run(&self, name: &str, arguments: Value) -> Result<GetTaskResult, ErrorData> {
        let created = self.submit(name, arguments).await?;
        self.wait(&created.task.task_id, &TERMINAL, Duration::from_secs(5))
            .await
    }
}

/// [`TaskClient::submit`] as an anonymous caller.
pub async fn submit_task(
    server: &Server,
    name: &str,
    arguments: Value,
) -> Result<CreateTaskResult, ErrorData> {
    TaskClient::new(server).submit(name, arguments).await
}

/// [`TaskClient::call_without_optin`] as an anonymous caller.
pub async fn call_tool_without_optin(
    server: &Server,
    name: &str,
    arguments: Value,
) -> Result<CallToolResponse, ErrorData> {
    TaskClient::new(server)
        .call_without_optin(name, arguments)
        .await
}

/// [`TaskClient::get`] as an anonymous caller.
pub async fn get_task(server: &Server, task_id: &str) -> Result<GetTaskResult, ErrorData> {
    TaskClient::new(server).get(task_id).await
}

/// [`TaskClient::update`] as an anonymous caller.
pub async fn update_task(
    server: &Server,
    task_id: &str,
    responses: InputResponses,
) -> Result<Value, ErrorData> {
    TaskClient::new(server).update(task_id, responses).await
}

/// [`TaskClient::cancel`] as an anonymous caller.
pub async fn cancel_task(server: &Server, task_id: &str) -> Result<Value, ErrorData> {
    TaskClient::new(server).cancel(task_id).await
}

/// [`TaskClient::wait`] as an anonymous caller; panics on timeout or error.
pub async fn wait_for_task(
    server: &Server,
    task_id: &str,
    targets: &[TaskStatus],
    timeout: Duration,
) -> GetTaskResult {
    match TaskClient::new(server)
        .wait(task_id, targets, timeout)
        .await
    {
        Ok(done) => done,
        Err(error) => panic!("waiting for task {task_id}: {}", error.message),
    }
}

/// Submits `name` as an anonymous task and waits (5 s) for a terminal status; panics if it
/// does not get there.
pub async fn run_task(server: &Server, name: &str, arguments: Value) -> GetTaskResult {
    match TaskClient::new(server).run(name, arguments).await {
        Ok(done) => done,
        Err(error) => panic!("running task `{name}`: {}", error.message),
    }
}
