//! Resources and resource templates, in process: registration, reads, mounting through one
//! and two levels, conflicts, live links, visibility and versions. Test names start with
//! the behavior IDs of `../shared/docs/behaviors.md` they cover.

use ferrymcp::{
    Args, Bytes, Json, ResourceDef, ResourceRead, Server, ServerError, ToolError,
    types::{Annotations, ErrorData, ReadResourceResponse, ResourceContents},
};
use serde::Deserialize;
use serde_json::json;

/// The URIs a read's contents carry.
fn content_uris(read: Result<ReadResourceResponse, ErrorData>) -> Vec<String> {
    match read {
        Ok(ReadResourceResponse::Complete(result)) => result
            .contents
            .iter()
            .map(|contents| match contents {
                ResourceContents::TextResourceContents { uri, .. }
                | ResourceContents::BlobResourceContents { uri, .. } => uri.clone(),
                other => panic!("unexpected contents {other:?}"),
            })
            .collect(),
        other => panic!("expected a completed read, got {other:?}"),
    }
}

/// The single text content of a read.
fn text(read: Result<ReadResourceResponse, ErrorData>) -> String {
    match read {
        Ok(ReadResourceResponse::Complete(result)) => match result.contents.as_slice() {
            [ResourceContents::TextResourceContents { text, .. }] => text.clone(),
            other => panic!("expected one text content, got {other:?}"),
        },
        other => panic!("expected a completed read, got {other:?}"),
    }
}

fn error(read: Result<ReadResourceResponse, ErrorData>) -> ErrorData {
    match read {
        Err(error) => error,
        Ok(other) => panic!("expected an error, got {other:?}"),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct UserId {
    user_id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NumericId {
    id: u32,
}

async fn uris(server: &Server) -> Vec<String> {
    server
        .list_resources()
        .await
        .expect("resources/list")
        .iter()
        .map(|r| r.uri().to_owned())
        .collect()
}

async fn templates(server: &Server) -> Vec<String> {
    server
        .list_resource_templates()
        .await
        .expect("resources/templates/list")
        .iter()
        .map(|t| t.uri_template().to_owned())
        .collect()
}

#[tokio::test]
async fn a04_resource_uri_gets_the_namespace_as_first_path_segment_and_keeps_its_name() {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data://users", || async { "[\"ada\"]" }))
        .unwrap();
    child
        .add_resource(
            ResourceDef::new("resource://my_resource", || async { "mine" }).name("my_resource"),
        )
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "data").unwrap();

    assert_eq!(
        uris(&parent).await,
        ["data://data/users", "resource://data/my_resource"]
    );
    let listed = parent.list_resources().await.unwrap();
    assert_eq!(listed[1].name(), "my_resource", "the name is not prefixed");
    assert_eq!(listed[1].owner().name(), "child");
    assert_eq!(listed[1].owner_uri(), "resource://my_resource");
    assert_eq!(
        text(parent.read_resource("data://data/users").await),
        "[\"ada\"]"
    );
    assert_eq!(
        text(parent.read_resource("resource://data/my_resource").await),
        "mine"
    );
    assert_eq!(
        content_uris(parent.read_resource("resource://data/my_resource").await),
        ["resource://data/my_resource"]
    );
    // The child's own URI is not the parent's.
    assert_eq!(
        error(parent.read_resource("data://users").await).code.0,
        -32002
    );
}

#[tokio::test]
async fn a05_template_uri_is_namespaced_and_its_parameters_still_bind() {
    let child = Server::new("child");
    child
        .add_resource(
            ResourceDef::new(
                "users://{user_id}/profile",
                |Args(u): Args<UserId>| async move { format!("profile of {}", u.user_id) },
            )
            .name("user_template"),
        )
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "api").unwrap();

    assert_eq!(templates(&parent).await, ["users://api/{user_id}/profile"]);
    let listed = parent.list_resource_templates().await.unwrap();
    assert_eq!(listed[0].name(), "user_template");
    assert_eq!(
        text(parent.read_resource("users://api/123/profile").await),
        "profile of 123"
    );
    // The contents carry the URI the client read, not the child's own.
    assert_eq!(
        content_uris(parent.read_resource("users://api/123/profile").await),
        ["users://api/123/profile"]
    );
    let grandparent = Server::new("grandparent");
    grandparent.mount(&parent, "top").unwrap();
    assert_eq!(
        content_uris(grandparent.read_resource("users://top/api/7/profile").await),
        ["users://top/api/7/profile"]
    );
}

#[tokio::test]
async fn a05_template_parameters_are_converted_to_the_declared_types() {
    let server = Server::new("s");
    server
        .add_resource(ResourceDef::new(
            "items://{id}",
            |Args(i): Args<NumericId>| async move { Json(json!({"id": i.id, "next": i.id + 1})) },
        ))
        .unwrap();
    let read = server.read_resource("items://41").await.unwrap();
    let ReadResourceResponse::Complete(result) = read else {
        panic!("{read:?}")
    };
    let ResourceContents::TextResourceContents {
        text, mime_type, ..
    } = &result.contents[0]
    else {
        panic!("{result:?}")
    };
    assert_eq!(mime_type.as_deref(), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(text).unwrap(),
        json!({"id": 41, "next": 42})
    );

    let bad = error(server.read_resource("items://abc").await);
    assert_eq!(bad.code.0, -32602, "a value that is not a number: {bad:?}");
    assert!(
        bad.message.contains("id"),
        "names the field: {}",
        bad.message
    );
}

#[tokio::test]
async fn a06_an_empty_authority_keeps_its_leading_slash() {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data:///config", || async { "cfg" }))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "child").unwrap();
    assert_eq!(uris(&parent).await, ["data://child//config"]);
    assert_eq!(
        text(parent.read_resource("data://child//config").await),
        "cfg"
    );
}

#[tokio::test]
async fn a07_wildcard_parameters_survive_a_namespaced_mount() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Extra {
        extra: String,
    }
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new(
            "resource://multi/{extra*}",
            |Args(e): Args<Extra>| async move { e.extra },
        ))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "sub").unwrap();
    assert_eq!(
        text(parent.read_resource("resource://sub/multi/abc/def").await),
        "abc/def"
    );
}

