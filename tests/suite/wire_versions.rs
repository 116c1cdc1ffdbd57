//! Versions on the wire (H08, H09), through rmcp's client over an in-memory duplex, in both
//! protocol eras.

use ferrymcp::{
    Server, ToolDef,
    types::{CallToolRequestParams, CallToolResponse, RequestMetaObject},
};
use ferrymcp_test_helpers::client::{Lifecycle, in_memory};
use serde_json::{Value, json};

fn calc_server() -> Server {
    let child = Server::new("child");
    child
        .add_tool(ToolDef::new("calc", || async { 7 }).version("1.0"))
        .expect("calc 1.0");
    child
        .add_tool(ToolDef::new("calc", || async { 12 }).version("2.0"))
        .expect("calc 2.0");
    let parent = Server::new("parent");
    parent.mount(&child, "child").expect("mount");
    parent
}

#[tokio::test]
async fn h09_wire_listing_keeps_the_highest_version_and_lists_all() {
    for lifecycle in Lifecycle::ALL {
        let pair = in_memory(calc_server(), lifecycle, false)
            .await
            .expect("connect");
        let tools = pair.client.list_all_tools().await.expect("tools/list");
        assert_eq!(tools.len(), 1, "one entry per name ({lifecycle:?})");
        let meta = serde_json::to_value(tools[0].meta.as_ref().expect("_meta")).expect("json");
        assert_eq!(tools[0].name, "child_calc");
        assert_eq!(meta["fastmcp"]["version"], "2.0", "{lifecycle:?}");
        assert_eq!(
            meta["fastmcp"]["versions"],
            json!(["2.0", "1.0"]),
            "{lifecycle:?}"
        );
        pair.client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn h08_wire_call_selects_the_version_in_meta() {
    for lifecycle in Lifecycle::ALL {
        let pair = in_memory(calc_server(), lifecycle, false)
            .await
            .expect("connect");
        let mut meta = RequestMetaObject::default();
        meta.insert("fastmcp".into(), json!({"version": "1.0"}));
        let mut pinned = CallToolRequestParams::new("child_calc");
        pinned.meta = Some(meta);
        let result = |reply| match reply {
            CallToolResponse::Complete(r) => r.structured_content.unwrap_or(Value::Null),
            other => panic!("not a result: {other:?}"),
        };
        let v1 = pair.client.call_tool_once(pinned).await.expect("call v1");
        assert_eq!(result(v1), json!({"result": 7}), "{lifecycle:?}");
        let latest = pair
            .client
            .call_tool_once(CallToolRequestParams::new("child_calc"))
            .await
            .expect("call latest");
        assert_eq!(result(latest), json!({"result": 12}), "{lifecycle:?}");
        pair.client.cancel().await.expect("close");
    }
}
