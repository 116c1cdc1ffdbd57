//! Mounting and namespacing of tools (behaviour catalog, section A), in process.
//!
//! Every test name starts with the behaviour ID it covers.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use ferrymcp::{
    Args, BoxError, CallTool, Context, CurrentServer, ListTools, Middleware, MountOptions, Next,
    Server, ServerError, State, TaskConfig, ToolCall, ToolDef, ToolInfo,
    types::{CallToolResponse, ErrorData, Icon, MetaObject, TaskSupport, ToolAnnotations},
    version::{Version, VersionSpec},
};
use ferrymcp_test_helpers::reply::{assert_unknown_tool, result_of};
use serde_json::{Value, json};

use crate::support::tree as support;

use support::{Pair, X, add, listed, lock, mount, v};

// ------------------------------------------------------------------------------ helpers

/// A tool with no arguments returning a fixed string.
fn constant(name: &str, value: &'static str) -> ToolDef {
    ToolDef::new(name, move || async move { value })
}

async fn names(server: &Server) -> Vec<String> {
    listed(server)
        .await
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

/// One `tools/call` as a middleware saw it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    server: String,
    name: String,
    version: Option<VersionSpec>,
}

/// Records every `tools/call` its server handles.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    fn seen(&self) -> Vec<Seen> {
        lock(&self.0).clone()
    }
}

#[async_trait::async_trait]
impl Middleware for Recorder {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        lock(&self.0).push(Seen {
            server: call.context().server().name().to_owned(),
            name: call.name.clone(),
            version: call.version.clone(),
        });
        next.run(call).await
    }
}

/// A middleware whose `tools/list` always fails, like an unreachable proxy.
struct FailingList;

#[async_trait::async_trait]
impl Middleware for FailingList {
    async fn on_list_tools(
        &self,
        _list: ListTools,
        _next: Next<'_, ListTools>,
    ) -> Result<Vec<ToolInfo>, ErrorData> {
        Err(ErrorData::internal_error("provider unreachable", None))
    }
}

/// Captures the WARN-and-above log lines emitted on this thread while the guard lives.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    fn contents(&self) -> String {
        String::from_utf8_lossy(&lock(&self.0)).into_owned()
    }
}

fn capture_warnings() -> (LogBuffer, tracing::subscriber::DefaultGuard) {
    let buffer = LogBuffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .finish();
    (buffer, tracing::subscriber::set_default(subscriber))
}

// ------------------------------------------------------------------------------ A01-A03

#[tokio::test]
async fn a01_namespaced_mount_exposes_prefixed_tool_and_routes_calls() {
    let child = Server::new("child");
    add(
        &child,
        ToolDef::new("multiply", |Args(p): Args<Pair>| async move { p.a * p.b }),
    );
    let parent = Server::new("parent");
    mount(&parent, &child, "child");

    assert_eq!(names(&parent).await, ["child_multiply"]);
    assert!(parent.get_tool("child_multiply", None).is_some());
    assert!(parent.get_tool("multiply", None).is_none());

    let reply = parent
        .call_tool("child_multiply", json!({"a": 8, "b": 9}))
        .await;
    assert_eq!(result_of(reply, "child_multiply"), json!(72));
}

#[tokio::test]
async fn a02_mount_without_namespace_keeps_original_names() {
    let cases: [(&str, MountOptions); 4] = [
        ("None", MountOptions::from(None::<&str>)),
        ("\"\"", MountOptions::from("")),
        ("namespace(\"\")", MountOptions::new().namespace("")),
        ("MountOptions::new()", MountOptions::new()),
    ];
    for (label, options) in cases {
        let child = Server::new("child");
        add(
            &child,
            ToolDef::new("add", |Args(p): Args<Pair>| async move { p.a + p.b }),
        );
        let parent = Server::new("parent");
        mount(&parent, &child, options);

        assert_eq!(names(&parent).await, ["add"], "mount with {label}");
        let reply = parent.call_tool("add", json!({"a": 2, "b": 3})).await;
        assert_eq!(result_of(reply, label), json!(5), "mount with {label}");
    }
}

#[tokio::test]
async fn a03_namespaced_lookup_matches_prefix_exactly() {
    let child = Server::new("child");
    let recorder = Recorder::default();
    child.add_middleware(recorder.clone());
    add(&child, constant("t", "ran t"));
    let parent = Server::new("parent");
    mount(&parent, &child, "ns");

    // Names that do not start with exactly `ns_` never reach the child.
    for name in ["t", "nst", "ns", "ns_", "NS_t", "ns-t", "xns_t"] {
        assert_unknown_tool(parent.call_tool(name, Value::Null).await, name);
        assert!(parent.get_tool(name, None).is_none(), "{name}");
    }
    assert_eq!(
        recorder.seen(),
        [],
        "an unprefixed or wrongly prefixed name reached the namespaced child"
    );

    // The prefix is stripped on the way in and put back on the way out.
    let reply = parent.call_tool("ns_t", Value::Null).await;
    assert_eq!(result_of(reply, "ns_t"), json!("ran t"));
    let seen = recorder.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].name, "t", "the child must see its own name");

    let tool = parent
        .get_tool("ns_t", None)
        .expect("ns_t should resolve on the parent");
    assert_eq!(tool.name(), "ns_t");
    assert_eq!(tool.owner_name(), "t");
    assert_eq!(tool.descriptor().tool.name, "ns_t");
}

// ------------------------------------------------------------------------------ A11

