//! Shared by the input-round suites (`input_rounds.rs`, `proxy_input_rounds.rs`): the
//! elicitation a tool asks with, an rmcp client connected to a server in memory, and the
//! text a greeting tool answers.

use ferrymcp::{
    Server,
    types::{CallToolResponse, InputRequest},
};
use ferrymcp_test_helpers::client::{Lifecycle, RecordingClient, connect_with};
use rmcp::{RoleClient, service::RunningService};
use serde_json::json;

/// A client that records what the server asks it.
pub type Client = RunningService<RoleClient, RecordingClient>;

/// `handler` connected to `server` over an in-memory pipe, as `lifecycle` says.
pub async fn connect(server: Server, handler: RecordingClient, lifecycle: Lifecycle) -> Client {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(server.serve_io(read, write));
    connect_with(handler, client_end, lifecycle)
        .await
        .expect("connect")
}

/// `elicitation/create` asking for a name, in form mode.
pub fn ask_name() -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
        }
    }))
    .expect("a valid elicitation request")
}

/// The `structuredContent.result` text of a complete result.
pub fn text_of(reply: CallToolResponse) -> String {
    let CallToolResponse::Complete(result) = reply else {
        panic!("expected a result, got {reply:?}")
    };
    result.structured_content.expect("structured")["result"]
        .as_str()
        .expect("text")
        .to_owned()
}
