//! Tools at one server: registering them, resolving a name through the mounts, calling
//! one (through middleware, extensions and access checks, or as a background run), and
//! listing them.

use std::sync::{Arc, atomic::Ordering};

use ferrymcp_types::{CallToolResponse, ErrorData, JsonObject};
use serde_json::Value;

use super::{ListKind, Resolved, Route, Server, access, guarded, unknown_tool};
use crate::{
    BoxFuture, CallTool, Context, Message, Reply, RequestScope, RunTool, ServerError, ToolCallNext,
    ToolDef, ToolInfo,
    extract::CallParts,
    middleware::run_chain,
    tool::RegisteredTool,
    version::{Version, VersionSpec},
};

/// An in-process `tools/call`, for tests and extensions.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{Server, ToolCall, ToolDef};
/// let server = Server::new("s");
/// server.add_tool(ToolDef::new("calc", || async { 7 }).version("1.0")).unwrap();
/// server.add_tool(ToolDef::new("calc", || async { 12 }).version("2.0")).unwrap();
/// let reply = server.call(ToolCall::new("calc").version("1.0")).await.unwrap();
/// # let ferrymcp_core::types::CallToolResponse::Complete(r) = reply else { unreachable!() };
/// # assert_eq!(r.structured_content.unwrap()["result"], 7);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ToolCall {
    name: String,
    arguments: Value,
    version: Option<Result<VersionSpec, String>>,
    scope: RequestScope,
    run_middleware: bool,
}

impl ToolCall {
    /// A call to `name` with no arguments.
    ///
    /// ```
    /// let _ = ferrymcp_core::ToolCall::new("add");
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: Value::Null,
            version: None,
            scope: RequestScope::new(),
            run_middleware: true,
        }
    }

    /// The arguments: a JSON object (`null` means none; anything else is `-32602`).
    ///
    /// ```
    /// let _ = ferrymcp_core::ToolCall::new("add").arguments(serde_json::json!({"a": 1, "b": 2}));
    /// ```
    pub fn arguments(mut self, arguments: Value) -> Self {
        self.arguments = arguments;
        self
    }
}

crate::builders::request_builders!(ToolCall, "ferrymcp_core::ToolCall::new(\"t\")");

impl Server {
    /// Registers a tool.
    ///
    /// Fails when the version is invalid, when the name mixes versioned and unversioned
    /// registrations on this server, when the same name and version is already
    /// registered, or when the input schema is not an object.
    ///
    /// ```
    /// use ferrymcp_core::{Server, ServerError, ToolDef};
    /// let s = Server::new("s");
    /// s.add_tool(ToolDef::new("t", || async { 1 }).version("1.0")).unwrap();
    /// s.add_tool(ToolDef::new("t", || async { 2 }).version("2.0")).unwrap();
    /// let mixed = s.add_tool(ToolDef::new("t", || async { 3 }));
    /// assert!(matches!(mixed, Err(ServerError::MixedVersioning { .. })));
    /// ```
    pub fn add_tool(&self, def: impl Into<ToolDef>) -> Result<(), ServerError> {
        let def = def.into();
        if def.name.is_empty() {
            return Err(ServerError::InvalidName {
                name: def.name,
                reason: "a tool name cannot be empty",
            });
        }
        let version =
            match &def.version {
                None => None,
                Some(raw) => Some(Version::new(raw.clone()).map_err(|source| {
                    ServerError::InvalidVersion {
                        component: "tool",
                        name: def.name.clone(),
                        source,
                    }
                })?),
            };
        if !crate::schema::is_object_schema(&def.input_schema) {
            return Err(ServerError::InputSchemaNotObject { name: def.name });
        }
        let tool = Arc::new(RegisteredTool::new(
            def,
            version,
            Arc::clone(&self.inner.strict_input_validation),
        ));
        let guarded = !tool.requirement.is_none();

        self.update(&self.inner.tools, |tools| tools.insert(tool, self.name()))?;
        if guarded {
            self.mark_guarded();
        }
        self.announce(ListKind::Tools);
        Ok(())
    }

