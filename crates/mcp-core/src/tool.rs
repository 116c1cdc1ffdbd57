//! Tool definitions ([`ToolDef`]), task declarations ([`TaskConfig`]) and the tool handles
//! servers hand out ([`ToolInfo`]).

use std::{
    collections::BTreeSet,
    marker::PhantomData,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use ferrymcp_types::{
    Icon, JsonObject, MetaObject, TaskSupport, Tool, ToolAnnotations, ToolDescriptor,
};

use rmcp::model::Extensions;

use crate::auth::Requirement;
use crate::{
    Server,
    handler::{DynInvoke, Handler, Invoke, ToolHandler, TypedInvoke},
    version::Version,
};

/// A tool's task declaration: its mode, and the poll interval tasks advertise.
///
/// It is only a declaration in `ferrymcp-core`; the tasks extension (`ferrymcp-tasks`) acts on it. A
/// server that declares a task tool without that extension fails at start.
///
/// ```
/// use std::time::Duration;
/// use ferrymcp_core::TaskConfig;
/// use ferrymcp_core::types::TaskSupport;
///
/// assert_eq!(TaskConfig::from(true).mode, TaskSupport::Optional);
/// assert_eq!(TaskConfig::default().poll_interval, None); // the tasks extension's default
/// let required = TaskConfig::required().with_poll_interval(Duration::from_secs(2));
/// assert_eq!(required.poll_interval, Some(Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskConfig {
    /// Forbidden (the default), optional or required.
    pub mode: TaskSupport,
    /// The `pollIntervalMs` a task of this tool advertises; `None` takes the tasks
    /// extension's default (5 s unless configured).
    pub poll_interval: Option<Duration>,
}

impl TaskConfig {
    /// `task = true`: runs as a task when the client opts in.
    ///
    /// ```
    /// assert!(ferrymcp_core::TaskConfig::optional().mode.allows_tasks());
    /// ```
    pub const fn optional() -> Self {
        Self {
            mode: TaskSupport::Optional,
            poll_interval: None,
        }
    }

    /// Only runs as a task; clients that do not opt in get `-32021`.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::TaskConfig::required().mode, ferrymcp_core::types::TaskSupport::Required);
    /// ```
    pub const fn required() -> Self {
        Self {
            mode: TaskSupport::Required,
            poll_interval: None,
        }
    }

    /// Never a task (the default).
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::TaskConfig::forbidden(), ferrymcp_core::TaskConfig::default());
    /// ```
    pub const fn forbidden() -> Self {
        Self {
            mode: TaskSupport::Forbidden,
            poll_interval: None,
        }
    }

    /// Sets the advertised poll interval.
    ///
    /// ```
    /// let c = ferrymcp_core::TaskConfig::optional().with_poll_interval(std::time::Duration::from_millis(250));
    /// assert_eq!(c.poll_interval.map(|d| d.as_millis()), Some(250));
    /// ```
    pub const fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self::forbidden()
    }
}

impl From<bool> for TaskConfig {
    /// `true` is [`TaskConfig::optional`], `false` [`TaskConfig::forbidden`].
    fn from(task: bool) -> Self {
        if task {
            Self::optional()
        } else {
            Self::forbidden()
        }
    }
}

impl From<TaskSupport> for TaskConfig {
    fn from(mode: TaskSupport) -> Self {
        Self {
            mode,
            poll_interval: None,
        }
    }
}

/// A tool to register: a name, a [`Handler`] and metadata.
///
/// ```
/// use ferrymcp_core::{Args, Server, ToolDef};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Multiply { a: i64, b: i64 }
///
/// let server = Server::new("math");
/// server
///     .add_tool(
///         ToolDef::new("multiply", |Args(m): Args<Multiply>| async move { m.a * m.b })
///             .title("Multiply")
///             .description("Multiplies two integers")
///             .tags(["math"])
///             .version("1.0")
///             .task(true),
///     )
///     .unwrap();
/// ```
pub struct ToolDef {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) tags: BTreeSet<String>,
    pub(crate) annotations: Option<ToolAnnotations>,
    pub(crate) icons: Option<Vec<Icon>>,
    pub(crate) meta: Option<MetaObject>,
    pub(crate) version: Option<String>,
    pub(crate) task: TaskConfig,
    pub(crate) input_schema: JsonObject,
    pub(crate) output_schema: Option<JsonObject>,
    pub(crate) wrapped: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) invoke: Box<dyn Invoke>,
    pub(crate) requirement: Requirement,
    pub(crate) data: Extensions,
}

