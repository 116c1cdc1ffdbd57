//! Return values: how what a tool returns becomes a `CallToolResult`.
//!
//! | the tool returns | output schema | `structuredContent` | `content` |
//! |---|---|---|---|
//! | a scalar, `String`, `Vec<T>`, `Option<T>`, a set | `{"result": <schema>}`, marked `x-fastmcp-wrap-result` | `{"result": value}` | one text block: the string itself, or compact JSON; none for `null` or `[]` |
//! | a map, [`JsonObject`] | the schema | the object | its compact JSON |
//! | [`Json<T>`] | `T`'s schema, wrapped unless it is an object | as above | as above |
//! | [`serde_json::Value`] | none | the value if it is an object | compact JSON text |
//! | `()` | none | none | none |
//! | [`Image`], [`Audio`], [`Bytes`] | none | none | an image, audio or text block |
//! | `CallToolResult` | none | as returned | as returned |
//!
//! A tool may also return `Result<T, E>` for any of these `T` and any `E: Into<ToolError>`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use base64::Engine as _;
use ferrymcp_types::{
    CallToolResponse, CallToolResult, ContentBlock, InputRequest, InputRequests,
    InputRequiredResult, JsonObject, meta,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::{ToolError, schema};

/// A tool's output schema, and whether results are wrapped as `{"result": value}`.
#[derive(Debug, Clone)]
pub struct OutputSchema {
    pub(crate) schema: JsonObject,
    pub(crate) wrapped: bool,
}

impl OutputSchema {
    /// The output schema of `T`: as is when it describes an object, wrapped otherwise.
    ///
    /// ```
    /// let s = ferrymcp_core::OutputSchema::of::<i64>();
    /// assert!(s.is_wrapped());
    /// ```
    pub fn of<T: JsonSchema>() -> Self {
        let inner = schema::schema_of::<T>();
        if schema::is_object_schema(&inner) {
            Self {
                schema: inner,
                wrapped: false,
            }
        } else {
            Self {
                schema: schema::wrap_output(inner),
                wrapped: true,
            }
        }
    }

    /// Whether results are wrapped as `{"result": value}`.
    ///
    /// ```
    /// assert!(!ferrymcp_core::OutputSchema::of::<std::collections::HashMap<String, i64>>().is_wrapped());
    /// ```
    pub fn is_wrapped(&self) -> bool {
        self.wrapped
    }

    /// The schema advertised as the tool's `outputSchema`.
    ///
    /// ```
    /// let s = ferrymcp_core::OutputSchema::of::<String>();
    /// assert_eq!(s.schema()["type"], "object");
    /// ```
    pub fn schema(&self) -> &JsonObject {
        &self.schema
    }
}

/// A value a tool can return. See the [module docs](self) for what each type becomes.
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`",
    label = "not a tool output",
    note = "a tool returns `String`, `&'static str`, numbers, `bool`, `()`, `Json<T>` (T: Serialize + JsonSchema), `Image`, `Audio`, `Contents`, `CallToolResult`, or a `Result` of one",
    note = "for a struct of your own, return `Json(value)` with `#[derive(Serialize, JsonSchema)]` on it"
)]
pub trait IntoToolOutput: Send + 'static {
    /// The output schema, or `None` when the result has no structured content.
    fn output_schema() -> Option<OutputSchema>;

    /// Builds the result. `wrapped` is [`OutputSchema::is_wrapped`] of
    /// [`output_schema`](Self::output_schema), computed once at registration.
    fn into_output(self, wrapped: bool) -> Result<CallToolResult, ToolError>;

    /// Builds the response: a result, or (for [`Outcome`]) a request for client input.
    fn into_response(self, wrapped: bool) -> Result<CallToolResponse, ToolError>
    where
        Self: Sized,
    {
        self.into_output(wrapped).map(CallToolResponse::Complete)
    }
}

