//! Typed elicitation: [`Context::elicit`] asks the user for a value of a Rust type and
//! answers with it, on both protocol eras and inside background tasks, built on the input
//! rounds of [`Outcome::InputRequired`](crate::Outcome::InputRequired).
//!
//! The `requestedSchema` is generated from the type with schemars and reduced to what the
//! MCP specification allows there: a flat object whose properties are strings (with
//! `minLength`, `maxLength` and the `date`, `date-time`, `email` and `uri` formats), numbers,
//! integers, booleans, single-select enums (unit-only Rust enums) and multi-select enums
//! (`Vec` of such an enum). Any other shape (a nested struct, a list of strings, a map) is
//! an [`ElicitError::UnsupportedSchema`], found before anything is sent.
//!
//! How the question travels depends on the request:
//!
//! * **2026-07-28** (and in-process calls): `elicit` answers
//!   [`ElicitError::InputRequired`]. Returned from the handler (`?` does it), it becomes an
//!   `InputRequiredResult` carrying the `elicitation/create` request and a sealed
//!   `requestState`; the client retries with `inputResponses`, the handler runs again from
//!   the start, and this time the same `elicit` call finds its answer and returns it.
//! * **Background tasks**: the same error parks the task `input_required`; once the client
//!   answers, the run starts again and `elicit` returns the answer.
//! * **2025-11-25**: the client is asked directly over the session with a server-to-client
//!   `elicitation/create` request, provided it declared form elicitation; otherwise `elicit`
//!   answers [`ElicitError::ClientCannotElicit`].
//!
//! Each `elicit` call of one run takes the next key (`elicit-1`, `elicit-2`, ...), so a
//! handler that asks twice gets each answer back at the call that asked for it, as long as
//! it asks in the same order on every run. Answers of earlier rounds travel in the sealed
//! `requestState`, which `elicit` owns: a handler that calls `elicit` should not also set
//! its own state with [`InputRequired::with_state`](crate::InputRequired::with_state).

use std::any::type_name;

use ferrymcp_types::{ElicitResult, ElicitationAction, InputRequest, InputResponses, JsonObject};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{Context, Era, InputRequired};

/// The prefix of the keys automatic [`Context::elicit`] calls use (`elicit-1`, ...).
const KEY_PREFIX: &str = "elicit-";

/// Where the answers of earlier rounds live in the `requestState` elicitation writes.
const STATE_FIELD: &str = "ferrymcp/elicit";

/// The string formats the specification allows in a `requestedSchema`.
const STRING_FORMATS: [&str; 4] = ["date", "date-time", "email", "uri"];

/// What the user did with an elicitation.
///
/// ```
/// use ferrymcp_core::Elicitation;
/// let answer: Elicitation<u8> = Elicitation::Accepted(7);
/// assert_eq!(answer.accepted(), Some(7));
/// assert_eq!(Elicitation::<u8>::Declined.accepted(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// The user submitted the form; its content, as `T`.
    Accepted(T),
    /// The user explicitly declined to answer.
    Declined,
    /// The user dismissed the question without choosing.
    Cancelled,
}

impl<T> Elicitation<T> {
    /// The accepted value, if the user accepted.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::Elicitation::<String>::Cancelled.accepted(), None);
    /// ```
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicitation::Accepted(value) => Some(value),
            Elicitation::Declined | Elicitation::Cancelled => None,
        }
    }
}