impl ToolDef {
    /// A tool running `handler`; the input and output schemas come from its types.
    ///
    /// ```
    /// let def = ferrymcp_core::ToolDef::new("ping", || async { "pong" });
    /// assert_eq!(def.name(), "ping");
    /// ```
    pub fn new<H: Handler<M>, M: 'static>(name: impl Into<String>, handler: H) -> Self {
        let output = H::output_schema();
        let wrapped = output.as_ref().is_some_and(|o| o.wrapped);
        Self::with_invoke(
            name.into(),
            H::input_schema(),
            output.map(|o| o.schema),
            wrapped,
            Box::new(TypedInvoke {
                handler,
                _marker: PhantomData,
            }),
        )
    }

    /// A tool whose input schema is given at run time (see [`ToolHandler`]).
    ///
    /// ```
    /// # use ferrymcp_core::{BoxFuture, Context, ToolDef, ToolError, ToolHandler};
    /// # use ferrymcp_core::types::{CallToolResult, JsonObject};
    /// # struct Nop;
    /// # impl ToolHandler for Nop {
    /// #     fn call(&self, _: Context, _: JsonObject) -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
    /// #         Box::pin(async { Ok(CallToolResult::success(vec![])) })
    /// #     }
    /// # }
    /// let schema = serde_json::json!({"type": "object"}).as_object().unwrap().clone();
    /// let def = ToolDef::dynamic("nop", schema, Nop);
    /// ```
    pub fn dynamic(
        name: impl Into<String>,
        input_schema: JsonObject,
        handler: impl ToolHandler,
    ) -> Self {
        Self::with_invoke(
            name.into(),
            input_schema,
            None,
            false,
            Box::new(DynInvoke(Arc::new(handler))),
        )
    }

    fn with_invoke(
        name: String,
        input_schema: JsonObject,
        output_schema: Option<JsonObject>,
        wrapped: bool,
        invoke: Box<dyn Invoke>,
    ) -> Self {
        Self {
            name,
            title: None,
            description: None,
            tags: BTreeSet::new(),
            requirement: Requirement::none(),
            annotations: None,
            icons: None,
            meta: None,
            version: None,
            task: TaskConfig::default(),
            input_schema,
            output_schema,
            wrapped,
            timeout: None,
            invoke,
            data: Extensions::new(),
        }
    }

    /// The tool's name.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::ToolDef::new("t", || async {}).name(), "t");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tool annotations (hints such as `readOnlyHint`, `idempotentHint`).
    ///
    /// ```
    /// use ferrymcp_core::types::ToolAnnotations;
    /// let _ = ferrymcp_core::ToolDef::new("t", || async {}).annotations(ToolAnnotations::new().read_only(true));
    /// ```
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// The task declaration: `true`, a [`TaskSupport`] or a full [`TaskConfig`].
    ///
    /// ```
    /// use ferrymcp_core::types::TaskSupport;
    /// let _ = ferrymcp_core::ToolDef::new("t", || async {}).task(TaskSupport::Required);
    /// ```
    pub fn task(mut self, task: impl Into<TaskConfig>) -> Self {
        self.task = task.into();
        self
    }

    /// Attaches a typed value for an extension or a middleware to read from the tool's
    /// handle ([`ToolInfo::data`]); one value per type, a second replaces the first. The
    /// tasks extension reads its lost-worker policy this way.
    ///
    /// ```
    /// #[derive(Clone)]
    /// struct Cost(u32);
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).data(Cost(3))).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().data::<Cost>().map(|c| c.0), Some(3));
    /// ```
    pub fn data<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.data.insert(value);
        self
    }

    /// Bounds how long a synchronous call of this tool may run. Past it the client gets a
    /// `-32000` error, `Tool '<name>' execution timed out after <t>s`, the handler's future
    /// is dropped and its [`Context::cancellation`](crate::Context::cancellation) token
    /// fires. It overrides the server's [`set_call_timeout`](crate::Server::set_call_timeout)
    /// default; a zero duration sets none (the default then applies).
    ///
    /// A run as a background task is not bounded by it: a task lives as long as its TTL.
    ///
    /// ```
    /// use std::time::Duration;
    /// let def = ferrymcp_core::ToolDef::new("slow", || async {}).timeout(Duration::from_secs(30));
    /// assert_eq!(def.call_timeout(), Some(Duration::from_secs(30)));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = (!timeout.is_zero()).then_some(timeout);
        self
    }

    /// The timeout set with [`timeout`](Self::timeout), if any.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::ToolDef::new("t", || async {}).call_timeout(), None);
    /// ```
    pub fn call_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Replaces the output schema derived from the return type. It must describe an object;
    /// results are then not wrapped.
    ///
    /// ```
    /// let schema = serde_json::json!({"type": "object"}).as_object().unwrap().clone();
    /// let _ = ferrymcp_core::ToolDef::new("t", || async { serde_json::json!({}) }).output_schema(schema);
    /// ```
    pub fn output_schema(mut self, schema: JsonObject) -> Self {
        self.output_schema = Some(schema);
        self.wrapped = false;
        self
    }
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("task", &self.task)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

