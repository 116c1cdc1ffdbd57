//! Keeping `execution` in upstream tool listings.
//!
//! rmcp's `Tool` has no `execution` field and drops it while parsing (rmcp-notes §4.3), before
//! any of our code sees the message. For upstreams whose bytes we read ourselves (a child
//! process over stdio), [`keep_execution`] rewrites each `tools/list` result line first:
//! every tool's `execution` moves into `_meta["io.ferrymcp/execution"]`, where rmcp keeps it,
//! and [`ToolDescriptor::from`](ferrymcp_types::ToolDescriptor) moves it back out. 2026-07-28
//! listings carry no `execution` (SEP-2663 §3.2), so this matters for 2025-11-25 upstreams
//! such as FastMCP.

use ferrymcp_types::meta;
use serde_json::Value;
use tokio::io::{AsyncRead, DuplexStream};

/// Rewrites one newline-delimited JSON-RPC message: a result holding `tools` gets each tool's
/// `execution` moved under `_meta[meta::EXECUTION]`. Any other line comes back unchanged.
///
/// ```
/// let line = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{},"execution":{"taskSupport":"optional"}}]}}"#;
/// let out = ferrymcp_proxy::listing::move_execution(line);
/// let tool: ferrymcp_types::Tool = serde_json::from_value(
///     serde_json::from_str::<serde_json::Value>(&out).unwrap()["result"]["tools"][0].clone(),
/// ).unwrap();
/// let descriptor = ferrymcp_types::ToolDescriptor::from(tool);
/// assert_eq!(descriptor.task_support(), ferrymcp_types::TaskSupport::Optional);
/// ```
pub fn move_execution(line: &str) -> String {
    // Cheap test first: almost every line is not a listing with `execution`.
    if !line.contains("\"execution\"") || !line.contains("\"tools\"") {
        return line.to_owned();
    }
    let Ok(mut message) = serde_json::from_str::<Value>(line) else {
        return line.to_owned();
    };
    let Some(tools) = message
        .get_mut("result")
        .and_then(|r| r.get_mut("tools"))
        .and_then(Value::as_array_mut)
    else {
        return line.to_owned();
    };
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        let Some(execution) = tool.remove("execution") else {
            continue;
        };
        let meta = tool
            .entry("_meta")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(meta::EXECUTION.to_owned(), execution);
        }
    }
    serde_json::to_string(&message).unwrap_or_else(|_| line.to_owned())
}

/// A reader of `source` (an upstream's stdout) in which every listing keeps `execution`
/// ([`move_execution`]). The copy runs on a task that ends with `source`; it also ends at
/// the first line that is not JSON or is longer than
/// [`DEFAULT_MAX_MESSAGE_BYTES`](crate::DEFAULT_MAX_MESSAGE_BYTES).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use tokio::io::AsyncReadExt as _;
/// let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
/// let mut reader = ferrymcp_proxy::listing::keep_execution(input);
/// let mut out = String::new();
/// reader.read_to_string(&mut out).await.unwrap();
/// assert_eq!(out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
/// # });
/// ```
pub fn keep_execution<R: AsyncRead + Unpin + Send + 'static>(source: R) -> DuplexStream {
    crate::stdout::read_upstream(source, crate::DEFAULT_MAX_MESSAGE_BYTES).0
}