#[tokio::test]
async fn a11_nested_mounts_stack_prefixes() {
    // root <- middle ("middle") <- leaf ("leaf")
    let leaf = Server::new("leaf");
    add(
        &leaf,
        ToolDef::new("add", |Args(p): Args<Pair>| async move { p.a + p.b }),
    );
    let middle = Server::new("middle");
    add(&middle, constant("mid_tool", "middle ran"));
    mount(&middle, &leaf, "leaf");
    let root = Server::new("root");
    mount(&root, &middle, "middle");

    let mut listed = names(&root).await;
    listed.sort();
    assert_eq!(listed, ["middle_leaf_add", "middle_mid_tool"]);
    assert!(root.get_tool("leaf_middle_add", None).is_none());

    let reply = root
        .call_tool("middle_leaf_add", json!({"a": 5, "b": 6}))
        .await;
    assert_eq!(result_of(reply, "middle_leaf_add"), json!(11));
    let reply = root.call_tool("middle_mid_tool", Value::Null).await;
    assert_eq!(result_of(reply, "middle_mid_tool"), json!("middle ran"));

    // The seed case: child_gc_deep_tool.
    let gc = Server::new("gc");
    add(&gc, constant("deep_tool", "deep"));
    let child = Server::new("child");
    mount(&child, &gc, "gc");
    let parent = Server::new("parent");
    mount(&parent, &child, "child");
    assert_eq!(names(&parent).await, ["child_gc_deep_tool"]);
    let reply = parent.call_tool("child_gc_deep_tool", Value::Null).await;
    assert_eq!(result_of(reply, "child_gc_deep_tool"), json!("deep"));
}

#[tokio::test]
async fn a11_four_levels_call_at_every_depth() {
    let l3 = Server::new("l3");
    add(
        &l3,
        ToolDef::new("deep_tool", |Args(X { x }): Args<X>| async move { x * 4 }),
    );
    let l2 = Server::new("l2");
    add(
        &l2,
        ToolDef::new("tool2", |Args(X { x }): Args<X>| async move { x * 3 }),
    );
    mount(&l2, &l3, "l3");
    let l1 = Server::new("l1");
    add(
        &l1,
        ToolDef::new("tool1", |Args(X { x }): Args<X>| async move { x * 2 }),
    );
    mount(&l1, &l2, "l2");
    let root = Server::new("root");
    add(
        &root,
        ToolDef::new("tool0", |Args(X { x }): Args<X>| async move { x }),
    );
    mount(&root, &l1, "l1");

    assert_eq!(
        names(&root).await,
        ["tool0", "l1_tool1", "l1_l2_tool2", "l1_l2_l3_deep_tool"]
    );
    for (name, expected) in [
        ("tool0", 10),
        ("l1_tool1", 20),
        ("l1_l2_tool2", 30),
        ("l1_l2_l3_deep_tool", 40),
    ] {
        let reply = root.call_tool(name, json!({"x": 10})).await;
        assert_eq!(result_of(reply, name), json!(expected), "{name}");
    }
}

// ------------------------------------------------------------------------------ A14-A19

#[tokio::test]
async fn a14_mounts_under_different_namespaces_coexist() {
    let weather = Server::new("weather");
    add(&weather, constant("get_forecast", "sunny"));
    let news = Server::new("news");
    add(&news, constant("get_headlines", "all quiet"));
    let parent = Server::new("parent");
    mount(&parent, &weather, "weather");
    mount(&parent, &news, "news");

    assert_eq!(
        names(&parent).await,
        ["weather_get_forecast", "news_get_headlines"]
    );
    let reply = parent.call_tool("weather_get_forecast", Value::Null).await;
    assert_eq!(result_of(reply, "weather_get_forecast"), json!("sunny"));
    let reply = parent.call_tool("news_get_headlines", Value::Null).await;
    assert_eq!(result_of(reply, "news_get_headlines"), json!("all quiet"));
    // Each namespace only routes to its own child.
    assert_unknown_tool(
        parent.call_tool("weather_get_headlines", Value::Null).await,
        "weather_get_headlines",
    );
    assert_unknown_tool(
        parent.call_tool("news_get_forecast", Value::Null).await,
        "news_get_forecast",
    );
}

#[tokio::test]
async fn a15_same_tool_name_in_two_children_does_not_collide() {
    let c1 = Server::new("c1");
    add(
        &c1,
        ToolDef::new("process", |Args(X { x }): Args<X>| async move { x * 2 }),
    );
    let c2 = Server::new("c2");
    add(
        &c2,
        ToolDef::new("process", |Args(X { x }): Args<X>| async move { x * 3 }),
    );
    let parent = Server::new("parent");
    mount(&parent, &c1, "c1");
    mount(&parent, &c2, "c2");

    let reply = parent.call_tool("c1_process", json!({"x": 10})).await;
    assert_eq!(result_of(reply, "c1_process"), json!(20));
    let reply = parent.call_tool("c2_process", json!({"x": 10})).await;
    assert_eq!(result_of(reply, "c2_process"), json!(30));
}

#[tokio::test]
async fn a16_same_namespace_merges_tools() {
    let first = Server::new("first");
    add(&first, constant("first_tool", "first"));
    let second = Server::new("second");
    add(&second, constant("second_tool", "second"));
    let parent = Server::new("parent");
    mount(&parent, &first, "api");
    mount(&parent, &second, "api");

    assert_eq!(names(&parent).await, ["api_first_tool", "api_second_tool"]);
    let reply = parent.call_tool("api_first_tool", Value::Null).await;
    assert_eq!(result_of(reply, "api_first_tool"), json!("first"));
    let reply = parent.call_tool("api_second_tool", Value::Null).await;
    assert_eq!(result_of(reply, "api_second_tool"), json!("second"));
}

