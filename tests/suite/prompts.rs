//! Prompts, in process: typed arguments, rendering, mounting through one and two levels,
//! conflicts, live links, visibility and versions. Test names start with the behavior IDs
//! they cover.

use ferrymcp::{
    Args, PromptDef, PromptGet, Server, ServerError,
    types::{
        ContentBlock, ErrorData, GetPromptResponse, GetPromptResult, JsonObject, PromptMessage,
        Role,
    },
};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, schemars::JsonSchema)]
struct Greeting {
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    excitement: Option<u8>,
}

async fn greeting(Args(g): Args<Greeting>) -> String {
    let marks = "!".repeat(usize::from(g.excitement.unwrap_or(1)));
    format!("Hello, {}{marks}", g.name)
}

fn arguments(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

fn rendered(reply: Result<GetPromptResponse, ErrorData>) -> GetPromptResult {
    match reply {
        Ok(GetPromptResponse::Complete(result)) => result,
        other => panic!("expected a rendered prompt, got {other:?}"),
    }
}

fn first_text(reply: Result<GetPromptResponse, ErrorData>) -> String {
    let result = rendered(reply);
    match &result.messages[0].content {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

async fn names(server: &Server) -> Vec<String> {
    server
        .list_prompts()
        .await
        .expect("prompts/list")
        .iter()
        .map(|p| p.name().to_owned())
        .collect()
}

#[tokio::test]
async fn a09_prompts_are_namespaced_like_tools_and_arguments_pass_through() {
    let child = Server::new("assistant");
    child
        .add_prompt(PromptDef::new("greeting", greeting).description("Greets"))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "assistant").unwrap();

    assert_eq!(names(&parent).await, ["assistant_greeting"]);
    let text = first_text(
        parent
            .get_prompt(
                "assistant_greeting",
                arguments(json!({"name": "Ada", "excitement": "3"})),
            )
            .await,
    );
    assert_eq!(
        text, "Hello, Ada!!!",
        "string arguments become typed values"
    );
    let unprefixed = parent
        .get_prompt("greeting", arguments(json!({"name": "Ada"})))
        .await
        .unwrap_err();
    assert_eq!(unprefixed.message, "Unknown prompt: 'greeting'");
}

#[tokio::test]
async fn a09_prompt_arguments_come_from_the_args_type_with_descriptions_and_required() {
    let server = Server::new("s");
    server
        .add_prompt(PromptDef::new("greeting", greeting).title("Greeting"))
        .unwrap();
    let prompt = server.list_prompts().await.unwrap()[0].to_prompt();
    assert_eq!(
        serde_json::to_value(&prompt).unwrap(),
        json!({
            "name": "greeting",
            "title": "Greeting",
            "arguments": [
                {"name": "excitement", "description": "How many exclamation marks.", "required": false},
                {"name": "name", "description": "Who to greet.", "required": true}
            ]
        })
    );
}

#[tokio::test]
async fn a10_a_mount_without_namespace_keeps_prompt_names() {
    let child = Server::new("child");
    child
        .add_prompt(PromptDef::new("greeting", greeting))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, None).unwrap();
    assert_eq!(names(&parent).await, ["greeting"]);
    assert_eq!(
        first_text(
            parent
                .get_prompt("greeting", arguments(json!({"name": "Bo"})))
                .await
        ),
        "Hello, Bo!"
    );
}

#[tokio::test]
async fn a13_nested_prompt_names_are_prefixed_at_each_level() {
    let leaf = Server::new("leaf");
    leaf.prompt("leaf_prompt", || async { "from the leaf" })
        .unwrap();
    let middle = Server::new("middle");
    middle
        .prompt("middle_prompt", || async { "from the middle" })
        .unwrap();
    middle.mount(&leaf, "leaf").unwrap();
    let root = Server::new("root");
    root.mount(&middle, "middle").unwrap();

    assert_eq!(
        names(&root).await,
        ["middle_middle_prompt", "middle_leaf_leaf_prompt"]
    );
    assert_eq!(
        first_text(
            root.get_prompt("middle_leaf_leaf_prompt", JsonObject::new())
                .await
        ),
        "from the leaf"
    );
    let info = root
        .get_prompt_info("middle_leaf_leaf_prompt", None)
        .unwrap();
    assert_eq!(
        info.owner().name(),
        "middle",
        "the directly mounted child (A37)"
    );
    assert_eq!(info.owner_name(), "leaf_leaf_prompt");
}

#[tokio::test]
async fn a17_a18_first_mounted_wins_and_the_servers_own_prompt_beats_both() {
    let first = Server::new("first");
    first.prompt("p", || async { "First app" }).unwrap();
    let second = Server::new("second");
    second.prompt("p", || async { "Second app" }).unwrap();
    let parent = Server::new("parent");
    parent.mount(&first, None).unwrap();
    parent.mount(&second, None).unwrap();
    assert_eq!(names(&parent).await, ["p", "p"]);
    assert_eq!(
        first_text(parent.get_prompt("p", JsonObject::new()).await),
        "First app"
    );
    parent.prompt("p", || async { "Parent" }).unwrap();
    assert_eq!(
        first_text(parent.get_prompt("p", JsonObject::new()).await),
        "Parent"
    );
}

#[tokio::test]
async fn a20_prompts_added_after_mounting_are_live_and_removals_too() {
    let child = Server::new("child");
    let parent = Server::new("parent");
    parent.mount(&child, "sub").unwrap();
    child.prompt("late", || async { "late" }).unwrap();
    assert_eq!(names(&parent).await, ["sub_late"]);
    assert_eq!(
        first_text(parent.get_prompt("sub_late", JsonObject::new()).await),
        "late"
    );
    assert!(child.remove_prompt("late"));
    assert!(names(&parent).await.is_empty());
}

#[tokio::test]
async fn a26_parent_tag_rules_hide_mounted_prompts_from_lists_and_gets() {
    let child = Server::new("child");
    child
        .add_prompt(PromptDef::new("public_prompt", || async { "p" }).tag("allowed"))
        .unwrap();
    child
        .add_prompt(PromptDef::new("blocked_prompt", || async { "b" }).tag("blocked"))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "c").unwrap();
    parent.disable_tags(["blocked"]);
    assert_eq!(names(&parent).await, ["c_public_prompt"]);
    let hidden = parent
        .get_prompt("c_blocked_prompt", JsonObject::new())
        .await
        .unwrap_err();
    assert_eq!(hidden.code.0, -32602);
}

