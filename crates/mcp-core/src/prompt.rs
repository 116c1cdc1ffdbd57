//! Prompts: [`PromptDef`], what rendering returns ([`IntoPromptResult`]) and the handle
//! servers hand out ([`PromptInfo`]).
//!
//! A prompt is an async function whose [`Args<T>`](crate::Args) are its arguments: each field
//! of `T` becomes a prompt argument, with its doc comment as the description and
//! `required` unless it is an `Option` or has a default. Clients send arguments as strings;
//! they are converted to the field types.
//!
//! ```
//! use ferrymcp_core::{Args, PromptDef, Server};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Review {
//!     /// The code to review.
//!     code: String,
//!     /// How strict to be, 1 to 5.
//!     strictness: Option<u8>,
//! }
//!
//! let server = Server::new("assistant");
//! server.add_prompt(PromptDef::new("review", |Args(r): Args<Review>| async move {
//!     format!("Review this at strictness {}:\n{}", r.strictness.unwrap_or(3), r.code)
//! })).unwrap();
//! let prompt = server.get_prompt_info("review", None).unwrap().to_prompt();
//! let arguments = prompt.arguments.unwrap();
//! assert_eq!((arguments[0].name.as_str(), arguments[0].required), ("code", Some(true)));
//! assert_eq!((arguments[1].name.as_str(), arguments[1].required), ("strictness", Some(false)));
//! ```
//!
//! Mounted under a namespace, prompt names are prefixed like tool names (`greeting` under
//! `assistant` is `assistant_greeting`).

use std::{collections::BTreeSet, sync::Arc};

use ferrymcp_types::{
    GetPromptResponse, GetPromptResult, Icon, InputRequiredResult, JsonObject, MetaObject, Prompt,
    PromptArgument, PromptMessage, Role,
};
use serde_json::Value;

use crate::auth::Requirement;
use crate::{
    BoxFuture, Context, HandlerFn, Outcome, Server, ToolError,
    completion::{Completer, Completers, Completion, IntoSuggestions},
    extract::CallParts,
    registry::Registered,
    version::Version,
};

/// What a prompt function may return: text (one user message), a [`PromptMessage`] or a
/// list of them, a whole [`GetPromptResult`], an [`Outcome`] that may ask for input, or a
/// `Result` of any of these.
///
/// ```
/// use ferrymcp_core::IntoPromptResult;
/// let rendered = "Say hello".into_prompt_response().unwrap();
/// # let ferrymcp_core::types::GetPromptResponse::Complete(rendered) = rendered else { unreachable!() };
/// assert_eq!(rendered.messages.len(), 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "a prompt cannot return `{Self}`",
    label = "not a prompt result",
    note = "a prompt returns `String`, `&'static str`, `PromptMessage`, `Vec<PromptMessage>`, `GetPromptResult`, or a `Result` of one"
)]
pub trait IntoPromptResult: Send + 'static {
    /// The rendered prompt.
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError>;
}

fn messages(messages: Vec<PromptMessage>) -> Result<GetPromptResponse, ToolError> {
    Ok(GetPromptResponse::Complete(GetPromptResult::new(messages)))
}

impl IntoPromptResult for String {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        messages(vec![PromptMessage::new_text(Role::User, self)])
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        self.to_owned().into_prompt_response()
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        messages(vec![self])
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        messages(self)
    }
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        Ok(GetPromptResponse::Complete(self))
    }
}

impl IntoPromptResult for GetPromptResponse {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        Ok(self)
    }
}

impl<T: IntoPromptResult> IntoPromptResult for Outcome<T> {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        match self {
            Outcome::Done(value) => value.into_prompt_response(),
            Outcome::InputRequired(input) => Ok(GetPromptResponse::InputRequired(
                InputRequiredResult::from(input),
            )),
        }
    }
}