/// Why [`Context::elicit`] returned no answer.
///
/// With `?` in a tool (or resource, or prompt) returning
/// [`ToolError`](crate::ToolError), [`InputRequired`](Self::InputRequired) becomes the input
/// round that asks the client; [`ClientCannotElicit`](Self::ClientCannotElicit) becomes a
/// JSON-RPC `-32600` error; content or an answer that does not fit becomes a tool error the
/// model reads; a type that cannot be asked for becomes an internal error.
///
/// ```
/// use ferrymcp_core::{ElicitError, elicitation::requested_schema};
/// #[derive(schemars::JsonSchema)]
/// struct Nested { inner: Inner }
/// #[derive(schemars::JsonSchema)]
/// struct Inner { x: i64 }
/// let error = requested_schema::<Nested>().unwrap_err();
/// assert!(matches!(error, ElicitError::UnsupportedSchema { .. }));
/// assert!(error.to_string().contains("inner"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitError {
    /// Not a failure: the client has to be asked first. Return it from the handler (`?`
    /// does) so the framework sends the question and runs the handler again with the answer.
    #[error(
        "the client has to answer an elicitation first; return this from the handler so the framework asks it"
    )]
    InputRequired(InputRequired),
    /// The type cannot be expressed as an elicitation `requestedSchema`.
    #[error("`{type_name}` cannot be asked for with elicitation: {reason}")]
    UnsupportedSchema {
        /// The Rust type.
        type_name: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// The client cannot be asked: a 2025-11-25 client that did not declare form
    /// elicitation, or a request without a connection to ask over.
    #[error("the client cannot be asked for input: {0}")]
    ClientCannotElicit(String),
    /// The user accepted, but the content does not deserialize into the type.
    #[error("the submitted content does not match `{type_name}`: {reason}")]
    InvalidContent {
        /// The Rust type.
        type_name: &'static str,
        /// What was wrong, with the path of the offending field.
        reason: String,
    },
    /// The client's answer is not an elicitation result (no valid `action`).
    #[error(
        "the client's answer to the elicitation '{key}' is not an elicitation result: {reason}"
    )]
    InvalidAnswer {
        /// The input request's key.
        key: String,
        /// What was wrong.
        reason: String,
    },
    /// The server-to-client request failed (2025-11-25).
    #[error("the client did not answer the elicitation: {0}")]
    Request(String),
}

/// The `requestedSchema` of an elicitation for `T`: a flat object of primitive properties,
/// as the specification allows, or why `T` cannot be expressed that way.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Signup {
///     /// Your name
///     name: String,
///     age: Option<u8>,
///     newsletter: bool,
/// }
/// let schema = ferrymcp_core::elicitation::requested_schema::<Signup>().unwrap();
/// assert_eq!(schema["properties"]["name"]["type"], "string");
/// assert_eq!(schema["properties"]["age"]["type"], "integer");
/// assert_eq!(schema["required"], serde_json::json!(["name", "newsletter"]));
/// ```
pub fn requested_schema<T: JsonSchema>() -> Result<JsonObject, ElicitError> {
    let unsupported = |reason: String| ElicitError::UnsupportedSchema {
        type_name: type_name::<T>(),
        reason,
    };
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let generated = settings.into_generator().into_root_schema_for::<T>();
    let Value::Object(root) = generated.to_value() else {
        return Err(unsupported(
            "it is not described by an object schema".into(),
        ));
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(unsupported(
            "it must be a struct with named fields (an object schema)".into(),
        ));
    }
    for keyword in ["oneOf", "anyOf", "allOf", "if", "patternProperties"] {
        if root.contains_key(keyword) {
            return Err(unsupported(format!(
                "its schema uses `{keyword}`; only a flat object is allowed"
            )));
        }
    }
    if root
        .get("additionalProperties")
        .is_some_and(|extra| extra != &Value::Bool(false))
    {
        return Err(unsupported(
            "it accepts arbitrary properties (a map); only named fields are allowed".into(),
        ));
    }
    let mut properties = JsonObject::new();
    if let Some(declared) = root.get("properties") {
        let Some(declared) = declared.as_object() else {
            return Err(unsupported("its `properties` is not an object".into()));
        };
        for (name, schema) in declared {
            let property = primitive(schema)
                .map_err(|reason| unsupported(format!("field `{name}`: {reason}")))?;
            properties.insert(name.clone(), Value::Object(property));
        }
    }
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if let Some(Value::Array(required)) = root.get("required") {
        let required: Vec<Value> = required.iter().filter(|r| r.is_string()).cloned().collect();
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
    }
    Ok(schema)
}

