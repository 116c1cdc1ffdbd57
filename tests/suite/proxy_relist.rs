//! A proxy server keeps up with its upstream (G18, G19, G23): a list reaching the proxy reads
//! the upstream's list again and registers what was added, drops what was removed and
//! replaces what changed; calls never list; lists arriving together share one read; a copy
//! younger than `relist_after` is listed as it is; a call, get or read naming something
//! the copy lacks reads that kind first; an upstream that went away leaves the
//! last copy listed. Over real HTTP on 127.0.0.1: the upstream is served, the proxy reaches
//! it over Streamable HTTP, and clients reach the front that mounts the proxy as `up`.

use crate::support::proxy::{call, serve};

use std::{
    collections::BTreeSet,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use ferrymcp::{
    CallTool, GetPrompt, ListTools, Next, PromptDef, ResourceDef, Server, ToolDef,
    middleware::from_fn,
};
use ferrymcp_proxy::{HttpTarget, ProxyServer, Upstream};
use ferrymcp_test_helpers::client::{
    ClientEvent, Lifecycle, TestClient, connect, recording_in_memory,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use tokio_util::sync::DropGuard;

/// An upstream with the tools `a` and `c`, and a count of the `tools/list`s it answered.
fn upstream() -> (Server, Arc<AtomicUsize>) {
    let server = Server::new("upstream");
    server.tool("a", || async { "a" }).expect("a");
    server
        .add_tool(ToolDef::new("c", || async { "c" }).description("first"))
        .expect("c");
    server
        .resource("data://one", || async { "one" })
        .expect("one");
    server.prompt("hi", || async { "Say hi" }).expect("hi");
    let lists = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&lists);
    server.add_middleware(from_fn(
        move |list: ListTools, next: Next<'_, ListTools>| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { next.run(list).await })
        },
    ));
    (server, lists)
}

/// The upstream served, a front mounting a proxy of it as `up` (the proxy built by
/// `configure`), and the front served.
struct Stack {
    upstream: Server,
    lists: Arc<AtomicUsize>,
    front_url: String,
    upstream_guard: Option<DropGuard>,
    _front_guard: DropGuard,
}

async fn stack(configure: impl FnOnce(ProxyServer) -> ProxyServer) -> Stack {
    let (upstream, lists) = upstream();
    let (upstream_url, upstream_guard) = serve(upstream.clone()).await;
    let proxy = configure(ProxyServer::new(Upstream::http(
        "up",
        HttpTarget::new(upstream_url),
    )))
    .build()
    .await
    .expect("the proxy lists the upstream");
    let front = Server::new("front");
    front.mount(&proxy, "up").expect("mount");
    let (front_url, front_guard) = serve(front).await;
    Stack {
        upstream,
        lists,
        front_url,
        upstream_guard: Some(upstream_guard),
        _front_guard: front_guard,
    }
}

async fn front_client(url: &str, lifecycle: Lifecycle) -> TestClient {
    connect(
        StreamableHttpClientTransport::from_uri(url.to_owned()),
        lifecycle,
        false,
    )
    .await
    .expect("a client of the front")
}

