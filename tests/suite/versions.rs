//! Tool versions through servers and mounts (behaviour catalog, section H), in process.
//!
//! Every test name starts with the behaviour ID it covers. H08 and H09 (the wire `_meta`
//! selection and the deduplicated wire listing) are tested at the protocol level elsewhere.

use std::sync::{Arc, Mutex};

use ferrymcp::{
    Args, CallTool, CurrentServer, Middleware, Next, Server, ServerError, ToolCall, ToolDef,
    types::{CallToolResponse, ErrorData},
    version::{Version, VersionSpec},
};
use ferrymcp_test_helpers::reply::{assert_unknown_tool, complete, result_of, text_of};
use serde_json::{Value, json};

use crate::support::tree as support;

use support::{Pair, X, add, listed, lock, mount, v};

// ------------------------------------------------------------------------------ helpers

fn exact(raw: &str) -> VersionSpec {
    VersionSpec::exact(v(raw))
}

/// A tool `name` at `version` that returns its version string.
fn tagged_version(name: &str, version: &str) -> ToolDef {
    let label = version.to_owned();
    ToolDef::new(name, move || {
        let label = label.clone();
        async move { label }
    })
    .version(version)
}

/// A tool returning the name of the server that runs it.
fn whoami(name: &str) -> ToolDef {
    ToolDef::new(name, |CurrentServer(server): CurrentServer| async move {
        server.name().to_owned()
    })
}

/// `name@version` of every listed tool (`name@` when unversioned).
async fn keys(server: &Server) -> Vec<String> {
    listed(server)
        .await
        .iter()
        .map(|t| format!("{}@{}", t.name(), t.version().map_or("", Version::as_str)))
        .collect()
}

/// The version `get_tool` resolves, as a string.
fn resolved_version(server: &Server, name: &str, spec: Option<&VersionSpec>) -> Option<String> {
    server.get_tool(name, spec).map(|t| {
        t.version()
            .map_or_else(String::new, |v| v.as_str().to_owned())
    })
}

/// One `tools/call` as a middleware saw it: server, tool name, requested version.
type Seen = (String, String, Option<VersionSpec>);

/// Records the name and version of every `tools/call` its server handles.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *lock(&self.0))
    }
}

#[async_trait::async_trait]
impl Middleware for Recorder {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        lock(&self.0).push((
            call.context().server().name().to_owned(),
            call.name.clone(),
            call.version.clone(),
        ));
        next.run(call).await
    }
}

// ------------------------------------------------------------------------------ H01-H04

#[tokio::test]
async fn h01_int_version_is_stored_as_a_string() {
    let server = Server::new("s");
    add(
        &server,
        ToolDef::new("zero", || async { "zero" }).version(0),
    );
    add(&server, ToolDef::new("calc", || async { 2 }).version(2));
    add(&server, ToolDef::new("calc", || async { 10 }).version(10));

    let zero = server.get_tool("zero", None).expect("zero resolves");
    assert_eq!(zero.version().map(Version::as_str), Some("0"));
    let meta = zero
        .descriptor()
        .tool
        .meta
        .expect("a versioned tool has _meta");
    assert_eq!(meta["fastmcp"]["version"], json!("0"));

    // 0 is a real version, not "unversioned": adding an unversioned `zero` mixes.
    match server.add_tool(ToolDef::new("zero", || async { "none" })) {
        Err(ServerError::MixedVersioning { .. }) => {}
        other => panic!("version 0 must count as versioned, got {other:?}"),
    }
    let reply = server.call(ToolCall::new("zero").version(0)).await;
    assert_eq!(result_of(reply, "zero@0"), json!("zero"));

    // Integers compare as versions: 10 > 2.
    assert_eq!(
        resolved_version(&server, "calc", None).as_deref(),
        Some("10")
    );
    let reply = server.call(ToolCall::new("calc").version(2)).await;
    assert_eq!(result_of(reply, "calc@2"), json!(2));
}