/// What a tool function's future resolves to: an [`IntoToolOutput`], or a `Result` of one.
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`",
    label = "not a tool output, nor a `Result` of one",
    note = "a tool returns `String`, numbers, `Json<T>`, `CallToolResult`, ..., or `Result<T, E>` of one where `E` converts into `ToolError`"
)]
pub trait IntoToolResult: Send + 'static {
    /// The successful output type.
    type Output: IntoToolOutput;
    /// Splits off the error.
    fn into_tool_result(self) -> Result<Self::Output, ToolError>;
}

impl<T: IntoToolOutput> IntoToolResult for T {
    type Output = T;
    fn into_tool_result(self) -> Result<T, ToolError> {
        Ok(self)
    }
}

impl<T: IntoToolOutput, E: Into<ToolError> + Send + 'static> IntoToolResult for Result<T, E> {
    type Output = T;
    fn into_tool_result(self) -> Result<T, ToolError> {
        self.map_err(Into::into)
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|e| ToolError::internal(format!("the tool's result is not serializable: {e}")))
}

fn compact_json(value: &Value) -> String {
    // Serializing a `Value` cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

fn text_block(value: &Value) -> Vec<ContentBlock> {
    match value {
        Value::Null => Vec::new(),
        Value::Array(items) if items.is_empty() => Vec::new(),
        Value::String(text) => vec![ContentBlock::text(text.clone())],
        other => vec![ContentBlock::text(compact_json(other))],
    }
}

/// A result whose `structuredContent` is `{"result": value}`.
pub(crate) fn wrapped_result(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(text_block(&value));
    let mut structured = JsonObject::new();
    structured.insert("result".into(), value);
    result.structured_content = Some(Value::Object(structured));
    let mut marker = JsonObject::new();
    marker.insert(meta::WRAP_RESULT.into(), Value::Bool(true));
    let mut result_meta = ferrymcp_types::MetaObject::new();
    result_meta.insert(meta::FASTMCP.into(), Value::Object(marker));
    result.meta = Some(result_meta);
    result
}

/// A result whose `structuredContent` is the object itself.
pub(crate) fn object_result(object: Value) -> CallToolResult {
    let text = compact_json(&object);
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(object);
    result
}

fn structured(value: Value, wrapped: bool) -> CallToolResult {
    if wrapped || !value.is_object() {
        wrapped_result(value)
    } else {
        object_result(value)
    }
}

macro_rules! wrapped_outputs {
    ($($ty:ty),* $(,)?) => {$(
        impl IntoToolOutput for $ty {
            fn output_schema() -> Option<OutputSchema> {
                Some(OutputSchema::of::<$ty>())
            }
            fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
                Ok(wrapped_result(to_value(&self)?))
            }
        }
    )*};
}

wrapped_outputs!(
    bool,
    char,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    String,
    &'static str,
);

macro_rules! generic_outputs {
    ($($ty:ident),* $(,)?) => {$(
        impl<T: Serialize + JsonSchema + Send + 'static> IntoToolOutput for $ty<T> {
            fn output_schema() -> Option<OutputSchema> {
                Some(OutputSchema::of::<Self>())
            }
            fn into_output(self, wrapped: bool) -> Result<CallToolResult, ToolError> {
                Ok(structured(to_value(&self)?, wrapped))
            }
        }
    )*};
}

generic_outputs!(Vec, Option, VecDeque, BTreeSet);

impl<T: Serialize + JsonSchema + Send + 'static, S: Send + 'static> IntoToolOutput
    for HashSet<T, S>
{
    fn output_schema() -> Option<OutputSchema> {
        Some(OutputSchema::of::<Vec<T>>())
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        let items = self.iter().map(to_value).collect::<Result<Vec<_>, _>>()?;
        Ok(wrapped_result(Value::Array(items)))
    }
}

impl<V: Serialize + JsonSchema + Send + 'static> IntoToolOutput for BTreeMap<String, V> {
    fn output_schema() -> Option<OutputSchema> {
        Some(OutputSchema::of::<Self>())
    }
    fn into_output(self, wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(structured(to_value(&self)?, wrapped))
    }
}

impl<V: Serialize + JsonSchema + Send + 'static, S: Send + 'static> IntoToolOutput
    for HashMap<String, V, S>
{
    fn output_schema() -> Option<OutputSchema> {
        Some(OutputSchema::of::<BTreeMap<String, V>>())
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        let mut object = JsonObject::new();
        for (key, value) in &self {
            object.insert(key.clone(), to_value(value)?);
        }
        Ok(object_result(Value::Object(object)))
    }
}

impl IntoToolOutput for JsonObject {
    fn output_schema() -> Option<OutputSchema> {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), Value::String("object".into()));
        Some(OutputSchema {
            schema,
            wrapped: false,
        })
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(object_result(Value::Object(self)))
    }
}

/// Any serializable value with a schema, e.g. your own struct: structured output described by
/// `T`'s JSON schema, wrapped as `{"result": value}` unless the schema is an object.
///
/// ```
/// use ferrymcp_core::Json;
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Totals { count: u32, total: u32 }
/// async fn totals() -> Json<Totals> { Json(Totals { count: 100, total: 500 }) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolOutput for Json<T> {
    fn output_schema() -> Option<OutputSchema> {
        Some(OutputSchema::of::<T>())
    }
    fn into_output(self, wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(structured(to_value(&self.0)?, wrapped))
    }
}

