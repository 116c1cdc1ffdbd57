#[ferrymcp_macros::tool(readonly)]
async fn ping() -> &'static str {
    "pong"
}

#[ferrymcp_macros::prompt(task)]
async fn greet() -> &'static str {
    "hi"
}

#[ferrymcp_macros::tool(task = "sometimes")]
async fn maybe() -> &'static str {
    "?"
}

fn main() {}
