//! Tool arguments and results (behavior catalog section I), through the in-process API.
//!
//! Every successful result is also checked against the official MCP 2026-07-28
//! `CallToolResult` schema, both as serialized (with `resultType`) and in its legacy form
//! (without it).

use std::collections::{BTreeMap, HashMap};

use ferrymcp::{
    Args, Audio, Bytes, Contents, Image, Json, Server, ToolDef, ToolError,
    types::{CallToolResponse, CallToolResult, ContentBlock, ErrorData, JsonObject},
};
use ferrymcp_test_helpers::schema::assert_valid_call_tool_result;
use serde_json::{Value, json};

// ------------------------------------------------------------------------------ helpers

/// Validates the wire form of `result` (modern and legacy) and returns it as JSON.
fn wire(result: &CallToolResult) -> Value {
    let value = serde_json::to_value(result).expect("a CallToolResult serializes");
    assert_valid_call_tool_result(&value, false);
    let mut legacy = value.clone();
    legacy
        .as_object_mut()
        .expect("a JSON object")
        .remove("resultType");
    assert_valid_call_tool_result(&legacy, true);
    value
}

/// Calls `name` and returns the complete result and its validated wire form.
async fn call(server: &Server, name: &str, arguments: Value) -> (CallToolResult, Value) {
    match server.call_tool(name, arguments).await {
        Ok(CallToolResponse::Complete(result)) => {
            let value = wire(&result);
            (result, value)
        }
        Ok(other) => panic!("{name}: expected a complete result, got {other:?}"),
        Err(error) => panic!("{name}: expected a result, got the error {error:?}"),
    }
}

/// Calls `name` and returns the JSON-RPC error it fails with.
async fn call_err(server: &Server, name: &str, arguments: Value) -> ErrorData {
    match server.call_tool(name, arguments).await {
        Err(error) => error,
        Ok(reply) => panic!("{name}: expected a JSON-RPC error, got {reply:?}"),
    }
}

fn output_schema(server: &Server, name: &str) -> Option<Value> {
    let descriptor = server
        .get_tool(name, None)
        .unwrap_or_else(|| panic!("tool {name} is registered"))
        .descriptor();
    let wire = serde_json::to_value(&descriptor).expect("a descriptor serializes");
    wire.get("outputSchema").cloned()
}

fn input_schema(server: &Server, name: &str) -> Value {
    Value::Object(
        (**server
            .get_tool(name, None)
            .unwrap_or_else(|| panic!("tool {name} is registered"))
            .input_schema())
        .clone(),
    )
}

fn wrap_meta() -> Value {
    json!({"fastmcp": {"wrap_result": true}})
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct N {
    n: i64,
}

async fn square(Args(N { n }): Args<N>) -> i64 {
    n * n
}

async fn echo_n(Args(N { n }): Args<N>) -> i64 {
    n
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Totals {
    count: u32,
    total: u32,
}

// ------------------------------------------------------------------------------ I01, I02, I23

#[tokio::test]
async fn i01_scalar_output_schema_is_wrapped_and_marked() {
    let server = Server::new("s");
    server.tool("multiply", || async { 72i64 }).expect("tool");
    server
        .tool("name", || async { "x".to_owned() })
        .expect("tool");
    server.tool("fruits", || async { vec!["a"] }).expect("tool");
    server.tool("maybe", || async { Some(1u8) }).expect("tool");

    assert_eq!(
        output_schema(&server, "multiply").expect("an output schema"),
        json!({
            "type": "object",
            "properties": {"result": {"type": "integer", "format": "int64"}},
            "required": ["result"],
            "x-fastmcp-wrap-result": true,
        })
    );
    for name in ["name", "fruits", "maybe"] {
        let schema = output_schema(&server, name).expect("an output schema");
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["required"], json!(["result"]), "{name}");
        assert_eq!(schema["x-fastmcp-wrap-result"], json!(true), "{name}");
        assert!(schema["properties"]["result"].is_object(), "{name}");
    }

    let (_, wire) = call(&server, "multiply", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "72"}],
            "structuredContent": {"result": 72},
            "isError": false,
            "_meta": wrap_meta(),
        })
    );
}