#[tokio::test]
async fn a08_query_parameter_templates_bind_through_a_mount_with_defaults() {
    fn world() -> String {
        "World".to_owned()
    }
    fn json_format() -> String {
        "json".to_owned()
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Greet {
        #[serde(default = "world")]
        name: String,
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Query {
        id: u32,
        #[serde(default = "json_format")]
        format: String,
        #[serde(default)]
        verbose: bool,
    }
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new(
            "resource://greet{?name}",
            |Args(g): Args<Greet>| async move { format!("Hello, {}!", g.name) },
        ))
        .unwrap();
    child
        .add_resource(ResourceDef::new(
            "data://items/{id}{?format,verbose}",
            |Args(q): Args<Query>| async move { format!("{} {} {}", q.id, q.format, q.verbose) },
        ))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "sub").unwrap();

    assert_eq!(
        text(
            parent
                .read_resource("resource://sub/greet?name=Alice")
                .await
        ),
        "Hello, Alice!"
    );
    assert_eq!(
        text(parent.read_resource("resource://sub/greet").await),
        "Hello, World!"
    );
    assert_eq!(
        text(
            parent
                .read_resource("data://sub/items/42?format=xml&verbose=true")
                .await
        ),
        "42 xml true"
    );
    assert_eq!(
        text(
            parent
                .read_resource("data://sub/items/5?verbose=true")
                .await
        ),
        "5 json true"
    );
}

#[tokio::test]
async fn a10_a_mount_without_namespace_keeps_uris_and_templates() {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data://users", || async { "u" }))
        .unwrap();
    child
        .add_resource(ResourceDef::new(
            "users://{user_id}",
            |Args(u): Args<UserId>| async move { u.user_id },
        ))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, None).unwrap();
    assert_eq!(uris(&parent).await, ["data://users"]);
    assert_eq!(templates(&parent).await, ["users://{user_id}"]);
    assert_eq!(text(parent.read_resource("data://users").await), "u");
    assert_eq!(text(parent.read_resource("users://7").await), "7");
}

