//! `completion/complete` (issue 15, part 1): completers on prompt arguments and template
//! variables, in process, through mounts (namespaced prompt names and template URIs, the
//! child's middleware), over real HTTP in both eras with rmcp's client (the 2026-07-28
//! answer validated against the official schema), and through the proxy to an upstream
//! that offers completions. The `completions` capability is advertised only when there are
//! completers.

use std::sync::{Arc, Mutex};

use ferrymcp::{
    Args, Message, Middleware, MountOptions, Next, PromptDef, Reply, RequestScope, ResourceDef,
    Server, ToolError,
    completion::{Completion, Suggestions},
    types::{ArgumentInfo, CompleteRequestParams, CompletionContext, ErrorData, Reference},
};
use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream};
use ferrymcp_test_helpers::{
    client::{Lifecycle, connect},
    http::LoopbackHttp,
    schema::{Spec, assert_valid},
};
use serde_json::json;

const CITIES: &[&str] = &["paris", "park city", "porto", "prague", "rome"];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Trip {
    /// Where to go.
    city: String,
    /// Which country.
    country: Option<String>,
}

async fn plan(Args(trip): Args<Trip>) -> String {
    format!("Plan a trip to {} ({:?})", trip.city, trip.country)
}

/// A server with a completed prompt (`plan.city`, which also echoes `country` when it was
/// resolved) and a completed template (`users://{id}/profile`).
fn travel() -> Server {
    let server = Server::new("travel");
    server
        .add_prompt(
            PromptDef::new("plan", plan).complete("city", |c: Completion| async move {
                let mut values = c.matching(CITIES.iter().copied());
                if let Some(country) = c.other("country") {
                    values.push(format!("in {country}"));
                }
                values
            }),
        )
        .expect("prompt");
    server
        .add_resource(
            ResourceDef::new("users://{id}/profile", || async { "profile" })
                .complete("id", |c: Completion| async move {
                    c.matching(["ada", "alan", "grace"])
                }),
        )
        .expect("template");
    server
}

fn ask(reference: Reference, argument: &str, value: &str) -> CompleteRequestParams {
    CompleteRequestParams::new(reference, ArgumentInfo::new(argument, value))
}

async fn values(server: &Server, request: CompleteRequestParams) -> Vec<String> {
    server
        .complete(request, RequestScope::new())
        .await
        .expect("completion/complete")
        .completion
        .values
}

async fn error(server: &Server, request: CompleteRequestParams) -> ErrorData {
    server
        .complete(request, RequestScope::new())
        .await
        .expect_err("an error")
}

#[tokio::test]
async fn a_prompt_argument_completes_from_what_was_typed_and_the_other_arguments() {
    let server = travel();
    let typed = values(&server, ask(Reference::for_prompt("plan"), "city", "P")).await;
    assert_eq!(typed, ["paris", "park city", "porto", "prague"]);
    let narrowed = values(&server, ask(Reference::for_prompt("plan"), "city", "pa")).await;
    assert_eq!(narrowed, ["paris", "park city"]);

    let arguments = [("country".to_owned(), "France".to_owned())].into();
    let with_context = ask(Reference::for_prompt("plan"), "city", "pa")
        .with_context(CompletionContext::with_arguments(arguments));
    assert_eq!(
        values(&server, with_context).await,
        ["paris", "park city", "in France"]
    );
}

#[tokio::test]
async fn a_template_variable_completes_by_template_or_by_a_uri_it_matches() {
    let server = travel();
    let by_template = ask(Reference::for_resource("users://{id}/profile"), "id", "a");
    assert_eq!(values(&server, by_template).await, ["ada", "alan"]);
    let by_uri = ask(Reference::for_resource("users://x/profile"), "id", "g");
    assert_eq!(values(&server, by_uri).await, ["grace"]);
}

