//! Resource subscriptions (issue 15, part 2): a server, or a mounted child under its
//! namespaced URI, announces that a resource changed, and only the clients watching that URI
//! hear `notifications/resources/updated`: through `resources/subscribe` and `unsubscribe`
//! on 2025-11-25 sessions (over real HTTP with rmcp's client, and over a byte stream), and
//! through the `resourceSubscriptions` of `subscriptions/listen` on 2026-07-28. Absence is
//! shown by order, never by waiting: an update that must not arrive is announced before one
//! that must, and the next event seen is the second.

use std::time::Duration;

use ferrymcp::{
    MAX_RESOURCE_SUBSCRIPTIONS, ResourceDef, Server, ToolDef,
    types::{
        ServerNotification, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
    },
};
use ferrymcp_test_helpers::{
    client::{ClientEvent, Lifecycle, RecordingClient, connect_with, recording_in_memory},
    http::LoopbackHttp,
};
use rmcp::{RoleClient, ServiceError, service::RunningService};
use tokio::sync::mpsc::UnboundedReceiver;

type Client = RunningService<RoleClient, RecordingClient>;

const PATIENCE: Duration = Duration::from_secs(5);

/// A child with two resources and a template, mounted as `docs`.
fn servers() -> (Server, Server) {
    let child = Server::new("child");
    child
        .add_resource(ResourceDef::new("data://readme", || async { "readme" }))
        .expect("resource");
    child
        .add_resource(ResourceDef::new("data://other", || async { "other" }))
        .expect("resource");
    child
        .add_resource(ResourceDef::new("data://item/{n}", || async { "item" }))
        .expect("template");
    let parent = Server::new("parent");
    parent.mount(&child, "docs").expect("mount");
    (parent, child)
}

async fn over_a_stream(
    server: Server,
    lifecycle: Lifecycle,
) -> (Client, UnboundedReceiver<ClientEvent>) {
    recording_in_memory(server, lifecycle)
        .await
        .expect("connect")
}

async fn over_http(http: &LoopbackHttp) -> (Client, UnboundedReceiver<ClientEvent>) {
    let (handler, events) = RecordingClient::new(false);
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(http.url().to_owned());
    let client = connect_with(handler, transport, Lifecycle::Legacy)
        .await
        .expect("connect");
    (client, events)
}

async fn next_update(events: &mut UnboundedReceiver<ClientEvent>) -> String {
    loop {
        let event = tokio::time::timeout(PATIENCE, events.recv())
            .await
            .expect("an event in time")
            .expect("the client is alive");
        if let ClientEvent::ResourceUpdated(uri) = event {
            return uri;
        }
    }
}

/// The URI of the next notification on a `subscriptions/listen` stream, which must be a
/// resource update.
async fn next_pushed_update(subscription: &mut rmcp::service::Subscription) -> String {
    let notification = tokio::time::timeout(PATIENCE, subscription.next())
        .await
        .expect("a notification in time")
        .expect("the subscription is open")
        .expect("a notification");
    match notification {
        ServerNotification::ResourceUpdatedNotification(update) => update.params.uri,
        other => panic!("unexpected {other:?}"),
    }
}

#[allow(deprecated)] // resources/subscribe is legacy-only; rmcp marks it deprecated.
async fn subscribe(client: &Client, uri: &str) -> Result<(), ServiceError> {
    client.subscribe(SubscribeRequestParams::new(uri)).await
}

#[allow(deprecated)]
async fn unsubscribe(client: &Client, uri: &str) -> Result<(), ServiceError> {
    client.unsubscribe(UnsubscribeRequestParams::new(uri)).await
}

