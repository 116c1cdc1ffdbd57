//! [`ProxyTasks`]: SEP-2663 task passthrough for proxied tools.
//!
//! Register it on the root server in place of `ferrymcp_tasks::TasksExtension` (it can hold one,
//! [`ProxyTasks::with_local`], for local task tools and for proxied tools whose upstream has
//! no tasks). It advertises `io.modelcontextprotocol/tasks` and, for a `tools/call` that
//!
//! * targets a tool served by a [`ProxyServer`](crate::ProxyServer) (at any mount depth),
//! * comes from a client that opted in (2026-07-28, the extension in the request `_meta`),
//! * and whose upstream advertises the tasks extension,
//!
//! forwards the call with the opt-in. An upstream `CreateTaskResult` comes back with a proxy
//! task id ([`TaskIdSigner`]) bound to the upstream, its task id and the caller;
//! `tasks/get|update|cancel` on that id go to the owning upstream with the id rewritten both
//! ways, everything else (`status`, `pollIntervalMs`, `ttlMs`, `inputRequests`, `result`,
//! `error`) passing through. A forged or foreign id is -32602.
//!
//! A `subscriptions/listen` naming proxy task ids is served here too: each is read from its
//! upstream at the task's poll interval, and every change is pushed to the client as
//! `notifications/tasks` with the proxy id; local task ids go to the local extension.
//!
//! The root's middleware runs before the passthrough; the proxy server's own middleware does
//! not (the call never reaches its tool handler).

use std::{collections::HashMap, sync::RwLock, time::Duration};

use async_trait::async_trait;
use ferrymcp_core::{
    BoxError, CallTool, Context, Extension, Server, ToolCallNext,
    subscription::{PushedNotification, Subscription},
};
use ferrymcp_tasks::{
    TasksExtension,
    backend::Owner,
    extension::{METHODS, client_opted_in},
    task_not_found,
};
use ferrymcp_types::{
    CallToolResponse, CancelTaskParams, ErrorCode, ErrorData, GetTaskParams, JsonObject,
    ServerResult, TASKS_EXTENSION_ID, TaskAckResult, UpdateTaskParams,
};
use futures::StreamExt as _;
use rmcp::model::{CancelTaskRequest, ClientRequest, GetTaskRequest, UpdateTaskRequest};
use serde_json::Value;

use crate::{
    ProxyError, RequestOptions, Upstream,
    server::ProxyState,
    task_ids::{TaskIdError, TaskIdSigner},
};

/// The tasks extension of a server that proxies upstreams.
///
/// ```
/// use ferrymcp_proxy::ProxyTasks;
/// let server = ferrymcp_core::Server::new("gateway");
/// server.add_extension(ProxyTasks::new().unwrap().with_local(ferrymcp_tasks::TasksExtension::new())).unwrap();
/// ```
pub struct ProxyTasks {
    signer: TaskIdSigner,
    local: Option<TasksExtension>,
    upstreams: RwLock<HashMap<String, Upstream>>,
}

fn caller_key(cx: &Context) -> String {
    Owner::of(cx.scope().principal()).as_str().to_owned()
}

/// The upstream serving `name` at `server`, and the tool's name there: follows mounts down
/// to the server that registered the tool.
fn proxied(server: &Server, name: &str, call: &CallTool) -> Option<(Upstream, String)> {
    let mut info = server.get_tool(name, call.version.as_ref())?;
    loop {
        let owner = info.owner().clone();
        if let Some(state) = owner.state::<ProxyState>()
            && owner
                .get_tool(info.owner_name(), None)
                .is_some_and(|t| t.owner().ptr_eq(&owner))
        {
            return Some((state.upstream, info.owner_name().to_owned()));
        }
        let next = owner.get_tool(info.owner_name(), None)?;
        if next.owner().ptr_eq(&owner) {
            return None;
        }
        info = next;
    }
}

impl ProxyTasks {
    /// Passthrough with a random id key (ids valid in this process only).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::ProxyTasks::new().unwrap();
    /// ```
    pub fn new() -> Result<Self, TaskIdError> {
        Ok(Self::with_signer(TaskIdSigner::random()?))
    }