#[tokio::test]
async fn a17_duplicate_names_without_namespace_resolve_to_first_mount() {
    let first = Server::new("first_app");
    add(&first, constant("shared_tool", "First app tool"));
    let second = Server::new("second_app");
    add(&second, constant("shared_tool", "Second app tool"));
    let parent = Server::new("parent");
    mount(&parent, &first, None);
    mount(&parent, &second, None);

    assert_eq!(names(&parent).await, ["shared_tool", "shared_tool"]);
    let reply = parent.call_tool("shared_tool", Value::Null).await;
    assert_eq!(result_of(reply, "shared_tool"), json!("First app tool"));
    let tool = parent
        .get_tool("shared_tool", None)
        .expect("shared_tool should resolve");
    assert!(
        tool.owner().ptr_eq(&first),
        "owner is {:?}",
        tool.owner().name()
    );
}

#[tokio::test]
async fn a17_duplicate_names_in_same_namespace_resolve_to_first_mount() {
    let first = Server::new("first_app");
    add(&first, constant("shared_tool", "First app tool"));
    let second = Server::new("second_app");
    add(&second, constant("shared_tool", "Second app tool"));
    let parent = Server::new("parent");
    mount(&parent, &first, "api");
    mount(&parent, &second, "api");

    assert_eq!(names(&parent).await, ["api_shared_tool", "api_shared_tool"]);
    let reply = parent.call_tool("api_shared_tool", Value::Null).await;
    assert_eq!(result_of(reply, "api_shared_tool"), json!("First app tool"));
    let tool = parent
        .get_tool("api_shared_tool", None)
        .expect("api_shared_tool should resolve");
    assert!(
        tool.owner().ptr_eq(&first),
        "owner is {:?}",
        tool.owner().name()
    );
}

#[tokio::test]
async fn a18_local_tool_beats_mounted_tool_of_equal_version() {
    for version in [None, Some("1.0")] {
        let child = Server::new("child");
        let parent = Server::new("parent");
        let mut mounted = constant("greet", "mounted");
        let mut local = constant("greet", "local");
        if let Some(version) = version {
            mounted = mounted.version(version);
            local = local.version(version);
        }
        add(&child, mounted);
        // Mounted before the local tool is registered: the local provider still comes first.
        mount(&parent, &child, None);
        add(&parent, local);

        let reply = parent.call_tool("greet", Value::Null).await;
        assert_eq!(
            result_of(reply, "greet"),
            json!("local"),
            "version {version:?}"
        );
        let tool = parent.get_tool("greet", None).expect("greet resolves");
        assert!(tool.owner().ptr_eq(&parent), "version {version:?}");
    }
}

#[tokio::test]
async fn a18_highest_version_wins_over_mount_order() {
    // The later mount holds the higher version: it wins.
    let low = Server::new("low");
    add(&low, constant("calc", "low").version("1.0"));
    let high = Server::new("high");
    add(&high, constant("calc", "high").version("2.0"));
    let parent = Server::new("parent");
    mount(&parent, &low, None);
    mount(&parent, &high, None);
    let reply = parent.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("high"));
    let tool = parent.get_tool("calc", None).expect("calc resolves");
    assert!(tool.owner().ptr_eq(&high));

    // A mounted higher version also beats a local lower one.
    let local_parent = Server::new("local_parent");
    add(&local_parent, constant("calc", "local").version("1.5"));
    mount(&local_parent, &high, None);
    let reply = local_parent.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("high"));

    // And a local higher version beats a mounted lower one.
    let local_high = Server::new("local_high");
    add(&local_high, constant("calc", "local").version("3.0"));
    mount(&local_high, &high, None);
    let reply = local_high.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("local"));
}

#[tokio::test]
async fn a18_version_tie_goes_to_earliest_mount() {
    let first = Server::new("first");
    add(&first, constant("calc", "first").version("1.0"));
    let second = Server::new("second");
    add(&second, constant("calc", "second").version("1.0"));
    let parent = Server::new("parent");
    mount(&parent, &first, None);
    mount(&parent, &second, None);

    let reply = parent.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("first"));
    let tool = parent.get_tool("calc", None).expect("calc resolves");
    assert!(tool.owner().ptr_eq(&first));
}

#[tokio::test]
async fn a19_duplicate_tools_are_listed_twice_with_a_warning() {
    let (logs, _guard) = capture_warnings();
    let first = Server::new("first");
    add(&first, constant("greet", "first"));
    let second = Server::new("second");
    add(&second, constant("greet", "second"));
    let parent = Server::new("parent");
    mount(&parent, &first, "ns");
    mount(&parent, &second, "ns");

    let tools = listed(&parent).await;
    let greets: Vec<&ToolInfo> = tools.iter().filter(|t| t.name() == "ns_greet").collect();
    assert_eq!(greets.len(), 2, "{tools:?}");
    assert!(greets[0].owner().ptr_eq(&first));
    assert!(greets[1].owner().ptr_eq(&second));
    let text = logs.contents();
    assert!(
        text.contains("WARN") && text.contains("Duplicate"),
        "expected a duplicate warning, got logs: {text:?}"
    );
}