#[tokio::test]
async fn i02_wrapped_text_is_the_string_itself_or_compact_json() {
    let server = Server::new("s");
    server
        .tool("greet", || async { "child sync: hi".to_owned() })
        .expect("tool");
    server.tool("answer", || async { 42i64 }).expect("tool");
    server.tool("yes", || async { true }).expect("tool");
    server.tool("half", || async { 2.5f64 }).expect("tool");
    server
        .tool("fruits", || async {
            vec!["apple".to_owned(), "banana".to_owned(), "cherry".to_owned()]
        })
        .expect("tool");

    let cases = [
        ("greet", "child sync: hi", json!("child sync: hi")),
        ("answer", "42", json!(42)),
        ("yes", "true", json!(true)),
        ("half", "2.5", json!(2.5)),
        (
            "fruits",
            r#"["apple","banana","cherry"]"#,
            json!(["apple", "banana", "cherry"]),
        ),
    ];
    for (name, text, value) in cases {
        let (_, wire) = call(&server, name, Value::Null).await;
        assert_eq!(
            wire["content"],
            json!([{"type": "text", "text": text}]),
            "{name}"
        );
        assert_eq!(
            wire["structuredContent"],
            json!({"result": value}),
            "{name}"
        );
        assert_eq!(wire["_meta"], wrap_meta(), "{name}");
    }
}

#[tokio::test]
async fn i23_is_error_false_is_present_on_every_success() {
    let server = Server::new("s");
    server.tool("scalar", || async { 1 }).expect("tool");
    server.tool("unit", || async {}).expect("tool");
    server
        .tool("object", || async { Json(Totals { count: 1, total: 2 }) })
        .expect("tool");
    server
        .tool("value", || async { json!([1, 2]) })
        .expect("tool");
    server
        .tool("bytes", || async { Bytes(b"hi".to_vec()) })
        .expect("tool");
    server
        .tool("none", || async { Option::<String>::None })
        .expect("tool");

    for name in ["scalar", "unit", "object", "value", "bytes", "none"] {
        let (_, wire) = call(&server, name, Value::Null).await;
        assert_eq!(wire["isError"], json!(false), "{name}: {wire}");
    }
}

// ------------------------------------------------------------------------------ I03

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Empty {}