    /// Passthrough with a configured id key (share it between replicas).
    ///
    /// ```
    /// let signer = ferrymcp_proxy::task_ids::TaskIdSigner::new(b"0123456789abcdef").unwrap();
    /// let _ = ferrymcp_proxy::ProxyTasks::with_signer(signer);
    /// ```
    pub fn with_signer(signer: TaskIdSigner) -> Self {
        Self {
            signer,
            local: None,
            upstreams: RwLock::new(HashMap::new()),
        }
    }

    /// Also runs local tasks: task tools of this server and proxied tools declared with a
    /// task mode ([`ProxyServer::task_mode`](crate::ProxyServer::task_mode)) whose upstream
    /// has no tasks.
    ///
    /// ```
    /// let _ = ferrymcp_proxy::ProxyTasks::new().unwrap().with_local(ferrymcp_tasks::TasksExtension::new());
    /// ```
    pub fn with_local(mut self, local: TasksExtension) -> Self {
        self.local = Some(local);
        self
    }

    /// Makes `upstream`'s task ids routable (done on first passthrough call anyway; register
    /// upfront so ids minted by a replica open here).
    ///
    /// ```
    /// let tasks = ferrymcp_proxy::ProxyTasks::new().unwrap();
    /// tasks.register(&ferrymcp_proxy::Upstream::command("u", ferrymcp_proxy::CommandTarget::new("srv")));
    /// ```
    pub fn register(&self, upstream: &Upstream) {
        let mut map = self
            .upstreams
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(upstream.name().to_owned())
            .or_insert_with(|| upstream.clone());
    }