#[tokio::test]
async fn h03_h08_prompt_versions_mix_rules_and_selection() {
    let server = Server::new("s");
    server
        .add_prompt(PromptDef::new("p", || async { "one" }).version("1.0"))
        .unwrap();
    server
        .add_prompt(PromptDef::new("p", || async { "two" }).version("2.0"))
        .unwrap();
    assert!(matches!(
        server.add_prompt(PromptDef::new("p", || async { "x" })),
        Err(ServerError::MixedVersioning { kind: "prompt", .. })
    ));
    let parent = Server::new("parent");
    parent.mount(&server, "c").unwrap();
    assert_eq!(
        first_text(parent.get_prompt("c_p", JsonObject::new()).await),
        "two"
    );
    assert_eq!(
        first_text(parent.render(PromptGet::new("c_p").version("1.0")).await),
        "one"
    );
}

#[tokio::test]
async fn g15_messages_keep_their_roles_and_content_blocks() {
    let server = Server::new("s");
    server
        .prompt("conversation", || async {
            vec![
                PromptMessage::new_text(Role::User, "What is in this picture?"),
                PromptMessage::new(
                    Role::Assistant,
                    ContentBlock::image("aGVsbG8=", "image/png"),
                ),
            ]
        })
        .unwrap();
    let result = rendered(server.get_prompt("conversation", JsonObject::new()).await);
    assert_eq!(
        serde_json::to_value(&result.messages).unwrap(),
        json!([
            {"role": "user", "content": {"type": "text", "text": "What is in this picture?"}},
            {"role": "assistant", "content": {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}}
        ])
    );
}

#[tokio::test]
async fn bad_prompt_arguments_are_invalid_params_naming_the_field() {
    let server = Server::new("s");
    server
        .add_prompt(PromptDef::new("greeting", greeting))
        .unwrap();
    let missing = server
        .get_prompt("greeting", JsonObject::new())
        .await
        .unwrap_err();
    assert_eq!(missing.code.0, -32602);
    assert!(missing.message.contains("name"), "{}", missing.message);
    let wrong = server
        .get_prompt(
            "greeting",
            arguments(json!({"name": "Ada", "excitement": "lots"})),
        )
        .await
        .unwrap_err();
    assert_eq!(wrong.code.0, -32602);
    assert!(wrong.message.contains("excitement"), "{}", wrong.message);
}