#[tokio::test]
async fn i03_object_returns_are_not_wrapped() {
    let server = Server::new("s");
    server
        .tool("totals", || async {
            Json(Totals {
                count: 100,
                total: 500,
            })
        })
        .expect("tool");
    server
        .tool("map", || async { HashMap::from([("a".to_owned(), 1i64)]) })
        .expect("tool");
    server
        .tool("sorted", || async {
            BTreeMap::from([("b".to_owned(), 2i64), ("a".to_owned(), 1i64)])
        })
        .expect("tool");
    server
        .tool("empty_map", || async { HashMap::<String, i64>::new() })
        .expect("tool");
    server
        .tool("empty_struct", || async { Json(Empty {}) })
        .expect("tool");
    server
        .tool("object", || async {
            let mut object = JsonObject::new();
            object.insert("k".into(), json!("v"));
            object
        })
        .expect("tool");

    let (_, wire) = call(&server, "totals", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": r#"{"count":100,"total":500}"#}],
            "structuredContent": {"count": 100, "total": 500},
            "isError": false,
        })
    );
    let schema = output_schema(&server, "totals").expect("an output schema");
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["count"].is_object());
    assert!(schema.get("x-fastmcp-wrap-result").is_none());

    let cases = [
        ("map", r#"{"a":1}"#, json!({"a": 1})),
        ("sorted", r#"{"a":1,"b":2}"#, json!({"a": 1, "b": 2})),
        ("empty_map", "{}", json!({})),
        ("empty_struct", "{}", json!({})),
        ("object", r#"{"k":"v"}"#, json!({"k": "v"})),
    ];
    for (name, text, structured) in cases {
        let (_, wire) = call(&server, name, Value::Null).await;
        assert_eq!(
            wire["content"],
            json!([{"type": "text", "text": text}]),
            "{name}"
        );
        assert_eq!(wire["structuredContent"], structured, "{name}");
        assert!(wire.get("_meta").is_none(), "{name}: not wrapped");
        let schema = output_schema(&server, name).expect("an output schema");
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema.get("x-fastmcp-wrap-result").is_none(), "{name}");
    }
}

// ------------------------------------------------------------------------------ I04, I05, I06

#[tokio::test]
async fn i04_unit_return_has_no_content_no_structured_content_and_no_output_schema() {
    let server = Server::new("s");
    server.tool("nothing", || async {}).expect("tool");

    assert_eq!(output_schema(&server, "nothing"), None);
    let (_, mut wire) = call(&server, "nothing", Value::Null).await;
    assert_eq!(
        wire,
        json!({"resultType": "complete", "content": [], "isError": false})
    );
    wire.as_object_mut()
        .expect("an object")
        .remove("resultType");
    assert_eq!(wire, json!({"content": [], "isError": false}));
}

#[tokio::test]
async fn i05_none_and_empty_vec_are_wrapped_with_empty_content() {
    let server = Server::new("s");
    server
        .tool("none", || async { Option::<String>::None })
        .expect("tool");
    server
        .tool("empty", || async { Vec::<i64>::new() })
        .expect("tool");
    server
        .tool("some", || async { Some("x".to_owned()) })
        .expect("tool");

    let (_, wire) = call(&server, "none", Value::Null).await;
    assert_eq!(wire["structuredContent"], json!({"result": null}));
    assert_eq!(wire["content"], json!([]));
    assert_eq!(wire["_meta"], wrap_meta());

    let (_, wire) = call(&server, "empty", Value::Null).await;
    assert_eq!(wire["structuredContent"], json!({"result": []}));
    assert_eq!(wire["content"], json!([]));
    assert_eq!(wire["_meta"], wrap_meta());

    let (_, wire) = call(&server, "some", Value::Null).await;
    assert_eq!(wire["structuredContent"], json!({"result": "x"}));
    assert_eq!(wire["content"], json!([{"type": "text", "text": "x"}]));
}

#[tokio::test]
async fn i06_serde_json_value_object_is_structured_anything_else_is_content_only() {
    let server = Server::new("s");
    server
        .tool("object", || async {
            json!({"count": 1, "nested": {"a": [1, 2]}})
        })
        .expect("tool");
    server.tool("number", || async { json!(5) }).expect("tool");
    server
        .tool("string", || async { json!("plain") })
        .expect("tool");
    server
        .tool("list", || async { json!([1, "two"]) })
        .expect("tool");
    server.tool("null", || async { Value::Null }).expect("tool");

    for name in ["object", "number", "string", "list", "null"] {
        assert_eq!(
            output_schema(&server, name),
            None,
            "{name}: no output schema"
        );
    }

    let (_, wire) = call(&server, "object", Value::Null).await;
    assert_eq!(
        wire["structuredContent"],
        json!({"count": 1, "nested": {"a": [1, 2]}})
    );
    assert_eq!(
        wire["content"],
        json!([{"type": "text", "text": r#"{"count":1,"nested":{"a":[1,2]}}"#}])
    );

    let cases = [
        ("number", json!([{"type": "text", "text": "5"}])),
        ("string", json!([{"type": "text", "text": "plain"}])),
        ("list", json!([{"type": "text", "text": r#"[1,"two"]"#}])),
        ("null", json!([])),
    ];
    for (name, content) in cases {
        let (_, wire) = call(&server, name, Value::Null).await;
        assert_eq!(wire["content"], content, "{name}");
        assert!(
            wire.get("structuredContent").is_none(),
            "{name}: no structured content: {wire}"
        );
        assert!(wire.get("_meta").is_none(), "{name}: not wrapped");
    }
}

// ------------------------------------------------------------------------------ I07, I08, I09, I10

#[tokio::test]
async fn i07_bytes_are_utf8_text_or_base64_with_no_structured_content() {
    let server = Server::new("s");
    server
        .tool("utf8", || async { Bytes("héllo".as_bytes().to_vec()) })
        .expect("tool");
    server
        .tool("binary", || async { Bytes(vec![0xff, 0x00, 0x80]) })
        .expect("tool");

    for name in ["utf8", "binary"] {
        assert_eq!(output_schema(&server, name), None, "{name}");
    }
    let (_, wire) = call(&server, "utf8", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "héllo"}],
            "isError": false,
        })
    );
    let (_, wire) = call(&server, "binary", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "/wCA"}],
            "isError": false,
        })
    );
}