impl<T: IntoPromptResult, E: Into<ToolError> + Send + 'static> IntoPromptResult for Result<T, E> {
    fn into_prompt_response(self) -> Result<GetPromptResponse, ToolError> {
        self.map_err(Into::into)?.into_prompt_response()
    }
}

type RenderFn = dyn Fn(Context, CallParts) -> BoxFuture<'static, Result<GetPromptResponse, ToolError>>
    + Send
    + Sync;

/// A prompt to register: a name, a handler and metadata.
///
/// ```
/// let def = ferrymcp_core::PromptDef::new("greeting", || async { "Say hello" })
///     .title("Greeting")
///     .description("A friendly opener")
///     .tag("social");
/// assert_eq!(def.name(), "greeting");
/// ```
pub struct PromptDef {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) icons: Option<Vec<Icon>>,
    pub(crate) meta: Option<MetaObject>,
    pub(crate) tags: BTreeSet<String>,
    pub(crate) version: Option<String>,
    pub(crate) input_schema: JsonObject,
    pub(crate) arguments: Option<Vec<PromptArgument>>,
    pub(crate) render: Arc<RenderFn>,
    /// The server state the handler's parameters need.
    pub(crate) needs: Vec<crate::StateNeed>,
    pub(crate) requirement: Requirement,
    pub(crate) completers: Completers,
}

impl PromptDef {
    /// A prompt called `name`, rendered by `handler`.
    ///
    /// ```
    /// let _ = ferrymcp_core::PromptDef::new("hello", || async { "Say hello" });
    /// ```
    pub fn new<H, M, R>(name: impl Into<String>, handler: H) -> Self
    where
        H: HandlerFn<M, R>,
        R: IntoPromptResult,
        M: 'static,
    {
        let render = move |cx: Context, parts: CallParts| {
            let future = handler.clone().call(cx, parts);
            Box::pin(async move { future.await?.into_prompt_response() }) as BoxFuture<'static, _>
        };
        Self {
            name: name.into(),
            title: None,
            description: None,
            icons: None,
            meta: None,
            tags: BTreeSet::new(),
            requirement: Requirement::none(),
            version: None,
            input_schema: H::input_schema(),
            arguments: None,
            render: Arc::new(render),
            needs: H::needs(),
            completers: Completers::new(),
        }
    }

    /// Suggests values for the argument `argument` while a user types it
    /// (`completion/complete`); see [`completion`](crate::completion).
    ///
    /// ```
    /// use ferrymcp_core::{PromptDef, completion::Completion};
    /// let _ = PromptDef::new("plan", || async { "Plan a trip" })
    ///     .complete("city", |c: Completion| async move { c.matching(["paris", "porto"]) });
    /// ```
    pub fn complete<F, Fut, R>(mut self, argument: impl Into<String>, completer: F) -> Self
    where
        F: Fn(Completion) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = R> + Send + 'static,
        R: IntoSuggestions,
    {
        self.completers
            .insert(argument.into(), Completer::new(completer));
        self
    }

    /// Lists these arguments instead of the ones derived from the handler's `Args` type
    /// (for prompts whose arguments are only known at run time, such as proxied ones).
    ///
    /// ```
    /// use ferrymcp_core::{PromptDef, RawArgs, types::PromptArgument};
    /// let _ = PromptDef::new("p", |RawArgs(_): RawArgs| async { "" })
    ///     .arguments(vec![PromptArgument::new("topic")]);
    /// ```
    pub fn arguments(mut self, arguments: Vec<PromptArgument>) -> Self {
        self.arguments = Some(arguments);
        self
    }