#[tokio::test]
async fn a19_distinct_names_in_one_namespace_do_not_warn() {
    let (logs, _guard) = capture_warnings();
    let first = Server::new("first");
    add(&first, constant("greet", "first"));
    let second = Server::new("second");
    add(&second, constant("farewell", "second"));
    let parent = Server::new("parent");
    mount(&parent, &first, "ns");
    mount(&parent, &second, "ns");

    assert_eq!(names(&parent).await, ["ns_greet", "ns_farewell"]);
    let text = logs.contents();
    assert!(!text.contains("Duplicate"), "unexpected warning: {text:?}");
}

// ------------------------------------------------------------------------------ A20-A25

#[tokio::test]
async fn a20_tools_added_to_child_after_mount_are_live() {
    let child = Server::new("child");
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");
    assert_eq!(names(&parent).await, Vec::<String>::new());

    add(
        &child,
        ToolDef::new(
            "dynamic_tool",
            |Args(X { x }): Args<X>| async move { x + 1 },
        ),
    );
    assert_eq!(names(&parent).await, ["sub_dynamic_tool"]);
    let reply = parent.call_tool("sub_dynamic_tool", json!({"x": 41})).await;
    assert_eq!(result_of(reply, "sub_dynamic_tool"), json!(42));
}

#[tokio::test]
async fn a20_tools_removed_from_child_disappear() {
    let child = Server::new("child");
    add(&child, constant("temp_tool", "temp"));
    add(&child, constant("kept_tool", "kept"));
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");
    assert_eq!(names(&parent).await, ["sub_temp_tool", "sub_kept_tool"]);
    let reply = parent.call_tool("sub_temp_tool", Value::Null).await;
    assert_eq!(
        result_of(reply, "sub_temp_tool before removal"),
        json!("temp")
    );

    assert!(child.remove_tool("temp_tool"), "the child had temp_tool");
    assert_eq!(names(&parent).await, ["sub_kept_tool"]);
    assert!(parent.get_tool("sub_temp_tool", None).is_none());
    assert_unknown_tool(
        parent.call_tool("sub_temp_tool", Value::Null).await,
        "sub_temp_tool",
    );
}

#[tokio::test]
async fn a21_mounted_lists_direct_children_in_mount_order() {
    let sub1 = Server::new("sub1");
    add(&sub1, constant("tool1", "1"));
    let sub2 = Server::new("sub2");
    add(&sub2, constant("tool2", "2"));
    let gc = Server::new("gc");
    mount(&sub2, &gc, "gc");
    let parent = Server::new("parent");
    assert!(parent.mounted().is_empty());
    mount(&parent, &sub1, "sub1");
    mount(&parent, &sub2, "sub2");

    let mounted = parent.mounted();
    assert_eq!(mounted.len(), 2, "{mounted:?}");
    assert!(mounted[0].ptr_eq(&sub1), "{mounted:?}");
    assert!(mounted[1].ptr_eq(&sub2), "{mounted:?}");
    assert_eq!(names(&parent).await, ["sub1_tool1", "sub2_tool2"]);
}

#[tokio::test]
async fn a22_mounting_a_server_onto_itself_fails() {
    let server = Server::new("s");
    add(&server, constant("t", "t"));
    match server.mount(&server.clone(), "self") {
        Err(error @ ServerError::MountSelf) => {
            assert_eq!(error.to_string(), "cannot mount a server onto itself");
        }
        other => panic!("expected MountSelf, got {other:?}"),
    }
    assert!(server.mounted().is_empty());
    assert_eq!(names(&server).await, ["t"]);
}

#[tokio::test]
async fn a22_mount_cycle_is_rejected() {
    let parent = Server::new("parent");
    let child = Server::new("child");
    mount(&parent, &child, "child");
    match child.mount(&parent, "parent") {
        Err(ServerError::MountCycle { .. }) => {}
        other => panic!("expected MountCycle, got {other:?}"),
    }
    assert!(child.mounted().is_empty());
}

#[tokio::test]
async fn a23_rename_applies_before_namespace() {
    let child = Server::new("child");
    add(
        &child,
        ToolDef::new(
            "original_tool",
            |Args(X { x }): Args<X>| async move { x * 7 },
        ),
    );
    add(&child, constant("other_tool", "other"));
    let parent = Server::new("parent");
    mount(
        &parent,
        &child,
        MountOptions::new()
            .namespace("prefix")
            .rename_tool("original_tool", "custom_name"),
    );

    assert_eq!(
        names(&parent).await,
        ["prefix_custom_name", "prefix_other_tool"]
    );
    for hidden in ["original_tool", "prefix_original_tool", "custom_name"] {
        assert!(parent.get_tool(hidden, None).is_none(), "{hidden}");
        assert_unknown_tool(parent.call_tool(hidden, json!({"x": 1})).await, hidden);
    }
    let reply = parent
        .call_tool("prefix_custom_name", json!({"x": 6}))
        .await;
    assert_eq!(result_of(reply, "prefix_custom_name"), json!(42));
    let tool = parent
        .get_tool("prefix_custom_name", None)
        .expect("prefix_custom_name resolves");
    assert_eq!(tool.owner_name(), "original_tool");
    assert_eq!(tool.descriptor().tool.name, "prefix_custom_name");
    // Tools without a rename are only namespaced.
    let reply = parent.call_tool("prefix_other_tool", Value::Null).await;
    assert_eq!(result_of(reply, "prefix_other_tool"), json!("other"));
}

