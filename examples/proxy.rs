//! A proxy: a remote MCP server's tools, resources and prompts served under a namespace
//! beside local tools, with its background tasks passed through the hop (the client polls
//! the proxy; the remote server runs the task).
//!
//! `cargo run --features proxy --example proxy -- 127.0.0.1:8001 http://127.0.0.1:8000/mcp`
//! (the address to listen on, then the remote server's Streamable HTTP endpoint; try it
//! against `cargo run --example tasks`, whose `slow_square` becomes `remote_slow_square`).

use ferrymcp::{
    MountOptions, Server,
    proxy::{HttpTarget, ProxyServer, ProxyTasks, Upstream},
    tool,
};

/// Says where it runs: here, not on the remote server.
#[tool(read_only)]
async fn local_hello(name: String) -> String {
    format!("hello {name}, from the proxy")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8001".into());
    let remote_url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000/mcp".into());

    // One reused session to the remote server, with reconnects and timeouts; its listing
    // becomes a local server whose tools keep every field (`execution.taskSupport` too).
    let upstream = Upstream::http("remote", HttpTarget::new(remote_url));
    let remote = ProxyServer::new(upstream).build().await?;

    let server = Server::new("proxy");
    server.add_tool(local_hello)?;
    server.mount(&remote, MountOptions::new().namespace("remote"))?;
    // Task passthrough: a client that asks for a task gets one; `tasks/*` go to the remote.
    server.add_extension(ProxyTasks::new()?)?;
    server.serve_http(address).await?;
    Ok(())
}