    /// The name.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::PromptDef::new("p", || async { "" }).name(), "p");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

crate::builders::metadata_builders!(
    PromptDef,
    "ferrymcp_core::PromptDef::new(\"p\", || async { \"p\" })"
);

impl std::fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptDef")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A prompt as stored in its server's registry.
pub(crate) struct RegisteredPrompt {
    pub(crate) name: Arc<str>,
    pub(crate) version: Option<Version>,
    pub(crate) tags: BTreeSet<String>,
    /// The listing entry at the owning server's level.
    pub(crate) listing: Prompt,
    pub(crate) input_schema: Arc<JsonObject>,
    pub(crate) render: Arc<RenderFn>,
    /// The server state the handler's parameters need.
    pub(crate) needs: Vec<crate::StateNeed>,
    pub(crate) requirement: Requirement,
    pub(crate) completers: Completers,
}

impl RegisteredPrompt {
    pub(crate) fn new(def: PromptDef, version: Option<Version>) -> Self {
        let arguments = def
            .arguments
            .unwrap_or_else(|| prompt_arguments(&def.input_schema));
        let mut listing = Prompt::new(
            def.name.clone(),
            def.description,
            (!arguments.is_empty()).then_some(arguments),
        );
        listing.title = def.title;
        listing.icons = def.icons;
        listing.meta = def.meta;
        crate::registry::stamp_version(&mut listing.meta, version.as_ref());
        Self {
            name: def.name.into(),
            version,
            tags: def.tags,
            listing,
            input_schema: Arc::new(def.input_schema),
            render: def.render,
            needs: def.needs,
            requirement: def.requirement,
            completers: def.completers,
        }
    }

    /// Renders with `arguments` (strings from the wire, converted to the declared types).
    pub(crate) fn render(
        &self,
        cx: Context,
        arguments: JsonObject,
    ) -> BoxFuture<'static, Result<GetPromptResponse, ToolError>> {
        let parts = CallParts {
            kind: "prompt",
            tool: Arc::clone(&self.name),
            arguments,
            input_schema: Arc::clone(&self.input_schema),
            strict: false,
        };
        (self.render)(cx, parts)
    }
}

impl Registered for RegisteredPrompt {
    const KIND: &'static str = "prompt";
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

/// The prompt arguments an input schema describes: one per property, in schema order.
fn prompt_arguments(schema: &JsonObject) -> Vec<PromptArgument> {
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut argument = PromptArgument::new(name.clone());
            argument.title = property
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned);
            argument.description = property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            argument.required = Some(required.contains(name.as_str()));
            argument
        })
        .collect()
}

/// A prompt as one server lists it: its name there and the server that owns it.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{PromptDef, Server};
/// let child = Server::new("child");
/// child.add_prompt(PromptDef::new("greeting", || async { "Say hello" })).unwrap();
/// let parent = Server::new("parent");
/// parent.mount(&child, "assistant").unwrap();
/// let listed = parent.list_prompts().await.unwrap();
/// assert_eq!(listed[0].name(), "assistant_greeting");
/// assert_eq!(listed[0].owner_name(), "greeting");
/// # });
/// ```
#[derive(Clone)]
pub struct PromptInfo {
    pub(crate) name: Arc<str>,
    pub(crate) prompt: Arc<RegisteredPrompt>,
    pub(crate) owner: Server,
    pub(crate) owner_name: Arc<str>,
}

impl PromptInfo {
    /// The name at this server (prefixed for mounted prompts).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name as the owner knows it.
    pub fn owner_name(&self) -> &str {
        &self.owner_name
    }

    /// The directly mounted child that owns it, or this server for its own.
    pub fn owner(&self) -> &Server {
        &self.owner
    }

    /// The version, if any.
    pub fn version(&self) -> Option<&Version> {
        self.prompt.version.as_ref()
    }

    /// The tags.
    pub fn tags(&self) -> &BTreeSet<String> {
        &self.prompt.tags
    }

    /// The listing entry clients see.
    pub fn to_prompt(&self) -> Prompt {
        let mut prompt = self.prompt.listing.clone();
        prompt.name = self.name.to_string();
        prompt
    }
}

impl std::fmt::Debug for PromptInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptInfo")
            .field("name", &self.name)
            .field("owner", &self.owner.name())
            .finish_non_exhaustive()
    }
}