#[tokio::test]
async fn a24_duplicate_rename_targets_fail_at_mount() {
    let child = Server::new("child");
    add(&child, constant("one", "1"));
    add(&child, constant("two", "2"));
    let parent = Server::new("parent");
    let result = parent.mount(
        &child,
        MountOptions::new()
            .namespace("prefix")
            .rename_tool("one", "same")
            .rename_tool("two", "same"),
    );
    match result {
        Err(error @ ServerError::DuplicateRename(_)) => {
            assert!(
                error.to_string().contains("duplicate target name"),
                "message: {error}"
            );
        }
        other => panic!("expected DuplicateRename, got {other:?}"),
    }
    assert!(parent.mounted().is_empty(), "a failed mount must not stick");
    assert_eq!(names(&parent).await, Vec::<String>::new());
}

#[tokio::test]
async fn a25_child_renamed_tools_are_namespaced_too() {
    let gc = Server::new("gc");
    add(&gc, constant("original", "transformed"));
    let child = Server::new("child");
    mount(
        &child,
        &gc,
        MountOptions::new().rename_tool("original", "transformed_tool"),
    );
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");

    assert_eq!(names(&parent).await, ["sub_transformed_tool"]);
    assert_unknown_tool(
        parent.call_tool("sub_original", Value::Null).await,
        "sub_original",
    );
    let reply = parent.call_tool("sub_transformed_tool", Value::Null).await;
    assert_eq!(
        result_of(reply, "sub_transformed_tool"),
        json!("transformed")
    );
}

// ------------------------------------------------------------------------------ A26-A28

fn tagged_child() -> Server {
    let child = Server::new("child");
    add(&child, constant("allowed", "allowed").tag("allowed"));
    add(&child, constant("blocked", "blocked").tag("blocked"));
    add(&child, constant("plain", "plain"));
    child
}

#[tokio::test]
async fn a26_parent_disable_tags_hides_mounted_tools() {
    let child = tagged_child();
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");
    parent.disable_tags(["blocked"]);

    assert_eq!(names(&parent).await, ["sub_allowed", "sub_plain"]);
    assert!(parent.get_tool("sub_blocked", None).is_none());
    assert_unknown_tool(
        parent.call_tool("sub_blocked", Value::Null).await,
        "sub_blocked",
    );
    let reply = parent.call_tool("sub_plain", Value::Null).await;
    assert_eq!(result_of(reply, "sub_plain"), json!("plain"));
    // The child itself is unaffected.
    let reply = child.call_tool("blocked", Value::Null).await;
    assert_eq!(result_of(reply, "child blocked"), json!("blocked"));
}

#[tokio::test]
async fn a26_parent_enable_only_tags_keeps_matching_mounted_tools() {
    let child = tagged_child();
    let parent = Server::new("parent");
    add(&parent, constant("local_plain", "local"));
    mount(&parent, &child, "sub");
    parent.enable_only_tags(["allowed"]);

    assert_eq!(names(&parent).await, ["sub_allowed"]);
    let reply = parent.call_tool("sub_allowed", Value::Null).await;
    assert_eq!(result_of(reply, "sub_allowed"), json!("allowed"));
    for hidden in ["sub_plain", "sub_blocked", "local_plain"] {
        assert!(parent.get_tool(hidden, None).is_none(), "{hidden}");
        assert_unknown_tool(parent.call_tool(hidden, Value::Null).await, hidden);
    }
}

#[tokio::test]
async fn a27_disable_and_enable_mounted_tool_by_name() {
    let child = Server::new("child");
    add(&child, constant("greet", "hello"));
    add(&child, constant("other", "other"));
    let parent = Server::new("parent");
    mount(&parent, &child, None);

    parent.disable_tool("greet");
    assert_eq!(names(&parent).await, ["other"]);
    assert!(parent.get_tool("greet", None).is_none());
    assert_unknown_tool(parent.call_tool("greet", Value::Null).await, "greet");
    assert!(
        child.get_tool("greet", None).is_some(),
        "the parent's rule must not change the child"
    );

    parent.enable_tool("greet");
    assert_eq!(names(&parent).await, ["greet", "other"]);
    let reply = parent.call_tool("greet", Value::Null).await;
    assert_eq!(result_of(reply, "greet"), json!("hello"));

    // With a namespace, the rule uses the name at the parent.
    let ns_parent = Server::new("ns_parent");
    mount(&ns_parent, &child, "sub");
    ns_parent.disable_tool("greet");
    assert_eq!(names(&ns_parent).await, ["sub_greet", "sub_other"]);
    ns_parent.disable_tool("sub_greet");
    assert_eq!(names(&ns_parent).await, ["sub_other"]);
    assert_unknown_tool(
        ns_parent.call_tool("sub_greet", Value::Null).await,
        "sub_greet",
    );
}

#[tokio::test]
async fn a28_failing_child_listing_does_not_break_parent() {
    let (logs, _guard) = capture_warnings();
    let working = Server::new("working");
    add(&working, constant("working_tool", "works"));
    let broken = Server::new("broken");
    add(&broken, constant("broken_tool", "unreachable"));
    broken.add_middleware(FailingList);
    let parent = Server::new("parent");
    add(&parent, constant("local_tool", "local"));
    mount(&parent, &broken, "broken");
    mount(&parent, &working, "working");

    let tools = parent.list_tools().await;
    let names: Vec<String> = match tools {
        Ok(tools) => tools.iter().map(|t| t.name().to_owned()).collect(),
        Err(e) => panic!("the parent's listing failed: {}", e.message),
    };
    assert_eq!(names, ["local_tool", "working_working_tool"]);
    let reply = parent.call_tool("working_working_tool", Value::Null).await;
    assert_eq!(result_of(reply, "working_working_tool"), json!("works"));
    let text = logs.contents();
    assert!(
        text.contains("Error during list_tools from provider"),
        "expected a warning, got logs: {text:?}"
    );
}