/// One property, as a `PrimitiveSchemaDefinition`.
fn primitive(schema: &Value) -> Result<JsonObject, String> {
    let schema = without_null(schema)?;
    if schema.contains_key("$ref") {
        return Err("a recursive or referenced type is not a primitive".into());
    }
    let mut out = JsonObject::new();
    copy_strings(&schema, &mut out, &["title", "description"]);
    if let Some(options) = options_of(&schema)? {
        out.insert("type".into(), "string".into());
        insert_options(&mut out, options, "oneOf");
        copy_default(&schema, &mut out, Value::is_string);
        return Ok(out);
    }
    let kind = single_type(&schema)?;
    match kind.as_str() {
        "string" => {
            out.insert("type".into(), "string".into());
            copy_integers(&schema, &mut out, &["minLength", "maxLength"]);
            if let Some(format) = schema.get("format").and_then(Value::as_str)
                && STRING_FORMATS.contains(&format)
            {
                out.insert("format".into(), format.into());
            }
            copy_default(&schema, &mut out, Value::is_string);
        }
        "integer" | "number" => {
            out.insert("type".into(), kind.clone().into());
            for bound in ["minimum", "maximum"] {
                if let Some(value) = schema.get(bound).filter(|v| v.is_number()) {
                    out.insert(bound.into(), value.clone());
                }
            }
            copy_default(&schema, &mut out, Value::is_number);
        }
        "boolean" => {
            out.insert("type".into(), "boolean".into());
            copy_default(&schema, &mut out, Value::is_boolean);
        }
        "array" => {
            let items = schema
                .get("items")
                .ok_or("a list must say what its items are")?;
            let items = without_null(items)?;
            let Some(options) = options_of(&items)? else {
                return Err(
                    "a list is only allowed as a multi-select of string options (a `Vec` of a unit-only enum)"
                        .into(),
                );
            };
            out.insert("type".into(), "array".into());
            let mut item_schema = JsonObject::new();
            match options {
                Options::Plain(values) => {
                    item_schema.insert("type".into(), "string".into());
                    item_schema.insert("enum".into(), Value::Array(values));
                }
                Options::Titled(choices) => {
                    item_schema.insert("anyOf".into(), Value::Array(choices));
                }
            }
            out.insert("items".into(), Value::Object(item_schema));
            copy_integers(&schema, &mut out, &["minItems", "maxItems"]);
            copy_default(&schema, &mut out, |v| {
                v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            });
        }
        "object" => return Err("nested objects are not allowed; only primitive fields".into()),
        other => return Err(format!("a value of type `{other}` cannot be asked for")),
    }
    Ok(out)
}

/// The options of an enum of strings.
enum Options {
    /// `["a", "b"]`
    Plain(Vec<Value>),
    /// `[{"const": "a", "title": "A"}, ...]`
    Titled(Vec<Value>),
}

fn insert_options(out: &mut JsonObject, options: Options, titled_keyword: &str) {
    match options {
        Options::Plain(values) => {
            out.insert("enum".into(), Value::Array(values));
        }
        Options::Titled(choices) => {
            out.insert(titled_keyword.into(), Value::Array(choices));
        }
    }
}

/// The string options of an enum schema (`enum`, or `oneOf`/`anyOf` of constants), `None`
/// when the schema is not an enum.
fn options_of(schema: &JsonObject) -> Result<Option<Options>, String> {
    if let Some(values) = schema.get("enum") {
        let values: Vec<Value> = values
            .as_array()
            .ok_or("`enum` is not a list")?
            .iter()
            .filter(|v| !v.is_null())
            .cloned()
            .collect();
        if values.is_empty() || !values.iter().all(Value::is_string) {
            return Err("an enum must offer string options only".into());
        }
        return Ok(Some(Options::Plain(values)));
    }
    if let Some(Value::String(value)) = schema.get("const") {
        return Ok(Some(Options::Plain(vec![Value::String(value.clone())])));
    }
    let Some(choices) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
    else {
        return Ok(None);
    };
    let mut titled = Vec::new();
    for choice in choices {
        let Some(choice) = choice.as_object() else {
            return Err("an option is not a schema object".into());
        };
        if choice.get("type").and_then(Value::as_str) == Some("null") {
            continue;
        }
        let value = match (choice.get("const"), choice.get("enum")) {
            (Some(Value::String(value)), _) => value.clone(),
            (None, Some(Value::Array(values))) if values.len() == 1 && values[0].is_string() => {
                values[0].as_str().unwrap_or_default().to_owned()
            }
            _ => {
                return Err(
                    "only unit-only enums (string options) are allowed, not variants carrying data"
                        .into(),
                );
            }
        };
        let title = choice
            .get("title")
            .or_else(|| choice.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(&value)
            .to_owned();
        titled.push(json!({"const": value, "title": title}));
    }
    if titled.is_empty() {
        return Err("an enum must offer at least one option".into());
    }
    Ok(Some(Options::Titled(titled)))
}

/// The schema of an `Option<T>`'s `T` (the schema itself when it is not optional), with
/// the outer title and description kept.
fn without_null(schema: &Value) -> Result<JsonObject, String> {
    let Some(schema) = schema.as_object() else {
        return Err("it accepts any value; only primitive fields are allowed".into());
    };
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = schema.get(keyword) else {
            continue;
        };
        let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
        let rest: Vec<&Value> = branches.iter().filter(|b| !is_null(b)).collect();
        if rest.len() == 1 && rest.len() < branches.len() {
            let mut inner = match rest[0] {
                Value::Object(inner) => inner.clone(),
                _ => return Err("it accepts any value; only primitive fields are allowed".into()),
            };
            for annotation in ["title", "description", "default"] {
                if let Some(value) = schema.get(annotation) {
                    inner.insert(annotation.into(), value.clone());
                }
            }
            return Ok(inner);
        }
    }
    Ok(schema.clone())
}