fn error_code(result: Result<(), ServiceError>) -> i32 {
    match result {
        Err(ServiceError::McpError(error)) => error.code.0,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_update_reaches_every_server_above_under_the_uri_each_exposes() {
    let (parent, child) = servers();
    let root = Server::new("root");
    root.mount(&parent, "outer").expect("mount");
    let mut at_parent = parent.resource_updates();
    let mut at_root = root.resource_updates();
    child.resource_updated("data://readme");
    assert_eq!(
        &*at_parent.recv().await.expect("an update"),
        "data://docs/readme"
    );
    assert_eq!(
        &*at_root.recv().await.expect("an update"),
        "data://outer/docs/readme"
    );
}

#[tokio::test]
async fn the_subscribe_capability_is_advertised_in_both_eras() {
    let (parent, _child) = servers();
    for config in [parent.server_config(), parent.legacy_server_config()] {
        let resources = config.capabilities.resources.expect("resources");
        assert_eq!(resources.subscribe, Some(true));
    }
}

#[tokio::test]
async fn over_http_a_2025_session_hears_only_the_uris_it_subscribed_to_until_it_unsubscribes() {
    let (parent, child) = servers();
    let http = LoopbackHttp::serve(parent).await;
    let (watcher, mut watcher_events) = over_http(&http).await;
    let (other, mut other_events) = over_http(&http).await;
    subscribe(&watcher, "data://docs/readme")
        .await
        .expect("subscribe");
    subscribe(&other, "data://docs/other")
        .await
        .expect("subscribe");

    // `other` first: the watcher must not hear it, so its next update is the readme's.
    child.resource_updated("data://other");
    child.resource_updated("data://readme");
    assert_eq!(next_update(&mut watcher_events).await, "data://docs/readme");
    assert_eq!(next_update(&mut other_events).await, "data://docs/other");
    // The readme's update did not reach `other`: its next one is this second `other`.
    child.resource_updated("data://other");
    assert_eq!(next_update(&mut other_events).await, "data://docs/other");

    unsubscribe(&watcher, "data://docs/readme")
        .await
        .expect("unsubscribe");
    subscribe(&watcher, "data://docs/other")
        .await
        .expect("subscribe");
    child.resource_updated("data://readme");
    child.resource_updated("data://other");
    assert_eq!(next_update(&mut watcher_events).await, "data://docs/other");
    // Unsubscribing from what is not watched is fine.
    unsubscribe(&watcher, "data://docs/never")
        .await
        .expect("unsubscribe");

    watcher.cancel().await.expect("close");
    other.cancel().await.expect("close");
    http.shutdown().await;
}

#[tokio::test]
async fn subscribing_to_an_unknown_resource_is_refused_and_templates_count() {
    let (parent, child) = servers();
    let (client, mut events) = over_a_stream(parent, Lifecycle::Legacy).await;
    assert_eq!(
        error_code(subscribe(&client, "data://docs/missing").await),
        -32002
    );
    assert_eq!(
        error_code(subscribe(&client, "data://readme").await),
        -32002
    );
    // A URI one of the templates matches can be watched.
    subscribe(&client, "data://docs/item/7")
        .await
        .expect("subscribe");
    child.resource_updated("data://item/7");
    assert_eq!(next_update(&mut events).await, "data://docs/item/7");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_session_watches_at_most_the_limit_and_is_told_so() {
    let (parent, _child) = servers();
    let (client, _events) = over_a_stream(parent, Lifecycle::Legacy).await;
    for n in 0..MAX_RESOURCE_SUBSCRIPTIONS {
        subscribe(&client, &format!("data://docs/item/{n}"))
            .await
            .expect("subscribe");
    }
    let over = subscribe(&client, "data://docs/item/over").await;
    let Err(ServiceError::McpError(error)) = over else {
        panic!("expected a refusal, got {over:?}");
    };
    assert_eq!(error.code.0, -32602);
    assert!(error.message.contains("1024"), "{}", error.message);
    // Watching one already watched again is not a new subscription.
    subscribe(&client, "data://docs/item/0")
        .await
        .expect("subscribe again");
    // The session goes on.
    subscribe(&client, "data://docs/item/0")
        .await
        .expect("still serving");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn subscriptions_listen_pushes_updates_for_the_listed_resources_only() {
    let (parent, child) = servers();
    let (client, _events) = over_a_stream(parent, Lifecycle::Modern).await;
    let mut filter = SubscriptionFilter::default();
    filter.resource_subscriptions = Some(vec![
        "data://docs/readme".to_owned(),
        "data://docs/missing".to_owned(),
    ]);
    let mut subscription = client.listen(filter).await.expect("subscriptions/listen");

    // A list change the client did not ask for neither arrives nor ends the stream, and an
    // update of an unlisted resource does not arrive.
    child
        .add_tool(ToolDef::new("late", || async { "late" }))
        .expect("tool");
    child.resource_updated("data://other");
    child.resource_updated("data://readme");
    assert_eq!(
        next_pushed_update(&mut subscription).await,
        "data://docs/readme"
    );
    client.cancel().await.expect("close");
}

/// A child whose `data://secret` needs a scope an anonymous caller lacks.
fn guarded() -> (Server, Server) {
    let (parent, child) = servers();
    child
        .add_resource(
            ResourceDef::new("data://secret", || async { "secret" }).requires(["files:read"]),
        )
        .expect("resource");
    (parent, child)
}

#[tokio::test]
async fn a_caller_who_may_not_read_a_resource_cannot_watch_it_in_either_era() {
    let (parent, child) = guarded();
    let (legacy, mut legacy_events) = over_a_stream(parent.clone(), Lifecycle::Legacy).await;
    let refused = subscribe(&legacy, "data://docs/secret").await;
    assert!(refused.is_err(), "{refused:?}");
    subscribe(&legacy, "data://docs/readme")
        .await
        .expect("subscribe");

    // A second root over the same child (a server serves one stream at a time).
    let other_parent = Server::new("other");
    other_parent.mount(&child, "docs").expect("mount");
    drop(parent);
    let (modern, _events) = over_a_stream(other_parent, Lifecycle::Modern).await;
    let mut filter = SubscriptionFilter::default();
    filter.resource_subscriptions = Some(vec![
        "data://docs/secret".to_owned(),
        "data://docs/readme".to_owned(),
    ]);
    let mut subscription = modern.listen(filter).await.expect("subscriptions/listen");

    // The secret's update first: neither client may hear it, so each hears the readme's.
    child.resource_updated("data://secret");
    child.resource_updated("data://readme");
    assert_eq!(next_update(&mut legacy_events).await, "data://docs/readme");
    assert_eq!(
        next_pushed_update(&mut subscription).await,
        "data://docs/readme"
    );
    legacy.cancel().await.expect("close");
    modern.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_update_reaches_the_proxys_watchers_under_the_proxied_uri() {
    use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream};
    let (upstream_root, child) = servers();
    let upstream_http = LoopbackHttp::serve(upstream_root).await;
    let upstream = Upstream::http("up", HttpTarget::new(upstream_http.url().to_owned()));
    let proxy = ProxyServer::new(upstream)
        .build()
        .await
        .expect("build the proxy");
    let gateway = Server::new("gateway");
    gateway.mount(&proxy, "up").expect("mount the proxy");
    let (client, mut events) = over_a_stream(gateway, Lifecycle::Legacy).await;
    subscribe(&client, "data://up/docs/readme")
        .await
        .expect("resources/subscribe through the proxy");
    // The proxy opens its listen on the upstream in the background: announce until the
    // first update comes through (each announcement is a real upstream change).
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let uri = loop {
        child.resource_updated("data://other");
        child.resource_updated("data://readme");
        match tokio::time::timeout(Duration::from_millis(100), next_update(&mut events)).await {
            Ok(uri) => break uri,
            Err(_) => assert!(
                tokio::time::Instant::now() < deadline,
                "no upstream update reached the proxy's watcher within {PATIENCE:?}"
            ),
        }
    };
    assert_eq!(
        uri, "data://up/docs/readme",
        "only the watched URI, under the proxy's mount"
    );
    client.cancel().await.expect("close");
    upstream_http.shutdown().await;
}