#[tokio::test]
async fn i08_image_and_audio_become_media_blocks() {
    let server = Server::new("s");
    server
        .tool("pixel", || async {
            Image {
                data: vec![0x89, b'P', b'N', b'G'],
                mime_type: "image/png".into(),
            }
        })
        .expect("tool");
    server
        .tool("beep", || async {
            Audio {
                data: vec![1, 2, 3],
                mime_type: "audio/wav".into(),
            }
        })
        .expect("tool");

    for name in ["pixel", "beep"] {
        assert_eq!(output_schema(&server, name), None, "{name}");
    }
    let (_, wire) = call(&server, "pixel", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}],
            "isError": false,
        })
    );
    let (_, wire) = call(&server, "beep", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "audio", "data": "AQID", "mimeType": "audio/wav"}],
            "isError": false,
        })
    );
}

fn mixed_blocks() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("hello"),
        ContentBlock::image("iVBORw==", "image/png"),
        serde_json::from_value(json!({
            "type": "resource",
            "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "notes"},
        }))
        .expect("an embedded resource block"),
        serde_json::from_value(json!({
            "type": "resource_link",
            "uri": "file:///data.csv",
            "name": "data.csv",
        }))
        .expect("a resource link block"),
    ]
}

#[tokio::test]
async fn i09_content_blocks_pass_through_with_no_structured_content() {
    let server = Server::new("s");
    server
        .tool("mixed", || async { Contents(mixed_blocks()) })
        .expect("tool");
    server
        .tool("one", || async { ContentBlock::text("only") })
        .expect("tool");

    assert_eq!(output_schema(&server, "mixed"), None);
    let (_, wire) = call(&server, "mixed", Value::Null).await;
    assert_eq!(
        wire["content"],
        serde_json::to_value(mixed_blocks()).expect("blocks serialize")
    );
    assert_eq!(wire["content"].as_array().map(Vec::len), Some(4));
    assert!(wire.get("structuredContent").is_none());

    let (_, wire) = call(&server, "one", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "only"}],
            "isError": false,
        })
    );
}

fn crafted_result() -> CallToolResult {
    let mut result = CallToolResult::structured_error(json!({"code": "E42", "detail": [1, 2]}));
    result.content = vec![ContentBlock::text("custom text"), ContentBlock::text("two")];
    let mut meta = ferrymcp::types::MetaObject::new();
    meta.insert("com.example/trace".into(), json!("abc"));
    result.meta = Some(meta);
    result
}

#[tokio::test]
async fn i10_call_tool_result_passes_through_exactly() {
    let server = Server::new("s");
    server
        .tool("crafted", || async { crafted_result() })
        .expect("tool");
    server
        .tool("fallible", || async {
            Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::text("ok")]))
        })
        .expect("tool");

    assert_eq!(output_schema(&server, "crafted"), None);
    let (result, wire) = call(&server, "crafted", Value::Null).await;
    assert_eq!(result, crafted_result());
    assert_eq!(
        wire,
        serde_json::to_value(crafted_result()).expect("serializes")
    );

    let (result, _) = call(&server, "fallible", Value::Null).await;
    assert_eq!(
        result,
        CallToolResult::success(vec![ContentBlock::text("ok")])
    );
}

// ------------------------------------------------------------------------------ I11, I17, I18