#[tokio::test]
async fn h01_name_and_version_identify_a_tool() {
    let server = Server::new("s");
    add(&server, tagged_version("calc", "1.0"));
    add(&server, tagged_version("calc", "2.0"));
    match server.add_tool(tagged_version("calc", "1.0")) {
        Err(error @ ServerError::Duplicate { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains("'calc'") && message.contains("1.0"),
                "{message}"
            );
        }
        other => panic!("calc@1.0 twice should be a duplicate, got {other:?}"),
    }
    add(&server, ToolDef::new("plain", || async {}));
    match server.add_tool(ToolDef::new("plain", || async {})) {
        Err(ServerError::Duplicate { version: None, .. }) => {}
        other => panic!("plain@ twice should be a duplicate, got {other:?}"),
    }
    assert_eq!(keys(&server).await, ["calc@1.0", "calc@2.0", "plain@"]);
    let plain = server.get_tool("plain", None).expect("plain resolves");
    assert!(plain.version().is_none());
    let meta = plain.descriptor().tool.meta;
    assert!(
        meta.as_ref().is_none_or(|m| m.get("fastmcp").is_none()),
        "an unversioned tool has no version meta: {meta:?}"
    );
}

#[tokio::test]
async fn h02_several_versions_listed_and_highest_is_default() {
    let server = Server::new("s");
    add(&server, tagged_version("calc", "1.0"));
    add(&server, tagged_version("calc", "2.0"));
    add(&server, tagged_version("calc", "1.5"));

    assert_eq!(keys(&server).await, ["calc@1.0", "calc@2.0", "calc@1.5"]);
    assert_eq!(
        resolved_version(&server, "calc", None).as_deref(),
        Some("2.0")
    );
    let reply = server.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("2.0"));
}

#[tokio::test]
async fn h03_mixing_versioned_and_unversioned_is_rejected_in_either_order() {
    let versioned_first = Server::new("a");
    add(&versioned_first, tagged_version("calc", "1.0"));
    match versioned_first.add_tool(ToolDef::new("calc", || async { "none" })) {
        Err(ServerError::MixedVersioning { name, server, .. }) => {
            assert_eq!((name.as_str(), server.as_str()), ("calc", "a"));
        }
        other => panic!("unversioned after versioned must fail, got {other:?}"),
    }
    assert_eq!(keys(&versioned_first).await, ["calc@1.0"]);

    let unversioned_first = Server::new("b");
    add(
        &unversioned_first,
        ToolDef::new("calc", || async { "none" }),
    );
    match unversioned_first.add_tool(tagged_version("calc", "1.0")) {
        Err(ServerError::MixedVersioning { .. }) => {}
        other => panic!("versioned after unversioned must fail, got {other:?}"),
    }
    assert_eq!(keys(&unversioned_first).await, ["calc@"]);
}

#[tokio::test]
async fn h03_two_children_may_hold_versioned_and_unversioned() {
    let plain = Server::new("plain");
    add(&plain, ToolDef::new("calc", || async { "plain" }));
    let versioned = Server::new("versioned");
    add(&versioned, tagged_version("calc", "1.0"));
    let parent = Server::new("parent");
    mount(&parent, &plain, None);
    mount(&parent, &versioned, None);

    assert_eq!(keys(&parent).await, ["calc@", "calc@1.0"]);
    let tool = parent.get_tool("calc", None).expect("calc resolves");
    assert!(tool.owner().ptr_eq(&versioned), "{tool:?}");
    let reply = parent.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("1.0"));
}

#[tokio::test]
async fn h04_version_with_at_is_rejected() {
    let server = Server::new("s");
    match server.add_tool(tagged_version("calc", "1.0@beta")) {
        Err(error @ ServerError::InvalidVersion { .. }) => {
            let message = error.to_string();
            assert!(message.contains("cannot contain '@'"), "{message}");
        }
        other => panic!("a version with '@' must be rejected, got {other:?}"),
    }
    assert!(listed(&server).await.is_empty());

    // Asking for such a version is invalid params too.
    add(&server, tagged_version("calc", "1.0"));
    match server.call(ToolCall::new("calc").version("1@2")).await {
        Err(error) => {
            assert_eq!(error.code.0, -32602, "{}", error.message);
            assert!(
                error.message.contains("cannot contain '@'"),
                "{}",
                error.message
            );
        }
        Ok(reply) => panic!("version 1@2 should be rejected, got {reply:?}"),
    }
}

