//! Middleware around resources, templates and prompts: the hooks each method fires, their
//! order across mount levels, list filtering and skipping middleware. Test names start with
//! the behavior IDs they cover.

use async_trait::async_trait;
use ferrymcp::{
    Args, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, Middleware, Next,
    PromptGet, PromptInfo, ReadResource, ResourceDef, ResourceInfo, ResourceRead, Server,
    TemplateInfo,
    types::{ErrorData, GetPromptResponse, JsonObject, ReadResourceResponse},
};
use ferrymcp_test_helpers::middleware::{HookRecorder, Log};
use serde::Deserialize;

#[derive(Deserialize, schemars::JsonSchema)]
struct Id {
    id: String,
}

/// A server with one resource, one template and one prompt.
fn components(name: &str) -> Server {
    let server = Server::new(name);
    server
        .add_resource(ResourceDef::new("resource://test", || async { "plain" }))
        .unwrap();
    server
        .add_resource(ResourceDef::new(
            "resource://items/{id}",
            |Args(i): Args<Id>| async move { i.id },
        ))
        .unwrap();
    server
        .prompt("test_prompt", || async { "rendered" })
        .unwrap();
    server
}

/// The `(hook, method)` pairs `label` recorded before the call went on.
fn befores(log: &Log, label: &str) -> Vec<String> {
    log.entries()
        .into_iter()
        .filter_map(|e| {
            let rest = e.strip_prefix(&format!("{label}:"))?;
            rest.strip_suffix(":before").map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn b01_b04_every_resource_and_prompt_method_fires_message_request_and_its_hook() {
    let log = Log::new();
    let server = components("s");
    server.add_middleware(HookRecorder::new("s", &log));

    let cases: Vec<(&str, &str)> = vec![
        ("resources/read", "on_read_resource"),
        ("resources/read", "on_read_resource"),
        ("prompts/get", "on_get_prompt"),
        ("resources/list", "on_list_resources"),
        ("resources/templates/list", "on_list_resource_templates"),
        ("prompts/list", "on_list_prompts"),
    ];
    server.read_resource("resource://test").await.unwrap();
    server.read_resource("resource://items/7").await.unwrap();
    server
        .get_prompt("test_prompt", JsonObject::new())
        .await
        .unwrap();
    server.list_resources().await.unwrap();
    server.list_resource_templates().await.unwrap();
    server.list_prompts().await.unwrap();

    let expected: Vec<String> = cases
        .iter()
        .flat_map(|(method, hook)| {
            [
                format!("on_message:{method}"),
                format!("on_request:{method}"),
                format!("{hook}:{method}"),
            ]
        })
        .collect();
    assert_eq!(befores(&log, "s"), expected);
}

#[tokio::test]
async fn b12_b14_the_parents_resource_and_prompt_hooks_wrap_the_childs() {
    let log = Log::new();
    let child = components("child");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = Server::new("parent");
    parent.add_middleware(HookRecorder::new("parent", &log));
    parent.mount(&child, "nested").unwrap();

    parent
        .read_resource("resource://nested/test")
        .await
        .unwrap();
    let read = |label: &str, phase: &str| {
        [
            format!("{label}:on_message:resources/read:{phase}"),
            format!("{label}:on_request:resources/read:{phase}"),
            format!("{label}:on_read_resource:resources/read:{phase}"),
        ]
    };
    let mut expected: Vec<String> = read("parent", "before").to_vec();
    expected.extend(read("child", "before"));
    let mut afters: Vec<String> = read("child", "after").into_iter().rev().collect();
    afters.extend(read("parent", "after").into_iter().rev());
    expected.extend(afters);
    assert_eq!(log.entries(), expected, "parent outside, child inside");

    log.clear();
    parent
        .get_prompt("nested_test_prompt", JsonObject::new())
        .await
        .unwrap();
    assert_eq!(
        befores(&log, "parent"),
        [
            "on_message:prompts/get",
            "on_request:prompts/get",
            "on_get_prompt:prompts/get"
        ]
    );
    assert_eq!(
        befores(&log, "child"),
        [
            "on_message:prompts/get",
            "on_request:prompts/get",
            "on_get_prompt:prompts/get"
        ]
    );
    let entries = log.entries();
    let position = |entry: &str| entries.iter().position(|e| e == entry).unwrap();
    assert!(
        position("parent:on_get_prompt:prompts/get:before")
            < position("child:on_message:prompts/get:before")
            && position("child:on_message:prompts/get:after")
                < position("parent:on_get_prompt:prompts/get:after"),
        "the parent's prompt hook wraps the child's chain: {entries:?}"
    );

    log.clear();
    parent
        .read_resource("resource://nested/items/5")
        .await
        .unwrap();
    assert_eq!(
        befores(&log, "child"),
        [
            "on_message:resources/read",
            "on_request:resources/read",
            "on_read_resource:resources/read"
        ],
        "a template read also runs the child's hooks (B14)"
    );
}

#[tokio::test]
async fn b13_reading_the_parents_own_components_records_no_child_hooks() {
    let log = Log::new();
    let child = components("child");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = components("parent");
    parent.add_middleware(HookRecorder::new("parent", &log));
    parent.mount(&child, "nested").unwrap();

    parent.read_resource("resource://test").await.unwrap();
    parent.read_resource("resource://items/1").await.unwrap();
    parent
        .get_prompt("test_prompt", JsonObject::new())
        .await
        .unwrap();
    assert!(befores(&log, "child").is_empty(), "{:?}", log.entries());
    assert_eq!(befores(&log, "parent").len(), 9);
}

#[tokio::test]
async fn b15_a_parent_list_fires_the_childs_list_hooks_for_every_kind() {
    let log = Log::new();
    let child = components("child");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = Server::new("parent");
    parent.mount(&child, "nested").unwrap();

    parent.list_resources().await.unwrap();
    parent.list_resource_templates().await.unwrap();
    parent.list_prompts().await.unwrap();
    assert_eq!(
        befores(&log, "child"),
        [
            "on_message:resources/list",
            "on_request:resources/list",
            "on_list_resources:resources/list",
            "on_message:resources/templates/list",
            "on_request:resources/templates/list",
            "on_list_resource_templates:resources/templates/list",
            "on_message:prompts/list",
            "on_request:prompts/list",
            "on_list_prompts:prompts/list",
        ]
    );
}

/// Hides everything not tagged `public`.
struct PublicOnly;

#[async_trait]
impl Middleware for PublicOnly {
    async fn on_list_resources(
        &self,
        list: ListResources,
        next: Next<'_, ListResources>,
    ) -> Result<Vec<ResourceInfo>, ErrorData> {
        let mut listed = next.run(list).await?;
        listed.retain(|r| r.tags().contains("public"));
        Ok(listed)
    }

    async fn on_list_resource_templates(
        &self,
        list: ListResourceTemplates,
        next: Next<'_, ListResourceTemplates>,
    ) -> Result<Vec<TemplateInfo>, ErrorData> {
        let mut listed = next.run(list).await?;
        listed.retain(|t| t.tags().contains("public"));
        Ok(listed)
    }

    async fn on_list_prompts(
        &self,
        list: ListPrompts,
        next: Next<'_, ListPrompts>,
    ) -> Result<Vec<PromptInfo>, ErrorData> {
        let mut listed = next.run(list).await?;
        listed.retain(|p| p.tags().contains("public"));
        Ok(listed)
    }
}

#[tokio::test]
async fn b06_list_hooks_filter_resources_templates_and_prompts() {
    let server = Server::new("s");
    server
        .add_resource(ResourceDef::new("resource://public", || async { "" }).tag("public"))
        .unwrap();
    server
        .add_resource(ResourceDef::new("resource://private", || async { "" }))
        .unwrap();
    server
        .add_resource(
            ResourceDef::new(
                "resource://public/{id}",
                |Args(i): Args<Id>| async move { i.id },
            )
            .tag("public"),
        )
        .unwrap();
    server
        .add_resource(ResourceDef::new(
            "resource://private/{id}",
            |Args(i): Args<Id>| async move { i.id },
        ))
        .unwrap();
    server
        .add_prompt(ferrymcp::PromptDef::new("public_prompt", || async { "" }).tag("public"))
        .unwrap();
    server.prompt("private_prompt", || async { "" }).unwrap();
    server.add_middleware(PublicOnly);

    let resources: Vec<String> = server
        .list_resources()
        .await
        .unwrap()
        .iter()
        .map(|r| r.uri().to_owned())
        .collect();
    assert_eq!(resources, ["resource://public"]);
    let templates: Vec<String> = server
        .list_resource_templates()
        .await
        .unwrap()
        .iter()
        .map(|t| t.uri_template().to_owned())
        .collect();
    assert_eq!(templates, ["resource://public/{id}"]);
    let prompts: Vec<String> = server
        .list_prompts()
        .await
        .unwrap()
        .iter()
        .map(|p| p.name().to_owned())
        .collect();
    assert_eq!(prompts, ["public_prompt"]);
}

#[tokio::test]
async fn b08_reads_and_renders_without_middleware_run_none_at_any_level() {
    let log = Log::new();
    let child = components("child");
    child.add_middleware(HookRecorder::new("child", &log));
    let parent = Server::new("parent");
    parent.add_middleware(HookRecorder::new("parent", &log));
    parent.mount(&child, "nested").unwrap();

    parent
        .read(ResourceRead::new("resource://nested/items/3").without_middleware())
        .await
        .unwrap();
    parent
        .render(PromptGet::new("nested_test_prompt").without_middleware())
        .await
        .unwrap();
    assert!(log.entries().is_empty(), "{:?}", log.entries());
}

/// Records the URI and prompt name each level sees.
struct SeenNames(Log, &'static str);

#[async_trait]
impl Middleware for SeenNames {
    async fn on_read_resource(
        &self,
        read: ReadResource,
        next: Next<'_, ReadResource>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.0.push(format!("{}:{}", self.1, read.uri));
        next.run(read).await
    }

    async fn on_get_prompt(
        &self,
        get: GetPrompt,
        next: Next<'_, GetPrompt>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.0.push(format!("{}:{}", self.1, get.name));
        next.run(get).await
    }
}

#[tokio::test]
async fn b16_each_level_sees_uris_and_prompt_names_in_its_own_namespace() {
    let log = Log::new();
    let child = components("child");
    child.add_middleware(SeenNames(log.clone(), "child"));
    let parent = Server::new("parent");
    parent.add_middleware(SeenNames(log.clone(), "parent"));
    parent.mount(&child, "nested").unwrap();

    parent
        .read_resource("resource://nested/items/9")
        .await
        .unwrap();
    parent
        .get_prompt("nested_test_prompt", JsonObject::new())
        .await
        .unwrap();
    assert_eq!(
        log.entries(),
        [
            "parent:resource://nested/items/9",
            "child:resource://items/9",
            "parent:nested_test_prompt",
            "child:test_prompt",
        ]
    );
}
