//! Tool handlers: plain `async fn`s and closures whose parameters are extractors.
//!
//! A function is a [`Handler`] when every parameter but the last is a
//! [`FromContext`](crate::FromContext) extractor, the last is any
//! [`FromCall`](crate::FromCall) (an extractor or [`Args<T>`](crate::Args)), and its future
//! resolves to an [`IntoToolResult`](crate::IntoToolResult). Up to 12 parameters are supported.
//! For tools whose schema is only known at run time (proxies), implement [`ToolHandler`].

use std::{future::Future, marker::PhantomData, pin::Pin, sync::Arc};

use ferrymcp_types::{CallToolResponse, CallToolResult, JsonObject};

use crate::{
    Context, FromCall, FromContext, IntoToolOutput, IntoToolResult, OutputSchema, ToolError,
    extract::{CallParts, StateNeed},
    schema,
};

/// A boxed, sendable future, as tools and middleware return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Any handler function: every parameter but the last is a [`FromContext`] extractor, the
/// last any [`FromCall`], and the future resolves to `R`. Tools ([`Handler`]), resources
/// and prompts are all built on it; `M` is a marker that only tells the implementations
/// apart.
///
/// ```
/// use ferrymcp_core::{Args, Context, HandlerFn};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Id { id: u32 }
/// async fn profile(Args(Id { id }): Args<Id>) -> String { format!("user {id}") }
/// fn schema_of<H: HandlerFn<M, R>, M, R>(_: H) -> ferrymcp_core::types::JsonObject { H::input_schema() }
/// assert!(schema_of(profile)["properties"]["id"].is_object());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler function",
    label = "not an `async fn` (or closure) whose parameters are all extractors",
    note = "every parameter but the last must be an extractor (`Context`, `State<T>`, `Principal`, ...), the last may also be `Args<T>`; up to 12 parameters",
    note = "`Args<T>` needs `T: serde::Deserialize + schemars::JsonSchema`",
    note = "a parameter such as `a: i64` is an argument only with `#[tool]`; without it, put the arguments in a struct and take `Args<YourStruct>`"
)]
pub trait HandlerFn<M, R>: Clone + Send + Sync + 'static {
    /// The input schema: that of the [`Args`](crate::Args) parameter, or an empty object.
    fn input_schema() -> JsonObject;

    /// Runs the function.
    #[doc(hidden)]
    fn call(self, cx: Context, parts: CallParts) -> BoxFuture<'static, Result<R, ToolError>>;

    /// Checks the arguments as the call would, without running anything.
    #[doc(hidden)]
    fn validate(parts: &mut CallParts) -> Result<(), ToolError>;

    /// The server state the parameters need (checked when the server starts).
    #[doc(hidden)]
    fn needs() -> Vec<StateNeed> {
        Vec::new()
    }
}

impl<F, Fut, R> HandlerFn<((),), R> for F
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: Send + 'static,
{
    fn input_schema() -> JsonObject {
        schema::empty_object()
    }
    fn call(self, _cx: Context, _parts: CallParts) -> BoxFuture<'static, Result<R, ToolError>> {
        Box::pin(async move { Ok(self().await) })
    }
    fn validate(_parts: &mut CallParts) -> Result<(), ToolError> {
        Ok(())
    }
}

macro_rules! impl_handler_fn {
    ([$($ty:ident),*], $last:ident) => {
        #[allow(non_snake_case, unused_mut)]
        impl<F, Fut, R, M, $($ty,)* $last> HandlerFn<(M, $($ty,)* $last,), R> for F
        where
            F: Fn($($ty,)* $last) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: Send + 'static,
            M: 'static,
            $($ty: FromContext,)*
            $last: FromCall<M>,
        {
            fn input_schema() -> JsonObject {
                $last::input_schema().unwrap_or_else(schema::empty_object)
            }
            fn validate(parts: &mut CallParts) -> Result<(), ToolError> {
                $last::validate(parts)
            }
            fn needs() -> Vec<StateNeed> {
                [$(<$ty as FromContext>::needs(),)* <$last as FromCall<M>>::needs()]
                    .into_iter()
                    .flatten()
                    .collect()
            }
            fn call(
                self,
                cx: Context,
                mut parts: CallParts,
            ) -> BoxFuture<'static, Result<R, ToolError>> {
                let extracted = (|| -> Result<_, ToolError> {
                    $(let $ty = $ty::from_context(&cx)?;)*
                    let $last = $last::from_call(&cx, &mut parts)?;
                    Ok(($($ty,)* $last,))
                })();
                Box::pin(async move {
                    let ($($ty,)* $last,) = extracted?;
                    Ok(self($($ty,)* $last).await)
                })
            }
        }
    };
}

