//! Authorization in the server model (AU17, AU18 and the 403 decision of AU7): requirements
//! on tools, resources, templates, prompts and mounts, checked in process through the
//! public call and listing APIs with a principal in the request scope, and over the real
//! stdio wire (an in-memory duplex) for an anonymous client.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use ferrymcp_core::{
    Args, CallTool, Extension, MountOptions, PromptDef, PromptGet, RequestScope, ResourceDef,
    ResourceRead, Server, ToolCall, ToolCallNext, ToolDef,
    auth::{Access, BearerToken, Operation, Principal, Requirement, ScopeMatcher},
    types::{CallToolResponse, CallToolResult, ErrorData, JsonObject},
};
use ferrymcp_test_helpers::client::{Lifecycle, in_memory};
use serde_json::json;

fn caller(scopes: &[&str]) -> RequestScope {
    RequestScope::new().with_principal(
        Principal::new("web-app")
            .with_issuer("https://as.example")
            .with_subject("alice")
            .with_scopes(scopes.iter().copied()),
    )
}

async fn call(
    server: &Server,
    name: &str,
    scope: RequestScope,
) -> Result<CallToolResult, ErrorData> {
    match server.call(ToolCall::new(name).scope(scope)).await? {
        CallToolResponse::Complete(result) => Ok(result),
        other => panic!("expected a complete result, got {other:?}"),
    }
}