/// The one non-null JSON type a schema declares.
fn single_type(schema: &JsonObject) -> Result<String, String> {
    match schema.get("type") {
        Some(Value::String(kind)) => Ok(kind.clone()),
        Some(Value::Array(kinds)) => {
            let kinds: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null")
                .collect();
            match kinds.as_slice() {
                [kind] => Ok((*kind).to_owned()),
                _ => Err(format!(
                    "it may be any of {kinds:?}; one primitive type is allowed"
                )),
            }
        }
        _ => Err("it has no single primitive type (an untyped or union value)".into()),
    }
}

fn copy_strings(from: &JsonObject, to: &mut JsonObject, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key).filter(|v| v.is_string()) {
            to.insert((*key).into(), value.clone());
        }
    }
}

fn copy_integers(from: &JsonObject, to: &mut JsonObject, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key).filter(|v| v.is_u64()) {
            to.insert((*key).into(), value.clone());
        }
    }
}

fn copy_default(from: &JsonObject, to: &mut JsonObject, fits: impl Fn(&Value) -> bool) {
    if let Some(value) = from.get("default").filter(|v| fits(v)) {
        to.insert("default".into(), value.clone());
    }
}

/// The answers of earlier rounds, from the state elicitation sealed into the last round.
fn earlier_answers(state: Option<&str>) -> JsonObject {
    state
        .and_then(|state| serde_json::from_str::<Value>(state).ok())
        .and_then(|mut state| match state.get_mut(STATE_FIELD)?.take() {
            Value::Object(answers) => Some(answers),
            _ => None,
        })
        .unwrap_or_default()
}

/// What the user did, with the content as `T`.
fn parse_answer<T: DeserializeOwned>(
    key: &str,
    answer: &Value,
) -> Result<Elicitation<T>, ElicitError> {
    let result: ElicitResult =
        serde_json::from_value(answer.clone()).map_err(|e| ElicitError::InvalidAnswer {
            key: key.to_owned(),
            reason: e.to_string(),
        })?;
    match result.action {
        ElicitationAction::Accept => {
            let content = result
                .content
                .unwrap_or_else(|| Value::Object(JsonObject::new()));
            serde_path_to_error::deserialize(content)
                .map(Elicitation::Accepted)
                .map_err(|e| ElicitError::InvalidContent {
                    type_name: type_name::<T>(),
                    reason: match e.path().to_string().as_str() {
                        "." => e.inner().to_string(),
                        path => format!("{path}: {}", e.inner()),
                    },
                })
        }
        ElicitationAction::Decline => Ok(Elicitation::Declined),
        ElicitationAction::Cancel => Ok(Elicitation::Cancelled),
        _ => Err(ElicitError::InvalidAnswer {
            key: key.to_owned(),
            reason: "an action this server does not know".into(),
        }),
    }
}