#[tokio::test]
async fn a12_nested_resource_uris_put_the_outer_namespace_first() {
    let leaf = Server::new("leaf");
    leaf.add_resource(ResourceDef::new("leaf://data", || async { "leaf data" }))
        .unwrap();
    leaf.add_resource(ResourceDef::new(
        "leaf://item/{id}",
        |Args(i): Args<NumericId>| async move { format!("item {}", i.id) },
    ))
    .unwrap();
    let middle = Server::new("middle");
    middle.mount(&leaf, "leaf").unwrap();
    let root = Server::new("root");
    root.mount(&middle, "middle").unwrap();

    assert_eq!(uris(&root).await, ["leaf://middle/leaf/data"]);
    assert_eq!(templates(&root).await, ["leaf://middle/leaf/item/{id}"]);
    assert_eq!(
        text(root.read_resource("leaf://middle/leaf/data").await),
        "leaf data"
    );
    assert_eq!(
        text(root.read_resource("leaf://middle/leaf/item/99").await),
        "item 99"
    );
}

#[tokio::test]
async fn a17_the_first_mounted_provider_wins_reads_and_both_are_listed() {
    let first = Server::new("first");
    first
        .add_resource(ResourceDef::new("data://x", || async { "First app" }))
        .unwrap();
    first
        .add_resource(ResourceDef::new(
            "users://{user_id}",
            |Args(u): Args<UserId>| async move { format!("First app user {}", u.user_id) },
        ))
        .unwrap();
    let second = Server::new("second");
    second
        .add_resource(ResourceDef::new("data://x", || async { "Second app" }))
        .unwrap();
    second
        .add_resource(ResourceDef::new(
            "users://{user_id}",
            |Args(u): Args<UserId>| async move { format!("Second app user {}", u.user_id) },
        ))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&first, None).unwrap();
    parent.mount(&second, None).unwrap();

    assert_eq!(uris(&parent).await, ["data://x", "data://x"]);
    assert_eq!(text(parent.read_resource("data://x").await), "First app");
    assert_eq!(
        text(parent.read_resource("users://123").await),
        "First app user 123"
    );
}

#[tokio::test]
async fn a18_the_servers_own_resource_beats_a_mounted_one_and_a_concrete_uri_beats_a_template() {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data://x", || async { "child" }))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, None).unwrap();
    parent
        .add_resource(ResourceDef::new("data://x", || async { "parent" }))
        .unwrap();
    parent
        .add_resource(ResourceDef::new(
            "data://{user_id}",
            |Args(u): Args<UserId>| async move { format!("template {}", u.user_id) },
        ))
        .unwrap();
    assert_eq!(text(parent.read_resource("data://x").await), "parent");
    assert_eq!(text(parent.read_resource("data://y").await), "template y");
}

#[tokio::test]
async fn a20_resources_added_to_a_child_after_mounting_are_live_and_removals_too() {
    let child = Server::new("child");
    let parent = Server::new("parent");
    parent.mount(&child, "sub").unwrap();
    assert!(uris(&parent).await.is_empty());

    child
        .add_resource(ResourceDef::new("data://late", || async { "late" }))
        .unwrap();
    assert_eq!(uris(&parent).await, ["data://sub/late"]);
    assert_eq!(text(parent.read_resource("data://sub/late").await), "late");

    assert!(child.remove_resource("data://late"));
    assert!(uris(&parent).await.is_empty());
    assert_eq!(
        error(parent.read_resource("data://sub/late").await).code.0,
        -32002
    );
}