impl_handler_fn!([], T1);
impl_handler_fn!([T1], T2);
impl_handler_fn!([T1, T2], T3);
impl_handler_fn!([T1, T2, T3], T4);
impl_handler_fn!([T1, T2, T3, T4], T5);
impl_handler_fn!([T1, T2, T3, T4, T5], T6);
impl_handler_fn!([T1, T2, T3, T4, T5, T6], T7);
impl_handler_fn!([T1, T2, T3, T4, T5, T6, T7], T8);
impl_handler_fn!([T1, T2, T3, T4, T5, T6, T7, T8], T9);
impl_handler_fn!([T1, T2, T3, T4, T5, T6, T7, T8, T9], T10);
impl_handler_fn!([T1, T2, T3, T4, T5, T6, T7, T8, T9, T10], T11);
impl_handler_fn!([T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11], T12);

/// A typed tool function: a [`HandlerFn`] whose return value is an [`IntoToolResult`].
/// Implemented for `async fn`s and closures whose parameters are extractors.
///
/// ```
/// use ferrymcp_core::{Args, Context, ToolDef};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// async fn add(Args(Add { a, b }): Args<Add>) -> i64 { a + b }
/// async fn ping() -> &'static str { "pong" }
/// async fn who(cx: Context) -> String { cx.server().name().to_owned() }
///
/// let _ = (ToolDef::new("add", add), ToolDef::new("ping", ping), ToolDef::new("who", who));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool handler",
    label = "not an `async fn` (or closure) whose parameters are extractors and whose output a tool can return",
    note = "every parameter but the last must be an extractor (`Context`, `State<T>`, `Principal`, ...), the last may also be `Args<T>`; up to 12 parameters",
    note = "the future must resolve to a value a tool can return (`String`, numbers, `Json<T>`, `CallToolResult`, ...) or a `Result` of one with an error that converts into `ToolError`",
    note = "`Args<T>` needs `T: serde::Deserialize + schemars::JsonSchema`",
    note = "a parameter such as `a: i64` is an argument only with `#[tool]`; without it, put the arguments in a struct and take `Args<YourStruct>`"
)]
pub trait Handler<M>: Clone + Send + Sync + 'static {
    /// The input schema: that of the [`Args`](crate::Args) parameter, or an empty object.
    fn input_schema() -> JsonObject;
    /// The output schema of the return type.
    fn output_schema() -> Option<OutputSchema>;
    /// Runs the function.
    #[doc(hidden)]
    fn call(
        self,
        cx: Context,
        parts: CallParts,
        wrapped: bool,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>>;

    /// Checks the arguments as the call would, without running anything.
    #[doc(hidden)]
    fn validate(parts: &mut CallParts) -> Result<(), ToolError>;

    /// The server state the parameters need (checked when the server starts).
    #[doc(hidden)]
    fn needs() -> Vec<StateNeed> {
        Vec::new()
    }
}