crate::builders::metadata_builders!(ToolDef, "ferrymcp_core::ToolDef::new(\"t\", || async {})");

/// A tool as stored in its server's registry.
pub(crate) struct RegisteredTool {
    pub(crate) name: Arc<str>,
    pub(crate) version: Option<Version>,
    pub(crate) tags: BTreeSet<String>,
    pub(crate) task: TaskConfig,
    /// The listing entry at the owning server's level (`execution` from `task`).
    pub(crate) descriptor: ToolDescriptor,
    pub(crate) input_schema: Arc<JsonObject>,
    /// Whether `input_schema` asks for `Mcp-Param-*` headers, read once here rather than
    /// on every call over HTTP.
    pub(crate) param_headers: bool,
    pub(crate) wrapped: bool,
    /// How long a synchronous call may run, when the tool sets it.
    pub(crate) timeout: Option<Duration>,
    pub(crate) invoke: Box<dyn Invoke>,
    /// The owning server's strict-validation switch.
    pub(crate) strict: Arc<AtomicBool>,
    /// Who may call it.
    pub(crate) requirement: Requirement,
    /// Typed values for extensions and middleware ([`ToolDef::data`]).
    pub(crate) data: Extensions,
}

impl RegisteredTool {
    pub(crate) fn new(def: ToolDef, version: Option<Version>, strict: Arc<AtomicBool>) -> Self {
        let ToolDef {
            name,
            title,
            description,
            tags,
            annotations,
            icons,
            meta: tool_meta,
            version: _,
            task,
            input_schema,
            output_schema,
            wrapped,
            timeout,
            invoke,
            requirement,
            data,
        } = def;
        let param_headers = declares_param_headers(&input_schema);
        let input_schema = Arc::new(input_schema);
        let mut tool = Tool::new_with_raw(
            name.clone(),
            description.map(Into::into),
            Arc::clone(&input_schema),
        );
        tool.title = title;
        tool.output_schema = output_schema.map(Arc::new);
        tool.annotations = annotations;
        tool.icons = icons;
        tool.meta = tool_meta;
        crate::registry::stamp_version(&mut tool.meta, version.as_ref());
        let descriptor = ToolDescriptor::new(tool).with_task_support(task.mode);
        Self {
            name: name.into(),
            version,
            tags,
            task,
            descriptor,
            input_schema,
            param_headers,
            wrapped,
            timeout,
            invoke,
            strict,
            requirement,
            data,
        }
    }
}

/// Whether a tool's input schema asks for `Mcp-Param-*` headers (`x-mcp-header` on a
/// property reached through `properties`).
fn declares_param_headers(schema: &JsonObject) -> bool {
    fn any(properties: Option<&serde_json::Value>) -> bool {
        let Some(serde_json::Value::Object(properties)) = properties else {
            return false;
        };
        properties.values().any(|property| {
            property.get("x-mcp-header").is_some() || any(property.get("properties"))
        })
    }
    any(schema.get("properties"))
}

/// The JSON-RPC code of a call that ran past its timeout (`-32000`).
pub(crate) const TIMED_OUT: i32 = -32000;