#[tokio::test]
async fn a26_parent_tag_rules_hide_mounted_resources_and_templates_from_lists_and_reads() {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data://public", || async { "p" }).tag("allowed"))
        .unwrap();
    child
        .add_resource(ResourceDef::new("data://secret", || async { "s" }).tag("blocked"))
        .unwrap();
    child
        .add_resource(
            ResourceDef::new(
                "data://hidden/{user_id}",
                |Args(u): Args<UserId>| async move { u.user_id },
            )
            .tag("blocked"),
        )
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "c").unwrap();
    parent.disable_tags(["blocked"]);

    assert_eq!(uris(&parent).await, ["data://c/public"]);
    assert!(templates(&parent).await.is_empty());
    assert_eq!(
        error(parent.read_resource("data://c/secret").await).code.0,
        -32002
    );
    assert_eq!(
        error(parent.read_resource("data://c/hidden/1").await)
            .code
            .0,
        -32002
    );

    let only = Server::new("only");
    only.mount(&child, "c").unwrap();
    only.enable_only_tags(["allowed"]);
    assert_eq!(uris(&only).await, ["data://c/public"]);
}

#[tokio::test]
async fn a36_a_mounted_resource_keeps_its_metadata() {
    let child = Server::new("child");
    child
        .add_resource(
            ResourceDef::new("data://doc", || async { "# doc" })
                .name("doc")
                .title("The doc")
                .description("A document")
                .mime_type("text/markdown")
                .size(5)
                .annotations(Annotations::default())
                .version("2.0"),
        )
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "c").unwrap();
    let listed = parent.list_resources().await.unwrap();
    let resource = listed[0].to_resource();
    assert_eq!(resource.uri, "data://c/doc");
    assert_eq!(resource.name, "doc");
    assert_eq!(resource.title.as_deref(), Some("The doc"));
    assert_eq!(resource.description.as_deref(), Some("A document"));
    assert_eq!(resource.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(resource.size, Some(5));
    assert!(resource.annotations.is_some());
    assert_eq!(
        resource.meta.unwrap().0["fastmcp"]["version"],
        json!("2.0"),
        "the version stamp (H09)"
    );
}

#[tokio::test]
async fn h03_mixing_versioned_and_unversioned_resources_is_rejected_per_server() {
    let server = Server::new("s");
    server
        .add_resource(ResourceDef::new("data://x", || async { "1" }).version("1.0"))
        .unwrap();
    let mixed = server.add_resource(ResourceDef::new("data://x", || async { "2" }));
    assert!(matches!(
        mixed,
        Err(ServerError::MixedVersioning {
            kind: "resource",
            ..
        })
    ));
    let duplicate =
        server.add_resource(ResourceDef::new("data://x", || async { "3" }).version("1.0"));
    assert!(matches!(duplicate, Err(ServerError::Duplicate { .. })));
}

#[tokio::test]
async fn h08_h16_reads_pick_the_highest_version_unless_one_is_selected_also_through_a_mount() {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data://v", || async { "one" }).version("1.0"))
        .unwrap();
    child
        .add_resource(ResourceDef::new("data://v", || async { "two" }).version("2.0"))
        .unwrap();
    let parent = Server::new("parent");
    parent.mount(&child, "c").unwrap();
    assert_eq!(text(parent.read_resource("data://c/v").await), "two");
    assert_eq!(
        text(
            parent
                .read(ResourceRead::new("data://c/v").version("1.0"))
                .await
        ),
        "one"
    );
    let missing = error(
        parent
            .read(ResourceRead::new("data://c/v").version("3.0"))
            .await,
    );
    assert_eq!(missing.code.0, -32002);
}