// ------------------------------------------------------------------------------ H05-H07

#[tokio::test]
async fn h05_server_resolves_the_highest_version() {
    let cases: &[(&[&str], &str)] = &[
        (&["2", "10"], "10"),
        (&["1.2.10", "1.10.1"], "1.10.1"),
        (&["v2", "10"], "10"),
        (&["v10", "2"], "v10"),
        (&["999", "latest"], "latest"),
        (&["alpha", "beta", "100"], "beta"),
        (&["1.0rc1", "1.0", "1.0.dev0"], "1.0"),
        // Equivalent spellings tie-break on the raw string.
        (&["1", "1.0"], "1.0"),
    ];
    for (versions, expected) in cases {
        for reversed in [false, true] {
            let mut order = versions.to_vec();
            if reversed {
                order.reverse();
            }
            let server = Server::new("s");
            for version in &order {
                add(&server, tagged_version("calc", version));
            }
            assert_eq!(
                resolved_version(&server, "calc", None).as_deref(),
                Some(*expected),
                "registered {order:?}"
            );
            let reply = server.call_tool("calc", Value::Null).await;
            assert_eq!(
                result_of(reply, "calc"),
                json!(expected),
                "registered {order:?}"
            );
        }
    }
}

#[tokio::test]
async fn h05_ordering_applies_across_mounts() {
    // "1.0" beats "1" even from the later mount; "0" beats unversioned.
    for (first_version, second_version, winner) in [
        (Some("1"), Some("1.0"), "second"),
        (Some("1.0"), Some("1"), "first"),
        (None, Some("0"), "second"),
        (Some("0"), None, "first"),
    ] {
        let first = Server::new("first");
        let second = Server::new("second");
        for (server, version) in [(&first, first_version), (&second, second_version)] {
            let def = whoami("calc");
            add(
                server,
                match version {
                    Some(version) => def.version(version),
                    None => def,
                },
            );
        }
        let parent = Server::new("parent");
        mount(&parent, &first, None);
        mount(&parent, &second, None);
        let label = format!("{first_version:?} then {second_version:?}");
        let reply = parent.call_tool("calc", Value::Null).await;
        assert_eq!(result_of(reply, &label), json!(winner), "{label}");
    }
}

#[tokio::test]
async fn h06_exact_version_matching() {
    let server = Server::new("s");
    add(&server, tagged_version("calc", "1.0"));
    add(&server, tagged_version("calc", "2.0"));
    // `v` prefixes and PEP 440 equivalents match.
    for request in ["1.0", "v1.0", "1", "1.0.0", "V1"] {
        let reply = server.call(ToolCall::new("calc").version(request)).await;
        assert_eq!(result_of(reply, request), json!("1.0"), "request {request}");
        assert_eq!(
            resolved_version(&server, "calc", Some(&exact(request))).as_deref(),
            Some("1.0"),
            "request {request}"
        );
    }
    for request in ["1.0.1", "1.0.post1", "3"] {
        assert_unknown_tool(
            server.call(ToolCall::new("calc").version(request)).await,
            "calc",
        );
        assert!(server.get_tool("calc", Some(&exact(request))).is_none());
    }

    // A version stored with a `v` matches a request without one.
    let prefixed = Server::new("prefixed");
    add(&prefixed, tagged_version("calc", "v3.1"));
    let reply = prefixed.call(ToolCall::new("calc").version("3.1")).await;
    assert_eq!(result_of(reply, "3.1"), json!("v3.1"));

    // Other strings must match exactly.
    let text = Server::new("text");
    add(&text, tagged_version("build", "latest"));
    let reply = text.call(ToolCall::new("build").version("latest")).await;
    assert_eq!(result_of(reply, "latest"), json!("latest"));
    for request in ["LATEST", "vlatest", "latest2"] {
        assert_unknown_tool(
            text.call(ToolCall::new("build").version(request)).await,
            "build",
        );
    }

    // An unversioned tool matches any version request, unless unversioned are excluded.
    let plain = Server::new("plain");
    add(&plain, ToolDef::new("foo", || async { "plain" }));
    let reply = plain.call(ToolCall::new("foo").version("3.0")).await;
    assert_eq!(result_of(reply, "foo@3.0"), json!("plain"));
    let strict = exact("3.0").excluding_unversioned();
    assert!(plain.get_tool("foo", Some(&strict)).is_none());
    assert_unknown_tool(
        plain.call(ToolCall::new("foo").version_spec(strict)).await,
        "foo",
    );
}

