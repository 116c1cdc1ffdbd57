//! Errors: [`ToolError`] for tool bodies, [`ServerError`] for building and serving servers,
//! and [`masked_internal_error`] for failures whose details must stay in the server's log.

use std::error::Error as StdError;

use ferrymcp_types::{ErrorCode, ErrorData};

/// The error a tool body returns.
///
/// Like `anyhow::Error`, `ToolError` converts from any `std::error::Error` with `?`, so it does
/// not implement `std::error::Error` itself. What the client sees depends on how it was made:
///
/// | made with | the client gets |
/// |---|---|
/// | [`ToolError::new`] | a `CallToolResult` with `isError: true` and the message |
/// | [`ToolError::protocol`], or `?` on an rmcp [`ErrorData`] | that JSON-RPC error |
/// | [`ToolError::invalid_arguments`] | JSON-RPC `-32602` with the message |
/// | `?` on an [`ElicitError`](crate::ElicitError) | an input round for [`InputRequired`](crate::ElicitError::InputRequired), `-32600` when the client cannot be asked, `isError: true` for content that does not fit, masked for a type that cannot be asked for |
/// | `?` on any other error | `isError: true` with `Error calling tool '<name>'`, plus `: <error>` when the owning server does not mask error details |
///
/// ```
/// use ferrymcp_core::ToolError;
///
/// fn parse(text: &str) -> Result<i64, ToolError> {
///     if text.is_empty() {
///         return Err(ToolError::new("text must not be empty"));
///     }
///     Ok(text.parse::<i64>()?) // a ParseIntError becomes a masked internal error
/// }
/// assert!(parse("").is_err());
/// assert_eq!(parse("7").unwrap(), 7);
/// ```
pub struct ToolError {
    kind: ToolErrorKind,
}

enum ToolErrorKind {
    Message(String),
    InvalidArguments(String),
    Protocol(ErrorData),
    Internal(Box<dyn StdError + Send + Sync>),
    /// A request for client input raised by [`Context::elicit`](crate::Context::elicit),
    /// which the component's runner turns into an input round.
    InputRequired(crate::InputRequired),
}

/// What a tool asking for input answers where no input round can be returned.
const NO_ROUND_HERE: &str =
    "this tool asked for client input where only a final result is accepted";