    fn upstream(&self, name: &str) -> Option<Upstream> {
        self.upstreams
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    async fn passthrough(
        &self,
        call: &CallTool,
        upstream: &Upstream,
        tool: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        self.register(upstream);
        let cx = call.context();
        let reply = upstream
            .call_tool(
                tool,
                call.arguments.clone(),
                RequestOptions::from_context(cx).with_tasks(),
            )
            .await
            .map_err(ProxyError::into_error_data)?;
        Ok(match reply {
            CallToolResponse::Task(mut created) => {
                created.task.task_id = self
                    .signer
                    .mint(upstream.name(), &created.task.task_id, &caller_key(cx))
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                CallToolResponse::Task(created)
            }
            other => other,
        })
    }

    /// Serves the `taskIds` of a listen: local ids through the local extension, proxy ids by
    /// reading their upstreams (see the [module docs](self)).
    async fn subscribe_tasks(
        &self,
        cx: Context,
        requested: &JsonObject,
    ) -> Result<Option<Subscription>, ErrorData> {
        let Some(ids) = requested.get("taskIds") else {
            return match &self.local {
                Some(local) => local.subscribe(cx, requested).await,
                None => Ok(None),
            };
        };
        ferrymcp_tasks::gate_tasks_request(&cx, "subscriptions/listen")?;
        let (proxied, local): (Vec<String>, Vec<String>) = ferrymcp_tasks::push::task_ids(ids)?
            .into_iter()
            .partition(|id| TaskIdSigner::looks_like(id));
        let caller = caller_key(&cx);
        let mut watched: Vec<WatchedTask> = Vec::new();
        for id in &proxied {
            let Some((name, upstream_id)) = self.signer.open(id, &caller) else {
                continue;
            };
            let Some(upstream) = self.upstream(&name) else {
                continue;
            };
            let task = WatchedTask {
                proxy_id: id.clone(),
                upstream,
                upstream_id,
            };
            // Only tasks the upstream knows for this caller are acknowledged.
            if task.read(&cx).await.is_ok() {
                watched.push(task);
            }
        }
        let mut streams = Vec::new();
        let mut acknowledged: Vec<Value> = Vec::new();
        if let Some(extension) = &self.local
            && !local.is_empty()
        {
            let mut only_local = requested.clone();
            let local = local.into_iter().map(Value::String).collect();
            only_local.insert("taskIds".to_owned(), Value::Array(local));
            if let Some(subscription) = extension.subscribe(cx.clone(), &only_local).await? {
                let (members, notifications) = subscription.into_parts();
                if let Some(Value::Array(ids)) = members.get("taskIds") {
                    acknowledged.extend(ids.iter().cloned());
                }
                streams.push(notifications);
            }
        }
        acknowledged.extend(watched.iter().map(|w| Value::String(w.proxy_id.clone())));
        if !watched.is_empty() {
            let (sender, mut receiver) = tokio::sync::mpsc::channel(16);
            tokio::spawn(relay_upstream_tasks(cx, watched, sender));
            streams
                .push(futures::stream::poll_fn(move |context| receiver.poll_recv(context)).boxed());
        }
        let mut members = JsonObject::new();
        members.insert("taskIds".to_owned(), Value::Array(acknowledged));
        Ok(Some(Subscription::new(
            members,
            futures::stream::select_all(streams).boxed(),
        )))
    }

    async fn route(
        &self,
        cx: &Context,
        method: &str,
        params: Value,
        proxy_id: String,
    ) -> Result<Value, ErrorData> {
        ferrymcp_tasks::gate_tasks_request(cx, method)?;
        let Some((upstream_name, upstream_id)) = self.signer.open(&proxy_id, &caller_key(cx))
        else {
            return Err(task_not_found(&proxy_id));
        };
        let Some(upstream) = self.upstream(&upstream_name) else {
            return Err(task_not_found(&proxy_id));
        };
        let mut params = params;
        if let Some(object) = params.as_object_mut() {
            object.insert("taskId".to_owned(), Value::String(upstream_id.clone()));
        }
        let invalid = |e: serde_json::Error| {
            ErrorData::invalid_params(format!("Invalid params for {method}: {e}"), None)
        };
        let request = match method {
            "tasks/get" => ClientRequest::GetTaskRequest(GetTaskRequest::new(
                serde_json::from_value::<GetTaskParams>(params).map_err(invalid)?,
            )),
            "tasks/update" => ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(
                serde_json::from_value::<UpdateTaskParams>(params).map_err(invalid)?,
            )),
            _ => ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
                serde_json::from_value::<CancelTaskParams>(params).map_err(invalid)?,
            )),
        };
        let reply = upstream
            .request(request, RequestOptions::from_context(cx).with_tasks())
            .await
            .map_err(|error| match error {
                // The upstream's "not found" names its own id: answer with ours.
                ProxyError::Upstream(e) if e.code == ErrorCode::INVALID_PARAMS => {
                    task_not_found(&proxy_id)
                }
                other => other.into_error_data(),
            })?;
        let internal = |e: serde_json::Error| ErrorData::internal_error(e.to_string(), None);
        match reply {
            ServerResult::GetTaskResult(result) => {
                let mut value = serde_json::to_value(result).map_err(internal)?;
                if let Some(object) = value.as_object_mut() {
                    object.insert("taskId".to_owned(), Value::String(proxy_id));
                }
                Ok(value)
            }
            ServerResult::TaskAckResult(_) | ServerResult::EmptyResult(_) => {
                serde_json::to_value(TaskAckResult::new()).map_err(internal)
            }
            other => Err(ProxyError::Protocol {
                upstream: upstream_name,
                method: method.to_owned(),
                detail: serde_json::to_string(&other).unwrap_or_default(),
            }
            .into_error_data()),
        }
    }
}

/// A proxy task a listen watches, and where it lives.
struct WatchedTask {
    proxy_id: String,
    upstream: Upstream,
    upstream_id: String,
}

impl WatchedTask {
    /// The task as `tasks/get` on the upstream shows it, with the proxy id and without
    /// `resultType`: the params of its `notifications/tasks`.
    async fn read(&self, cx: &Context) -> Result<JsonObject, ErrorData> {
        let request = ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(
            self.upstream_id.clone(),
        )));
        let reply = self
            .upstream
            .request(request, RequestOptions::from_context(cx).with_tasks())
            .await
            .map_err(ProxyError::into_error_data)?;
        let ServerResult::GetTaskResult(result) = reply else {
            return Err(task_not_found(&self.proxy_id));
        };
        let mut body = match serde_json::to_value(result) {
            Ok(Value::Object(body)) => body,
            _ => return Err(task_not_found(&self.proxy_id)),
        };
        body.remove("resultType");
        body.insert("taskId".to_owned(), Value::String(self.proxy_id.clone()));
        Ok(body)
    }
}

