//! The README's first program: a tool on a child server, mounted into a parent under the
//! namespace `child` (so it is `child_multiply` there), served over Streamable HTTP.
//!
//! `cargo run --example hello`, then call `child_multiply` with `{"a": 8, "b": 9}` at
//! `http://127.0.0.1:8000/mcp`.

#[ferrymcp::tool]
async fn multiply(a: i64, b: i64) -> i64 {
    a * b
}

#[tokio::main]
async fn main() -> Result<(), ferrymcp::ServerError> {
    let child = ferrymcp::Server::new("child");
    child.add_tool(multiply)?;
    let parent = ferrymcp::Server::new("parent");
    parent.mount(&child, "child")?; // child_multiply
    parent.serve_http("127.0.0.1:8000").await // or parent.serve_stdio().await
}