#[tokio::test]
async fn i11_tool_error_is_an_is_error_result_and_unknown_tool_is_invalid_params() {
    let server = Server::new("s");
    server
        .tool("deny", || async {
            Err::<i64, _>(ToolError::new("Access denied: admin only"))
        })
        .expect("tool");
    server
        .tool("protocol", || async {
            Err::<i64, _>(ToolError::protocol(ErrorData::internal_error(
                "protocol fault",
                None,
            )))
        })
        .expect("tool");

    let (_, wire) = call(&server, "deny", Value::Null).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "Access denied: admin only"}],
            "isError": true,
        })
    );

    let error = call_err(&server, "protocol", Value::Null).await;
    assert_eq!(error.code.0, -32603);
    assert_eq!(error.message, "protocol fault");

    // Our deliberate departure from I11: an unknown tool is a JSON-RPC -32602 error.
    let error = call_err(&server, "nope", Value::Null).await;
    assert_eq!(error.code.0, -32602);
    assert_eq!(error.message, "Unknown tool: 'nope'");

    // A disabled tool is unknown too.
    server.disable_tool("deny");
    let error = call_err(&server, "deny", Value::Null).await;
    assert_eq!(error.code.0, -32602);
    assert_eq!(error.message, "Unknown tool: 'deny'");
}

async fn parse(Args(N { n }): Args<N>) -> Result<i64, ToolError> {
    // A deserialization failure inside the body: a server-side error, not bad arguments.
    let parsed: i64 = serde_json::from_value(json!(format!("x{n}")))?;
    Ok(parsed)
}

#[tokio::test]
async fn i17_a_body_error_is_not_an_argument_error() {
    let server = Server::new("s");
    server.tool("parse", parse).expect("tool");

    let error = call_err(&server, "parse", json!({"n": "abc"})).await;
    assert_eq!(error.code.0, -32602, "bad arguments are a client error");

    let (_, wire) = call(&server, "parse", json!({"n": 1})).await;
    assert_eq!(
        wire,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "Error calling tool 'parse'"}],
            "isError": true,
        })
    );
}

async fn leak() -> Result<i64, ToolError> {
    Err(std::io::Error::other("disk on fire"))?;
    Ok(1)
}

fn explode(really: bool) -> i64 {
    if really {
        panic!("kaboom");
    }
    1
}

async fn boom() -> i64 {
    explode(std::hint::black_box(true))
}

#[tokio::test]
async fn i18_error_details_are_masked_by_default() {
    let server = Server::new("s");
    server.tool("leak", leak).expect("tool");
    server.tool("boom", boom).expect("tool");
    server.tool("square", square).expect("tool");

    let (result, _) = call(&server, "leak", Value::Null).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.content,
        vec![ContentBlock::text("Error calling tool 'leak'")]
    );

    // A panicking tool is a masked isError result, not a crash...
    let (result, _) = call(&server, "boom", Value::Null).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.content,
        vec![ContentBlock::text("Error calling tool 'boom'")]
    );
    // ...and the server keeps working.
    let (_, wire) = call(&server, "square", json!({"n": 3})).await;
    assert_eq!(wire["structuredContent"], json!({"result": 9}));
}

#[tokio::test]
async fn i18_unmasked_errors_carry_the_detail() {
    let server = Server::new("s");
    server.set_mask_error_details(false);
    server.tool("leak", leak).expect("tool");
    server.tool("boom", boom).expect("tool");

    let (result, _) = call(&server, "leak", Value::Null).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.content,
        vec![ContentBlock::text(
            "Error calling tool 'leak': disk on fire"
        )]
    );

    let (result, _) = call(&server, "boom", Value::Null).await;
    assert_eq!(result.is_error, Some(true));
    let text = &result.content[0].as_text().expect("text").text;
    assert!(
        text.starts_with("Error calling tool 'boom': ") && text.contains("kaboom"),
        "{text}"
    );
}

// ------------------------------------------------------------------------------ I13 - I16

#[tokio::test]
async fn i13_arguments_are_coerced_leniently_by_default() {
    let server = Server::new("s");
    server.tool("echo", echo_n).expect("tool");
    server.tool("square", square).expect("tool");

    let (_, wire) = call(&server, "echo", json!({"n": "1"})).await;
    assert_eq!(wire["structuredContent"], json!({"result": 1}));
    let (_, wire) = call(&server, "square", json!({"n": "6"})).await;
    assert_eq!(wire["structuredContent"], json!({"result": 36}));
    assert_eq!(wire["content"], json!([{"type": "text", "text": "36"}]));
    let (_, wire) = call(&server, "square", json!({"n": 3.0})).await;
    assert_eq!(wire["structuredContent"], json!({"result": 9}));
}

