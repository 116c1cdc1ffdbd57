//! What the macros generate, observed through a real server: listings (name, description,
//! schema, annotations, execution, tags), calls (typed arguments, extractors, defaults,
//! renames), resources and templates, prompts.

use ferrymcp_core::{Context, Json, Server, State, ToolDef, types::CallToolResponse};
use ferrymcp_macros::{prompt, resource, tool};
use serde_json::{Value, json};

/// Multiplies two numbers.
///
/// Both are integers.
#[tool]
async fn multiply(a: i64, b: i64) -> i64 {
    a * b
}

/// Greets someone.
#[tool(
    name = "hello",
    title = "Say hello",
    tags = ["greeting", "demo"],
    version = 2,
    read_only,
    idempotent = false,
    task = "optional",
    timeout_secs = 5
)]
async fn greet(
    cx: Context,
    #[arg(description = "Whom to greet")] name: String,
    #[arg(rename = "loud", default)] shout: bool,
    /// How many times
    times: Option<u32>,
    State(suffix): State<&'static str>,
) -> String {
    let line = format!("hello {name} from {}{suffix}", cx.server().name());
    let line = if shout { line.to_uppercase() } else { line };
    line.repeat(times.unwrap_or(1) as usize)
}

/// No arguments at all.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

/// A user's profile.
#[resource(
    "users://{id}/profile",
    mime_type = "application/json",
    title = "Profile"
)]
async fn profile(id: u32) -> Json<Value> {
    Json(json!({ "id": id }))
}

/// The readme.
#[resource(uri = "demo://readme", name = "readme")]
async fn readme() -> &'static str {
    "# demo"
}

/// Asks for a greeting.
#[prompt(title = "Greeting")]
async fn greeting(name: String, style: Option<String>) -> String {
    format!(
        "Greet {name} in a {} way",
        style.as_deref().unwrap_or("plain")
    )
}

/// A type of the user's that happens to share a name with an extractor.
mod named_like_ours {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct State {
        pub open: bool,
    }
}

/// Whether the door is open.
#[tool]
async fn door(#[arg] state: named_like_ours::State) -> bool {
    state.open
}

fn server() -> Server {
    let server = Server::new("macros");
    server.insert_state::<&'static str>("!");
    server.add_tool(multiply).unwrap();
    server.add_tool(greet).unwrap();
    server.add_tool(ping).unwrap();
    server.add_tool(door).unwrap();
    server.add_resource(profile).unwrap();
    server.add_resource(readme).unwrap();
    server.add_prompt(greeting).unwrap();
    server
}

fn structured(response: CallToolResponse) -> Value {
    match response {
        CallToolResponse::Complete(result) => {
            assert_ne!(result.is_error, Some(true), "{result:?}");
            result
                .structured_content
                .or_else(|| {
                    result
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .map(|t| Value::String(t.text.clone()))
                })
                .expect("a result")
        }
        other => panic!("not a result: {other:?}"),
    }
}

#[tokio::test]
async fn a_tool_lists_its_doc_comment_schema_and_attributes() {
    let server = server();
    let tools: Vec<Value> = server
        .list_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| serde_json::to_value(t.descriptor()).unwrap())
        .collect();
    let by_name = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed: {tools:?}"))
            .clone()
    };

    let listed = by_name("multiply");
    assert_eq!(
        listed["description"],
        "Multiplies two numbers.\n\nBoth are integers."
    );
    assert_eq!(listed["inputSchema"]["type"], "object");
    assert_eq!(listed["inputSchema"]["properties"]["a"]["type"], "integer");
    assert_eq!(listed["inputSchema"]["required"], json!(["a", "b"]));
    assert!(listed["inputSchema"].get("title").is_none(), "{listed}");

    let hello = by_name("hello");
    assert_eq!(hello["title"], "Say hello");
    assert_eq!(hello["description"], "Greets someone.");
    let properties = &hello["inputSchema"]["properties"];
    assert_eq!(properties["name"]["description"], "Whom to greet");
    assert_eq!(properties["times"]["description"], "How many times");
    assert!(
        properties.get("loud").is_some() && properties.get("shout").is_none(),
        "{hello}"
    );
    assert!(
        properties.get("cx").is_none() && properties.get("suffix").is_none(),
        "{hello}"
    );
    assert_eq!(hello["inputSchema"]["required"], json!(["name"]));
    assert_eq!(hello["annotations"]["readOnlyHint"], true);
    assert_eq!(hello["annotations"]["idempotentHint"], false);
    assert_eq!(hello["execution"]["taskSupport"], "optional");

    let listed = by_name("ping");
    assert_eq!(listed["inputSchema"]["properties"], json!({}));
}