async fn tool_names(client: &rmcp::Peer<rmcp::RoleClient>) -> BTreeSet<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_a_list_through_the_proxy_shows_what_the_upstream_serves_now() {
    for lifecycle in [Lifecycle::Legacy, Lifecycle::Modern] {
        let stack = stack(|proxy| proxy).await;
        let client = front_client(&stack.front_url, lifecycle).await;
        assert_eq!(tool_names(&client).await, names(&["up_a", "up_c"]));

        // The upstream changes after the proxy was built.
        let upstream = &stack.upstream;
        assert!(upstream.remove_tool("a"));
        upstream.tool("b", || async { "b" }).expect("b");
        assert!(upstream.remove_tool("c"));
        upstream
            .add_tool(ToolDef::new("c", || async { "c2" }).description("second"))
            .expect("c again");
        upstream
            .add_resource(ResourceDef::new("data://two", || async { "two" }))
            .expect("two");
        upstream
            .add_resource(ResourceDef::new("items://{id}", || async { "item" }))
            .expect("template");
        upstream
            .add_prompt(PromptDef::new("bye", || async { "Say bye" }))
            .expect("bye");

        let tools = client.list_all_tools().await.expect("tools/list");
        let listed: BTreeSet<String> = tools.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(listed, names(&["up_b", "up_c"]), "{lifecycle:?}");
        let c = tools.iter().find(|t| t.name == "up_c").expect("up_c");
        assert_eq!(c.description.as_deref(), Some("second"), "{lifecycle:?}");
        assert_eq!(
            call(&client, "up_b", json!({})).await["complete"]["content"][0]["text"],
            "b"
        );
        assert_eq!(
            call(&client, "up_c", json!({})).await["complete"]["content"][0]["text"],
            "c2"
        );
        let gone = call(&client, "up_a", json!({})).await;
        assert_eq!(
            gone["error"]["code"], -32602,
            "a dropped tool is unknown: {gone}"
        );

        let resources: BTreeSet<String> = client
            .list_all_resources()
            .await
            .expect("resources/list")
            .into_iter()
            .map(|r| r.uri.clone())
            .collect();
        assert_eq!(
            resources,
            names(&["data://up/one", "data://up/two"]),
            "{lifecycle:?}"
        );
        let templates: Vec<String> = client
            .list_all_resource_templates()
            .await
            .expect("resources/templates/list")
            .into_iter()
            .map(|t| t.uri_template.clone())
            .collect();
        assert_eq!(
            templates,
            vec!["items://up/{id}".to_owned()],
            "{lifecycle:?}"
        );
        let prompts: BTreeSet<String> = client
            .list_all_prompts()
            .await
            .expect("prompts/list")
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(prompts, names(&["up_bye", "up_hi"]), "{lifecycle:?}");
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g19_calls_through_the_proxy_never_list_the_upstream() {
    let stack = stack(|proxy| proxy).await;
    let client = front_client(&stack.front_url, Lifecycle::Modern).await;
    let before = stack.lists.load(Ordering::SeqCst);
    for _ in 0..4 {
        assert_eq!(
            call(&client, "up_a", json!({})).await["complete"]["content"][0]["text"],
            "a"
        );
    }
    assert_eq!(stack.lists.load(Ordering::SeqCst), before);
    tool_names(&client).await;
    assert_eq!(stack.lists.load(Ordering::SeqCst), before + 1);
    client.cancel().await.ok();
}

/// A front mounting, as `up`, a proxy that reaches the upstream through a 2025-11-25
/// session of the test's whose handler drops what the upstream announces: nothing but a
/// list or a miss reads the upstream. The session is returned to be kept open.
async fn silent_front(upstream_url: &str) -> (Server, TestClient) {
    let session = front_client(upstream_url, Lifecycle::Legacy).await;
    let proxy = ProxyServer::new(Upstream::from_peer("up", session.peer().clone()))
        .build()
        .await
        .expect("the proxy lists the upstream");
    let front = Server::new("front");
    front.mount(&proxy, "up").expect("mount");
    (front, session)
}

/// A middleware on the gateway that looks the called tool (or the prompt) up before passing
/// the request on sees one the upstream added since the last list on its first request, and
/// a name nobody has reads the upstream once, not once before the middleware and once after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_a_middleware_on_the_gateway_sees_a_tool_or_prompt_the_upstream_added_on_its_first_request()
 {
    let (upstream, lists) = upstream();
    let (upstream_url, _upstream_guard) = serve(upstream.clone()).await;
    let (front, _session) = silent_front(&upstream_url).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let saw = Arc::clone(&seen);
    front.add_middleware(from_fn(move |call: CallTool, next: Next<'_, CallTool>| {
        let found = call.context().server().get_tool(&call.name, None).is_some();
        saw.lock().expect("seen").push((call.name.clone(), found));
        Box::pin(async move { next.run(call).await })
    }));
    let saw = Arc::clone(&seen);
    front.add_middleware(from_fn(move |get: GetPrompt, next: Next<'_, GetPrompt>| {
        let found = get
            .context()
            .server()
            .get_prompt_info(&get.name, None)
            .is_some();
        saw.lock().expect("seen").push((get.name.clone(), found));
        Box::pin(async move { next.run(get).await })
    }));
    let (front_url, _front_guard) = serve(front).await;
    let client = front_client(&front_url, Lifecycle::Modern).await;
    upstream.tool("b", || async { "b" }).expect("b");
    upstream
        .add_prompt(PromptDef::new("bye", || async { "Say bye" }))
        .expect("bye");

    let before = lists.load(Ordering::SeqCst);
    let called = call(&client, "up_b", json!({})).await;
    assert_eq!(called["complete"]["content"][0]["text"], "b", "{called}");
    let unknown = call(&client, "up_nothing", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(
        lists.load(Ordering::SeqCst),
        before + 2,
        "one read for each miss"
    );
    client
        .get_prompt_once(ferrymcp::types::GetPromptRequestParams::new("up_bye"))
        .await
        .expect("prompts/get of a prompt added upstream");
    assert_eq!(
        *seen.lock().expect("seen"),
        [
            ("up_b".to_owned(), true),
            ("up_nothing".to_owned(), false),
            ("up_bye".to_owned(), true)
        ]
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_a_tool_prompt_or_resource_the_upstream_added_since_the_last_list_is_found_without_a_list()
 {
    use ferrymcp::types::{GetPromptRequestParams, ReadResourceRequestParams};
    for lifecycle in [Lifecycle::Legacy, Lifecycle::Modern] {
        let (upstream, lists) = upstream();
        let (upstream_url, _upstream_guard) = serve(upstream.clone()).await;
        let (front, session) = silent_front(&upstream_url).await;
        let (front_url, _front_guard) = serve(front).await;
        let stack = Silent { lists };
        let client = front_client(&front_url, lifecycle).await;
        upstream.tool("b", || async { "b" }).expect("b");
        upstream
            .add_prompt(PromptDef::new("bye", || async { "Say bye" }))
            .expect("bye");
        upstream
            .add_resource(ResourceDef::new("data://two", || async { "two" }))
            .expect("two");

        let before = stack.lists.load(Ordering::SeqCst);
        assert_eq!(
            call(&client, "up_b", json!({})).await["complete"]["content"][0]["text"],
            "b",
            "{lifecycle:?}"
        );
        assert_eq!(
            stack.lists.load(Ordering::SeqCst),
            before + 1,
            "the miss read the upstream's tools once"
        );
        // Known now: calls of it never list again.
        call(&client, "up_b", json!({})).await;
        assert_eq!(stack.lists.load(Ordering::SeqCst), before + 1);

        let prompt = client
            .get_prompt_once(GetPromptRequestParams::new("up_bye"))
            .await
            .expect("prompts/get of a prompt added upstream");
        let prompt = format!("{prompt:?}");
        assert!(prompt.contains("\"Say bye\""), "{prompt}");
        let read = client
            .read_resource_once(ReadResourceRequestParams::new("data://up/two"))
            .await
            .expect("resources/read of a resource added upstream");
        let read = format!("{read:?}");
        assert!(read.contains("\"two\""), "{read}");

        // A name the upstream does not have either stays unknown, after one more read.
        let unknown = call(&client, "up_nothing", json!({})).await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        assert_eq!(unknown["error"]["message"], "Unknown tool: 'up_nothing'");
        assert_eq!(stack.lists.load(Ordering::SeqCst), before + 2);
        // Outside the proxy's namespace nothing is read.
        let elsewhere = call(&client, "other_b", json!({})).await;
        assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
        assert_eq!(stack.lists.load(Ordering::SeqCst), before + 2);
        client.cancel().await.ok();
        session.cancel().await.ok();
    }
}

/// The count of the upstream's `tools/list`s, for a stack built by hand.
struct Silent {
    lists: Arc<AtomicUsize>,
}

/// Sends the update of `uri` from `upstream` until the front's client records it as
/// `proxied` (the relay subscribes on its own time), within 20 s.
async fn update_reaches(
    upstream: &Server,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
    uri: &str,
    proxied: &str,
) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            upstream.resource_updated(uri);
            let arrived = tokio::time::timeout(Duration::from_millis(100), async {
                loop {
                    match events.recv().await {
                        Some(ClientEvent::ResourceUpdated(uri)) => return uri,
                        Some(_) => continue,
                        None => return String::new(),
                    }
                }
            })
            .await;
            if let Ok(arrived) = arrived {
                assert_eq!(arrived, proxied);
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the update of {uri} reaches its watcher as {proxied}"));
}

/// The next event of `kind` the front's client records, within 20 s.
async fn next_of(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
    wanted: impl Fn(&ClientEvent) -> bool,
) -> ClientEvent {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let event = events.recv().await.expect("the client is alive");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("the event in time")
}

/// A front mounting a proxy of `upstream` as `up`, and a 2025-11-25 client of it recording
/// what it is told, its session live (a request went through; nothing was listed).
async fn watching_front(
    upstream: Upstream,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, ferrymcp_test_helpers::client::RecordingClient>,
    tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
) {
    let proxy = ProxyServer::new(upstream)
        .build()
        .await
        .expect("the proxy lists the upstream");
    let front = Server::new("front");
    front.mount(&proxy, "up").expect("mount");
    let (client, events) = recording_in_memory(front, Lifecycle::Legacy)
        .await
        .expect("a client of the front");
    client.list_all_prompts().await.expect("prompts/list");
    (client, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_what_the_upstream_announces_reaches_the_proxys_clients_without_a_list() {
    #![allow(deprecated)] // resources/subscribe: the front's client is a 2025-11-25 one.
    use ferrymcp::types::SubscribeRequestParams;
    use ferrymcp_proxy::UpstreamOptions;
    for legacy_upstream in [true, false] {
        let (upstream, _lists) = upstream();
        let (upstream_url, _upstream_guard) = serve(upstream.clone()).await;
        let mut options = UpstreamOptions::default();
        if legacy_upstream {
            options = options.legacy_handshake();
        }
        let (client, mut events) = watching_front(
            Upstream::http("up", HttpTarget::new(upstream_url)).with_options(options),
        )
        .await;

        upstream.tool("b", || async { "b" }).expect("b");
        next_of(&mut events, |e| *e == ClientEvent::ToolsChanged).await;
        upstream
            .add_prompt(PromptDef::new("bye", || async { "Say bye" }))
            .expect("bye");
        next_of(&mut events, |e| *e == ClientEvent::PromptsChanged).await;
        upstream
            .add_resource(ResourceDef::new("data://two", || async { "two" }))
            .expect("two");
        next_of(&mut events, |e| *e == ClientEvent::ResourcesChanged).await;
        assert_eq!(
            tool_names(&client).await,
            names(&["up_a", "up_b", "up_c"]),
            "legacy: {legacy_upstream}"
        );

        // A resource added after the proxy was built is watched too, from either era
        // (a 2025-11-25 session is sent `resources/subscribe` for it). The relay
        // subscribes to it on its own time: the update is sent until it arrives.
        client
            .subscribe(SubscribeRequestParams::new("data://up/two"))
            .await
            .expect("resources/subscribe");
        update_reaches(&upstream, &mut events, "data://two", "data://up/two").await;
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_lists_arriving_together_share_reads_of_the_upstream() {
    let stack = stack(|proxy| proxy).await;
    let client = Arc::new(front_client(&stack.front_url, Lifecycle::Modern).await);
    let before = stack.lists.load(Ordering::SeqCst);
    let lists: Vec<_> = (0..16)
        .map(|_| {
            let client = Arc::clone(&client);
            tokio::spawn(async move { tool_names(&client).await })
        })
        .collect();
    for list in lists {
        assert_eq!(list.await.expect("a list"), names(&["up_a", "up_c"]));
    }
    let read = stack.lists.load(Ordering::SeqCst) - before;
    assert!(
        (1..16).contains(&read),
        "16 lists together read the upstream {read} times"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_a_copy_younger_than_relist_after_is_listed_without_asking_the_upstream() {
    let stack = stack(|proxy| proxy.relist_after(Duration::from_secs(3600))).await;
    let client = front_client(&stack.front_url, Lifecycle::Modern).await;
    let before = stack.lists.load(Ordering::SeqCst);
    assert_eq!(tool_names(&client).await, names(&["up_a", "up_c"]));
    assert_eq!(tool_names(&client).await, names(&["up_a", "up_c"]));
    assert_eq!(stack.lists.load(Ordering::SeqCst), before);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g23_an_upstream_gone_away_leaves_its_last_listing_in_place() {
    let mut stack = stack(|proxy| proxy).await;
    let client = front_client(&stack.front_url, Lifecycle::Modern).await;
    assert_eq!(tool_names(&client).await, names(&["up_a", "up_c"]));
    drop(stack.upstream_guard.take());
    // Listing still answers, from the copy; a call says the upstream is unreachable.
    assert_eq!(tool_names(&client).await, names(&["up_a", "up_c"]));
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts.len(), 1);
    let failed = call(&client, "up_a", json!({})).await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g23_a_lazily_built_proxy_reads_its_upstream_on_the_first_list() {
    let (upstream, lists) = upstream();
    let (upstream_url, _upstream_guard) = serve(upstream).await;
    let proxy = ProxyServer::new(Upstream::http("up", HttpTarget::new(upstream_url))).build_lazy();
    assert_eq!(lists.load(Ordering::SeqCst), 0, "built without a request");
    let (proxy_url, _proxy_guard) = serve(proxy).await;
    let client = front_client(&proxy_url, Lifecycle::Modern).await;
    assert_eq!(tool_names(&client).await, names(&["a", "c"]));
    assert_eq!(
        call(&client, "a", json!({})).await["complete"]["content"][0]["text"],
        "a"
    );
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts.len(), 1);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g23_a_lazily_built_proxy_of_a_dead_upstream_starts_and_its_lists_say_why() {
    // A port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}/mcp", free.local_addr().expect("addr"));
    drop(free);
    let proxy = ProxyServer::new(Upstream::http("up", HttpTarget::new(dead))).build_lazy();
    let (proxy_url, _proxy_guard) = serve(proxy.clone()).await;
    let client = front_client(&proxy_url, Lifecycle::Modern).await;
    let error = client
        .list_all_tools()
        .await
        .expect_err("no listing without the upstream");
    let rmcp::ServiceError::McpError(error) = error else {
        panic!("a JSON-RPC error, not {error:?}");
    };
    assert_eq!(error.code.0, -32603, "{error:?}");
    assert!(
        error.message.contains("up"),
        "names the upstream: {error:?}"
    );
    client.cancel().await.ok();

    // Mounted, it is left out of its parent's listing; the parent's own tools are listed.
    let front = Server::new("front");
    front.tool("local", || async { "here" }).expect("local");
    front.mount(&proxy, "up").expect("mount");
    let (front_url, _front_guard) = serve(front).await;
    let client = front_client(&front_url, Lifecycle::Modern).await;
    assert_eq!(tool_names(&client).await, names(&["local"]));
    client.cancel().await.ok();
}

/// An upstream whose `tools/list` hangs is listed from the copy: the listing waits for it only
/// a short while (2 s), not for the upstream's call timeout. The read goes on, and once the
/// upstream answers again, the lists after it see what it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g18_a_hanging_upstream_list_is_answered_from_the_copy() {
    let stack = stack(|proxy| proxy).await;
    let (open, gate) = tokio::sync::watch::channel(true);
    stack.upstream.add_middleware(from_fn(
        move |list: ListTools, next: Next<'_, ListTools>| {
            let mut gate = gate.clone();
            Box::pin(async move {
                let _ = gate.wait_for(|open| *open).await;
                next.run(list).await
            })
        },
    ));
    let client = front_client(&stack.front_url, Lifecycle::Modern).await;
    open.send_replace(false);
    stack.upstream.tool("b", || async { "b" }).expect("b");
    // Far below the upstream's call timeout (60 s): the listing did not wait for it.
    let listed = tokio::time::timeout(Duration::from_secs(20), tool_names(&client))
        .await
        .expect("listed without waiting for the hanging upstream");
    assert_eq!(listed, names(&["up_a", "up_c"]));
    open.send_replace(true);
    assert_eq!(tool_names(&client).await, names(&["up_a", "up_b", "up_c"]));
    client.cancel().await.ok();
}

/// Serves `server` on 127.0.0.1:`port` (0: any) until `stop` is cancelled: its URL, and the
/// serving task (ended once the port is free again).
async fn serve_on(
    server: Server,
    port: u16,
    stop: tokio_util::sync::CancellationToken,
) -> (String, tokio::task::JoinHandle<()>) {
    let http = ferrymcp::HttpServer::bind(server, ("127.0.0.1", port), ferrymcp::HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let serving = tokio::spawn(async move {
        let _ = http.run_until(stop.cancelled_owned()).await;
    });
    (url, serving)
}

/// A 2026-07-28 upstream restarted with other tools while the proxy listens to it: the
/// stream it announced on is gone, and nobody announces what changed meanwhile. Once the
/// proxy listens again it reads every list, and its clients hear of the change without
/// listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g23_an_upstream_restarted_with_other_tools_reaches_the_proxys_clients_without_a_list() {
    for legacy_upstream in [false, true] {
        restarted_upstream_is_followed(legacy_upstream).await;
    }
}

async fn restarted_upstream_is_followed(legacy_upstream: bool) {
    #![allow(deprecated)] // resources/subscribe: the front's client is a 2025-11-25 one.
    use ferrymcp::types::SubscribeRequestParams;
    let (first, _lists) = upstream();
    let stop_first = tokio_util::sync::CancellationToken::new();
    let (url, first_serving) = serve_on(first, 0, stop_first.clone()).await;
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a port");
    let mut options = ferrymcp_proxy::UpstreamOptions::default();
    if legacy_upstream {
        options = options.legacy_handshake();
    }
    let (client, mut events) =
        watching_front(Upstream::http("up", HttpTarget::new(url)).with_options(options)).await;
    client
        .subscribe(SubscribeRequestParams::new("data://up/one"))
        .await
        .expect("resources/subscribe");

    stop_first.cancel();
    tokio::time::timeout(Duration::from_secs(20), first_serving)
        .await
        .expect("the first upstream stops")
        .expect("it stopped cleanly");
    let (second, _lists) = upstream();
    second.tool("b", || async { "b" }).expect("b");
    let stop_second = tokio_util::sync::CancellationToken::new();
    let _second_guard = stop_second.clone().drop_guard();
    let (_url, _second_serving) = serve_on(second.clone(), port, stop_second).await;
    next_of(&mut events, |e| *e == ClientEvent::ToolsChanged).await;
    assert_eq!(tool_names(&client).await, names(&["up_a", "up_b", "up_c"]));
    // The restarted upstream knows no subscription: the proxy made them again.
    update_reaches(&second, &mut events, "data://one", "data://up/one").await;
    client.cancel().await.ok();
}

/// A stdio upstream whose child dies while no call is made: the proxy notices on its own
/// and spawns a new child before any request needs one (so what the new child announces
/// is heard), and the next call reaches that child. In both eras: a 2025-11-25 child is
/// noticed by the relay's check of its session, a 2026-07-28 one by the end of its
/// `subscriptions/listen` stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g23_a_stdio_upstream_whose_child_died_between_calls_is_respawned_before_a_call() {
    use ferrymcp_proxy::{CommandTarget, UpstreamOptions};
    for legacy_upstream in [true, false] {
        let mut options = UpstreamOptions::default();
        if legacy_upstream {
            options = options.legacy_handshake();
        }
        let command =
            CommandTarget::new(crate::common::demo_binary().to_string_lossy()).arg("--stdio");
        let upstream = Upstream::command("demo", command).with_options(options);
        let (client, _events) = watching_front(upstream.clone()).await;
        let pid = upstream.process_id().expect("the child runs");
        let respawned = killed_and_respawned(&upstream, pid, legacy_upstream).await;
        let reply = call(&client, "up_add", json!({"a": 2, "b": 3})).await;
        assert_eq!(
            reply["complete"]["structuredContent"]["result"], 5,
            "legacy: {legacy_upstream}: {reply}"
        );
        assert_eq!(
            upstream.process_id(),
            Some(respawned),
            "the call used that child (legacy: {legacy_upstream})"
        );
        client.cancel().await.ok();
    }
}

/// Kills the child `pid` of `upstream` and waits (at most 30 s) for the proxy to spawn a new
/// one without any request: the relay checks a 2025-11-25 session every 5 s and waits at
/// most 10 s before trying again. The new child's pid.
async fn killed_and_respawned(upstream: &Upstream, pid: u32, legacy_upstream: bool) -> u32 {
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match upstream.process_id() {
            Some(new) if new != pid => return new,
            _ => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no new child without a call (legacy: {legacy_upstream})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A 2025-11-25 stdio server (stdlib Python) that advertises resource subscriptions but
/// answers `resources/subscribe` with "method not found", as some servers do.
const REFUSES_SUBSCRIPTIONS: &str = r#"
import json, sys
LISTS = {
    "tools/list": {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]},
    "resources/list": {"resources": [{"uri": "data://one", "name": "one"}]},
    "resources/templates/list": {"resourceTemplates": []},
    "prompts/list": {"prompts": []},
    "ping": {},
    "tools/call": {"content": [{"type": "text", "text": "5"}]},
}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method = message["method"]
    answer = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        answer["result"] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "resources": {"subscribe": True}},
            "serverInfo": {"name": "refuses-subscriptions", "version": "1"},
        }
    elif method in LISTS:
        answer["result"] = LISTS[method]
    else:
        answer["error"] = {"code": -32601, "message": "Method not found"}
    print(json.dumps(answer), flush=True)
"#;

/// A 2025-11-25 upstream that advertises subscriptions and refuses them is still followed:
/// its child, killed while no call is made, is replaced before any request needs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g23_a_legacy_upstream_that_refuses_subscriptions_is_still_followed() {
    use ferrymcp_proxy::{CommandTarget, UpstreamOptions};
    let command = CommandTarget::new("python3")
        .arg("-c")
        .arg(REFUSES_SUBSCRIPTIONS);
    let upstream = Upstream::command("refuses", command)
        .with_options(UpstreamOptions::default().legacy_handshake());
    let (client, _events) = watching_front(upstream.clone()).await;
    let pid = upstream.process_id().expect("the child runs");
    let respawned = killed_and_respawned(&upstream, pid, true).await;
    let reply = call(&client, "up_add", json!({})).await;
    assert_eq!(reply["complete"]["content"][0]["text"], "5", "{reply}");
    assert_eq!(
        upstream.process_id(),
        Some(respawned),
        "the call used that child"
    );
    client.cancel().await.ok();
}