impl ToolError {
    /// A tool error the client sees as `isError: true` with `message`.
    ///
    /// ```
    /// let e = ferrymcp_core::ToolError::new("Access denied: admin only");
    /// assert_eq!(e.to_string(), "Access denied: admin only");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            kind: ToolErrorKind::Message(message.into()),
        }
    }

    /// A JSON-RPC error returned as is (the call fails at the protocol level).
    ///
    /// ```
    /// use ferrymcp_core::{ToolError, types::ErrorData};
    /// let e = ToolError::protocol(ErrorData::internal_error("protocol fault", None));
    /// assert!(e.to_string().contains("protocol fault"));
    /// ```
    pub fn protocol(error: ErrorData) -> Self {
        Self {
            kind: ToolErrorKind::Protocol(error),
        }
    }

    /// Invalid arguments: JSON-RPC `-32602` with `message`.
    ///
    /// ```
    /// let e = ferrymcp_core::ToolError::invalid_arguments("a: expected an integer");
    /// assert!(matches!(e.into_failure("add", true), ferrymcp_core::ToolFailure::Error(e) if e.code.0 == -32602));
    /// ```
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self {
            kind: ToolErrorKind::InvalidArguments(message.into()),
        }
    }

    /// An internal failure, masked unless the owning server unmasks error details.
    ///
    /// ```
    /// let e = ferrymcp_core::ToolError::internal(std::io::Error::other("disk full"));
    /// assert!(e.to_string().contains("disk full"));
    /// ```
    pub fn internal(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        let error = error.into();
        let error = match error.downcast::<crate::ElicitError>() {
            Ok(elicit) => return Self::from_elicit(*elicit),
            Err(error) => error,
        };
        match error.downcast::<ErrorData>() {
            Ok(data) => Self::protocol(*data),
            Err(error) => Self {
                kind: ToolErrorKind::Internal(error),
            },
        }
    }

    /// What an elicitation that returned no answer means for the client.
    fn from_elicit(error: crate::ElicitError) -> Self {
        use crate::ElicitError;
        let kind = match error {
            ElicitError::InputRequired(input) => ToolErrorKind::InputRequired(input),
            ElicitError::ClientCannotElicit(_) => {
                ToolErrorKind::Protocol(ErrorData::invalid_request(error.to_string(), None))
            }
            ElicitError::Request(_) => {
                ToolErrorKind::Protocol(ErrorData::internal_error(error.to_string(), None))
            }
            ElicitError::InvalidContent { .. } | ElicitError::InvalidAnswer { .. } => {
                ToolErrorKind::Message(error.to_string())
            }
            ElicitError::UnsupportedSchema { .. } => ToolErrorKind::Internal(Box::new(error)),
        };
        Self { kind }
    }

    /// The input round this error carries ([`Context::elicit`](crate::Context::elicit)
    /// asked for input), or the error itself.
    pub(crate) fn into_input_round(self) -> Result<crate::InputRequired, ToolError> {
        match self.kind {
            ToolErrorKind::InputRequired(input) => Ok(input),
            kind => Err(Self { kind }),
        }
    }

    /// Turns the error into what the client receives: a result with `isError: true` the
    /// model reads, or a JSON-RPC error. `tool` names the tool in masked messages.
    ///
    /// ```
    /// use ferrymcp_core::{ToolError, ToolFailure};
    /// let masked = ToolError::internal(std::io::Error::other("secret")).into_failure("leak", true);
    /// let ToolFailure::Result(result) = masked else { panic!("a result") };
    /// assert_eq!(result.content[0].as_text().unwrap().text, "Error calling tool 'leak'");
    /// ```
    pub fn into_failure(self, tool: &str, mask_details: bool) -> ToolFailure {
        use ferrymcp_types::{CallToolResult, ContentBlock};
        match self.kind {
            ToolErrorKind::Message(message) => {
                ToolFailure::Result(CallToolResult::error(vec![ContentBlock::text(message)]))
            }
            ToolErrorKind::InvalidArguments(message) => {
                ToolFailure::Error(ErrorData::new(ErrorCode::INVALID_PARAMS, message, None))
            }
            ToolErrorKind::Protocol(error) => ToolFailure::Error(error),
            ToolErrorKind::InputRequired(_) => {
                ToolFailure::Result(CallToolResult::error(vec![ContentBlock::text(
                    NO_ROUND_HERE,
                )]))
            }
            ToolErrorKind::Internal(error) => {
                let text = if mask_details {
                    format!("Error calling tool '{tool}'")
                } else {
                    format!("Error calling tool '{tool}': {error}")
                };
                tracing::warn!(tool, error = %error, "tool failed");
                ToolFailure::Result(CallToolResult::error(vec![ContentBlock::text(text)]))
            }
        }
    }
}

/// What a failed tool call answers ([`ToolError::into_failure`]).
///
/// ```
/// use ferrymcp_core::{ToolError, ToolFailure};
/// let failure = ToolError::invalid_arguments("a: expected an integer").into_failure("add", true);
/// assert!(matches!(failure, ToolFailure::Error(e) if e.code.0 == -32602));
/// ```
#[derive(Debug, Clone)]
pub enum ToolFailure {
    /// A `CallToolResult` with `isError: true`: the model sees the message and may retry.
    Result(ferrymcp_types::CallToolResult),
    /// A JSON-RPC error: the request itself was wrong (invalid arguments) or failed.
    Error(ErrorData),
}

impl ToolFailure {
    /// The answer as a tool call's: the result is a complete response, the error stays one.
    ///
    /// ```
    /// use ferrymcp_core::{ToolError, types::CallToolResponse};
    /// let answer = ToolError::new("no such city").into_failure("weather", true).into_response();
    /// assert!(matches!(answer, Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true)));
    /// ```
    pub fn into_response(self) -> Result<ferrymcp_types::CallToolResponse, ErrorData> {
        match self {
            Self::Result(result) => Ok(ferrymcp_types::CallToolResponse::Complete(result)),
            Self::Error(error) => Err(error),
        }
    }
}