#[tokio::test]
async fn an_argument_without_a_completer_has_no_suggestions_and_unknown_targets_are_invalid_params()
{
    let server = travel();
    let answer = server
        .complete(
            ask(Reference::for_prompt("plan"), "country", "f"),
            RequestScope::new(),
        )
        .await
        .expect("an answer");
    assert!(answer.completion.values.is_empty());

    let unknown = error(&server, ask(Reference::for_prompt("nope"), "city", "")).await;
    assert_eq!(unknown.code.0, -32602);
    assert!(unknown.message.contains("nope"), "{}", unknown.message);
    let unknown = error(
        &server,
        ask(Reference::for_resource("files://{path}"), "path", ""),
    )
    .await;
    assert_eq!(unknown.code.0, -32602);
    assert!(
        unknown.message.contains("files://{path}"),
        "{}",
        unknown.message
    );
}

#[tokio::test]
async fn more_than_a_hundred_suggestions_are_cut_with_has_more_and_the_total() {
    let server = Server::new("many");
    server
        .add_prompt(
            PromptDef::new("pick", || async { "pick" })
                .complete("n", |_c: Completion| async move {
                    (0..250).map(|i| i.to_string()).collect::<Vec<_>>()
                }),
        )
        .expect("prompt");
    server
        .add_prompt(
            PromptDef::new("paged", || async { "paged" })
                .complete("n", |_c: Completion| async move {
                    Suggestions::new(["a", "b"]).total(40).has_more(true)
                }),
        )
        .expect("prompt");
    let answer = server
        .complete(
            ask(Reference::for_prompt("pick"), "n", ""),
            RequestScope::new(),
        )
        .await
        .expect("an answer")
        .completion;
    assert_eq!(answer.values.len(), 100);
    assert_eq!(answer.total, Some(250));
    assert_eq!(answer.has_more, Some(true));
    let paged = server
        .complete(
            ask(Reference::for_prompt("paged"), "n", ""),
            RequestScope::new(),
        )
        .await
        .expect("an answer")
        .completion;
    assert_eq!(
        (paged.values.len(), paged.total, paged.has_more),
        (2, Some(40), Some(true))
    );
}

#[tokio::test]
async fn a_failing_completer_answers_an_error_and_the_server_goes_on() {
    let server = Server::new("failing");
    server
        .add_prompt(PromptDef::new("p", || async { "p" }).complete(
            "a",
            |c: Completion| async move {
                if c.value() == "boom" {
                    Err(ToolError::new("no suggestions for boom"))
                } else {
                    Ok(vec!["fine"])
                }
            },
        ))
        .expect("prompt");
    let failed = error(&server, ask(Reference::for_prompt("p"), "a", "boom")).await;
    assert!(failed.code.0 < 0);
    assert_eq!(
        values(&server, ask(Reference::for_prompt("p"), "a", "f")).await,
        ["fine"]
    );
}

/// Records the method of every request it sees, under a label.
struct Recorder(&'static str, Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl Middleware for Recorder {
    async fn on_message(&self, message: Message, next: Next<'_>) -> Result<Reply, ErrorData> {
        self.1
            .lock()
            .expect("log")
            .push(format!("{}:{}", self.0, message.method()));
        next.run(message).await
    }
}

#[tokio::test]
async fn mounted_completers_answer_under_namespaced_names_and_uris_through_the_childs_middleware() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let child = travel();
    child.add_middleware(Recorder("child", Arc::clone(&log)));
    let parent = Server::new("parent");
    parent.add_middleware(Recorder("parent", Arc::clone(&log)));
    parent.mount(&child, "trips").expect("mount");
    let grandparent = Server::new("root");
    grandparent
        .mount(&parent, MountOptions::new().namespace("outer"))
        .expect("mount");

    let prompt = ask(Reference::for_prompt("outer_trips_plan"), "city", "ro");
    assert_eq!(values(&grandparent, prompt).await, ["rome"]);
    assert_eq!(
        *log.lock().expect("log"),
        ["parent:completion/complete", "child:completion/complete"]
    );
    let template = ask(
        Reference::for_resource("users://outer/trips/{id}/profile"),
        "id",
        "al",
    );
    assert_eq!(values(&grandparent, template).await, ["alan"]);
    // The child's own names are not the parent's.
    let unprefixed = error(&grandparent, ask(Reference::for_prompt("plan"), "city", "")).await;
    assert_eq!(unprefixed.code.0, -32602);
}

