//! [`from_fn`]: a middleware from one async closure, like axum's `middleware::from_fn`.

use std::marker::PhantomData;

use async_trait::async_trait;
use ferrymcp_types::{
    CallToolResponse, DiscoverResult, ErrorData, GetPromptResponse, InitializeResult,
    ReadResourceResponse,
};

use super::{
    CallTool, Discover, GetPrompt, Initialize, ListPrompts, ListResourceTemplates, ListResources,
    ListTools, Message, Middleware, Next, ReadResource, Reply, RunTool,
};
use crate::{BoxFuture, PromptInfo, ResourceInfo, TemplateInfo, ToolInfo};

/// A message a [`from_fn`] closure can wrap, and what its hook answers: [`Message`] (every
/// message, at [`Middleware::on_message`]), [`CallTool`], [`RunTool`], [`ListTools`],
/// [`ListResources`], [`ListResourceTemplates`], [`ReadResource`], [`ListPrompts`],
/// [`GetPrompt`], [`Initialize`] and [`Discover`].
///
/// ```
/// fn answer_of<T: ferrymcp_core::middleware::Hooked>() {}
/// answer_of::<ferrymcp_core::CallTool>();
/// ```
pub trait Hooked: Send + 'static + sealed::Sealed {
    /// What the hook answers.
    type Output: Send;
}

mod sealed {
    pub trait Sealed {}
}

/// What a [`from_fn`] closure is: it takes the message and the rest of the chain and
/// returns a boxed future (`Box::pin(async move { … })`).
///
/// ```
/// use ferrymcp_core::{CallTool, Next, middleware::HookFn};
/// fn check<F: HookFn<CallTool>>(_: F) {}
/// check(|call: CallTool, next: Next<'_, CallTool>| Box::pin(async move { next.run(call).await }));
/// ```
pub trait HookFn<T: Hooked>:
    for<'a> Fn(T, Next<'a, T>) -> BoxFuture<'a, Result<T::Output, ErrorData>> + Send + Sync + 'static
{
}

impl<T: Hooked, F> HookFn<T> for F where
    F: for<'a> Fn(T, Next<'a, T>) -> BoxFuture<'a, Result<T::Output, ErrorData>>
        + Send
        + Sync
        + 'static
{
}

/// A middleware made of one closure around one hook; see [`from_fn`].
pub struct FromFn<T, F> {
    hook: F,
    _message: PhantomData<fn(T)>,
}

/// A middleware from an async closure around one hook, chosen by the closure's message
/// type: `CallTool` wraps `tools/call`, `RunTool` a task's background run, `Message`
/// every message, and so on ([`Hooked`] lists them). The closure returns
/// `Box::pin(async move { … })`; for several hooks or state of its own, implement
/// [`Middleware`].
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{CallTool, Next, Server, middleware::from_fn};
///
/// let server = Server::new("s");
/// server.tool("ping", || async { "pong" }).unwrap();
/// server.add_middleware(from_fn(|call: CallTool, next: Next<'_, CallTool>| {
///     Box::pin(async move {
///         let started = std::time::Instant::now();
///         let tool = call.name.clone();
///         let reply = next.run(call).await;
///         tracing::info!(%tool, elapsed = ?started.elapsed(), "called");
///         reply
///     })
/// }));
/// assert!(server.call_tool("ping", serde_json::Value::Null).await.is_ok());
/// # });
/// ```
pub fn from_fn<T: Hooked, F: HookFn<T>>(hook: F) -> FromFn<T, F> {
    FromFn {
        hook,
        _message: PhantomData,
    }
}

macro_rules! hooks {
    ($($message:ty => $output:ty, $method:ident;)*) => {$(
        impl sealed::Sealed for $message {}

        impl Hooked for $message {
            type Output = $output;
        }

        #[async_trait]
        impl<F: HookFn<$message>> Middleware for FromFn<$message, F> {
            async fn $method(
                &self,
                message: $message,
                next: Next<'_, $message>,
            ) -> Result<$output, ErrorData> {
                (self.hook)(message, next).await
            }
        }
    )*};
}

hooks! {
    Message => Reply, on_message;
    CallTool => CallToolResponse, on_call_tool;
    RunTool => CallToolResponse, on_run_tool;
    ListTools => Vec<ToolInfo>, on_list_tools;
    ListResources => Vec<ResourceInfo>, on_list_resources;
    ListResourceTemplates => Vec<TemplateInfo>, on_list_resource_templates;
    ReadResource => ReadResourceResponse, on_read_resource;
    ListPrompts => Vec<PromptInfo>, on_list_prompts;
    GetPrompt => GetPromptResponse, on_get_prompt;
    Initialize => InitializeResult, on_initialize;
    Discover => DiscoverResult, on_discover;
}