impl ToolError {
    /// This error as the JSON-RPC error of a failed `resources/read` or `prompts/get`
    /// (`what` is `"resource"` or `"prompt"`, `name` its URI or name). Messages and invalid
    /// arguments are shown as they are; internal errors are masked when `mask_details`.
    ///
    /// ```
    /// let error = ferrymcp_core::ToolError::new("the file is locked")
    ///     .into_request_error("resource", "file://a", true);
    /// assert_eq!((error.code.0, error.message.as_ref()), (-32603, "the file is locked"));
    /// let masked = ferrymcp_core::ToolError::internal(std::io::Error::other("secret"))
    ///     .into_request_error("resource", "file://a", true);
    /// assert_eq!(masked.message, "Error reading resource 'file://a'");
    /// ```
    pub fn into_request_error(self, what: &str, name: &str, mask_details: bool) -> ErrorData {
        let verb = if what == "prompt" {
            "rendering"
        } else {
            "reading"
        };
        match self.kind {
            ToolErrorKind::Message(message) => {
                ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None)
            }
            ToolErrorKind::InvalidArguments(message) => {
                ErrorData::new(ErrorCode::INVALID_PARAMS, message, None)
            }
            ToolErrorKind::Protocol(error) => error,
            ToolErrorKind::InputRequired(_) => {
                ErrorData::new(ErrorCode::INTERNAL_ERROR, NO_ROUND_HERE, None)
            }
            ToolErrorKind::Internal(error) => {
                tracing::warn!(what, name, error = %error, "handler failed");
                let message = if mask_details {
                    format!("Error {verb} {what} '{name}'")
                } else {
                    format!("Error {verb} {what} '{name}': {error}")
                };
                ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None)
            }
        }
    }
}

/// An internal failure (a backend that cannot be reached, a step of the framework that
/// failed) as the client sees it: JSON-RPC `-32603` with `Internal error (id: <id>)`, where
/// `<id>` is random. The same id and `error`'s details are logged at ERROR, so an operator
/// can find what a client reports; the client learns nothing of the details (addresses,
/// queue names, credentials in URLs).
///
/// Use it for errors the client did not cause and cannot act on. Errors a tool author
/// chose to show ([`ToolError::new`], [`ToolError::protocol`]) are not masked.
///
/// ```
/// let error = ferrymcp_core::masked_internal_error("task store unavailable: redis://:pw@db/0");
/// assert_eq!(error.code.0, -32603);
/// assert!(error.message.starts_with("Internal error (id: "));
/// assert!(!error.message.contains("pw"));
/// ```
pub fn masked_internal_error(error: impl std::fmt::Display) -> ErrorData {
    let id = error_id();
    tracing::error!(error_id = %id, error = %error, "internal error (id: {id})");
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        format!("Internal error (id: {id})"),
        None,
    )
}

/// 16 random hex digits naming one masked error.
fn error_id() -> String {
    use std::fmt::Write as _;
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // Only the log correlation suffers; a clock-derived id still tells errors apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (nanos as u64).to_be_bytes();
    }
    bytes.iter().fold(String::with_capacity(16), |mut id, b| {
        let _ = write!(id, "{b:02x}");
        id
    })
}

impl<E: StdError + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self::internal(error)
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ToolErrorKind::Message(m) | ToolErrorKind::InvalidArguments(m) => f.write_str(m),
            ToolErrorKind::Protocol(e) => write!(f, "{} ({})", e.message, e.code.0),
            ToolErrorKind::Internal(e) => e.fmt(f),
            ToolErrorKind::InputRequired(_) => f.write_str("client input required"),
        }
    }
}

impl std::fmt::Debug for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ToolErrorKind::Message(m) => f.debug_tuple("ToolError::Message").field(m).finish(),
            ToolErrorKind::InvalidArguments(m) => f
                .debug_tuple("ToolError::InvalidArguments")
                .field(m)
                .finish(),
            ToolErrorKind::Protocol(e) => f.debug_tuple("ToolError::Protocol").field(e).finish(),
            ToolErrorKind::Internal(e) => f.debug_tuple("ToolError::Internal").field(e).finish(),
            ToolErrorKind::InputRequired(i) => {
                f.debug_tuple("ToolError::InputRequired").field(i).finish()
            }
        }
    }
}