fn calc_server(name: &str) -> Server {
    let server = Server::new(name);
    add(
        &server,
        ToolDef::new("calc", |Args(p): Args<Pair>| async move { p.a + p.b }).version("1.0"),
    );
    add(
        &server,
        ToolDef::new("calc", |Args(p): Args<Pair>| async move { p.a * p.b }).version("2.0"),
    );
    server
}

#[tokio::test]
async fn h07_call_selects_the_requested_version() {
    let server = calc_server("s");
    let args = json!({"a": 3, "b": 4});
    let reply = server.call_tool("calc", args.clone()).await;
    assert_eq!(result_of(reply, "calc default"), json!(12));
    let reply = server
        .call(ToolCall::new("calc").arguments(args.clone()).version("1.0"))
        .await;
    assert_eq!(result_of(reply, "calc@1.0"), json!(7));
    let reply = server
        .call(ToolCall::new("calc").arguments(args.clone()).version("2.0"))
        .await;
    assert_eq!(result_of(reply, "calc@2.0"), json!(12));
    assert_unknown_tool(
        server
            .call(ToolCall::new("calc").arguments(args).version("3.0"))
            .await,
        "calc",
    );
}

// ------------------------------------------------------------------------------ H10-H16

fn scaled_calc(name: &str) -> Server {
    let server = Server::new(name);
    add(
        &server,
        ToolDef::new("calc", |Args(X { x }): Args<X>| async move { x * 5 }).version("1.0"),
    );
    add(
        &server,
        ToolDef::new("calc", |Args(X { x }): Args<X>| async move { x * 11 }).version("2.0"),
    );
    add(
        &server,
        ToolDef::new("add", |Args(p): Args<Pair>| async move { p.a + p.b }).version("2.0"),
    );
    server
}

#[tokio::test]
async fn h10_mounting_keeps_versions() {
    let child = scaled_calc("child");
    let parent = Server::new("parent");
    mount(&parent, &child, "child");

    assert_eq!(
        keys(&parent).await,
        ["child_calc@1.0", "child_calc@2.0", "child_add@2.0"]
    );
    for tool in listed(&parent).await {
        let meta = tool
            .descriptor()
            .tool
            .meta
            .expect("versioned tools have _meta");
        assert_eq!(
            meta["fastmcp"]["version"],
            json!(tool.version().map(Version::as_str)),
            "{tool:?}"
        );
    }
    assert_eq!(
        resolved_version(&parent, "child_add", None).as_deref(),
        Some("2.0")
    );
    assert_eq!(
        resolved_version(&parent, "child_calc", Some(&exact("1.0"))).as_deref(),
        Some("1.0")
    );
    assert_eq!(
        resolved_version(&parent, "child_calc", None).as_deref(),
        Some("2.0")
    );

    let args = json!({"x": 10});
    let reply = parent.call_tool("child_calc", args.clone()).await;
    assert_eq!(result_of(reply, "child_calc default"), json!(110));
    let reply = parent
        .call(
            ToolCall::new("child_calc")
                .arguments(args.clone())
                .version("1.0"),
        )
        .await;
    assert_eq!(result_of(reply, "child_calc@1.0"), json!(50));

    // Two mount levels deep.
    let root = Server::new("root");
    mount(&root, &parent, "outer");
    assert_eq!(
        resolved_version(&root, "outer_child_calc", Some(&exact("1.0"))).as_deref(),
        Some("1.0")
    );
    let reply = root.call_tool("outer_child_calc", args.clone()).await;
    assert_eq!(result_of(reply, "outer_child_calc default"), json!(110));
    let reply = root
        .call(
            ToolCall::new("outer_child_calc")
                .arguments(args)
                .version("1.0"),
        )
        .await;
    assert_eq!(result_of(reply, "outer_child_calc@1.0"), json!(50));
}