impl Context {
    /// Asks the user for a `T` with `message`, and answers what they did.
    ///
    /// The form is `T`'s schema (see [`requested_schema`]); the accepted content is
    /// deserialized into `T`. On 2026-07-28, in-process and in background tasks the first
    /// run answers [`ElicitError::InputRequired`]: return it (`?` does) and the handler runs
    /// again once the client has answered, when this call returns the answer. On 2025-11-25
    /// the client is asked directly. See the [module docs](crate::elicitation).
    ///
    /// ```
    /// use ferrymcp_core::{Context, Elicitation, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Name { name: String }
    ///
    /// async fn greet(cx: Context) -> Result<String, ToolError> {
    ///     Ok(match cx.elicit::<Name>("What is your name?").await? {
    ///         Elicitation::Accepted(Name { name }) => format!("Hello, {name}!"),
    ///         Elicitation::Declined | Elicitation::Cancelled => "Hello, stranger!".into(),
    ///     })
    /// }
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.tool("greet", greet).unwrap();
    /// ```
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, ElicitError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        let key = format!("{KEY_PREFIX}{}", self.scope().next_elicitation());
        self.elicit_keyed(key, message).await
    }

    /// [`elicit`](Self::elicit) under an input-request key of the handler's choosing instead
    /// of the next automatic one (`elicit-1`, ...), for clients that expect a given key. Keys
    /// must differ between the questions of one handler.
    ///
    /// ```
    /// use ferrymcp_core::{Context, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm { ok: bool }
    ///
    /// async fn drop_table(cx: Context) -> Result<String, ToolError> {
    ///     let confirmed = cx.elicit_keyed::<Confirm>("confirm", "Drop the table?").await?;
    ///     Ok(match confirmed.accepted() {
    ///         Some(Confirm { ok: true }) => "dropped".into(),
    ///         _ => "kept".into(),
    ///     })
    /// }
    /// # let s = ferrymcp_core::Server::new("s");
    /// # s.tool("drop_table", drop_table).unwrap();
    /// ```
    pub async fn elicit_keyed<T>(
        &self,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<Elicitation<T>, ElicitError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        let key = key.into();
        let schema = requested_schema::<T>()?;
        let mut answers = earlier_answers(self.request_state());
        if let Some(responses) = self.input_responses() {
            answers.extend(responses.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if let Some(answer) = answers.get(&key) {
            return parse_answer(&key, answer);
        }
        let request: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": message.into(),
                "requestedSchema": schema,
            }
        }))
        .map_err(|e| ElicitError::UnsupportedSchema {
            type_name: type_name::<T>(),
            reason: format!("the generated requestedSchema is not valid: {e}"),
        })?;
        if self.era() == Era::Legacy && !self.is_background_run() {
            return self.ask_directly(key, request).await;
        }
        let mut state = JsonObject::new();
        state.insert(STATE_FIELD.into(), Value::Object(answers));
        Err(ElicitError::InputRequired(
            InputRequired::new()
                .request(key, request)
                .with_state(Value::Object(state).to_string()),
        ))
    }

    /// Asks a 2025-11-25 client over its session.
    async fn ask_directly<T: DeserializeOwned>(
        &self,
        key: String,
        request: InputRequest,
    ) -> Result<Elicitation<T>, ElicitError> {
        let Some(peer) = self.scope().peer() else {
            return Err(ElicitError::ClientCannotElicit(
                "this 2025-11-25 request has no connection to ask the client over".into(),
            ));
        };
        // An `elicitation` capability naming no mode means form (2025-06-18 clients).
        let form = peer.peer_info().is_some_and(|info| {
            info.capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| e.form.is_some() || e.url.is_none())
        });
        if !form {
            return Err(ElicitError::ClientCannotElicit(
                "this 2025-11-25 client did not declare form elicitation; connect with \
                 2026-07-28 or enable elicitation on the client"
                    .into(),
            ));
        }
        let mut requests = ferrymcp_types::InputRequests::new();
        requests.insert(key.clone(), request);
        let mut responses: InputResponses =
            crate::input_rounds::ask_client(peer, requests)
                .await
                .map_err(|e| ElicitError::Request(e.message.to_string()))?;
        let answer = responses
            .remove(&key)
            .ok_or_else(|| ElicitError::Request("no answer came back".into()))?;
        parse_answer(&key, &answer)
    }
}