/// Errors from building, mounting, starting and serving a [`Server`](crate::Server).
///
/// ```
/// use ferrymcp_core::{Server, ServerError};
/// let server = Server::new("s");
/// assert!(matches!(server.mount(&server, None), Err(ServerError::MountSelf)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A version string was rejected.
    #[error("invalid version for {component} '{name}': {source}")]
    InvalidVersion {
        /// `"tool"`, `"resource"` or `"prompt"`.
        component: &'static str,
        /// The component's name.
        name: String,
        /// Why the version was rejected.
        source: crate::version::VersionError,
    },
    /// Versioned and unversioned registrations of one name on one server.
    #[error(
        "cannot mix versioned and unversioned registrations of {kind} '{name}' on server '{server}'"
    )]
    MixedVersioning {
        /// `"tool"`, `"resource"`, `"resource template"` or `"prompt"`.
        kind: &'static str,
        /// The name (or URI).
        name: String,
        /// The server's name.
        server: String,
    },
    /// The same name and version registered twice on one server.
    #[error("{kind} '{name}'{} is already registered on server '{server}'", version.as_deref().map(|v| format!(" version {v}")).unwrap_or_default())]
    Duplicate {
        /// `"tool"`, `"resource"`, `"resource template"` or `"prompt"`.
        kind: &'static str,
        /// The name (or URI).
        name: String,
        /// The version, if any.
        version: Option<String>,
        /// The server's name.
        server: String,
    },
    /// A tool's input schema does not describe a JSON object.
    #[error("the input schema of tool '{name}' must have \"type\": \"object\" at its root")]
    InputSchemaNotObject {
        /// The tool name.
        name: String,
    },
    /// A tool name that clients cannot call.
    #[error("invalid tool name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A `requestState` keyring that is empty or has a key that is not 32 bytes.
    #[error("invalid requestState key: {0}")]
    RequestStateKey(String),
    /// A resource URI template that does not parse.
    #[error("invalid resource template {uri:?}: {source}")]
    InvalidTemplate {
        /// The template.
        uri: String,
        /// Why it was rejected.
        source: crate::uri_template::UriTemplateError,
    },
    /// A template whose handler requires arguments the URI does not bind.
    #[error("resource template {uri:?} does not bind the required arguments {missing:?}")]
    TemplateArguments {
        /// The template.
        uri: String,
        /// The required arguments missing from the URI.
        missing: Vec<String>,
    },
    /// `server.mount(&server, ..)`.
    #[error("cannot mount a server onto itself")]
    MountSelf,
    /// Mounting `child` would make the tree cyclic.
    #[error("mounting '{child}' under '{parent}' would create a cycle")]
    MountCycle {
        /// The parent's name.
        parent: String,
        /// The child's name.
        child: String,
    },
    /// Two `tool_names` renames target the same name.
    #[error("duplicate target name '{0}' in tool_names")]
    DuplicateRename(String),
    /// An extension with this identifier is already registered.
    #[error("an extension with identifier '{0}' is already registered")]
    DuplicateExtension(String),
    /// An extension method reuses a method of the MCP specification.
    #[error("extension '{extension}' cannot take over the specification method '{method}'")]
    ReservedMethod {
        /// The extension's identifier.
        extension: String,
        /// The method name.
        method: String,
    },
    /// Extensions and mounts cannot change while the server runs.
    #[error("server '{0}' is running; register extensions before it starts")]
    AlreadyStarted(String),
    /// Task tools need an extension that runs tasks.
    #[error(
        "Task-enabled tools ({tools}) require the tasks extension, but no extension with identifier '{id}' is registered. Add it at the root server: `server.add_extension(ferrymcp_tasks::TasksExtension::new())` (crate `ferrymcp-tasks`, or the `tasks` feature of `ferrymcp`)."
    )]
    TasksExtensionMissing {
        /// The task tools, comma-separated.
        tools: String,
        /// The tasks extension identifier.
        id: &'static str,
    },
    /// A tool (or resource, template, prompt) takes `State<T>` but its server has no state
    /// of that type.
    #[error(
        "'{tool}' of server '{server}' takes `State<{type_name}>`, but the server has no state of that type: add it with `server.insert_state(...)` before the server starts (in a start hook at the latest)"
    )]
    MissingState {
        /// The server the component is registered on.
        server: String,
        /// The tool or prompt name, or the resource's URI (template), as that server knows it.
        tool: String,
        /// The state type.
        type_name: &'static str,
    },
    /// An extension or a start hook failed.
    #[error("start-up failed in {what}: {source}")]
    Startup {
        /// Which extension or hook.
        what: String,
        /// The failure.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The transport failed.
    #[error("transport error: {0}")]
    Transport(#[source] Box<dyn StdError + Send + Sync>),
    /// Binding or serving a socket failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