#[tokio::test]
async fn a_tool_call_gets_typed_arguments_extractors_and_defaults() {
    let server = server();
    assert_eq!(
        structured(
            server
                .call_tool("multiply", json!({"a": 6, "b": 7}))
                .await
                .unwrap()
        ),
        json!({"result": 42})
    );
    assert_eq!(
        structured(
            server
                .call_tool("hello", json!({"name": "ann", "times": 2}))
                .await
                .unwrap()
        ),
        json!({"result": "hello ann from macros!hello ann from macros!"})
    );
    assert_eq!(
        structured(
            server
                .call_tool("hello", json!({"name": "bo", "loud": true}))
                .await
                .unwrap()
        ),
        json!({"result": "HELLO BO FROM MACROS!"})
    );
    let wrong = server
        .call_tool("multiply", json!({"a": "x", "b": 1}))
        .await;
    assert!(wrong.is_err(), "{wrong:?}");
}

#[tokio::test]
async fn the_function_stays_callable_and_the_definition_adjustable() {
    assert_eq!(multiply::call(3, 4).await, 12);
    let server = Server::new("renamed");
    server
        .add_tool(multiply::def().description("changed"))
        .unwrap();
    let tools = server.list_tools().await.unwrap();
    assert_eq!(
        tools[0].descriptor().tool.description.as_deref(),
        Some("changed")
    );
    let _: ToolDef = multiply.into();
}

#[tokio::test]
async fn resources_templates_and_prompts_come_from_functions() {
    let server = server();
    let read = server.read_resource("users://7/profile").await.unwrap();
    let text = format!("{read:?}");
    assert!(text.contains(r#"\"id\":7"#), "{text}");
    let templates = serde_json::to_value(
        server
            .list_resource_templates()
            .await
            .unwrap()
            .iter()
            .map(|t| t.to_resource_template())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert_eq!(templates[0]["uriTemplate"], "users://{id}/profile");
    assert_eq!(templates[0]["name"], "profile");
    assert_eq!(templates[0]["title"], "Profile");
    assert_eq!(templates[0]["mimeType"], "application/json");
    assert_eq!(templates[0]["description"], "A user's profile.");

    let resources = serde_json::to_value(
        server
            .list_resources()
            .await
            .unwrap()
            .iter()
            .map(|r| r.to_resource())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert_eq!(resources[0]["uri"], "demo://readme");
    assert_eq!(resources[0]["name"], "readme");

    let prompts = serde_json::to_value(
        server
            .list_prompts()
            .await
            .unwrap()
            .iter()
            .map(|p| p.to_prompt())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert_eq!(prompts[0]["name"], "greeting");
    assert_eq!(prompts[0]["title"], "Greeting");
    let arguments = &prompts[0]["arguments"];
    assert_eq!(arguments[0]["name"], "name");
    assert_eq!(arguments[0]["required"], true);
    assert_eq!(arguments[1]["name"], "style");
    let got = server
        .get_prompt(
            "greeting",
            json!({"name": "ann"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert!(
        format!("{got:?}").contains("Greet ann in a plain way"),
        "{got:?}"
    );
}

/// What a middleware of the user's reads from a tool's handle.
#[derive(Clone, Debug, PartialEq)]
struct Cost(u32);

/// Another value of another type on the same tool.
#[derive(Clone, Debug, PartialEq)]
struct Owner(&'static str);

/// Costs something.
#[tool(data = Cost(3), data = Owner("billing"))]
async fn priced() -> &'static str {
    "paid"
}

#[test]
fn data_attaches_typed_values_to_the_tool() {
    let server = Server::new("s");
    server.add_tool(priced).unwrap();
    server.add_tool(ping).unwrap();
    let tool = server.get_tool("priced", None).expect("the tool");
    assert_eq!(tool.data::<Cost>(), Some(&Cost(3)));
    assert_eq!(tool.data::<Owner>(), Some(&Owner("billing")));
    let plain = server.get_tool("ping", None).expect("the tool");
    assert_eq!(plain.data::<Cost>(), None);
}