    /// Registers `handler` as the tool `name`; shorthand for
    /// `add_tool(ToolDef::new(name, handler))`.
    ///
    /// ```
    /// ferrymcp_core::Server::new("s").tool("ping", || async { "pong" }).unwrap();
    /// ```
    pub fn tool<H: crate::Handler<M>, M: 'static>(
        &self,
        name: impl Into<String>,
        handler: H,
    ) -> Result<&Self, ServerError> {
        self.add_tool(ToolDef::new(name, handler))?;
        Ok(self)
    }

    /// Removes every version of the tool `name`; returns whether there was one. Mounted
    /// parents stop showing it at once.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.tool("t", || async {}).unwrap();
    /// assert!(s.remove_tool("t"));
    /// assert!(!s.remove_tool("t"));
    /// ```
    pub fn remove_tool(&self, name: &str) -> bool {
        self.remove_from(&self.inner.tools, name, ListKind::Tools)
    }

    // ---------------------------------------------------------------- lookup

    /// Resolves `name` at this server: local tools first, then each mount in order; the
    /// highest version wins, ties go to the earliest provider.
    pub(crate) fn resolve(&self, name: &str, spec: Option<&VersionSpec>) -> Option<Resolved> {
        self.resolve_within(name, spec, &|_| true)
    }

    /// [`resolve`](Self::resolve), skipping tools an enclosing server hides (`visible`), so a
    /// parent that hides a child's highest version falls back to the next one.
    fn resolve_within(
        &self,
        name: &str,
        spec: Option<&VersionSpec>,
        visible: &dyn Fn(&RegisteredTool) -> bool,
    ) -> Option<Resolved> {
        let visibility = self.inner.visibility.load();
        let accepts = |tool: &RegisteredTool| {
            spec.is_none_or(|s| s.matches(tool.version.as_ref()))
                && visibility.allows(name, &tool.tags)
                && visible(tool)
        };
        let mut best = self
            .inner
            .tools
            .load()
            .versions(name)
            .iter()
            .find(|t| accepts(t))
            .map(|tool| Resolved {
                tool: Arc::clone(tool),
                route: Route::Local,
                gates: Vec::new(),
            });
        let visible_here =
            |tool: &RegisteredTool| visibility.allows(name, &tool.tags) && visible(tool);
        for mount in self.inner.mounts.load().iter() {
            let Some(child_name) = mount.child_name(name) else {
                continue;
            };
            let Some(found) = mount.child.resolve_within(child_name, spec, &visible_here) else {
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|b| found.tool.version > b.tool.version)
            {
                best = Some(Resolved {
                    tool: found.tool,
                    route: Route::Mount {
                        child: mount.child.clone(),
                        child_name: child_name.to_owned(),
                    },
                    gates: access::through(mount, found.gates),
                });
            }
        }
        best
    }

    /// The tool `name` as this server would call it, without running any middleware:
    /// the highest version, or the one `version` selects.
    ///
    /// ```
    /// use ferrymcp_core::{Server, ToolDef, version::{Version, VersionSpec}};
    /// let s = Server::new("s");
    /// s.add_tool(ToolDef::new("calc", || async { 1 }).version("1.0")).unwrap();
    /// s.add_tool(ToolDef::new("calc", || async { 2 }).version("2.0")).unwrap();
    /// assert_eq!(s.get_tool("calc", None).unwrap().version().unwrap().as_str(), "2.0");
    /// let v1 = VersionSpec::exact(Version::new("1.0").unwrap());
    /// assert_eq!(s.get_tool("calc", Some(&v1)).unwrap().version().unwrap().as_str(), "1.0");
    /// ```
    pub fn get_tool(&self, name: &str, version: Option<&VersionSpec>) -> Option<ToolInfo> {
        let resolved = self.resolve(name, version)?;
        let name: Arc<str> = Arc::from(name);
        Some(match resolved.route {
            Route::Local => ToolInfo {
                owner_name: Arc::clone(&name),
                name,
                tool: resolved.tool,
                owner: self.clone(),
            },
            Route::Mount { child, child_name } => ToolInfo {
                name,
                tool: resolved.tool,
                owner: child,
                owner_name: child_name.into(),
            },
        })
    }

    /// Every task-declaring tool in this server's tree, by name at this server.
    pub(super) fn task_tools(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .tools
            .load()
            .iter()
            .filter(|t| t.task.mode.allows_tasks())
            .map(|t| t.name.to_string())
            .collect();
        for mount in self.inner.mounts.load().iter() {
            names.extend(
                mount
                    .child
                    .task_tools()
                    .iter()
                    .map(|n| mount.exposed_name(n)),
            );
        }
        names
    }

    // ---------------------------------------------------------------- calls

    /// Calls a tool in process, through middleware and extensions, like a client would.
    /// Returns the tool's result, or whatever an extension answers instead (a task handle).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.tool("ping", || async { "pong" }).unwrap();
    /// let reply = s.call_tool("ping", serde_json::Value::Null).await.unwrap();
    /// # let ferrymcp_core::types::CallToolResponse::Complete(r) = reply else { unreachable!() };
    /// # assert_eq!(r.structured_content.unwrap()["result"], "pong");
    /// # });
    /// ```
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(ToolCall::new(name).arguments(arguments)).await
    }

    /// Calls a tool in process with every option (version, scope, no middleware).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.tool("ping", || async { "pong" }).unwrap();
    /// let reply = s.call(ferrymcp_core::ToolCall::new("ping").without_middleware()).await;
    /// assert!(reply.is_ok());
    /// # });
    /// ```
    pub async fn call(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        let (arguments, version) = call_parts(call.arguments, call.version)?;
        let cx = Context::new(self.clone(), call.scope);
        let scope = cx.scope_arc();
        let message = CallTool {
            name: call.name,
            arguments,
            version,
            cx,
            run_middleware: call.run_middleware,
            looked_again: false,
        };
        let reply = self.dispatch_call(message).await;
        scope.finish(reply.is_ok());
        reply
    }

    /// Runs `call` through this server's middleware, extensions and tools.
    pub(crate) fn dispatch_call(
        &self,
        call: CallTool,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        if !call.run_middleware {
            return Box::pin(async move {
                let mut call = call;
                self.find_unknown_tool(&mut call).await;
                self.check_call(&call)?;
                self.call_resolved(call).await
            });
        }
        let chain = self.inner.middleware.load_full();
        if chain.is_empty() {
            return Box::pin(self.call_endpoint(call));
        }
        // A middleware may read or change the result: it must get the one the tool returns.
        call.cx.scope().close_relay();
        Box::pin(async move {
            let mut call = call;
            // Before the middleware, which may look the tool up too.
            self.find_unknown_tool(&mut call).await;
            match run_chain(self, &chain, Message::CallTool(call)).await? {
                Reply::CallTool(reply) => Ok(reply),
                _ => Err(ErrorData::internal_error(
                    "a middleware answered tools/call with a reply of another kind",
                    None,
                )),
            }
        })
    }

    /// After the middleware: the access check, the extension interceptors, then the tool.
    pub(super) async fn call_endpoint(
        &self,
        mut call: CallTool,
    ) -> Result<CallToolResponse, ErrorData> {
        self.find_unknown_tool(&mut call).await;
        self.check_call(&call)?;
        let extensions = self.inner.extensions.load_full();
        if extensions.is_empty() {
            self.call_resolved(call).await
        } else {
            if !extensions
                .iter()
                .all(|extension| extension.leaves_results_unchanged())
            {
                call.cx.scope().close_relay();
            }
            ToolCallNext {
                server: self,
                extensions: &extensions,
            }
            .run(call)
            .await
        }
    }

    /// Before anything looks `call`'s tool up: when the request starts here and the name
    /// resolves to nothing, the mirroring servers it would reach look again (once a call:
    /// before the middleware, or before the endpoint when there is none).
    async fn find_unknown_tool(&self, call: &mut CallTool) {
        let missing = || self.resolve(&call.name, call.version.as_ref()).is_none();
        self.look_again_once(
            &call.cx,
            ListKind::Tools,
            &call.name,
            &mut call.looked_again,
            missing,
        )
        .await;
    }

    /// Resolves the tool and runs it here, or delegates to the mounted child that has it
    /// with the exact version resolved.
    pub(crate) async fn call_resolved(
        &self,
        call: CallTool,
    ) -> Result<CallToolResponse, ErrorData> {
        let CallTool {
            name,
            arguments,
            version,
            cx,
            run_middleware,
            ..
        } = call;
        let Some(Resolved { tool, route, .. }) = self.resolve(&name, version.as_ref()) else {
            return Err(unknown_tool(&name));
        };
        match route {
            Route::Local => self.run_local(&tool, cx, arguments).await,
            Route::Mount { child, child_name } => {
                let call = CallTool {
                    name: child_name.clone(),
                    arguments,
                    version: tool.version.clone().map(VersionSpec::exact),
                    cx: cx.for_server(&child),
                    run_middleware,
                    looked_again: false,
                };
                child
                    .dispatch_call(call)
                    .await
                    .map_err(|error| crate::tool::renamed(error, &["tool"], &child_name, &name))
            }
        }
    }

    /// Runs a tool registered on this server, turning every failure into what the client
    /// should see (panics included).
    async fn run_local(
        &self,
        tool: &RegisteredTool,
        cx: Context,
        arguments: JsonObject,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = CallParts {
            kind: "tool",
            tool: Arc::clone(&tool.name),
            arguments,
            input_schema: Arc::clone(&tool.input_schema),
            strict: self.inner.strict_input_validation.load(Ordering::Relaxed),
        };
        // A background task is not bounded by the call timeout: it lives by its TTL.
        let limit = if cx.is_background_run() {
            None
        } else {
            tool.timeout
                .or_else(|| self.call_timeout())
                .or_else(|| cx.root().call_timeout())
        };
        let cancellation = cx.cancellation().clone();
        let cx = cx.for_tool();
        let run = guarded(|| tool.invoke.invoke(cx, parts, tool.wrapped));
        let outcome = match limit {
            None => run.await,
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(outcome) => outcome,
                Err(_elapsed) => {
                    // The handler's future is dropped by now; what it spawned sees the token.
                    cancellation.cancel();
                    return Err(crate::tool::timed_out(&tool.name, limit));
                }
            },
        };
        match outcome.map_err(crate::ToolError::into_input_round) {
            Ok(response) => Ok(response),
            // `Context::elicit` asked for input.
            Err(Ok(input)) => Ok(CallToolResponse::InputRequired(input.into())),
            Err(Err(error)) => error
                .into_failure(&tool.name, self.masks_error_details())
                .into_response(),
        }
    }

    /// Runs a tool as background run `id`, the way a task engine's worker runs a task it
    /// accepted earlier: through every server's [`Middleware::on_run_tool`](crate::Middleware::on_run_tool) from here down
    /// to the tool's owner, and no other hook; no extension interceptor, no access check
    /// (the submission passed them) and no call timeout. `call`'s scope carries what the
    /// submission knew (the principal, input answers); `without_middleware()` skips the
    /// hooks.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use ferrymcp_core::{Context, Server, ToolCall};
    /// let s = Server::new("s");
    /// s.tool("whoami", |cx: Context| async move {
    ///     cx.background_run().unwrap_or_default().to_owned()
    /// }).unwrap();
    /// let reply = s.run_in_background("task-1", ToolCall::new("whoami")).await.unwrap();
    /// # let ferrymcp_core::types::CallToolResponse::Complete(r) = reply else { unreachable!() };
    /// # assert_eq!(r.structured_content.unwrap()["result"], "task-1");
    /// # });
    /// ```
    pub async fn run_in_background(
        &self,
        id: impl Into<Arc<str>>,
        call: ToolCall,
    ) -> Result<CallToolResponse, ErrorData> {
        let (arguments, version) = call_parts(call.arguments, call.version)?;
        if self.mirrors() && self.resolve(&call.name, version.as_ref()).is_none() {
            // Accepted by a replica whose copy of a mirrored source is newer than this one's.
            self.look_again(ListKind::Tools, &call.name).await;
        }
        let Some(tool) = self.get_tool(&call.name, version.as_ref()) else {
            return Err(unknown_tool(&call.name));
        };
        let cx = Context::new(self.clone(), call.scope.with_background_run(id));
        let scope = cx.scope_arc();
        let run = RunTool {
            tool,
            arguments,
            cx,
        };
        let reply = if call.run_middleware {
            self.run_through(run).await
        } else {
            let RunTool {
                tool,
                arguments,
                cx,
            } = run;
            let owner = tool.owner().clone();
            owner
                .run_local(&tool.tool, cx.for_server(&owner), arguments)
                .await
        };
        scope.finish(reply.is_ok());
        reply
    }

    /// A background run through this server's `on_run_tool` hooks, then on down.
    fn run_through(&self, run: RunTool) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        let chain = self.inner.middleware.load_full();
        Box::pin(async move { crate::middleware::dispatch_run(self, &chain, run).await })
    }

    /// After this server's hooks: the tool, if it is this server's own, or the mounted child
    /// the tool is reached through.
    pub(crate) async fn run_endpoint(&self, run: RunTool) -> Result<CallToolResponse, ErrorData> {
        let RunTool {
            tool,
            arguments,
            cx,
        } = run;
        let version = tool.version().cloned().map(VersionSpec::exact);
        let Some(Resolved { route, .. }) = self.resolve(tool.name(), version.as_ref()) else {
            return Err(unknown_tool(tool.name()));
        };
        match route {
            Route::Local => self.run_local(&tool.tool, cx, arguments).await,
            Route::Mount { child, child_name } => {
                let run = RunTool {
                    tool: ToolInfo {
                        name: child_name.into(),
                        ..tool
                    },
                    arguments,
                    cx: cx.for_server(&child),
                };
                child.run_through(run).await
            }
        }
    }

    // ---------------------------------------------------------------- lists

    /// Every visible tool, all versions, through middleware. A mounted child whose
    /// listing fails is skipped with a warning.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.tool("a", || async {}).unwrap();
    /// assert_eq!(s.list_tools().await.unwrap().len(), 1);
    /// # });
    /// ```
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ErrorData> {
        self.list_tools_in(RequestScope::new()).await
    }

    /// [`list_tools`](Self::list_tools) within a request scope.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// assert!(s.list_tools_in(ferrymcp_core::RequestScope::new()).await.unwrap().is_empty());
    /// # });
    /// ```
    pub async fn list_tools_in(&self, scope: RequestScope) -> Result<Vec<ToolInfo>, ErrorData> {
        self.list_of(Context::new(self.clone(), scope), true).await
    }
}

/// A call's arguments as an object (`null` is none) and its version selector, or the
/// `-32602` that says what is wrong with them.
fn call_parts(
    arguments: Value,
    version: Option<Result<VersionSpec, String>>,
) -> Result<(JsonObject, Option<VersionSpec>), ErrorData> {
    let arguments = match arguments {
        Value::Object(object) => object,
        Value::Null => JsonObject::new(),
        other => {
            return Err(ErrorData::invalid_params(
                format!(
                    "tool arguments must be a JSON object, not {}",
                    json_kind(&other)
                ),
                None,
            ));
        }
    };
    let version = version
        .transpose()
        .map_err(|e| ErrorData::invalid_params(e, None))?;
    Ok((arguments, version))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