#[tokio::test]
async fn h11_versions_from_two_children_resolve_to_their_owner() {
    // Both mount orders: the version, not the order, decides.
    for v1_first in [true, false] {
        let child_v1 = Server::new("child_v1");
        add(&child_v1, whoami("calc").version("1.0"));
        let child_v2 = Server::new("child_v2");
        add(&child_v2, whoami("calc").version("2.0"));
        let parent = Server::new("parent");
        if v1_first {
            mount(&parent, &child_v1, None);
            mount(&parent, &child_v2, None);
        } else {
            mount(&parent, &child_v2, None);
            mount(&parent, &child_v1, None);
        }
        let label = if v1_first { "v1 first" } else { "v2 first" };

        let at_v1 = parent
            .get_tool("calc", Some(&exact("1.0")))
            .expect("calc@1.0 resolves");
        assert!(at_v1.owner().ptr_eq(&child_v1), "{label}: {at_v1:?}");
        assert_eq!(at_v1.version().map(Version::as_str), Some("1.0"));
        let at_v2 = parent
            .get_tool("calc", Some(&exact("2.0")))
            .expect("calc@2.0 resolves");
        assert!(at_v2.owner().ptr_eq(&child_v2), "{label}: {at_v2:?}");
        let default = parent.get_tool("calc", None).expect("calc resolves");
        assert!(default.owner().ptr_eq(&child_v2), "{label}: {default:?}");

        let reply = parent.call(ToolCall::new("calc").version("1.0")).await;
        assert_eq!(result_of(reply, label), json!("child_v1"), "{label}");
        let reply = parent.call(ToolCall::new("calc").version("2.0")).await;
        assert_eq!(result_of(reply, label), json!("child_v2"), "{label}");
        let reply = parent.call_tool("calc", Value::Null).await;
        assert_eq!(result_of(reply, label), json!("child_v2"), "{label}");
    }
}

#[tokio::test]
async fn h12_version_range_selects_the_highest_allowed() {
    let child = Server::new("child");
    add(&child, tagged_version("calc", "1.0"));
    add(&child, tagged_version("calc", "3.0"));
    let parent = Server::new("parent");
    mount(&parent, &child, None);

    let below_2 = VersionSpec::range(None, Some(v("2.0")));
    assert_eq!(
        resolved_version(&parent, "calc", Some(&below_2)).as_deref(),
        Some("1.0")
    );
    let reply = parent
        .call(ToolCall::new("calc").version_spec(below_2.clone()))
        .await;
    assert_eq!(result_of(reply, "calc <2.0"), json!("1.0"));

    let from_2 = VersionSpec::range(Some(v("2.0")), None);
    assert_eq!(
        resolved_version(&parent, "calc", Some(&from_2)).as_deref(),
        Some("3.0")
    );

    let empty = VersionSpec::range(Some(v("1.5")), Some(v("2.5")));
    assert!(parent.get_tool("calc", Some(&empty)).is_none());
    assert_unknown_tool(
        parent.call(ToolCall::new("calc").version_spec(empty)).await,
        "calc",
    );

    // An explicit version outside the range gives nothing.
    let outside = VersionSpec {
        eq: Some(v("3.0")),
        ..below_2
    };
    assert!(parent.get_tool("calc", Some(&outside)).is_none());

    // Unversioned tools pass a range unless excluded.
    let plain = Server::new("plain");
    add(&plain, ToolDef::new("foo", || async { "plain" }));
    let range = VersionSpec::range(Some(v("5")), Some(v("6")));
    assert!(plain.get_tool("foo", Some(&range)).is_some());
    assert!(
        plain
            .get_tool("foo", Some(&range.excluding_unversioned()))
            .is_none()
    );
}

/// calc@1.0, calc@2.0 and calc@3.0, where 3.0 carries the tag `beta`.
fn three_versions(name: &str) -> Server {
    let server = Server::new(name);
    add(&server, tagged_version("calc", "1.0"));
    add(&server, tagged_version("calc", "2.0"));
    add(&server, tagged_version("calc", "3.0").tag("beta"));
    server
}

