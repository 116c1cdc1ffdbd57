//! A 2026-07-28 `tools/call` posted over HTTP, on the transport's own path or on rmcp's.

use std::time::Duration;

use serde_json::Value;

/// A generous bound on "this is answered by itself".
const BOUND: Duration = Duration::from_secs(30);

/// Posts `body`, a `tools/call` of `name`, as a conforming 2026-07-28 client does;
/// `via_rmcp` weighs the `Accept` entries, which sends the request on to rmcp's service.
pub async fn post(url: &str, name: &str, body: &Value, via_rmcp: bool) -> reqwest::Response {
    let accept = if via_rmcp {
        "application/json, text/event-stream;q=1"
    } else {
        "application/json, text/event-stream"
    };
    let request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(body.to_string());
    tokio::time::timeout(BOUND, request.send())
        .await
        .expect("answered in time")
        .expect("POST")
}

/// An answer's status, media type and body.
pub async fn answered(response: reqwest::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let media = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, media, response.text().await.expect("a body"))
}
