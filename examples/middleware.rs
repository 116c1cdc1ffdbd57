//! Middleware: a closure (`from_fn`) that times every tool call and a `Middleware` that
//! refuses a tool by name, on the parent, and what the mounted child's tools see through them.
//!
//! `cargo run --example middleware -- 127.0.0.1:8000`; a call to `math_divide` logs its
//! duration on stderr, a call to `math_forbidden` is refused.

use std::time::Instant;

use ferrymcp::{
    CallTool, Middleware, Next, Server,
    middleware::from_fn,
    tool,
    types::{CallToolResponse, ErrorData},
};

/// Refuses the tools whose name ends with `_forbidden`, before they run.
struct Policy;

#[async_trait::async_trait]
impl Middleware for Policy {
    async fn on_call_tool(
        &self,
        call: CallTool,
        next: Next<'_, CallTool>,
    ) -> Result<CallToolResponse, ErrorData> {
        if call.name.ends_with("_forbidden") {
            return Err(ErrorData::invalid_request(
                format!("{} is not allowed here", call.name),
                None,
            ));
        }
        next.run(call).await
    }
}

/// Divides `a` by `b`.
#[tool]
async fn divide(a: f64, b: f64) -> Result<f64, ferrymcp::ToolError> {
    if b == 0.0 {
        return Err(ferrymcp::ToolError::new("cannot divide by zero"));
    }
    Ok(a / b)
}

/// Never runs: the parent's policy refuses it.
#[tool]
async fn forbidden() -> &'static str {
    "ran"
}

#[tokio::main]
async fn main() -> Result<(), ferrymcp::ServerError> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8000".into());
    let math = Server::new("math");
    math.add_tool(divide)?;
    math.add_tool(forbidden)?;

    let parent = Server::new("parent");
    // Times each tool call and logs it on stderr: one hook, so a closure is enough.
    // Outermost: added first.
    parent.add_middleware(from_fn(|call: CallTool, next: Next<'_, CallTool>| {
        Box::pin(async move {
            let name = call.name.clone();
            let started = Instant::now();
            let answer = next.run(call).await;
            eprintln!("{name} took {:?}", started.elapsed());
            answer
        })
    }));
    parent.add_middleware(Policy);
    parent.mount(&math, "math")?;
    parent.serve_http(address).await
}
