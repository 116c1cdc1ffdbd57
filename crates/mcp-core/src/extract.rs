//! Extractors: the parameters a tool function can take, like axum's.
//!
//! Every parameter but the last implements [`FromContext`]: [`Context`], [`CurrentServer`],
//! [`State`], [`RequestScope`](crate::RequestScope) values and the cancellation token. The last
//! parameter may also be [`Args<T>`], which takes the call's arguments: `T`'s
//! `Deserialize` reads them and its `JsonSchema` is the tool's input schema.
//!
//! ```
//! use ferrymcp_core::{Args, Context, CurrentServer, Server, ToolDef};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Multiply { a: i64, b: i64 }
//!
//! async fn multiply(CurrentServer(server): CurrentServer, Args(m): Args<Multiply>) -> i64 {
//!     let _ = server.name();
//!     m.a * m.b
//! }
//! Server::new("math").add_tool(ToolDef::new("multiply", multiply)).unwrap();
//! ```
//!
//! The caller: a [`Principal`] parameter is the authenticated caller (issuer, client,
//! subject, scopes, claims); the call fails with a tool error when it is anonymous.
//! `Option<Principal>` never fails. A [`BearerToken`] parameter is the raw access token,
//! present only when an auth layer put one into the request; the call fails without one
//! (`Option<BearerToken>` does not). A task's worker never has it: tasks do not store it.
//!
//! ```
//! use ferrymcp_core::{Server, ToolDef, auth::Principal};
//!
//! async fn whoami(caller: Principal) -> String {
//!     caller.subject.unwrap_or(caller.client_id)
//! }
//! async fn hello(caller: Option<Principal>) -> String {
//!     caller.map_or("hello, stranger".into(), |p| format!("hello, {}", p.client_id))
//! }
//! let server = Server::new("s");
//! server.add_tool(ToolDef::new("whoami", whoami)).unwrap();
//! server.add_tool(ToolDef::new("hello", hello)).unwrap();
//! ```

use std::sync::Arc;

use ferrymcp_types::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::{
    Context, Server, ToolError,
    auth::{BearerToken, Principal},
    coerce, schema,
};

/// A value taken from the call's [`Context`] (never from its arguments).
///
/// ```
/// use ferrymcp_core::{Context, FromContext, ToolError};
///
/// /// The name of the server running the tool.
/// struct ServerName(String);
/// impl FromContext for ServerName {
///     fn from_context(cx: &Context) -> Result<Self, ToolError> {
///         Ok(ServerName(cx.server().name().to_owned()))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be extracted from the request",
    label = "not an extractor",
    note = "extractors are `Context`, `State<T>`, `CurrentServer`, `Principal`, `CancellationToken`, ...; implement `FromContext` for your own",
    note = "only the last parameter may take the call's arguments (`Args<T>`, `RawArgs`, `Target`)"
)]
pub trait FromContext: Sized + Send + 'static {
    /// Extracts the value, or fails the call.
    fn from_context(cx: &Context) -> Result<Self, ToolError>;

    /// The server state this extractor cannot do without, checked when the server starts.
    #[doc(hidden)]
    fn needs() -> Option<StateNeed> {
        None
    }
}

/// A state type a tool's extractor needs on the server that owns the tool.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateNeed {
    pub(crate) type_id: std::any::TypeId,
    pub(crate) type_name: &'static str,
}

impl StateNeed {
    fn of<T: 'static>() -> Self {
        Self {
            type_id: std::any::TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

impl FromContext for Context {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        Ok(cx.clone())
    }
}

impl FromContext for CancellationToken {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        Ok(cx.cancellation().clone())
    }
}

/// The server whose call is running: for a mounted tool, the child that owns it, never the
/// root. It is the same server instance, not a copy.
///
/// ```
/// use ferrymcp_core::CurrentServer;
/// async fn name(CurrentServer(server): CurrentServer) -> String {
///     format!("server name: {}", server.name())
/// }
/// ```
#[derive(Clone, Debug)]
pub struct CurrentServer(pub Server);

impl FromContext for CurrentServer {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        Ok(CurrentServer(cx.server().clone()))
    }
}

impl FromContext for Principal {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        cx.scope().principal().cloned().ok_or_else(|| {
            ToolError::new("this tool needs an authenticated caller, and the request has none")
        })
    }
}

impl FromContext for Option<Principal> {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        Ok(cx.scope().principal().cloned())
    }
}

/// The raw token an auth layer put into the request (or its HTTP parts), if any.
fn bearer_token(cx: &Context) -> Option<BearerToken> {
    let extensions = cx.scope().extensions();
    extensions
        .get::<BearerToken>()
        .or_else(|| {
            extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<BearerToken>())
        })
        .cloned()
}

impl FromContext for BearerToken {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        bearer_token(cx).ok_or_else(|| {
            ToolError::new("this tool needs the caller's access token, and the request has none")
        })
    }
}

impl FromContext for Option<BearerToken> {
    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        Ok(bearer_token(cx))
    }
}

/// Typed state of the server running the tool (set with [`Server::insert_state`]); for a
/// mounted tool, the child's state, not the parent's. A tool that takes a `State<T>` its
/// server does not have stops the root from starting ([`ServerError::MissingState`]), after
/// the start hooks, which may insert it.
///
/// [`ServerError::MissingState`]: crate::ServerError::MissingState
///
/// ```
/// use ferrymcp_core::{Server, State, ToolDef};
/// #[derive(Clone)] struct Db(&'static str);
/// async fn which(State(db): State<Db>) -> String { db.0.to_owned() }
/// let server = Server::new("s");
/// server.insert_state(Db("primary"));
/// server.add_tool(ToolDef::new("which", which)).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromContext for State<T> {
    fn needs() -> Option<StateNeed> {
        Some(StateNeed::of::<T>())
    }

    fn from_context(cx: &Context) -> Result<Self, ToolError> {
        cx.server().state::<T>().map(State).ok_or_else(|| {
            ToolError::internal(format!(
                "server '{}' has no state of type {}",
                cx.server().name(),
                std::any::type_name::<T>()
            ))
        })
    }
}