/// The error a call of `name` gets when it runs past `limit`.
pub(crate) fn timed_out(name: &str, limit: Duration) -> ferrymcp_types::ErrorData {
    ferrymcp_types::ErrorData::new(
        ferrymcp_types::ErrorCode(TIMED_OUT),
        format!(
            "Tool '{name}' execution timed out after {}s",
            limit.as_secs_f64()
        ),
        None,
    )
}

/// An error of the component `from` (its name or URI in a mounted child) as the client
/// should read it: naming `to`, what the client asked for. Only the messages the framework
/// writes itself are changed (a timeout, invalid arguments, a masked failure, a tool that
/// needs the tasks extension); any other
/// error passes unchanged. `kinds` are the words the messages use for the component.
pub(crate) fn renamed(
    mut error: ferrymcp_types::ErrorData,
    kinds: &[&str],
    from: &str,
    to: &str,
) -> ferrymcp_types::ErrorData {
    if from == to {
        return error;
    }
    let quoted = format!("'{from}'");
    let mut told = vec![
        format!("Tool {quoted} execution timed out after "),
        format!("Tool {quoted} requires the tasks extension"),
    ];
    for kind in kinds {
        told.push(format!("Invalid arguments for {kind} {quoted}"));
        told.push(format!("Error reading {kind} {quoted}"));
        told.push(format!("Error rendering {kind} {quoted}"));
    }
    for prefix in told {
        if let Some(rest) = error.message.strip_prefix(prefix.as_str()) {
            let prefix = prefix.replacen(&quoted, &format!("'{to}'"), 1);
            error.message = format!("{prefix}{rest}").into();
            break;
        }
    }
    error
}

impl ToolInfo {
    /// The tool's own call timeout ([`ToolDef::timeout`]), if it sets one.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).timeout(std::time::Duration::from_secs(5))).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().call_timeout().map(|t| t.as_secs()), Some(5));
    /// ```
    pub fn call_timeout(&self) -> Option<Duration> {
        self.tool.timeout
    }
}

impl crate::registry::Registered for RegisteredTool {
    const KIND: &'static str = "tool";
    fn key(&self) -> &Arc<str> {
        &self.name
    }
    fn version(&self) -> Option<&Version> {
        self.version.as_ref()
    }
    fn tags(&self) -> &BTreeSet<String> {
        &self.tags
    }
}

/// A tool as one server sees it: its name at that server, and the server that owns it there.
///
/// For a tool mounted from a child, [`owner`](Self::owner) is the **directly mounted** child,
/// even when the tool lives further down: `child_gc_deep_tool` on the root is owned by
/// `child`, which knows it as `gc_deep_tool`.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{Server, ToolDef};
/// let child = Server::new("child");
/// child.add_tool(ToolDef::new("multiply", || async { 72 })).unwrap();
/// let parent = Server::new("parent");
/// parent.mount(&child, "child").unwrap();
///
/// let tool = parent.get_tool("child_multiply", None).unwrap();
/// assert_eq!(tool.owner().name(), "child");
/// assert_eq!(tool.owner_name(), "multiply");
/// # });
/// ```
#[derive(Clone)]
pub struct ToolInfo {
    pub(crate) name: Arc<str>,
    pub(crate) tool: Arc<RegisteredTool>,
    pub(crate) owner: Server,
    pub(crate) owner_name: Arc<str>,
}