/// No output schema: an object becomes `structuredContent`, anything else text only.
impl IntoToolOutput for Value {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(match self {
            object @ Value::Object(_) => object_result(object),
            other => CallToolResult::success(text_block(&other)),
        })
    }
}

/// Nothing: `{"content": [], "isError": false}` and no output schema.
impl IntoToolOutput for () {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(Vec::new()))
    }
}

/// Passed through exactly as returned.
impl IntoToolOutput for CallToolResult {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(self)
    }
}

/// One content block, passed through as the only content.
impl IntoToolOutput for ContentBlock {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(vec![self]))
    }
}

/// Several content blocks, passed through as the content.
///
/// ```
/// use ferrymcp_core::{Contents, types::ContentBlock};
/// async fn two() -> Contents { Contents(vec![ContentBlock::text("a"), ContentBlock::text("b")]) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Contents(pub Vec<ContentBlock>);

impl IntoToolOutput for Contents {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(self.0))
    }
}

/// Raw bytes: a UTF-8 text block, or base64 text when they are not UTF-8.
///
/// ```
/// async fn raw() -> ferrymcp_core::Bytes { ferrymcp_core::Bytes(b"hello".to_vec()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl IntoToolOutput for Bytes {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        let text = match String::from_utf8(self.0) {
            Ok(text) => text,
            Err(e) => base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

/// An image: one image content block, base64-encoded.
///
/// ```
/// async fn pixel() -> ferrymcp_core::Image {
///     ferrymcp_core::Image { data: vec![0x89, b'P', b'N', b'G'], mime_type: "image/png".into() }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The raw image bytes.
    pub data: Vec<u8>,
    /// The MIME type, e.g. `image/png`.
    pub mime_type: String,
}

impl IntoToolOutput for Image {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.data);
        Ok(CallToolResult::success(vec![ContentBlock::image(
            data,
            self.mime_type,
        )]))
    }
}

/// Audio: one audio content block, base64-encoded.
///
/// ```
/// async fn beep() -> ferrymcp_core::Audio {
///     ferrymcp_core::Audio { data: vec![1, 2, 3], mime_type: "audio/wav".into() }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audio {
    /// The raw audio bytes.
    pub data: Vec<u8>,
    /// The MIME type, e.g. `audio/wav`.
    pub mime_type: String,
}