/// Reads each watched task from its upstream at its poll interval (at least
/// [`RELAY_MIN_INTERVAL`]) and pushes every change, until the listen ends or every task
/// ended or expired.
async fn relay_upstream_tasks(
    cx: Context,
    mut watched: Vec<WatchedTask>,
    sender: tokio::sync::mpsc::Sender<PushedNotification>,
) {
    let mut last: HashMap<String, JsonObject> = HashMap::new();
    while !watched.is_empty() {
        let mut interval = Duration::from_secs(5);
        let mut ended = Vec::new();
        for task in &watched {
            let body = match task.read(&cx).await {
                Ok(body) => body,
                Err(error) if error.code == ErrorCode::INVALID_PARAMS => {
                    // Expired upstream.
                    ended.push(task.proxy_id.clone());
                    continue;
                }
                Err(error) => {
                    tracing::debug!(error = %error.message, "an upstream task could not be read");
                    continue;
                }
            };
            let status = body
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if matches!(status, "completed" | "failed" | "cancelled") {
                ended.push(task.proxy_id.clone());
            }
            if let Some(ms) = body.get("pollIntervalMs").and_then(Value::as_u64) {
                interval = interval.min(Duration::from_millis(ms));
            }
            if last.get(&task.proxy_id) != Some(&body) {
                last.insert(task.proxy_id.clone(), body.clone());
                let notification = PushedNotification::new("notifications/tasks", body);
                if sender.send(notification).await.is_err() {
                    return;
                }
            }
        }
        watched.retain(|task| !ended.contains(&task.proxy_id));
        if watched.is_empty() {
            return;
        }
        tokio::select! {
            () = sender.closed() => return,
            () = tokio::time::sleep(interval.max(RELAY_MIN_INTERVAL)) => {}
        }
    }
}

/// The shortest pause between two reads of an upstream task for a listen.
const RELAY_MIN_INTERVAL: Duration = Duration::from_millis(50);

#[async_trait]
impl Extension for ProxyTasks {
    fn id(&self) -> &str {
        TASKS_EXTENSION_ID
    }

    fn runs_task_tools(&self) -> bool {
        true
    }

    /// A call it does not pass through as a task goes on unchanged, or to the local tasks
    /// extension.
    fn leaves_results_unchanged(&self) -> bool {
        self.local
            .as_ref()
            .is_none_or(|local| local.leaves_results_unchanged())
    }

    /// Fills in the `Mcp-Name` header some clients leave out of `tasks/*` requests.
    fn prepare_http_request(&self, headers: &mut http::HeaderMap, body: &[u8]) {
        ferrymcp_tasks::http_headers::fill_missing_task_name(headers, body);
    }

    /// SEP-2663 is not defined on 2025-11-25 connections.
    fn legacy_era(&self) -> bool {
        false
    }

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
        let params = params.unwrap_or(Value::Null);
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (id, &self.local) {
            (Some(id), _) if TaskIdSigner::looks_like(&id) => {
                self.route(&cx, method, params, id).await
            }
            (_, Some(local)) => local.handle_request(cx, method, Some(params)).await,
            (Some(id), None) => {
                ferrymcp_tasks::gate_tasks_request(&cx, method)?;
                Err(task_not_found(&id))
            }
            (None, None) => {
                ferrymcp_tasks::gate_tasks_request(&cx, method)?;
                Err(ErrorData::invalid_params(
                    format!("Invalid params for {method}: missing field `taskId`"),
                    None,
                ))
            }
        }
    }

    async fn subscribe(
        &self,
        cx: Context,
        requested: &JsonObject,
    ) -> Result<Option<Subscription>, ErrorData> {
        self.subscribe_tasks(cx, requested).await
    }

    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        if client_opted_in(call.context().scope()) {
            let server = call.context().server().clone();
            // The passthrough's future is boxed: it is large, and inline it would make every
            // call's future as large, copied into its box per call.
            if let Some((upstream, tool)) = proxied(&server, &call.name, &call)
                && upstream
                    .supports_tasks()
                    .await
                    .map_err(ProxyError::into_error_data)?
            {
                return Box::pin(self.passthrough(&call, &upstream, &tool)).await;
            }
        }
        match &self.local {
            Some(local) => local.intercept_call_tool(call, next).await,
            None => next.run(call).await,
        }
    }

    async fn on_start(&self, server: &Server) -> Result<(), BoxError> {
        match &self.local {
            Some(local) => local.on_start(server).await,
            None => Ok(()),
        }
    }

    async fn on_stop(&self, server: &Server) {
        if let Some(local) = &self.local {
            local.on_stop(server).await;
        }
    }
}