// ------------------------------------------------------------------------------ A30-A31

type Events = Arc<Mutex<Vec<String>>>;

fn record_hooks(server: &Server, events: &Events) {
    let on_start = Arc::clone(events);
    server.on_start(move |s| {
        let events = Arc::clone(&on_start);
        async move {
            lock(&events).push(format!("start:{}", s.name()));
            Ok::<(), BoxError>(())
        }
    });
    let on_stop = Arc::clone(events);
    server.on_stop(move |s| {
        let events = Arc::clone(&on_stop);
        async move {
            lock(&events).push(format!("stop:{}", s.name()));
        }
    });
}

#[tokio::test]
async fn a30_grandchild_hooks_run_once_per_start() {
    let events = Events::default();
    let gc = Server::new("gc");
    add(&gc, constant("deep_tool", "deep"));
    record_hooks(&gc, &events);
    let child = Server::new("child");
    record_hooks(&child, &events);
    mount(&child, &gc, "gc");
    let root = Server::new("root");
    record_hooks(&root, &events);
    mount(&root, &child, "child");

    let one_cycle = [
        "start:root",
        "start:child",
        "start:gc",
        "stop:gc",
        "stop:child",
        "stop:root",
    ];
    for round in 1..=2 {
        let running = match root.start().await {
            Ok(running) => running,
            Err(e) => panic!("start #{round} failed: {e}"),
        };
        // Calls do not enter the hooks again.
        for _ in 0..2 {
            let reply = root.call_tool("child_gc_deep_tool", Value::Null).await;
            assert_eq!(result_of(reply, "child_gc_deep_tool"), json!("deep"));
        }
        running.stop().await;
        let expected: Vec<&str> = one_cycle.iter().copied().cycle().take(6 * round).collect();
        assert_eq!(*lock(&events), expected, "after round {round}");
    }
}

#[tokio::test]
async fn a30_grandchild_mounted_twice_starts_once() {
    let events = Events::default();
    let shared = Server::new("shared");
    record_hooks(&shared, &events);
    let a = Server::new("a");
    mount(&a, &shared, "s");
    let b = Server::new("b");
    mount(&b, &shared, "s");
    let root = Server::new("root");
    mount(&root, &a, "a");
    mount(&root, &b, "b");

    let running = match root.start().await {
        Ok(running) => running,
        Err(e) => panic!("start failed: {e}"),
    };
    running.stop().await;
    assert_eq!(*lock(&events), ["start:shared", "stop:shared"]);
}

#[derive(Clone, Debug)]
struct Who(String);

#[tokio::test]
async fn a31_mounted_child_tool_sees_child_state() {
    let child = Server::new("child");
    child.on_start(|s| async move {
        s.insert_state(Who("child".into()));
        Ok::<(), BoxError>(())
    });
    add(
        &child,
        ToolDef::new("who", |State(who): State<Who>| async move { who.0 }),
    );
    // A grandchild with no state of its own must not see an ancestor's.
    let gc = Server::new("gc");
    add(
        &gc,
        ToolDef::new("who", |State(who): State<Who>| async move { who.0 }),
    );
    mount(&child, &gc, "gc");

    let parent = Server::new("parent");
    parent.on_start(|s| async move {
        s.insert_state(Who("parent".into()));
        Ok::<(), BoxError>(())
    });
    add(
        &parent,
        ToolDef::new("who", |State(who): State<Who>| async move { who.0 }),
    );
    mount(&parent, &child, "child");

    // The grandchild has no Who of its own and must not read an ancestor's: the server
    // does not start, naming its tool.
    match parent.start().await {
        Err(ServerError::MissingState {
            server,
            tool,
            type_name,
        }) => {
            assert_eq!((server.as_str(), tool.as_str()), ("gc", "who"));
            assert!(type_name.ends_with("Who"), "{type_name}");
        }
        Err(other) => panic!("expected a missing state, got {other}"),
        Ok(_) => panic!("started with a tool whose state is missing"),
    }
    gc.insert_state(Who("gc".into()));
    let running = match parent.start().await {
        Ok(running) => running,
        Err(e) => panic!("start failed: {e}"),
    };
    let reply = parent.call_tool("child_who", Value::Null).await;
    assert_eq!(result_of(reply, "child_who"), json!("child"));
    let reply = parent.call_tool("who", Value::Null).await;
    assert_eq!(result_of(reply, "who"), json!("parent"));
    let reply = parent.call_tool("child_gc_who", Value::Null).await;
    assert_eq!(result_of(reply, "child_gc_who"), json!("gc"));
    running.stop().await;
}

/// What stopped `server` from starting: the component whose state is missing.
async fn missing_state(server: &Server) -> String {
    match server.start().await {
        Err(ServerError::MissingState { tool, .. }) => tool,
        Err(other) => panic!("expected a missing state, got {other}"),
        Ok(_) => panic!("started with a component whose state is missing"),
    }
}