impl<F, M, R> Handler<(M, R)> for F
where
    F: HandlerFn<M, R>,
    R: IntoToolResult,
    M: 'static,
{
    fn input_schema() -> JsonObject {
        <F as HandlerFn<M, R>>::input_schema()
    }
    fn output_schema() -> Option<OutputSchema> {
        <R::Output as IntoToolOutput>::output_schema()
    }
    fn call(
        self,
        cx: Context,
        parts: CallParts,
        wrapped: bool,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>> {
        let future = HandlerFn::call(self, cx, parts);
        Box::pin(async move { future.await?.into_tool_result()?.into_response(wrapped) })
    }
    fn validate(parts: &mut CallParts) -> Result<(), ToolError> {
        <F as HandlerFn<M, R>>::validate(parts)
    }
    fn needs() -> Vec<StateNeed> {
        <F as HandlerFn<M, R>>::needs()
    }
}

/// A tool whose input schema is only known at run time, such as a proxied remote tool.
/// Register it with [`ToolDef::dynamic`](crate::ToolDef::dynamic).
///
/// ```
/// use ferrymcp_core::{BoxFuture, Context, ToolDef, ToolError, ToolHandler};
/// use ferrymcp_core::types::{CallToolResult, ContentBlock, JsonObject};
///
/// struct Echo;
/// impl ToolHandler for Echo {
///     fn call(&self, _cx: Context, arguments: JsonObject)
///         -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
///         let text = serde_json::Value::Object(arguments).to_string();
///         Box::pin(async move { Ok(CallToolResult::success(vec![ContentBlock::text(text)])) })
///     }
/// }
/// let schema = serde_json::json!({"type": "object"}).as_object().unwrap().clone();
/// let _ = ToolDef::dynamic("echo", schema, Echo);
/// ```
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool with the call's arguments.
    fn call(
        &self,
        cx: Context,
        arguments: JsonObject,
    ) -> BoxFuture<'static, Result<CallToolResult, ToolError>>;

    /// Runs the tool and answers with its result or with an input round: a
    /// [`CallToolResponse::InputRequired`] whose `inputRequests` the client answers (on a
    /// 2025-11-25 connection the framework asks the client itself) before the tool runs
    /// again, with the answers in [`Context::input_responses`] and the round's
    /// `requestState` in [`Context::request_state`]. The framework seals that state before
    /// it leaves the server, as for any tool. A task handle is not an answer a tool gives
    /// here; the tasks extension makes those.
    ///
    /// The default runs [`call`](Self::call). Override it for a tool that may need input,
    /// such as one relaying a remote tool that asks for it.
    ///
    /// ```
    /// use ferrymcp_core::{BoxFuture, Context, InputRequired, ToolError, ToolHandler};
    /// use ferrymcp_core::types::{CallToolResponse, CallToolResult, ContentBlock, JsonObject};
    ///
    /// /// Greets the user by the name it asks for.
    /// struct Greet;
    /// impl ToolHandler for Greet {
    ///     fn call(&self, _cx: Context, _arguments: JsonObject)
    ///         -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
    ///         Box::pin(async { Err(ToolError::new("greet needs the user's name")) })
    ///     }
    ///
    ///     fn respond(&self, cx: Context, _arguments: JsonObject)
    ///         -> BoxFuture<'static, Result<CallToolResponse, ToolError>> {
    ///         let name = cx.input_responses().and_then(|answers| answers.get("name")).cloned();
    ///         Box::pin(async move {
    ///             if let Some(answer) = name {
    ///                 let text = format!("Hello, {}!", answer["content"]["name"]);
    ///                 return Ok(CallToolResponse::Complete(CallToolResult::success(vec![
    ///                     ContentBlock::text(text),
    ///                 ])));
    ///             }
    ///             let ask = serde_json::from_value(serde_json::json!({
    ///                 "method": "elicitation/create",
    ///                 "params": {"mode": "form", "message": "Your name?", "requestedSchema":
    ///                     {"type": "object", "properties": {"name": {"type": "string"}}}}
    ///             }))
    ///             .map_err(ToolError::internal)?;
    ///             let round = InputRequired::new().request("name", ask);
    ///             Ok(CallToolResponse::InputRequired(round.into()))
    ///         })
    ///     }
    /// }
    /// ```
    fn respond(
        &self,
        cx: Context,
        arguments: JsonObject,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>> {
        let future = self.call(cx, arguments);
        Box::pin(async move { future.await.map(CallToolResponse::Complete) })
    }
}

/// The type-erased form every registered tool is stored as.
pub(crate) trait Invoke: Send + Sync + 'static {
    fn invoke(
        &self,
        cx: Context,
        parts: CallParts,
        wrapped: bool,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>>;

    fn validate(&self, parts: &mut CallParts) -> Result<(), ToolError>;

    /// The server state the tool's parameters need.
    fn needs(&self) -> Vec<StateNeed> {
        Vec::new()
    }
}

pub(crate) struct TypedInvoke<H, M> {
    pub(crate) handler: H,
    pub(crate) _marker: PhantomData<fn() -> M>,
}

impl<H: Handler<M>, M: 'static> Invoke for TypedInvoke<H, M> {
    fn invoke(
        &self,
        cx: Context,
        parts: CallParts,
        wrapped: bool,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>> {
        self.handler.clone().call(cx, parts, wrapped)
    }

    fn validate(&self, parts: &mut CallParts) -> Result<(), ToolError> {
        H::validate(parts)
    }

    fn needs(&self) -> Vec<StateNeed> {
        H::needs()
    }
}

pub(crate) struct DynInvoke(pub(crate) Arc<dyn ToolHandler>);

impl Invoke for DynInvoke {
    fn invoke(
        &self,
        cx: Context,
        parts: CallParts,
        _wrapped: bool,
    ) -> BoxFuture<'static, Result<CallToolResponse, ToolError>> {
        self.0.respond(cx, parts.arguments)
    }

    /// A dynamic tool's schema is checked where it runs (a proxied tool: upstream).
    fn validate(&self, _parts: &mut CallParts) -> Result<(), ToolError> {
        Ok(())
    }
}