impl ToolInfo {
    /// The name at the server that returned this handle (namespaces included).
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().name(), "t");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version, if the tool is versioned.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).version("1.0")).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().version().unwrap().as_str(), "1.0");
    /// ```
    pub fn version(&self) -> Option<&Version> {
        self.tool.version.as_ref()
    }

    /// The tool's tags.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).tag("x")).unwrap();
    /// assert!(s.get_tool("t", None).unwrap().tags().contains("x"));
    /// ```
    pub fn tags(&self) -> &BTreeSet<String> {
        &self.tool.tags
    }

    /// The task declaration.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).task(true)).unwrap();
    /// assert!(s.get_tool("t", None).unwrap().task_config().mode.allows_tasks());
    /// ```
    pub fn task_config(&self) -> &TaskConfig {
        &self.tool.task
    }

    /// The value of type `T` the definition attached ([`ToolDef::data`]), if any.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// assert!(s.get_tool("t", None).unwrap().data::<u8>().is_none());
    /// ```
    pub fn data<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.tool.data.get::<T>()
    }

    /// The server this handle routes to: the tool's own server for a local tool, the
    /// directly mounted child for a mounted one.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().owner().name(), "s");
    /// ```
    pub fn owner(&self) -> &Server {
        &self.owner
    }

    /// The tool's name at [`owner`](Self::owner).
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().owner_name(), "t");
    /// ```
    pub fn owner_name(&self) -> &str {
        &self.owner_name
    }

    /// The tool's annotations (hints such as `idempotentHint`), if any.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// assert!(s.get_tool("t", None).unwrap().annotations().is_none());
    /// ```
    pub fn annotations(&self) -> Option<&ferrymcp_types::ToolAnnotations> {
        self.tool.descriptor.tool.annotations.as_ref()
    }

    /// The tool's input schema.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {})).unwrap();
    /// assert_eq!(s.get_tool("t", None).unwrap().input_schema()["type"], "object");
    /// ```
    pub fn input_schema(&self) -> &Arc<JsonObject> {
        &self.tool.input_schema
    }

    /// Checks `arguments` as a call would (lenient coercion unless the owning server is
    /// strict, then deserialization), without running the tool: `-32602` naming the field
    /// when they do not fit. The tasks extension validates before creating a task.
    ///
    /// ```
    /// use ferrymcp_core::{Args, Server, ToolDef};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct N { n: i64 }
    /// let s = Server::new("s");
    /// s.add_tool(ToolDef::new("square", |Args(N { n }): Args<N>| async move { n * n })).unwrap();
    /// let tool = s.get_tool("square", None).unwrap();
    /// let bad = serde_json::json!({"n": "not-a-number"});
    /// assert_eq!(tool.validate_arguments(bad.as_object().unwrap()).unwrap_err().code.0, -32602);
    /// ```
    pub fn validate_arguments(
        &self,
        arguments: &JsonObject,
    ) -> Result<(), ferrymcp_types::ErrorData> {
        let mut parts = crate::extract::CallParts {
            kind: "tool",
            tool: Arc::clone(&self.tool.name),
            arguments: arguments.clone(),
            input_schema: Arc::clone(&self.tool.input_schema),
            strict: self.tool.strict.load(Ordering::Relaxed),
        };
        match self.tool.invoke.validate(&mut parts) {
            Ok(()) => Ok(()),
            Err(error) => match error.into_failure(&self.name, true) {
                crate::ToolFailure::Error(error) => Err(error),
                crate::ToolFailure::Result(result) => {
                    Err(ferrymcp_types::ErrorData::invalid_params(
                        result
                            .content
                            .first()
                            .and_then(|c| c.as_text())
                            .map(|t| t.text.clone())
                            .unwrap_or_else(|| "invalid arguments".to_owned()),
                        None,
                    ))
                }
            },
        }
    }

    /// The listing entry under this handle's name, `execution` included.
    ///
    /// ```
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.add_tool(ferrymcp_core::ToolDef::new("t", || async {}).task(true)).unwrap();
    /// let d = s.get_tool("t", None).unwrap().descriptor();
    /// assert_eq!(d.task_support(), ferrymcp_core::types::TaskSupport::Optional);
    /// ```
    pub fn descriptor(&self) -> ToolDescriptor {
        let mut descriptor = self.tool.descriptor.clone();
        if *self.name != *self.tool.name {
            descriptor.tool.name = self.name.to_string().into();
        }
        descriptor
    }
}

impl std::fmt::Debug for ToolInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInfo")
            .field("name", &self.name)
            .field("version", &self.tool.version)
            .field("owner", &self.owner.name())
            .field("owner_name", &self.owner_name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::declares_param_headers;

    /// `x-mcp-header` counts on a property at any depth under `properties`, and only there.
    #[test]
    fn param_headers_are_found_on_nested_properties_only() {
        let schema = |value: serde_json::Value| match value {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("an object"),
        };
        let top = json!({"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
        let nested = json!({"properties": {"where": {"properties": {"region": {"x-mcp-header": "Region"}}}}});
        let elsewhere = json!({"x-mcp-header": "Region", "properties": {"n": {"type": "integer"}}});
        assert!(declares_param_headers(&schema(top)));
        assert!(declares_param_headers(&schema(nested)));
        assert!(!declares_param_headers(&schema(elsewhere)));
        assert!(!declares_param_headers(&schema(json!({}))));
    }
}