#[tokio::test]
async fn i14_strict_input_validation_rejects_strings_for_integers() {
    let server = Server::new("s").strict_input_validation(true);
    server.tool("square", square).expect("tool");

    let error = call_err(&server, "square", json!({"n": "1"})).await;
    assert_eq!(error.code.0, -32602);

    let (_, wire) = call(&server, "square", json!({"n": 4})).await;
    assert_eq!(wire["structuredContent"], json!({"result": 16}));
}

#[tokio::test]
async fn i15_invalid_arguments_fail_with_invalid_params_naming_the_field() {
    let server = Server::new("s");
    server.tool("square", square).expect("tool");

    let error = call_err(&server, "square", json!({"n": "not-a-number"})).await;
    assert_eq!(error.code.0, -32602);
    assert!(
        error.message.contains("'square'") && error.message.contains(": n: "),
        "the message names the tool and the field: {}",
        error.message
    );

    let error = call_err(&server, "square", json!({})).await;
    assert_eq!(error.code.0, -32602);
    assert!(
        error.message.contains("missing field `n`"),
        "the message names the missing field: {}",
        error.message
    );

    // Arguments that are not an object are rejected up front.
    let error = call_err(&server, "square", json!([1])).await;
    assert_eq!(error.code.0, -32602);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Item {
    name: String,
    qty: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    item: Item,
    element: Item,
    items: Vec<Item>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct OrderSummary {
    item: String,
    element: String,
    total_qty: i64,
    names: Vec<String>,
}

async fn summarize(Args(order): Args<Order>) -> Json<OrderSummary> {
    Json(OrderSummary {
        item: order.item.name,
        element: order.element.name,
        total_qty: order.item.qty
            + order.element.qty
            + order.items.iter().map(|i| i.qty).sum::<i64>(),
        names: order.items.into_iter().map(|i| i.name).collect(),
    })
}

#[tokio::test]
async fn i16_nested_struct_and_vec_of_struct_arguments() {
    let server = Server::new("s");
    server.tool("summarize", summarize).expect("tool");

    let arguments = json!({
        "item": {"name": "_Item", "qty": 1},
        "element": {"name": "_Item", "qty": "2"},
        "items": [{"name": "a", "qty": 3}, {"name": "b", "qty": "4"}],
    });
    let (_, wire) = call(&server, "summarize", arguments).await;
    assert_eq!(
        wire["structuredContent"],
        json!({"item": "_Item", "element": "_Item", "total_qty": 10, "names": ["a", "b"]})
    );

    let error = call_err(
        &server,
        "summarize",
        json!({"item": {"name": "x", "qty": 1}, "element": {"name": "y", "qty": 1}, "items": [{"name": "a", "qty": "lots"}]}),
    )
    .await;
    assert_eq!(error.code.0, -32602);
    assert!(
        error.message.contains("items[0].qty"),
        "the path to the bad field: {}",
        error.message
    );
}

// ------------------------------------------------------------------------------ I24, E21-ish

#[tokio::test]
async fn i24_structured_content_is_always_an_object() {
    let object_schema = json!({"type": "object"})
        .as_object()
        .expect("object")
        .clone();
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("five", || async { Json(5i64) }).output_schema(object_schema))
        .expect("tool");
    server.tool("list", || async { vec![1, 2] }).expect("tool");
    server.tool("number", || async { json!(5) }).expect("tool");

    for name in ["five", "list", "number"] {
        let (_, wire) = call(&server, name, Value::Null).await;
        if let Some(structured) = wire.get("structuredContent") {
            assert!(
                structured.is_object(),
                "{name}: structured content must be an object: {wire}"
            );
        }
    }
}

#[tokio::test]
async fn i16_input_schema_is_the_schema_of_args() {
    let server = Server::new("s");
    server.tool("square", square).expect("tool");
    server.tool("noargs", || async { 1 }).expect("tool");

    let schema = input_schema(&server, "square");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["n"]));
    assert_eq!(schema["properties"]["n"]["type"], "integer");
    assert_eq!(
        input_schema(&server, "noargs"),
        json!({"type": "object", "properties": {}})
    );
}