async fn tool_names(server: &Server, scope: RequestScope) -> Vec<String> {
    let mut names: Vec<String> = server
        .list_tools_in(scope)
        .await
        .unwrap()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    names.sort();
    names
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A server with one open and one guarded tool, resource, template and prompt.
fn guarded_server() -> Server {
    let server = Server::new("s");
    server.tool("open", || async { "open" }).unwrap();
    server
        .add_tool(ToolDef::new("secret", || async { "secret" }).requires(["admin"]))
        .unwrap();
    server.resource("data://open", || async { "open" }).unwrap();
    server
        .add_resource(ResourceDef::new("data://secret", || async { "secret" }).requires(["admin"]))
        .unwrap();
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Id {
        id: String,
    }
    server
        .add_resource(
            ResourceDef::new("users://{id}", |Args(i): Args<Id>| async move { i.id })
                .requires(["users:read"]),
        )
        .unwrap();
    server.prompt("open", || async { "open" }).unwrap();
    server
        .add_prompt(PromptDef::new("secret", || async { "secret" }).requires(["admin"]))
        .unwrap();
    server
}

/// The same names, absent: what an unknown name is answered with.
fn empty_twin() -> Server {
    Server::new("s")
}

#[tokio::test]
async fn au18_tool_requirement_denies_callers_without_the_scope() {
    let server = guarded_server();
    assert_eq!(
        text(&call(&server, "secret", caller(&["admin"])).await.unwrap()),
        "secret"
    );
    assert!(call(&server, "secret", caller(&["read"])).await.is_err());
    assert!(
        call(&server, "secret", RequestScope::new()).await.is_err(),
        "anonymous"
    );
    assert!(call(&server, "open", RequestScope::new()).await.is_ok());
}

#[tokio::test]
async fn au18_denied_tool_resource_template_and_prompt_answer_as_unknown_ones() {
    let server = guarded_server();
    let twin = empty_twin();
    for scope in [caller(&["read"]), RequestScope::new()] {
        let denied = call(&server, "secret", scope.clone()).await.unwrap_err();
        let unknown = call(&twin, "secret", scope.clone()).await.unwrap_err();
        assert_eq!(denied, unknown);

        for uri in ["data://secret", "users://42"] {
            let denied = server
                .read(ResourceRead::new(uri).scope(scope.clone()))
                .await
                .unwrap_err();
            let unknown = twin
                .read(ResourceRead::new(uri).scope(scope.clone()))
                .await
                .unwrap_err();
            assert_eq!(denied, unknown, "{uri}");
        }

        let denied = server
            .render(PromptGet::new("secret").scope(scope.clone()))
            .await
            .unwrap_err();
        let unknown = twin
            .render(PromptGet::new("secret").scope(scope.clone()))
            .await
            .unwrap_err();
        assert_eq!(denied, unknown);
    }
    // With the scopes, each is served.
    assert!(
        server
            .read(ResourceRead::new("data://secret").scope(caller(&["admin"])))
            .await
            .is_ok()
    );
    assert!(
        server
            .read(ResourceRead::new("users://42").scope(caller(&["users:read"])))
            .await
            .is_ok()
    );
    assert!(
        server
            .render(PromptGet::new("secret").scope(caller(&["admin"])))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn au18_each_listing_hides_what_the_caller_may_not_use() {
    let server = guarded_server();
    assert_eq!(tool_names(&server, caller(&["read"])).await, ["open"]);
    assert_eq!(
        tool_names(&server, caller(&["admin"])).await,
        ["open", "secret"]
    );

    let uris = |listed: Vec<ferrymcp_core::ResourceInfo>| {
        listed
            .iter()
            .map(|r| r.uri().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        uris(server.list_resources_in(RequestScope::new()).await.unwrap()),
        ["data://open"]
    );
    assert_eq!(
        uris(server.list_resources_in(caller(&["admin"])).await.unwrap()),
        ["data://open", "data://secret"]
    );

    let templates = |listed: Vec<ferrymcp_core::TemplateInfo>| listed.len();
    assert_eq!(
        templates(
            server
                .list_resource_templates_in(caller(&["admin"]))
                .await
                .unwrap()
        ),
        0
    );
    assert_eq!(
        templates(
            server
                .list_resource_templates_in(caller(&["users:read"]))
                .await
                .unwrap()
        ),
        1
    );

    let prompts = |listed: Vec<ferrymcp_core::PromptInfo>| {
        listed
            .iter()
            .map(|p| p.name().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        prompts(server.list_prompts_in(RequestScope::new()).await.unwrap()),
        ["open"]
    );
    assert_eq!(
        prompts(server.list_prompts_in(caller(&["admin"])).await.unwrap()),
        ["open", "secret"]
    );
}

#[tokio::test]
async fn au18_hide_unauthorized_false_lists_everything_and_denies_with_the_scopes() {
    let server = guarded_server().hide_unauthorized(false);
    assert_eq!(
        tool_names(&server, RequestScope::new()).await,
        ["open", "secret"]
    );
    assert_eq!(
        server
            .list_resources_in(RequestScope::new())
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        server
            .list_resource_templates_in(RequestScope::new())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        server
            .list_prompts_in(RequestScope::new())
            .await
            .unwrap()
            .len(),
        2
    );

    let denied = call(&server, "secret", caller(&["read"]))
        .await
        .unwrap_err();
    assert_eq!(denied.code.0, -32600);
    assert!(denied.message.contains("admin"), "{}", denied.message);
    let denied = server
        .read(ResourceRead::new("users://7").scope(caller(&["read"])))
        .await
        .unwrap_err();
    assert_eq!(denied.code.0, -32600);
    assert!(denied.message.contains("users:read"), "{}", denied.message);
    let denied = server.render(PromptGet::new("secret")).await.unwrap_err();
    assert_eq!(denied.code.0, -32600);
}

/// outer mount `outer` → inner mount `inner` → the tool `deep` requiring `tool`.
fn nested() -> Server {
    let grandchild = Server::new("gc");
    grandchild
        .add_tool(ToolDef::new("deep", || async { "deep" }).requires(["tool", "outer"]))
        .unwrap();
    grandchild.tool("plain", || async { "plain" }).unwrap();
    grandchild
        .add_resource(ResourceDef::new("data://gc", || async { "gc" }))
        .unwrap();
    grandchild.prompt("hint", || async { "hint" }).unwrap();
    let child = Server::new("child");
    child
        .mount(
            &grandchild,
            MountOptions::new().namespace("gc").requires(["inner"]),
        )
        .unwrap();
    let root = Server::new("root");
    root.mount(
        &child,
        MountOptions::new().namespace("child").requires(["outer"]),
    )
    .unwrap();
    root.tool("top", || async { "top" }).unwrap();
    root
}

#[tokio::test]
async fn au18_nested_mount_requirements_stack_with_the_components() {
    let root = nested();
    assert!(
        call(&root, "child_gc_deep", caller(&["outer", "inner", "tool"]))
            .await
            .is_ok()
    );
    for partial in [
        &["inner", "tool"][..],
        &["outer", "tool"],
        &["outer", "inner"],
    ] {
        assert!(
            call(&root, "child_gc_deep", caller(partial)).await.is_err(),
            "{partial:?}"
        );
    }
    // A component without a requirement of its own still needs both mounts' scopes.
    assert!(
        call(&root, "child_gc_plain", caller(&["outer"]))
            .await
            .is_err()
    );
    assert!(
        call(&root, "child_gc_plain", caller(&["outer", "inner"]))
            .await
            .is_ok()
    );
    assert!(
        root.read(ResourceRead::new("data://child/gc/gc").scope(caller(&["outer"])))
            .await
            .is_err()
    );
    assert!(
        root.read(ResourceRead::new("data://child/gc/gc").scope(caller(&["outer", "inner"])))
            .await
            .is_ok()
    );
    assert!(
        root.render(PromptGet::new("child_gc_hint").scope(caller(&["inner"])))
            .await
            .is_err()
    );
    assert!(
        root.render(PromptGet::new("child_gc_hint").scope(caller(&["outer", "inner"])))
            .await
            .is_ok()
    );

    assert_eq!(tool_names(&root, caller(&["inner", "tool"])).await, ["top"]);
    assert_eq!(
        tool_names(&root, caller(&["outer", "inner"])).await,
        ["child_gc_plain", "top"]
    );
    assert_eq!(
        tool_names(&root, caller(&["outer", "inner", "tool"])).await,
        ["child_gc_deep", "child_gc_plain", "top"]
    );
}

#[tokio::test]
async fn au7_authorize_names_every_scope_of_the_mounts_and_the_component() {
    let root = nested();
    let bob = Principal::new("app").with_scopes(["inner"]);
    assert_eq!(
        root.authorize(Some(&bob), Operation::CallTool("child_gc_deep")),
        Access::Denied {
            scopes: vec!["outer".into(), "inner".into(), "tool".into()]
        }
    );
    assert_eq!(
        root.authorize(None, Operation::ReadResource("data://child/gc/gc")),
        Access::Denied {
            scopes: vec!["outer".into(), "inner".into()]
        }
    );
    assert_eq!(
        root.authorize(None, Operation::GetPrompt("child_gc_hint")),
        Access::Denied {
            scopes: vec!["outer".into(), "inner".into()]
        }
    );
    let full = Principal::new("app").with_scopes(["outer", "inner", "tool"]);
    assert_eq!(
        root.authorize(Some(&full), Operation::CallTool("child_gc_deep")),
        Access::Allowed
    );
    assert_eq!(
        root.authorize(None, Operation::CallTool("top")),
        Access::Allowed
    );
    assert_eq!(
        root.authorize(None, Operation::CallTool("nothing")),
        Access::Allowed
    );
    assert_eq!(
        root.authorize(None, Operation::Other("tasks/get")),
        Access::Allowed
    );
    // The child answers for its own subtree: only the inner mount and the tool.
    let child = &root.mounted()[0];
    assert_eq!(
        child.authorize(None, Operation::CallTool("gc_deep")),
        Access::Denied {
            scopes: vec!["inner".into(), "tool".into(), "outer".into()]
        }
    );
}

#[tokio::test]
async fn au7_authorize_resolves_templates_renames_and_versions_like_dispatch() {
    let child = Server::new("child");
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Id {
        id: String,
    }
    child
        .add_resource(
            ResourceDef::new("users://{id}", |Args(i): Args<Id>| async move { i.id })
                .requires(["users:read"]),
        )
        .unwrap();
    child
        .add_tool(ToolDef::new("orig", || async { 1 }).requires(["renamed"]))
        .unwrap();
    child
        .add_tool(ToolDef::new("calc", || async { 1 }).version("1.0"))
        .unwrap();
    child
        .add_tool(
            ToolDef::new("calc", || async { 2 })
                .version("2.0")
                .requires(["v2"]),
        )
        .unwrap();
    let root = Server::new("root");
    root.mount(
        &child,
        MountOptions::new()
            .namespace("c")
            .rename_tool("orig", "new"),
    )
    .unwrap();
    let denied = |scope: &str| Access::Denied {
        scopes: vec![scope.to_owned()],
    };
    assert_eq!(
        root.authorize(None, Operation::ReadResource("users://c/9")),
        denied("users:read")
    );
    assert_eq!(
        root.authorize(None, Operation::CallTool("c_new")),
        denied("renamed")
    );
    // The old name is not reachable at all: unknown, so allowed (dispatch answers it).
    assert_eq!(
        root.authorize(None, Operation::CallTool("c_orig")),
        Access::Allowed
    );
    // Without a version, dispatch picks 2.0, which needs `v2`.
    assert_eq!(
        root.authorize(None, Operation::CallTool("c_calc")),
        denied("v2")
    );
    // Dispatch agrees: 2.0 is refused, 1.0 selected explicitly is served.
    assert!(root.call(ToolCall::new("c_calc")).await.is_err());
    assert!(
        root.call(ToolCall::new("c_calc").version("1.0"))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn au18_a_predicate_over_the_claims_decides() {
    let server = Server::new("s");
    server
        .add_tool(
            ToolDef::new("billing", || async { "ok" }).requires(Requirement::predicate(
                |p: &Principal| p.claim("tenant").is_some_and(|t| t == "acme"),
            )),
        )
        .unwrap();
    let with_tenant = |tenant: &str| {
        let mut claims = JsonObject::new();
        claims.insert("tenant".into(), tenant.into());
        RequestScope::new().with_principal(Principal::new("app").with_claims(claims))
    };
    assert!(call(&server, "billing", with_tenant("acme")).await.is_ok());
    assert!(
        call(&server, "billing", with_tenant("other"))
            .await
            .is_err()
    );
    assert!(call(&server, "billing", RequestScope::new()).await.is_err());
    let other = Principal::new("app");
    assert_eq!(
        server.authorize(Some(&other), Operation::CallTool("billing")),
        Access::Denied { scopes: vec![] }
    );
}

/// `files` covers `files:read` and `files:write`.
struct Hierarchy;

impl ScopeMatcher for Hierarchy {
    fn covers(&self, granted: &[String], required: &str) -> bool {
        granted.iter().any(|g| {
            g == required
                || required
                    .strip_prefix(g.as_str())
                    .is_some_and(|rest| rest.starts_with(':'))
        })
    }
}

#[tokio::test]
async fn au18_the_root_scope_matcher_decides_for_mounted_components() {
    let child = Server::new("child");
    child
        .add_tool(ToolDef::new("read", || async { "data" }).requires(["files:read"]))
        .unwrap();
    let plain = Server::new("plain");
    plain.mount(&child, "child").unwrap();
    let root = Server::new("root").with_scope_matcher(Hierarchy);
    root.mount(&child, "child").unwrap();

    assert!(call(&root, "child_read", caller(&["files"])).await.is_ok());
    assert_eq!(tool_names(&root, caller(&["files"])).await, ["child_read"]);
    let files = Principal::new("app").with_scopes(["files"]);
    assert_eq!(
        root.authorize(Some(&files), Operation::CallTool("child_read")),
        Access::Allowed
    );
    // Exact matching elsewhere: `files` does not cover `files:read`.
    assert!(
        call(&plain, "child_read", caller(&["files"]))
            .await
            .is_err()
    );
    // Nor does `files:read` cover `files`, with the hierarchy.
    assert!(
        call(&root, "child_read", caller(&["files:write"]))
            .await
            .is_err()
    );
}

/// Counts the calls that reach the interceptors.
struct Counter(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Extension for Counter {
    fn id(&self) -> &str {
        "com.example/counter"
    }
    async fn intercept_call_tool(
        &self,
        call: CallTool,
        next: ToolCallNext<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.run(call).await
    }
}

#[tokio::test]
async fn au18_a_denied_call_never_reaches_extension_interceptors() {
    let server = guarded_server();
    let seen = Arc::new(AtomicUsize::new(0));
    server.add_extension(Counter(Arc::clone(&seen))).unwrap();
    assert!(call(&server, "secret", caller(&["read"])).await.is_err());
    assert!(call(&server, "secret", RequestScope::new()).await.is_err());
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    assert!(call(&server, "secret", caller(&["admin"])).await.is_ok());
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    // Without middleware (and interceptors) the check still applies.
    let skipped = server
        .call(
            ToolCall::new("secret")
                .scope(caller(&["read"]))
                .without_middleware(),
        )
        .await;
    assert!(skipped.is_err());
}

#[tokio::test]
async fn au17_tools_read_the_principal_its_claims_and_an_optional_one() {
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("whoami", |p: Principal| async move {
            json!({
                "issuer": p.issuer,
                "client": p.client_id,
                "subject": p.subject,
                "scopes": p.scopes,
                "tenant": p.claim("tenant"),
            })
        }))
        .unwrap();
    server
        .add_tool(ToolDef::new("maybe", |p: Option<Principal>| async move {
            p.map_or_else(|| "anonymous".to_owned(), |p| p.client_id)
        }))
        .unwrap();
    let mut claims = JsonObject::new();
    claims.insert("tenant".into(), "acme".into());
    let alice = Principal::new("web-app")
        .with_issuer("https://as.example")
        .with_subject("alice")
        .with_scopes(["read", "write"])
        .with_claims(claims);
    let seen = call(&server, "whoami", RequestScope::new().with_principal(alice))
        .await
        .unwrap();
    assert_eq!(
        seen.structured_content.unwrap(),
        json!({ "issuer": "https://as.example", "client": "web-app", "subject": "alice",
                "scopes": ["read", "write"], "tenant": "acme" })
    );

    let anonymous = call(&server, "whoami", RequestScope::new()).await.unwrap();
    assert_eq!(anonymous.is_error, Some(true));
    assert!(
        text(&anonymous).contains("authenticated caller"),
        "{}",
        text(&anonymous)
    );

    let maybe = call(&server, "maybe", RequestScope::new()).await.unwrap();
    assert_eq!(maybe.structured_content.unwrap()["result"], "anonymous");
    let maybe = call(&server, "maybe", caller(&[])).await.unwrap();
    assert_eq!(maybe.structured_content.unwrap()["result"], "web-app");
}

#[tokio::test]
async fn au17_the_bearer_token_only_when_a_layer_put_one_in_the_request() {
    let server = Server::new("s");
    server
        .add_tool(ToolDef::new("token", |t: BearerToken| async move {
            t.expose().len()
        }))
        .unwrap();
    let absent = call(&server, "token", caller(&["read"])).await.unwrap();
    assert_eq!(absent.is_error, Some(true));
    assert!(text(&absent).contains("access token"), "{}", text(&absent));

    let with_token = caller(&[]).with_extension(BearerToken::new("abc.def.ghi"));
    let present = call(&server, "token", with_token).await.unwrap();
    assert_eq!(present.structured_content.unwrap()["result"], 11);

    // In the HTTP parts' extensions, as the resource server leaves it.
    let (mut parts, ()) = http::Request::new(()).into_parts();
    parts.extensions.insert(BearerToken::new("xyz"));
    let over_http = RequestScope::new().with_extension(parts);
    let present = call(&server, "token", over_http).await.unwrap();
    assert_eq!(present.structured_content.unwrap()["result"], 3);
}

#[tokio::test]
async fn au18_over_stdio_an_anonymous_client_neither_sees_nor_calls_guarded_components() {
    let pair = in_memory(guarded_server(), Lifecycle::Modern, false)
        .await
        .unwrap();
    let twin = in_memory(empty_twin(), Lifecycle::Modern, false)
        .await
        .unwrap();
    let tools = pair.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["open"]);
    let prompts = pair.client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(pair.client.list_all_resources().await.unwrap().len(), 1);
    assert!(
        pair.client
            .list_all_resource_templates()
            .await
            .unwrap()
            .is_empty()
    );

    let params = ferrymcp_core::types::CallToolRequestParams::new("secret");
    let denied = pair
        .client
        .call_tool_once(params.clone())
        .await
        .unwrap_err();
    let unknown = twin.client.call_tool_once(params).await.unwrap_err();
    let (rmcp::ServiceError::McpError(denied), rmcp::ServiceError::McpError(unknown)) =
        (denied, unknown)
    else {
        panic!("expected JSON-RPC errors");
    };
    assert_eq!(denied, unknown);
    assert_eq!(denied.code.0, -32602);
    pair.client.cancel().await.unwrap();
    twin.client.cancel().await.unwrap();
}

#[tokio::test]
async fn au18_middleware_still_sees_the_principal() {
    struct Spy(Arc<std::sync::Mutex<Vec<String>>>);
    #[async_trait::async_trait]
    impl ferrymcp_core::Middleware for Spy {
        async fn on_call_tool(
            &self,
            call: CallTool,
            next: ferrymcp_core::middleware::Next<'_, CallTool>,
        ) -> Result<CallToolResponse, ErrorData> {
            if let Some(p) = call.context().scope().principal() {
                self.0.lock().unwrap().push(p.client_id.clone());
            }
            next.run(call).await
        }
    }
    let server = guarded_server();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    server.add_middleware(Spy(Arc::clone(&seen)));
    let _ = call(&server, "secret", caller(&["admin"])).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["web-app"]);
}

#[tokio::test]
async fn au7_required_scopes_names_every_scope_in_the_tree_once() {
    assert_eq!(nested().required_scopes(), ["outer", "inner", "tool"]);
    assert_eq!(guarded_server().required_scopes(), ["admin", "users:read"]);
    assert!(Server::new("open").required_scopes().is_empty());
}

#[tokio::test]
async fn au18_over_stdio_with_hiding_off_a_denied_call_is_invalid_request_naming_the_scopes() {
    let pair = in_memory(
        guarded_server().hide_unauthorized(false),
        Lifecycle::Modern,
        false,
    )
    .await
    .unwrap();
    assert_eq!(pair.client.list_all_tools().await.unwrap().len(), 2);
    let params = ferrymcp_core::types::CallToolRequestParams::new("secret");
    let Err(rmcp::ServiceError::McpError(denied)) = pair.client.call_tool_once(params).await else {
        panic!("expected a JSON-RPC error");
    };
    assert_eq!(denied.code.0, -32600);
    assert_eq!(
        denied.message,
        "Insufficient scope for tool 'secret': it needs admin"
    );
    assert_eq!(denied.data, Some(json!({ "scopes": ["admin"] })));
    pair.client.cancel().await.unwrap();
}

#[tokio::test]
async fn au7_authorize_sees_a_requirement_added_to_a_child_after_mounting() {
    let child = Server::new("child");
    let root = Server::new("root");
    root.mount(&child, "child").unwrap();
    assert_eq!(
        root.authorize(None, Operation::CallTool("child_late")),
        Access::Allowed
    );
    child
        .add_tool(ToolDef::new("late", || async {}).requires(["late"]))
        .unwrap();
    assert_eq!(
        root.authorize(None, Operation::CallTool("child_late")),
        Access::Denied {
            scopes: vec!["late".into()]
        }
    );
    assert_eq!(root.required_scopes(), ["late"]);
}