/// The raw pieces of one call that the last extractor may consume.
#[doc(hidden)]
pub struct CallParts {
    /// What is being called, for messages: `"tool"`, `"resource template"`, `"prompt"`.
    pub(crate) kind: &'static str,
    pub(crate) tool: Arc<str>,
    pub(crate) arguments: JsonObject,
    pub(crate) input_schema: Arc<JsonObject>,
    pub(crate) strict: bool,
}

/// What the last parameter of a tool function may be: a [`FromContext`] value, or a consumer
/// of the call's arguments such as [`Args`]. `M` only disambiguates the two kinds.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the last parameter of a handler",
    label = "neither an extractor nor the call's arguments",
    note = "take the arguments as `Args<T>` with `T: Deserialize + JsonSchema`, or use `#[tool]`, which makes plain parameters arguments"
)]
pub trait FromCall<M>: Sized + Send + 'static {
    /// Extracts the value; may take the arguments out of `parts`.
    #[doc(hidden)]
    fn from_call(cx: &Context, parts: &mut CallParts) -> Result<Self, ToolError>;

    /// The tool's input schema, if this extractor defines one.
    #[doc(hidden)]
    fn input_schema() -> Option<JsonObject> {
        None
    }

    /// Checks what [`from_call`](Self::from_call) would check, without a context.
    #[doc(hidden)]
    fn validate(parts: &mut CallParts) -> Result<(), ToolError> {
        let _ = parts;
        Ok(())
    }

    /// The server state this extractor cannot do without.
    #[doc(hidden)]
    fn needs() -> Option<StateNeed> {
        None
    }
}

#[doc(hidden)]
pub enum ViaContext {}
#[doc(hidden)]
pub enum ViaArguments {}

impl<T: FromContext> FromCall<ViaContext> for T {
    fn from_call(cx: &Context, _parts: &mut CallParts) -> Result<Self, ToolError> {
        T::from_context(cx)
    }

    fn needs() -> Option<StateNeed> {
        <T as FromContext>::needs()
    }
}

/// The call's arguments, deserialized into `T`. `T`'s JSON schema is the tool's input schema.
///
/// Unless the server is strict ([`Server::strict_input_validation`]), arguments are first
/// coerced leniently toward the schema (`"1"` becomes `1` for an integer). Arguments
/// that still do not fit fail the call with `-32602`, naming the offending field.
///
/// ```
/// use ferrymcp_core::Args;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { message: String }
/// async fn echo(Args(Echo { message }): Args<Echo>) -> String { message }
/// ```
#[derive(Clone, Debug)]
pub struct Args<T>(pub T);

impl<T: DeserializeOwned + JsonSchema + Send + 'static> FromCall<ViaArguments> for Args<T> {
    fn validate(parts: &mut CallParts) -> Result<(), ToolError> {
        Self::from_call_parts(parts).map(drop)
    }

    fn from_call(_cx: &Context, parts: &mut CallParts) -> Result<Self, ToolError> {
        Self::from_call_parts(parts)
    }

    fn input_schema() -> Option<JsonObject> {
        Some(schema::schema_of::<T>())
    }
}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> Args<T> {
    fn from_call_parts(parts: &mut CallParts) -> Result<Self, ToolError> {
        let mut arguments = std::mem::take(&mut parts.arguments);
        if !parts.strict {
            coerce::coerce_arguments(&parts.input_schema, &mut arguments);
        }
        let value = serde_json::Value::Object(arguments);
        serde_path_to_error::deserialize(value)
            .map(Args)
            .map_err(|error| {
                let path = error.path().to_string();
                let inner = error.into_inner();
                let message = if path == "." {
                    format!(
                        "Invalid arguments for {} '{}': {inner}",
                        parts.kind, parts.tool
                    )
                } else {
                    format!(
                        "Invalid arguments for {} '{}': {path}: {inner}",
                        parts.kind, parts.tool
                    )
                };
                ToolError::invalid_arguments(message)
            })
    }
}

/// The name or URI the call addresses, as the owning server knows it: the tool or prompt
/// name, or the concrete URI a resource template matched. For handlers that serve many
/// targets (proxies).
///
/// ```
/// use ferrymcp_core::{ResourceDef, Target};
/// // One handler for every URI the template matches.
/// let _ = ResourceDef::new("files://{path*}", |Target(uri): Target| async move { uri });
/// ```
#[derive(Clone, Debug)]
pub struct Target(pub String);

impl FromCall<ViaArguments> for Target {
    fn from_call(_cx: &Context, parts: &mut CallParts) -> Result<Self, ToolError> {
        Ok(Target(parts.tool.to_string()))
    }
}

/// The arguments as sent, unchecked and unconverted (no input schema): for handlers whose
/// parameters are only known at run time (proxies).
///
/// ```
/// use ferrymcp_core::{PromptDef, RawArgs};
/// let _ = PromptDef::new("echo", |RawArgs(args): RawArgs| async move {
///     serde_json::Value::Object(args).to_string()
/// });
/// ```
#[derive(Clone, Debug)]
pub struct RawArgs(pub JsonObject);

impl FromCall<ViaArguments> for RawArgs {
    fn from_call(_cx: &Context, parts: &mut CallParts) -> Result<Self, ToolError> {
        Ok(RawArgs(std::mem::take(&mut parts.arguments)))
    }
}