#[tokio::test]
async fn h13_hidden_highest_version_falls_back_to_next() {
    let server = three_versions("s");
    server.disable_tags(["beta"]);

    assert_eq!(keys(&server).await, ["calc@1.0", "calc@2.0"]);
    assert_eq!(
        resolved_version(&server, "calc", None).as_deref(),
        Some("2.0")
    );
    let reply = server.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("2.0"));
    // An explicitly requested hidden version is not found.
    assert!(server.get_tool("calc", Some(&exact("3.0"))).is_none());
    assert_unknown_tool(
        server.call(ToolCall::new("calc").version("3.0")).await,
        "calc",
    );
    // Hiding every version hides the tool.
    server.disable_tool("calc");
    assert!(keys(&server).await.is_empty());
    assert!(server.get_tool("calc", None).is_none());
}

#[tokio::test]
async fn h13_parent_hiding_highest_mounted_version_falls_back_to_next() {
    let child = three_versions("child");
    let parent = Server::new("parent");
    mount(&parent, &child, None);
    parent.disable_tags(["beta"]);

    // The listing already falls back...
    assert_eq!(keys(&parent).await, ["calc@1.0", "calc@2.0"]);
    // ...and get/call must agree with it.
    assert_eq!(
        resolved_version(&parent, "calc", None).as_deref(),
        Some("2.0"),
        "get_tool must fall back to the highest version the parent shows"
    );
    let reply = parent.call_tool("calc", Value::Null).await;
    assert_eq!(result_of(reply, "calc"), json!("2.0"));
    assert!(parent.get_tool("calc", Some(&exact("3.0"))).is_none());
}

#[tokio::test]
async fn h14_exact_resolved_version_reaches_the_child() {
    let recorder = Recorder::default();
    let child = Server::new("child");
    child.add_middleware(recorder.clone());
    add(&child, tagged_version("calc", "1.0"));
    add(&child, tagged_version("calc", "3.0"));
    add(&child, ToolDef::new("plain", || async { "plain" }));
    let parent = Server::new("parent");
    mount(&parent, &child, "sub");

    let cases: [(ToolCall, &str, &str, Option<VersionSpec>); 5] = [
        (ToolCall::new("sub_calc"), "3.0", "calc", Some(exact("3.0"))),
        // An equivalent spelling reaches the child as the stored version.
        (
            ToolCall::new("sub_calc").version("1"),
            "1.0",
            "calc",
            Some(exact("1.0")),
        ),
        (
            ToolCall::new("sub_calc").version("v3"),
            "3.0",
            "calc",
            Some(exact("3.0")),
        ),
        // A range reaches the child as the one version it resolved to.
        (
            ToolCall::new("sub_calc").version_spec(VersionSpec::range(None, Some(v("2")))),
            "1.0",
            "calc",
            Some(exact("1.0")),
        ),
        // An unversioned tool gets no version.
        (
            ToolCall::new("sub_plain").version("9"),
            "plain",
            "plain",
            None,
        ),
    ];
    for (call, expected_result, child_name, child_version) in cases {
        let label = format!("{call:?}");
        let reply = parent.call(call).await;
        assert_eq!(
            text_of(&complete(reply, &label)),
            expected_result,
            "{label}: wrong version ran"
        );
        assert_eq!(
            recorder.take(),
            [("child".to_owned(), child_name.to_owned(), child_version)],
            "{label}: what the child's middleware saw"
        );
    }
}

#[tokio::test]
async fn h16_mounted_versioned_tool_beats_unversioned_local() {
    let child = Server::new("child");
    add(
        &child,
        ToolDef::new("foo", || async { "mounted" }).version("1.0"),
    );
    let parent = Server::new("parent");
    add(&parent, ToolDef::new("foo", || async { "local" }));
    mount(&parent, &child, None);

    assert_eq!(keys(&parent).await, ["foo@", "foo@1.0"]);
    let tool = parent.get_tool("foo", None).expect("foo resolves");
    assert!(tool.owner().ptr_eq(&child), "{tool:?}");
    let reply = parent.call_tool("foo", Value::Null).await;
    assert_eq!(result_of(reply, "foo"), json!("mounted"));
}