#[tokio::test]
async fn the_completions_capability_is_advertised_only_when_there_are_completers() {
    let plain = Server::new("plain");
    plain.prompt("p", || async { "p" }).expect("prompt");
    assert!(plain.server_config().capabilities.completions.is_none());
    assert!(
        plain
            .legacy_server_config()
            .capabilities
            .completions
            .is_none()
    );

    let parent = Server::new("parent");
    parent.mount(&travel(), "trips").expect("mount");
    assert!(parent.server_config().capabilities.completions.is_some());
    assert!(
        parent
            .legacy_server_config()
            .capabilities
            .completions
            .is_some()
    );
}

#[tokio::test]
async fn over_http_both_eras_complete_and_the_2026_answer_matches_the_schema() {
    let root = Server::new("root");
    root.mount(&travel(), "trips").expect("mount");
    let http = LoopbackHttp::serve(root).await;

    for lifecycle in [Lifecycle::Modern, Lifecycle::Legacy] {
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(http.url().to_owned());
        let client = connect(transport, lifecycle, false).await.expect("connect");
        let info = client.peer_info().expect("server info");
        assert!(info.capabilities.completions.is_some(), "{lifecycle:?}");
        let answer = client
            .complete(ask(Reference::for_prompt("trips_plan"), "city", "po"))
            .await
            .expect("completion/complete");
        assert_eq!(answer.completion.values, ["porto"], "{lifecycle:?}");
        let answer = client
            .complete(ask(
                Reference::for_resource("users://trips/{id}/profile"),
                "id",
                "gr",
            ))
            .await
            .expect("completion/complete");
        assert_eq!(answer.completion.values, ["grace"], "{lifecycle:?}");
        let unknown = client
            .complete(ask(Reference::for_prompt("trips_nope"), "city", ""))
            .await
            .expect_err("an unknown prompt");
        let rmcp::ServiceError::McpError(unknown) = unknown else {
            panic!("expected a JSON-RPC error, got {unknown:?}");
        };
        assert_eq!(unknown.code.0, -32602, "{lifecycle:?}");
        client.cancel().await.expect("close");
    }

    let (status, answer) = http
        .post_2026(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "trips_plan"},
                   "argument": {"name": "city", "value": "pr"}}),
            json!({}),
            None,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["completion"]["values"], json!(["prague"]));
    assert_valid(Spec::Mcp, "CompleteResult", &answer["result"]);
    http.shutdown().await;
}

#[tokio::test]
async fn a_proxy_forwards_completions_to_an_upstream_that_offers_them() {
    let upstream_server = travel();
    let http = LoopbackHttp::serve(upstream_server).await;
    let upstream = Upstream::http("travel", HttpTarget::new(http.url().to_owned()));
    let proxy = ProxyServer::new(upstream).build().await.expect("proxy");
    assert!(proxy.server_config().capabilities.completions.is_some());
    let gateway = Server::new("gateway");
    gateway.mount(&proxy, "up").expect("mount");

    let prompt = ask(Reference::for_prompt("up_plan"), "city", "pa");
    assert_eq!(values(&gateway, prompt).await, ["paris", "park city"]);
    let arguments = [("country".to_owned(), "Italy".to_owned())].into();
    let with_context = ask(Reference::for_prompt("up_plan"), "city", "r")
        .with_context(CompletionContext::with_arguments(arguments));
    assert_eq!(values(&gateway, with_context).await, ["rome", "in Italy"]);
    let template = ask(
        Reference::for_resource("users://up/{id}/profile"),
        "id",
        "a",
    );
    assert_eq!(values(&gateway, template).await, ["ada", "alan"]);

    // An upstream without completers: the proxy offers none either.
    let plain = Server::new("plain");
    plain.prompt("p", || async { "p" }).expect("prompt");
    let plain_http = LoopbackHttp::serve(plain).await;
    let plain_proxy = ProxyServer::new(Upstream::http(
        "plain",
        HttpTarget::new(plain_http.url().to_owned()),
    ))
    .build()
    .await
    .expect("proxy");
    assert!(
        plain_proxy
            .server_config()
            .capabilities
            .completions
            .is_none()
    );
    plain_http.shutdown().await;
    http.shutdown().await;
}