#[tokio::test]
async fn unknown_resources_failing_handlers_and_panics_are_clear_errors_and_the_server_goes_on() {
    let server = Server::new("s");
    server
        .add_resource(ResourceDef::new("data://locked", || async {
            Err::<String, _>(ToolError::new("the file is locked"))
        }))
        .unwrap();
    server
        .add_resource(ResourceDef::new("data://broken", || async {
            Err::<String, _>(ToolError::internal(std::io::Error::other("disk on fire")))
        }))
        .unwrap();
    server
        .add_resource(ResourceDef::new("data://panics", || async {
            if true {
                panic!("boom");
            }
            "never"
        }))
        .unwrap();
    server
        .add_resource(ResourceDef::new("data://ok", || async { "fine" }))
        .unwrap();

    let unknown = error(server.read_resource("data://nope").await);
    assert_eq!(
        (unknown.code.0, unknown.message.as_ref()),
        (-32002, "Unknown resource: 'data://nope'")
    );
    let locked = error(server.read_resource("data://locked").await);
    assert_eq!(
        (locked.code.0, locked.message.as_ref()),
        (-32603, "the file is locked")
    );
    let broken = error(server.read_resource("data://broken").await);
    assert_eq!(broken.message, "Error reading resource 'data://broken'");
    let panicked = error(server.read_resource("data://panics").await);
    assert_eq!(panicked.code.0, -32603);
    assert_eq!(text(server.read_resource("data://ok").await), "fine");
}

#[tokio::test]
async fn binary_contents_are_base64_blobs_with_their_mime_type() {
    let server = Server::new("s");
    server
        .add_resource(
            ResourceDef::new("data://logo", || async {
                Bytes(vec![0x89, b'P', b'N', b'G'])
            })
            .mime_type("image/png"),
        )
        .unwrap();
    let read = server.read_resource("data://logo").await.unwrap();
    let ReadResourceResponse::Complete(result) = read else {
        panic!("{read:?}")
    };
    assert_eq!(
        serde_json::to_value(&result.contents[0]).unwrap(),
        json!({"uri": "data://logo", "mimeType": "image/png", "blob": "iVBORw=="})
    );
}

#[tokio::test]
async fn a_template_whose_handler_needs_arguments_the_uri_lacks_is_rejected_at_registration() {
    let server = Server::new("s");
    let bad = server.add_resource(ResourceDef::new(
        "data://x/{other}",
        |Args(u): Args<UserId>| async move { u.user_id },
    ));
    match bad {
        Err(ServerError::TemplateArguments { missing, .. }) => assert_eq!(missing, ["user_id"]),
        other => panic!("expected TemplateArguments, got {other:?}"),
    }
    let unparsable = server.add_resource(ResourceDef::new("data://{unclosed", || async { "" }));
    assert!(matches!(
        unparsable,
        Err(ServerError::InvalidTemplate { .. })
    ));
}

/// Fails every resource and prompt listing of the server it is added to.
struct BrokenLists;

#[async_trait::async_trait]
impl ferrymcp::Middleware for BrokenLists {
    async fn on_list_resources(
        &self,
        _list: ferrymcp::ListResources,
        _next: ferrymcp::Next<'_, ferrymcp::ListResources>,
    ) -> Result<Vec<ferrymcp::ResourceInfo>, ErrorData> {
        Err(ErrorData::internal_error("unreachable upstream", None))
    }

    async fn on_list_prompts(
        &self,
        _list: ferrymcp::ListPrompts,
        _next: ferrymcp::Next<'_, ferrymcp::ListPrompts>,
    ) -> Result<Vec<ferrymcp::PromptInfo>, ErrorData> {
        Err(ErrorData::internal_error("unreachable upstream", None))
    }
}

#[tokio::test]
async fn a28_a_child_whose_listing_fails_does_not_break_the_parents_listing() {
    let working = Server::new("working");
    working
        .add_resource(ResourceDef::new("working://data", || async { "ok" }))
        .unwrap();
    working.prompt("prompt", || async { "ok" }).unwrap();
    let broken = Server::new("broken");
    broken
        .add_resource(ResourceDef::new("broken://data", || async { "never" }))
        .unwrap();
    broken.prompt("prompt", || async { "never" }).unwrap();
    broken.add_middleware(BrokenLists);
    let parent = Server::new("parent");
    parent.mount(&broken, "broken").unwrap();
    parent.mount(&working, "working").unwrap();

    assert_eq!(uris(&parent).await, ["working://working/data"]);
    let prompts: Vec<String> = parent
        .list_prompts()
        .await
        .unwrap()
        .iter()
        .map(|p| p.name().to_owned())
        .collect();
    assert_eq!(prompts, ["working_prompt"]);
}
