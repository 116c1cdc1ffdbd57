//! JSON schemas of tool inputs and outputs, generated with schemars.

use ferrymcp_types::{JsonObject, meta};
use schemars::JsonSchema;
use serde_json::Value;

/// The draft 2020-12 schema of `T`, without the `$schema` and `title` keywords (the Rust type
/// name is an implementation detail, not something to show a model).
pub(crate) fn schema_of<T: JsonSchema>() -> JsonObject {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        // `true`/`false` schemas: anything goes / nothing goes.
        Value::Bool(true) => JsonObject::new(),
        other => {
            let mut object = JsonObject::new();
            object.insert("not".into(), Value::Object(JsonObject::new()));
            debug_assert!(other == Value::Bool(false));
            object
        }
    };
    object.remove("$schema");
    object.remove("title");
    object
}

/// The input schema of a tool that takes no arguments.
pub(crate) fn empty_object() -> JsonObject {
    let mut object = JsonObject::new();
    object.insert("type".into(), Value::String("object".into()));
    object.insert("properties".into(), Value::Object(JsonObject::new()));
    object
}

/// Whether a schema describes JSON objects only (`"type": "object"`).
pub(crate) fn is_object_schema(schema: &JsonObject) -> bool {
    matches!(schema.get("type"), Some(Value::String(t)) if t == "object")
}

/// Wraps a non-object output schema as `{"result": <schema>}`, hoisting `$defs` so its
/// references still resolve from the root.
pub(crate) fn wrap_output(mut inner: JsonObject) -> JsonObject {
    let defs = inner.remove("$defs");
    let mut properties = JsonObject::new();
    properties.insert("result".into(), Value::Object(inner));
    let mut wrapped = JsonObject::new();
    wrapped.insert("type".into(), Value::String("object".into()));
    wrapped.insert("properties".into(), Value::Object(properties));
    wrapped.insert(
        "required".into(),
        Value::Array(vec![Value::String("result".into())]),
    );
    wrapped.insert(meta::WRAP_RESULT_SCHEMA_KEYWORD.into(), Value::Bool(true));
    if let Some(defs) = defs {
        wrapped.insert("$defs".into(), defs);
    }
    wrapped
}