#[tokio::test]
async fn a31_resources_templates_and_prompts_taking_a_missing_state_stop_the_start() {
    let who = |State(who): State<Who>| async move { who.0 };
    let server = Server::new("resources");
    server
        .add_resource(ferrymcp::ResourceDef::new("who://me", who))
        .expect("resource");
    assert_eq!(missing_state(&server).await, "who://me");
    let server = Server::new("templates");
    server
        .add_resource(ferrymcp::ResourceDef::new("who://{name}", who))
        .expect("template");
    assert_eq!(missing_state(&server).await, "who://{name}");
    let server = Server::new("prompts");
    server
        .add_prompt(ferrymcp::PromptDef::new("who", who))
        .expect("prompt");
    assert_eq!(missing_state(&server).await, "who");
    // Given the state, each starts.
    server.insert_state(Who("me".into()));
    server.start().await.expect("start").stop().await;
}

// ------------------------------------------------------------------------------ A35-A39

#[tokio::test]
async fn a35_mounted_tool_keeps_task_support_in_listing() {
    let gc = Server::new("gc");
    add(
        &gc,
        ToolDef::new("must_task", || async { 1 }).task(TaskSupport::Required),
    );
    let child = Server::new("child");
    add(&child, ToolDef::new("slow", || async { 1 }).task(true));
    add(&child, ToolDef::new("fast", || async { 1 }));
    mount(&child, &gc, "gc");
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");
    // No tasks extension anywhere: declarations are still listed (the server is not started).

    let tools = listed(&parent).await;
    let find = |name: &str| -> &ToolInfo {
        tools
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("{name} not listed in {tools:?}"))
    };
    for (name, mode, wire) in [
        ("sub_slow", TaskSupport::Optional, json!("optional")),
        ("sub_gc_must_task", TaskSupport::Required, json!("required")),
    ] {
        let descriptor = find(name).descriptor();
        assert_eq!(descriptor.task_support(), mode, "{name}");
        let json = serde_json::to_value(&descriptor).expect("descriptor serializes");
        assert_eq!(json["execution"]["taskSupport"], wire, "{name}: {json}");
        assert_eq!(json["name"], json!(name));

        let got = parent
            .get_tool(name, None)
            .unwrap_or_else(|| panic!("{name} resolves"));
        assert_eq!(got.descriptor().task_support(), mode, "get_tool {name}");
        assert_eq!(got.task_config().mode, mode, "get_tool {name}");
    }
    let fast = find("sub_fast").descriptor();
    assert_eq!(fast.task_support(), TaskSupport::Forbidden);
    assert!(fast.execution.is_none(), "{fast:?}");
}

#[tokio::test]
async fn a36_mounted_tool_keeps_its_metadata() {
    let mut meta = MetaObject::new();
    meta.insert("custom".into(), json!("kept"));
    let task = TaskConfig::optional().with_poll_interval(Duration::from_millis(250));
    let child = Server::new("child");
    add(
        &child,
        ToolDef::new("answer", |Args(p): Args<Pair>| async move { p.a + p.b })
            .title("Deep Thought")
            .description("Adds two integers")
            .tags(["math", "slow"])
            .annotations(ToolAnnotations::new().read_only(true).idempotent(true))
            .icons(vec![
                Icon::new("https://example.invalid/icon.png").with_mime_type("image/png"),
            ])
            .meta(meta)
            .version("2.0")
            .task(task),
    );
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");

    let own = child
        .get_tool("answer", None)
        .expect("the child has answer")
        .descriptor();
    let mut expected = own.clone();
    expected.tool.name = "sub_answer".into();

    let from_list = listed(&parent)
        .await
        .into_iter()
        .find(|t| t.name() == "sub_answer")
        .expect("sub_answer is listed");
    let from_get = parent
        .get_tool("sub_answer", None)
        .expect("sub_answer resolves");
    for (how, info) in [("list_tools", from_list), ("get_tool", from_get)] {
        let d = info.descriptor();
        assert_eq!(d.tool.name, "sub_answer", "{how}");
        assert_eq!(d.tool.title.as_deref(), Some("Deep Thought"), "{how}");
        assert_eq!(
            d.tool.description.as_deref(),
            Some("Adds two integers"),
            "{how}"
        );
        let annotations = d.tool.annotations.as_ref().expect("annotations kept");
        assert_eq!(annotations.read_only_hint, Some(true), "{how}");
        assert_eq!(annotations.idempotent_hint, Some(true), "{how}");
        let icons = d.tool.icons.as_ref().expect("icons kept");
        assert_eq!(icons.len(), 1, "{how}");
        assert_eq!(icons[0].src, "https://example.invalid/icon.png", "{how}");
        assert_eq!(icons[0].mime_type.as_deref(), Some("image/png"), "{how}");
        let meta = d.tool.meta.as_ref().expect("meta kept");
        assert_eq!(meta.get("custom"), Some(&json!("kept")), "{how}");
        assert_eq!(meta["fastmcp"]["version"], json!("2.0"), "{how}");
        let output = d.tool.output_schema.as_ref().expect("output schema kept");
        assert_eq!(output["type"], json!("object"), "{how}");
        assert_eq!(
            Some(output),
            own.tool.output_schema.as_ref(),
            "{how}: output schema"
        );
        let properties = d.tool.input_schema["properties"]
            .as_object()
            .expect("input schema properties");
        assert!(
            properties.contains_key("a") && properties.contains_key("b"),
            "{how}"
        );
        assert_eq!(d.task_support(), TaskSupport::Optional, "{how}");
        assert_eq!(d, expected, "{how}: everything but the name is the child's");

        assert_eq!(info.version().map(Version::as_str), Some("2.0"), "{how}");
        let tags: Vec<&str> = info.tags().iter().map(String::as_str).collect();
        assert_eq!(tags, ["math", "slow"], "{how}");
        assert_eq!(*info.task_config(), task, "{how}");
    }
}