impl IntoToolOutput for Audio {
    fn output_schema() -> Option<OutputSchema> {
        None
    }
    fn into_output(self, _wrapped: bool) -> Result<CallToolResult, ToolError> {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.data);
        Ok(CallToolResult::success(vec![ContentBlock::audio(
            data,
            self.mime_type,
        )]))
    }
}

/// A request for client input: the tool pauses until the client answers, then runs again
/// with the answers in [`Context::input_responses`](crate::Context::input_responses) (the guard
/// pattern). Keys are the tool's own; under the tasks extension the client sees fresh,
/// never-reused keys instead.
///
/// ```
/// use ferrymcp_core::InputRequired;
/// let ask: ferrymcp_core::types::InputRequest = serde_json::from_value(serde_json::json!({
///     "method": "elicitation/create",
///     "params": {"mode": "form", "message": "Your name?",
///                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
/// })).unwrap();
/// let input = InputRequired::new().request("name", ask).with_state("round-1");
/// assert_eq!(input.requests().len(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct InputRequired {
    requests: InputRequests,
    state: Option<String>,
}

impl InputRequired {
    /// No requests yet.
    ///
    /// ```
    /// assert!(ferrymcp_core::InputRequired::new().requests().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for one input under the tool's own `key`.
    ///
    /// ```
    /// # let ask: ferrymcp_core::types::InputRequest = serde_json::from_value(serde_json::json!({"method": "roots/list"})).unwrap();
    /// let _ = ferrymcp_core::InputRequired::new().request("roots", ask);
    /// ```
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(key.into(), request);
        self
    }

    /// Opaque state handed back to the next run in
    /// [`Context::request_state`](crate::Context::request_state).
    ///
    /// ```
    /// let _ = ferrymcp_core::InputRequired::new().with_state("step-2");
    /// ```
    pub fn with_state(mut self, state: impl Into<String>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// The requests, by the tool's keys.
    ///
    /// ```
    /// assert!(ferrymcp_core::InputRequired::new().requests().is_empty());
    /// ```
    pub fn requests(&self) -> &InputRequests {
        &self.requests
    }
}

impl From<InputRequired> for InputRequiredResult {
    fn from(input: InputRequired) -> Self {
        let requests = (!input.requests.is_empty()).then_some(input.requests);
        InputRequiredResult::new(requests, input.state)
    }
}

/// What a tool that may need client input returns: a value, or a request for input.
///
/// ```
/// use ferrymcp_core::{Context, InputRequired, Outcome};
///
/// async fn greet(cx: Context) -> Outcome<String> {
///     match cx.input_responses().and_then(|r| r.get("name")) {
///         Some(answer) => Outcome::Done(format!("Hello, {}!", answer["content"]["name"])),
///         None => {
///             let ask = serde_json::from_value(serde_json::json!({
///                 "method": "elicitation/create",
///                 "params": {"mode": "form", "message": "Your name?",
///                            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
///             })).expect("a valid request");
///             Outcome::InputRequired(InputRequired::new().request("name", ask))
///         }
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub enum Outcome<T> {
    /// The tool finished with this value.
    Done(T),
    /// The tool needs input first.
    InputRequired(InputRequired),
}

impl<T: IntoToolOutput> IntoToolOutput for Outcome<T> {
    fn output_schema() -> Option<OutputSchema> {
        T::output_schema()
    }
    fn into_output(self, wrapped: bool) -> Result<CallToolResult, ToolError> {
        match self {
            Outcome::Done(value) => value.into_output(wrapped),
            Outcome::InputRequired(_) => Err(ToolError::new(
                "this tool asked for client input where only a final result is accepted",
            )),
        }
    }
    fn into_response(self, wrapped: bool) -> Result<CallToolResponse, ToolError> {
        match self {
            Outcome::Done(value) => value.into_response(wrapped),
            Outcome::InputRequired(input) => Ok(CallToolResponse::InputRequired(input.into())),
        }
    }
}