#[tokio::test]
async fn a37_mounted_tool_owner_is_the_directly_mounted_child() {
    let gc = Server::new("gc");
    add(&gc, constant("deep_tool", "deep"));
    let child = Server::new("child");
    mount(&child, &gc, "gc");
    let root = Server::new("root");
    mount(&root, &child, "child");

    let tool = root
        .get_tool("child_gc_deep_tool", None)
        .expect("child_gc_deep_tool resolves");
    assert!(
        tool.owner().ptr_eq(&child),
        "owner is {:?}, expected the directly mounted child",
        tool.owner().name()
    );
    assert!(!tool.owner().ptr_eq(&gc));
    assert_eq!(tool.owner_name(), "gc_deep_tool");

    let listed = listed(&root).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].owner().ptr_eq(&child));
    assert_eq!(listed[0].owner_name(), "gc_deep_tool");

    // One level down, the same tool is owned by the grandchild.
    let at_child = child
        .get_tool("gc_deep_tool", None)
        .expect("gc_deep_tool resolves on the child");
    assert!(at_child.owner().ptr_eq(&gc));
    assert_eq!(at_child.owner_name(), "deep_tool");
}

#[tokio::test]
async fn a38_mounted_call_runs_child_middleware_with_exact_version() {
    let recorder = Recorder::default();
    let gc = Server::new("gc");
    gc.add_middleware(recorder.clone());
    add(
        &gc,
        ToolDef::new("calc", |Args(X { x }): Args<X>| async move { x * 5 }).version("1.0"),
    );
    add(
        &gc,
        ToolDef::new("calc", |Args(X { x }): Args<X>| async move { x * 11 }).version("2.0"),
    );
    let child = Server::new("child");
    child.add_middleware(recorder.clone());
    mount(&child, &gc, "gc");
    let root = Server::new("root");
    root.add_middleware(recorder.clone());
    add(&root, constant("local", "local"));
    mount(&root, &child, "child");

    let reply = root.call_tool("child_gc_calc", json!({"x": 10})).await;
    assert_eq!(result_of(reply, "child_gc_calc"), json!(110));
    let exact = |raw: &str| Some(VersionSpec::exact(v(raw)));
    assert_eq!(
        recorder.seen(),
        [
            Seen {
                server: "root".into(),
                name: "child_gc_calc".into(),
                version: None,
            },
            Seen {
                server: "child".into(),
                name: "gc_calc".into(),
                version: exact("2.0"),
            },
            Seen {
                server: "gc".into(),
                name: "calc".into(),
                version: exact("2.0"),
            },
        ]
    );

    // A call to the root's own tool never reaches the children's middleware.
    lock(&recorder.0).clear();
    let reply = root.call_tool("local", Value::Null).await;
    assert_eq!(result_of(reply, "local"), json!("local"));
    let servers: Vec<String> = recorder.seen().into_iter().map(|s| s.server).collect();
    assert_eq!(servers, ["root"]);
}

#[tokio::test]
async fn a39_unknown_tool_is_invalid_params() {
    let child = Server::new("child");
    add(&child, constant("t", "t"));
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");

    assert_unknown_tool(parent.call_tool("nope", Value::Null).await, "nope");
    assert_unknown_tool(parent.call_tool("sub_nope", Value::Null).await, "sub_nope");
    assert_unknown_tool(
        parent
            .call(ToolCall::new("sub_nope").without_middleware())
            .await,
        "sub_nope",
    );
    // A hidden tool reports the same error.
    parent.disable_tool("sub_t");
    assert_unknown_tool(parent.call_tool("sub_t", Value::Null).await, "sub_t");
}

#[tokio::test]
async fn e02_current_server_in_mounted_tool_is_the_child() {
    let seen: Arc<Mutex<Vec<Server>>> = Arc::default();
    let tool = |seen: Arc<Mutex<Vec<Server>>>| {
        ToolDef::new("whoami", move |CurrentServer(server): CurrentServer| {
            let seen = Arc::clone(&seen);
            async move {
                let name = server.name().to_owned();
                lock(&seen).push(server);
                name
            }
        })
    };
    let gc = Server::new("gc");
    add(&gc, tool(Arc::clone(&seen)));
    let child = Server::new("child");
    add(&child, tool(Arc::clone(&seen)));
    add(
        &child,
        ToolDef::new("ctx_name", |cx: Context| async move {
            cx.server().name().to_owned()
        }),
    );
    mount(&child, &gc, "gc");
    let parent = Server::new("parent");
    mount(&parent, &child, "child");

    let reply = parent.call_tool("child_whoami", Value::Null).await;
    assert_eq!(result_of(reply, "child_whoami"), json!("child"));
    let reply = parent.call_tool("child_gc_whoami", Value::Null).await;
    assert_eq!(result_of(reply, "child_gc_whoami"), json!("gc"));
    let reply = parent.call_tool("child_ctx_name", Value::Null).await;
    assert_eq!(result_of(reply, "child_ctx_name"), json!("child"));

    let seen = lock(&seen).clone();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].ptr_eq(&child), "not the same child instance");
    assert!(seen[1].ptr_eq(&gc), "not the same grandchild instance");
}
